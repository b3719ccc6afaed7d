package mslpp

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const sample = `#include <metal_stdlib>
#include "common.h"
using namespace metal;
constant bool has_bias [[function_constant(0)]];
constant uint tile = 16;

// kernel void commented_out(device float* x [[buffer(0)]]) {}
kernel void k1(device const float* x [[buffer(0)]],
               device float* y [[buffer(2)]],
               device float* bias [[buffer(3), function_constant(has_bias)]],
               constant Params& p [[buffer(1)]],
               threadgroup float* shared [[threadgroup(0)]],
               uint3 gid [[thread_position_in_grid]],
               ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float partial[32];
  y[gid.x] = x[gid.x] * 0.5h + 2h;
}

[[kernel]] void k2(device float* a, device float* b [[buffer(0)]]) {
  helper();
}

void helper() {
  threadgroup half4 tile2[4][8];
}
`

func translateSample(t *testing.T) *Unit {
	t.Helper()
	inc := func(from, name string) (Source, error) {
		if name != "common.h" {
			return Source{}, errors.New("no such file")
		}
		return Source{Name: "common.h", Text: "struct Params { uint n; };\n"}, nil
	}
	u, err := Translate(Source{Name: "s.metal", Text: sample}, inc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTranslateKernels(t *testing.T) {
	u := translateSample(t)
	want := []Kernel{
		{Name: "k1", File: "s.metal", Line: 8, Params: []Param{
			{Name: "x", Type: "device const float*", Kind: Buffer, Index: 0},
			{Name: "y", Type: "device float*", Kind: Buffer, Index: 2},
			{Name: "bias", Type: "device float*", Kind: Buffer, Index: 3, FunctionConstant: "has_bias"},
			{Name: "p", Type: "constant Params&", Kind: BufferRef, Index: 1},
			{Name: "shared", Type: "threadgroup float*", Kind: Threadgroup, Index: 0},
			{Name: "gid", Type: "uint3", Kind: Builtin, Index: -1, Builtin: "thread_position_in_grid"},
			{Name: "lane", Type: "ushort", Kind: Builtin, Index: -1, Builtin: "thread_index_in_simdgroup"},
		}},
		// Parameters without an attribute take the next free buffer index.
		{Name: "k2", File: "s.metal", Line: 19, Params: []Param{
			{Name: "a", Type: "device float*", Kind: Buffer, Index: 1},
			{Name: "b", Type: "device float*", Kind: Buffer, Index: 0},
		}},
	}
	if !reflect.DeepEqual(u.Kernels, want) {
		t.Errorf("kernels:\n got %+v\nwant %+v", u.Kernels, want)
	}
	if want := []FunctionConstant{{Name: "has_bias", Type: "bool", Index: 0, File: "s.metal", Line: 4}}; !reflect.DeepEqual(u.Constants, want) {
		t.Errorf("constants = %+v, want %+v", u.Constants, want)
	}
	wantTG := []ThreadgroupArray{
		{Name: "partial", Type: "float", Dims: "[32]", File: "s.metal", Line: 15, Kernel: "k1"},
		{Name: "tile2", Type: "half4", Dims: "[4][8]", File: "s.metal", Line: 24},
	}
	if !reflect.DeepEqual(u.Threadgroup, wantTG) {
		t.Errorf("threadgroup arrays = %+v, want %+v", u.Threadgroup, wantTG)
	}
}

func TestTranslateRewrites(t *testing.T) {
	cpp := translateSample(t).CPP
	for _, want := range []string{
		`#line 1 "common.h"`,
		`#line 3 "s.metal"`,
		"static bool has_bias; static bool has_bias__mslemu_defined;",
		"static thread_local float partial[32]; ::mslemu::tg_array((void*)&partial, sizeof(partial), __FILE__, __LINE__, 0);",
		"static thread_local half4 tile2[4][8]; ::mslemu::tg_array((void*)&tile2, sizeof(tile2), __FILE__, __LINE__, 1);",
		"x[gid.x] * ((half)0.5f) + ((half)2);",
		"*(std::remove_reference_t<constant Params&>*)(bufs[1])",
		"::mslemu::builtin<uint3>(c->tpig)",
		"::mslemu::builtin1<ushort>(c->lane)",
		`mslemu_reg_k1("k1", &mslemu_thunk_k1, &mslemu_bind_constants, 0 + sizeof(float[32]), "s.metal", 8)`,
	} {
		if !strings.Contains(cpp, want) {
			t.Errorf("translation lacks %q", want)
		}
	}
	if strings.Contains(cpp, "[[thread_position_in_grid]]") || strings.Contains(cpp, "[[threadgroup(0)]]") {
		t.Error("attributes left in the translation")
	}
	if strings.Contains(cpp, "mslemu_thunk_commented_out") {
		t.Error("a kernel inside a comment was translated")
	}
}

func TestTranslateErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"threadgroup initializer", "kernel void k(device float* x [[buffer(0)]]) {\n  threadgroup float a[4] = {0};\n}\n", "x.metal:2"},
		{"scalar without attribute", "kernel void k(uint n) {\n}\n", "no [[buffer(n)]]"},
		{"function constant index", "constant bool b [[function_constant(99)]];\n", "0..63"},
		{"duplicate kernel", "kernel void k(device float* x [[buffer(0)]]) {}\nkernel void k(device float* x [[buffer(0)]]) {}\n", "also defined"},
		{"unsupported attribute", "kernel void k(float4 p [[position]]) {}\n", "[[position]]"},
		{"missing include", "#include \"nope.h\"\n", "nope.h"},
	}
	for _, c := range cases {
		_, err := Translate(Source{Name: "x.metal", Text: c.src}, func(string, string) (Source, error) { return Source{}, errors.New("not found") })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}
