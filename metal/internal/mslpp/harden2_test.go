package mslpp

import (
	"errors"
	"strings"
	"testing"
)

// memIncluder serves includes from a map, keyed by the name as written.
func memIncluder(files map[string]string) Includer {
	return func(from, name string) (Source, error) {
		if t, ok := files[name]; ok {
			return Source{Name: name, Text: t}, nil
		}
		return Source{}, errors.New("not found")
	}
}

func TestPragmaOnce(t *testing.T) {
	files := map[string]string{
		"a.h": "#pragma once\nstruct only_once {};\n",
		"b.h": "#pragma once\n#include \"a.h\"\nstruct from_b {};\n",
		"c.h": "struct twice {};\n", // no pragma: included as often as asked
	}
	src := "#include \"b.h\"\n#include \"a.h\"\n#include \"c.h\"\n#include \"c.h\"\n#include \"b.h\"\n"
	u, err := Translate(Source{Name: "x.metal", Text: src}, memIncluder(files))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		n    int
	}{{"struct only_once", 1}, {"struct from_b", 1}, {"struct twice", 2}} {
		if got := strings.Count(u.CPP, c.text); got != c.n {
			t.Errorf("%q appears %d times, want %d", c.text, got, c.n)
		}
	}
}

func TestAddressSpaceQualifiedMembers(t *testing.T) {
	src := `struct C {
  float re;
  template <typename T, typename = typename enable_if<true>::type>
  constexpr C(T x) thread : re(x) {}
  template <typename T, typename = typename enable_if<true>::type>
  constexpr C(T x) device : re(x) {}
  template <typename T>
  constexpr operator T() const thread { return T(re); }
  template <typename T>
  constexpr operator T() const constant { return T(re); }
  float get() device const { return re; }
};
struct D {
  float v;
  template <typename T>
  constexpr operator T() const thread { return T(v); }
};
`
	u, err := Translate(Source{Name: "x.metal", Text: src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		n    int
	}{
		{"constexpr C(T x)", 1},
		{"operator T() const", 2}, // one in C, one in D
		{"float get()", 1},
		{") thread", 0}, {") device", 0}, {") const thread", 0}, {") const constant", 0},
	} {
		if got := strings.Count(u.CPP, c.text); got != c.n {
			t.Errorf("%q appears %d times in\n%s\nwant %d", c.text, got, u.CPP, c.n)
		}
	}
}

func TestArrayParamsAndSpelledOutInstantiation(t *testing.T) {
	src := `template <typename T, int DIM>
[[kernel]] void g(
    device const T* a,
    device T* c,
    constant const int shape[DIM],
    constant const size_t strides[2][DIM],
    uint3 index [[thread_position_in_grid]]) {
}
#define inst(name, T, DIM) \
  template [[host_name(name "_" #DIM)]] [[kernel]] void g<T, DIM>( \
      device const T* a, device T* c, constant const int shape[DIM], \
      constant const size_t strides[2][DIM], uint3 index [[thread_position_in_grid]]);
inst("g_f32", float, 3)
`
	u, err := Translate(Source{Name: "x.metal", Text: src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Kernels) != 1 {
		t.Fatalf("kernels = %+v, want one", u.Kernels)
	}
	k := u.Kernels[0]
	if k.Name != "g_f32_3" || k.Function != "g<float, 3>" {
		t.Errorf("kernel %q calls %q, want g_f32_3 calling g<float, 3>", k.Name, k.Function)
	}
	for i, want := range []struct {
		name string
		idx  int
	}{{"a", 0}, {"c", 1}, {"shape", 2}, {"strides", 3}} {
		if p := k.Params[i]; p.Name != want.name || p.Kind != Buffer || p.Index != want.idx {
			t.Errorf("param %d = %+v, want buffer(%d) %s", i, p, want.idx, want.name)
		}
	}
}

func TestConditionals(t *testing.T) {
	src := `#ifndef HEADER_GUARD
#define HEADER_GUARD
kernel void always(device float* x [[buffer(0)]]) {}
#if defined(HAS_A) && \
    HAS_A > 1
kernel void k(device float* x [[buffer(0)]]) {}
#elif defined(HAS_B)
kernel void k(device int* x [[buffer(0)]]) {}
#else
#ifdef HAS_TEX
kernel void tex(texture2d<float> t [[texture(0)]]) {}
#include <metal_texture>
#include "missing.h"
#endif
kernel void k(device uint* x [[buffer(0)]]) {}
#endif
#endif
`
	u, err := Translate(Source{Name: "x.metal", Text: src}, memIncluder(nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range u.Kernels {
		got = append(got, k.Name+"|"+k.Guard)
	}
	want := []string{
		"always|",
		"k|#if defined(HAS_A) && HAS_A > 1\n",
		"k|#if defined(HAS_A) && HAS_A > 1\n#elif defined(HAS_B)\n",
		"k|#if defined(HAS_A) && HAS_A > 1\n#elif defined(HAS_B)\n#else\n",
	}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("kernels and guards:\n%q\nwant\n%q", got, want)
	}
	// What the emulator lacks, inside a block, becomes an #error there.
	for _, w := range []string{"#error \"textures (texture2d)", "#error \"#include <metal_texture>: textures", "#error \"x.metal:13: #include \\\"missing.h\\\""} {
		if !strings.Contains(u.CPP, w) {
			t.Errorf("CPP lacks %q:\n%s", w, u.CPP)
		}
	}
	// Each entry point sits inside its kernel's blocks.
	if n := strings.Count(u.CPP, "#elif defined(HAS_B)\nstatic void mslemu_thunk_2("); n != 1 {
		t.Errorf("the HAS_B kernel's entry point is not guarded:\n%s", u.CPP)
	}
	// Outside any block the same things are errors at once.
	for _, bad := range []string{
		"kernel void tex(texture2d<float> t [[texture(0)]]) {}\n",
		"#include <metal_texture>\n",
		"#ifndef G\n#define G\n#include <metal_logging>\n#endif\n",
	} {
		if _, err := Translate(Source{Name: "x.metal", Text: bad}, nil); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err = %v, want ErrSyntax", bad, err)
		}
	}
}
