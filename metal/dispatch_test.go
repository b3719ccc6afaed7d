package metal

import (
	"errors"
	"strings"
	"testing"
)

// limPipeline is a Pipeline with given limits, for ClampThreads.
type limPipeline struct{ max, width int }

func (p limPipeline) Kernel() string                { return "test" }
func (p limPipeline) MaxThreadsPerThreadgroup() int { return p.max }
func (p limPipeline) ThreadExecutionWidth() int     { return p.width }

func TestCheckDispatch(t *testing.T) {
	buf := sysTestBuffer{64}
	apple := DispatchLimits{MaxThreads: 1024, MaxThreadgroupMemory: ThreadgroupMemoryLimit}
	tests := []struct {
		name            string
		lim             DispatchLimits
		groups, threads Size3
		args            []Arg
		wantEmpty       bool
		wantErr         string
		wantTGErr       bool
	}{
		{name: "buffers and bytes", lim: apple, groups: Size3{4, 1, 1}, threads: Size3{256, 1, 1},
			args: []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf, Offset: 32}, {Index: 2, Bytes: []byte{1, 0, 0, 0}}}},
		{name: "empty grid", lim: apple, groups: Size3{0, 1, 1}, threads: Size3{32, 1, 1}, wantEmpty: true},
		{name: "pipeline limit, not 1024", lim: DispatchLimits{MaxThreads: 512, MaxThreadgroupMemory: ThreadgroupMemoryLimit},
			groups: Size3{1, 1, 1}, threads: Size3{1024, 1, 1}, wantErr: "limit of 512"},
		{name: "kernel attribute raises nothing", lim: DispatchLimits{MaxThreads: 64, MaxThreadgroupMemory: ThreadgroupMemoryLimit},
			groups: Size3{1, 1, 1}, threads: Size3{64, 1, 1}},
		{name: "grid extent over 2^32-1", lim: apple, groups: Size3{1 << 32, 1, 1}, threads: Size3{32, 1, 1}, wantErr: "2^32-1"},
		{name: "threadgroup arguments at the limit", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 0, ThreadgroupBytes: 16384}, {Index: 1, ThreadgroupBytes: 16384}}},
		{name: "static arrays count toward the limit", lim: DispatchLimits{MaxThreads: 1024, StaticThreadgroupMemory: 16, MaxThreadgroupMemory: ThreadgroupMemoryLimit},
			groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args:    []Arg{{Index: 0, ThreadgroupBytes: 16384}, {Index: 1, ThreadgroupBytes: 16384}},
			wantErr: "16 bytes of threadgroup arrays in the kernel + 32768", wantTGErr: true},
		{name: "arguments round up to 16 bytes", lim: DispatchLimits{MaxThreads: 1024, MaxThreadgroupMemory: 32},
			groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 0, ThreadgroupBytes: 17}, {Index: 1, ThreadgroupBytes: 1}}, wantErr: "= 48", wantTGErr: true},
		{name: "bad argument", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf, Offset: 64}}, wantErr: "offset 64 outside"},
		{name: "argument that binds nothing", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 5}}, wantErr: "binds nothing"},
		{name: "two buffers at one index", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 0, Buffer: buf, Offset: 32}}, wantErr: "index 0 bound twice in the buffer table"},
		{name: "a buffer and setBytes at one index", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 3, Bytes: []byte{1}}, {Index: 3, Buffer: buf}}, wantErr: "index 3 bound twice in the buffer table"},
		{name: "two threadgroup arguments at one index", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 1, ThreadgroupBytes: 16}, {Index: 1, ThreadgroupBytes: 16}}, wantErr: "index 1 bound twice in the threadgroup memory table"},
		{name: "buffer and threadgroup tables are separate", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 0, Buffer: buf}, {Index: 0, ThreadgroupBytes: 16}}},
		// Apple documents setBytes for data smaller than 4 KB.
		{name: "setBytes under 4 KB", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 1, Bytes: make([]byte, 4092)}}},
		{name: "setBytes of 4 KB", lim: apple, groups: Size3{1, 1, 1}, threads: Size3{32, 1, 1},
			args: []Arg{{Index: 1, Bytes: make([]byte, 4096)}}, wantErr: "4096 bytes of inline constants; setBytes takes 1 to 4095"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			empty, err := CheckDispatch(tt.lim, tt.groups, tt.threads, tt.args)
			if tt.wantErr == "" {
				if err != nil || empty != tt.wantEmpty {
					t.Fatalf("CheckDispatch = %v, %v; want %v, nil", empty, err, tt.wantEmpty)
				}
				return
			}
			if !errors.Is(err, ErrInvalidDispatch) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v; want ErrInvalidDispatch containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, ErrThreadgroupMemory); got != tt.wantTGErr {
				t.Errorf("errors.Is(err, ErrThreadgroupMemory) = %v, want %v", got, tt.wantTGErr)
			}
		})
	}
}

// A valid dispatch is checked without a heap allocation: both devices run
// CheckDispatch on every Dispatch, which stays allocation-free (the darwin
// Dispatch and Barrier keep their MTLSize and resource scratch in the
// command buffer; TestSystemDispatchAllocations checks them on a Mac).
func TestCheckDispatchAllocations(t *testing.T) {
	buf := sysTestBuffer{4096}
	args := []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf, Offset: 256}, {Index: 2, Bytes: []byte{1, 2, 3, 4}},
		{Index: 3, ThreadgroupBytes: 4096}}
	lim := DispatchLimits{MaxThreads: 1024, StaticThreadgroupMemory: 1024, MaxThreadgroupMemory: ThreadgroupMemoryLimit}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := CheckDispatch(lim, Size3{64, 2, 1}, Size3{128, 2, 1}, args); err != nil {
			t.Fatal(err)
		}
		_ = toMTLSize(Size3{64, 2, 1})
	})
	if allocs != 0 {
		t.Errorf("CheckDispatch allocates %v times per call, want 0", allocs)
	}
}

func TestClampThreads(t *testing.T) {
	tests := []struct {
		name       string
		max, width int
		want, got  int
	}{
		{"fits", 1024, 32, 256, 256},
		{"at the limit", 1024, 32, 1024, 1024},
		{"register-heavy pipeline", 704, 32, 1024, 704},
		{"limit not a SIMD multiple", 700, 32, 1024, 672},
		{"limit under one SIMD group", 20, 32, 64, 20},
		{"at least one", 1024, 32, 0, 1},
	}
	for _, tt := range tests {
		if got := ClampThreads(limPipeline{tt.max, tt.width}, tt.want); got != tt.got {
			t.Errorf("%s: ClampThreads(max %d, width %d, want %d) = %d, want %d", tt.name, tt.max, tt.width, tt.want, got, tt.got)
		}
	}
}
