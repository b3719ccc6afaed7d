package mslpp

import (
	"errors"
	"fmt"
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
		"using F = decltype(&k1);",
		"::mslemu::bind<::mslemu::arg_t<F, 3>>(bufs[1])",
		"::mslemu::bind<::mslemu::arg_t<F, 4>>(tgmem[0])",
		"::mslemu::builtin<::mslemu::arg_t<F, 5>>(c->tpig)",
		"::mslemu::builtin1<::mslemu::arg_t<F, 6>>(c->lane)",
		`mslemu_reg_0("k1", &mslemu_thunk_0, &mslemu_bind_constants, 0 + sizeof(float[32]), "s.metal", 8)`,
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
		{"texture", "kernel void k(texture2d<float> t [[texture(0)]]) {\n}\n", "x.metal:1: textures (texture2d)"},
		{"sampler", "#include <metal_stdlib>\nconstexpr sampler s(filter::linear);\n", "x.metal:2: samplers"},
		{"raytracing header", "#include <metal_raytracing>\n", "x.metal:1: #include <metal_raytracing>: ray tracing"},
		{"tensor", "kernel void k(device float* x [[buffer(0)]]) {\n  auto t = tensor<device float, dextents<int, 2>>(x, {});\n}\n", "x.metal:2: Metal 4 tensors"},
		{"vertex function", "vertex float4 vs(uint vid [[vertex_id]]) {\n}\n", "x.metal:1"},
		{"stage_in", "kernel void k(Foo f [[stage_in]]) {\n}\n", "[[stage_in]]"},
		{"unreadable cast", "kernel void k(device float4* x [[buffer(0)]]) {\n  x[0] = (float4);\n}\n", "x.metal:2: cast in C style, (float4)"},
		{"scalar without attribute", "kernel void k(uint n) {\n}\n", "no [[buffer(n)]]"},
		{"function constant index", "constant bool b [[function_constant(70000)]];\n", "0..65535"},
		{"function constant expression", "constant bool b [[function_constant(UNDEFINED_BASE + 1)]];\n", "UNDEFINED_BASE + 1"},
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

const templateSample = `#include <metal_stdlib>
#define instantiate_kernel(name, func, ...) \
  template [[host_name(                     \
      name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#define instantiate_scale(tname, type) instantiate_kernel("scale_" #tname, scale, type, 4)
#define CAT(a, b) a##b

template <typename T, int N, int WM = 2>
[[kernel, max_total_threads_per_threadgroup(WM * N * 8)]] void scale(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    uint gid [[thread_position_in_grid]]) {
  threadgroup T tile[N];
  out[gid] = in[gid];
}

template [[host_name("scale_f32")]] [[kernel]] decltype(scale<float, 2>) scale<float, 2>;
instantiate_scale(f16, half)
instantiate_kernel(
    "scale_wide", scale, float, 4, 4)
typedef decltype(scale<int, 8>) scale_t;
template [[host_name("scale_" "i32")]] kernel scale_t scale<int, 8>;
`

func TestTranslateTemplates(t *testing.T) {
	u, err := Translate(Source{Name: "t.metal", Text: templateSample}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name, Function string
		Line, Max      int
	}
	var got []entry
	for _, k := range u.Kernels {
		got = append(got, entry{k.Name, k.Function, k.Line, k.MaxThreads})
		if len(k.Params) != 3 || k.Params[2].Builtin != "thread_position_in_grid" {
			t.Errorf("%s: params %+v", k.Name, k.Params)
		}
	}
	want := []entry{
		{"scale_f32", "scale<float, 2>", 17, 32},
		{"scale_f16", "scale<half, 4>", 18, 64},
		{"scale_wide", "scale<float, 4, 4>", 19, 128},
		{"scale_i32", "scale<int, 8>", 22, 128},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instantiations:\n got %+v\nwant %+v", got, want)
	}
	for _, s := range []string{
		"using F = decltype(&scale<half, 4>);",
		`mslemu_reg_1("scale_f16", &mslemu_thunk_1`,
		// Template threadgroup arrays are counted when reached: their size
		// depends on the instantiation.
		"::mslemu::tg_array((void*)&tile, sizeof(tile), __FILE__, __LINE__, 1);",
	} {
		if !strings.Contains(u.CPP, s) {
			t.Errorf("translation lacks %q", s)
		}
	}
	if strings.Contains(u.CPP, "host_name") {
		t.Error("a host_name attribute split over lines was left in the translation")
	}
}

func TestTranslateThreadgroupStatements(t *testing.T) {
	src := "kernel void k(device float* x [[buffer(0)]]) {\n" +
		"  threadgroup float\n      a[4]\n      [2];\n" + // 2-4
		"  threadgroup uint c[2] = {1, 2}; x[0] = 1.5h;\n" + // 5
		"  { threadgroup float4 v[3]; }\n" + // 6
		"  threadgroup float s, t[8];\n" + // 7
		"  threadgroup float* p = t;\n" + // 8
		"}\n"
	u, err := Translate(Source{Name: "g.metal", Text: src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range u.Threadgroup {
		got = append(got, fmt.Sprintf("%s %s%s @%d in %s", a.Type, a.Name, a.Dims, a.Line, a.Kernel))
	}
	want := []string{"float a[4][2] @2 in k", "uint c[2] @5 in k", "float4 v[3] @6 in k", "float s @7 in k", "float t[8] @7 in k"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("threadgroup variables:\n got %q\nwant %q", got, want)
	}
	for _, s := range []string{
		"{ uint __mslemu_init_c[2] = {1, 2}; ::mslemu::tg_array_init((void*)&c, (const void*)&__mslemu_init_c, sizeof(c), __FILE__, __LINE__, 0); }",
		"x[0] = ((half)1.5f);",
		"  { static thread_local float4 v[3]; ::mslemu::tg_array((void*)&v, sizeof(v), __FILE__, __LINE__, 0);",
		"float* p = t;",
	} {
		if !strings.Contains(u.CPP, s) {
			t.Errorf("translation lacks %q:\n%s", s, u.CPP)
		}
	}
	// Line numbers survive: line 6 is still line 6.
	lines := strings.Split(u.CPP, "\n")
	for i, l := range lines {
		if strings.Contains(l, "float4 v[3]") && !strings.Contains(strings.Join(lines[:i], "\n"), "#line 1 \"g.metal\"") {
			t.Error("no #line marker before the rewritten lines")
		}
	}
	if n := strings.Count(strings.Join(lines[:len(lines)-1], "\n"), "\n"); n < 9 {
		t.Errorf("translation has %d lines before the entry points, want the source's 9 kept", n)
	}
}

func TestRewriteCasts(t *testing.T) {
	cases := []struct{ in, want string }{
		{"x = (float4)h4;", "x = float4(h4);"},
		{"x = (float4) src[i].yzw;", "x = float4(src[i].yzw);"},
		{"x = (half4)(a + b) * 2;", "x = half4((a + b)) * 2;"},
		{"x = (float2)(half2)y;", "x = float2(half2(y));"},
		{"x = (int2)-v.xy;", "x = int2(-v.xy);"},
		{"n = sizeof(float4) + f(float2);", "n = sizeof(float4) + f(float2);"},
		{"x = (float4)as_type<half4>(u);", "x = float4(as_type<half4>(u));"},
		{"y[i] = (T) (v * 2);", "y[i] = ::mslemu::cast<T>((v * 2));"},
		{"reg = (type4)(*src);", "reg = ::mslemu::cast<type4>((*src));"},
		{"void f(T);", "void f(T);"},
		{"x = (U)y;", "x = (U)y;"},
	}
	for _, c := range cases {
		got, err := rewriteCasts(c.in, c.in, map[string]bool{"T": true, "type4": true}, "::mslemu::cast")
		if err != nil || got != c.want {
			t.Errorf("rewriteCasts(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestMacroExpand(t *testing.T) {
	m := macroTable{}
	m.define(`#define STR(x) #x`)
	m.define(`#define CAT(a, b) a##b`)
	m.define(`#define TWICE(f, ...) f(__VA_ARGS__) f(__VA_ARGS__)`)
	m.define(`#define N 4`)
	for in, want := range map[string]string{
		`STR(abc)`:              `"abc"`,
		`CAT(foo, N)`:           `fooN`,
		`TWICE(g, N, 2)`:        `g(4, 2) g(4, 2)`,
		`k<N>`:                  `k<4>`,
		`"N stays" N`:           `"N stays" 4`,
		`TWICE(STR, CAT(a, b))`: `"ab" "ab"`,
	} {
		if got := m.expand(in, 0, nil); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFunctionConstantExpressionIndex(t *testing.T) {
	src := "#define FC_BASE 300\nconstant short nsg [[function_constant(FC_BASE + 2)]];\nconstant bool flag [[function_constant(7)]];\n"
	u, err := Translate(Source{Name: "f.metal", Text: src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []FunctionConstant{{Name: "nsg", Type: "short", Index: 302, Slot: 0, File: "f.metal", Line: 2}, {Name: "flag", Type: "bool", Index: 7, Slot: 1, File: "f.metal", Line: 3}}
	if !reflect.DeepEqual(u.Constants, want) {
		t.Errorf("constants = %+v, want %+v", u.Constants, want)
	}
}

func TestEvalInt(t *testing.T) {
	vars := map[string]string{"WM": "2", "WN": "4", "T": "float"}
	for in, want := range map[string]int{"256": 256, "WM * WN * 32": 256, "(WM + 2) * 8": 32, "T": 0, "WM / 0": 0, "64 - 2 * 8": 48} {
		if got := evalInt(in, vars); got != want {
			t.Errorf("evalInt(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestUnsupportedWrapsSentinels(t *testing.T) {
	_, err := Translate(Source{Name: "u.metal", Text: "#include <metal_stdlib>\n\nkernel void k(texture2d<half> t [[texture(0)]]) {}\n"}, nil)
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, ErrSyntax) {
		t.Fatalf("err = %v, want ErrUnsupported, errors.ErrUnsupported and ErrSyntax", err)
	}
	if !strings.Contains(err.Error(), "u.metal:3: textures (texture2d)") {
		t.Errorf("err = %v, want it to name u.metal:3 and the feature", err)
	}
}
