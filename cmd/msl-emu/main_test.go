package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestRunVectorAdd(t *testing.T) {
	dir := t.TempDir()
	a := make([]byte, 0, 4*40)
	for i := 0; i < 40; i++ {
		a = binary.LittleEndian.AppendUint32(a, math.Float32bits(float32(i)))
	}
	in := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(in, a, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.bin")
	for _, sched := range []string{"forward", "reverse", "shuffle:7"} {
		var stdout, stderr bytes.Buffer
		args := []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--groups", "2,1,1", "--threadgroup", "32",
			"--buffer", "0=@" + in, "--buffer", "1=@" + in, "--buffer", "2=zeros:160", "--bytes", "3=u32:40",
			"--schedule", sched, "--out", "2=" + out}
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v\n%s", sched, err, stderr.String())
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != float32(2*i) {
				t.Fatalf("%s: out[%d] = %v, want %d", sched, i, v, 2*i)
			}
		}
	}
}

func TestRunInlineAndPrint(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--groups", "1", "--threadgroup", "32",
		"--buffer", "0=f32:1,2,3,4", "--buffer", "1=f32:10,20,30,40", "--buffer", "2=zeros:16", "--bytes", "3=u32:4", "--out", "2=-"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "11 22 33 44" {
		t.Fatalf("printed %q, want %q", got, "11 22 33 44")
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"divergent barrier", []string{"run", "../../metal/emu/testdata/bugs.metal", "--kernel", "divergent_barrier", "--threadgroup", "64", "--buffer", "0=zeros:256"}, "bugs.metal:8"},
		{"unknown kernel", []string{"run", "../../kernels/elementwise.metal", "--kernel", "nope", "--threadgroup", "32"}, "unknown kernel"},
		{"bad literal", []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--threadgroup", "32", "--buffer", "0=f64:1"}, "f64"},
		{"missing kernel flag", []string{"run", "../../kernels/elementwise.metal", "--threadgroup", "32"}, "--kernel"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(stdout.String(), "msl-emu run kernels/elementwise.metal --kernel vector_add") {
		t.Error("help has no full example")
	}
}

func TestList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"list", "../../metal/emu/testdata/corpus/params.metal"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	for _, want := range []string{
		"kernel params_2d (../../metal/emu/testdata/corpus/params.metal:25) max 256 threads per threadgroup",
		"[[buffer(0)]] const device float* x: --buffer 0=SPEC",
		"[[buffer(1)]] device const float* bias: --buffer 1=SPEC (only when function constant has_bias is true)",
		"[[buffer(2)]] constant Params& p: --bytes 2=SPEC",
		"[[thread_position_in_grid]] uint2 gid: builtin",
		"[[function_constant(200)]] bool has_bias: --constant 200=VALUE",
		"kernel implicit_indices",
		"[[buffer(1)]] device const uint* a: --buffer 1=SPEC",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"list", "../../metal/emu/testdata/corpus/templates.metal"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kernel affine_f32_1 ", "kernel affine_f16_4 ", "kernel affine_bf16_2 ", "kernel reduce_sum_64 ", "max 32 threads", "kernel renamed_fill "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("template list lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestRunStructBytesAndDump runs a templated kernel by host name with a
// struct passed by value as a typed sequence and prints the result as text.
func TestRunStructBytesAndDump(t *testing.T) {
	cases := []struct {
		kernel, in, dump, want string
	}{
		// out = in * 2 + 0.5 in float, half and bfloat.
		{"affine_f32_1", "f32:1,2,-3", "f32", "2.5 4.5 -5.5"},
		{"affine_f16_4", "f16:1,2,-3", "f16", "2.5 4.5 -5.5"},
		// 1.01171875 is exact in bfloat; 2.0234375 + 0.5 = 2.5234375 is
		// halfway between 2.515625 (odd significand) and 2.53125 (even):
		// round to nearest even gives 2.53125.
		{"affine_bf16_2", "bf16:1.01171875", "bf16", "2.53125"},
	}
	for _, c := range cases {
		for _, sched := range []string{"forward", "reverse", "shuffle:3"} {
			var stdout, stderr bytes.Buffer
			n := len(strings.Split(strings.SplitN(c.in, ":", 2)[1], ","))
			size := 4 * n
			if c.dump != "f32" {
				size = 2 * n
			}
			args := []string{"run", "../../metal/emu/testdata/corpus/templates.metal", "--kernel", c.kernel, "--threadgroup", "4",
				"--buffer", "0=" + c.in, "--buffer", "1=zeros:" + strconv.Itoa(size), "--bytes", "2=f32:2,0.5", "--bytes", "3=u32:" + strconv.Itoa(n),
				"--dump", "1=" + c.dump, "--schedule", sched}
			if err := run(context.Background(), args, &stdout, &stderr); err != nil {
				t.Fatalf("%s: %v\n%s", c.kernel, err, stderr.String())
			}
			if got := strings.TrimSpace(stdout.String()); got != c.want {
				t.Errorf("%s %s: printed %q, want %q", c.kernel, sched, got, c.want)
			}
		}
	}
}

func TestRunConstantsByNameAndMixedBytes(t *testing.T) {
	// params_2d on a 1x2 matrix: Params{rows=1, cols=2, alpha=3, pad, stride=(1,2)}.
	var stdout, stderr bytes.Buffer
	args := []string{"run", "../../metal/emu/testdata/corpus/params.metal", "--kernel", "params_2d", "--threadgroup", "2,1",
		"--buffer", "0=f32:1,2", "--buffer", "1=f32:10,20", "--bytes", "2=u32:1,2,f32:3,pad:4,u32:1,2",
		"--buffer", "4=zeros:64", "--constant", "has_bias=true", "--constant", "11=int:-1", "--constant", "small_fc=2",
		"--constant", "half_fc=half:0.5", "--dump", "4=f32"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	// out[0] = 1*3 + 10 - 1 + 2 + 0.5, out[1] = 2*3 + 20 + 1.5.
	if got := strings.Fields(stdout.String()); len(got) < 2 || got[0] != "14.5" || got[1] != "27.5" {
		t.Errorf("printed %q, want 14.5 27.5 first", stdout.String())
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"help", []string{"-h"}, 0},
		{"no command", nil, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"bad flag", []string{"run", "../../kernels/elementwise.metal", "--nope"}, 2},
		{"unknown kernel", []string{"run", "../../kernels/elementwise.metal", "--kernel", "nope", "--threadgroup", "32"}, 2},
		{"bad type", []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--threadgroup", "32", "--buffer", "0=f64:1"}, 2},
		{"constant type mismatch", []string{"run", "../../metal/emu/testdata/corpus/params.metal", "--kernel", "params_2d", "--threadgroup", "1", "--constant", "has_bias=float:1"}, 2},
		{"unbound buffer", []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--threadgroup", "32"}, 2},
		{"missing file", []string{"list", "nope.metal"}, 2},
		{"kernel fault", []string{"run", "../../metal/emu/testdata/bugs.metal", "--kernel", "divergent_barrier", "--threadgroup", "64", "--buffer", "0=zeros:256"}, 1},
		{"unsupported MSL", []string{"list", "testdata/texture.metal"}, 1},
		{"bad define", []string{"run", "../../metal/emu/testdata/corpus/conditional.metal", "-D", "2X", "--kernel", "which_branch", "--threadgroup", "1", "--buffer", "0=zeros:4"}, 2},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, &stdout, &stderr)
		if got := exitCode(err, &stderr); got != c.code {
			t.Errorf("%s: exit %d (err %v), want %d", c.name, got, err, c.code)
		}
	}
}

func TestRunDefines(t *testing.T) {
	// scale_bf16_guarded exists only with -D EMU_TEST_HAS_BF16.
	for _, c := range []struct {
		defines []string
		want    string
		code    int
	}{
		{nil, "", 1},
		{[]string{"-D", "EMU_TEST_HAS_BF16"}, "3 -1.5", 0},
		{[]string{"-D", "EMU_TEST_HAS_BF16=1"}, "3 -1.5", 0},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"run", "../../metal/emu/testdata/corpus/conditional.metal"}, c.defines...)
		args = append(args, "--kernel", "scale_bf16_guarded", "--threadgroup", "2", "--buffer", "0=bf16:1,-0.5", "--buffer", "1=zeros:4", "--dump", "1=bf16")
		err := run(context.Background(), args, &stdout, &stderr)
		if got := exitCode(err, &stderr); got != c.code {
			t.Errorf("%v: exit %d (err %v), want %d", c.defines, got, err, c.code)
		}
		if got := strings.TrimSpace(stdout.String()); got != c.want {
			t.Errorf("%v: printed %q, want %q", c.defines, got, c.want)
		}
	}
}
