package mslpp

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// strictHead opens every strictness case: line 1 and 2, so a case's
// offending line is 3 + its line in body.
const strictHead = "#include <metal_stdlib>\nusing namespace metal;\n"

// Each construct Apple's Metal compiler rejects and clang accepts as C++
// is refused with its file:line and the specification section.
func TestStrictnessGateRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		line       int
		want       string
	}{
		{"double", "kernel void k(device float* y [[buffer(0)]]) {\n  double acc = 0;\n  y[0] = acc;\n}\n", 4, "§2.1 Scalar Data Types"},
		{"recursion", "float f(float x) {\n  return x < 1 ? x : f(x / 2);\n}\nkernel void k(device float* y [[buffer(0)]]) { y[0] = f(y[0]); }\n", 4, "recursive call of f"},
		{"function pointer", "kernel void k(device float* y [[buffer(0)]]) {\n  float (*op)(float) = nullptr;\n}\n", 4, "function pointers"},
		{"virtual", "struct S {\n  virtual float get() const thread { return 1; }\n};\n", 4, "virtual functions"},
		{"exceptions", "kernel void k(device float* y [[buffer(0)]]) {\n  if (y[0] < 0) throw 1;\n}\n", 4, "exception handling"},
		{"try", "kernel void k(device float* y [[buffer(0)]]) {\n  try { y[0] = 1; } catch (...) {}\n}\n", 4, "exception handling"},
		{"std", "kernel void k(device float* y [[buffer(0)]]) {\n  y[0] = std::max(y[0], 0.0f);\n}\n", 4, "std::"},
		{"lambda", "kernel void k(device float* y [[buffer(0)]]) {\n  auto sq = [](float v) { return v * v; };\n  y[0] = sq(y[0]);\n}\n", 4, "lambda expressions"},
		{"size_t builtin", "kernel void k(device float* y [[buffer(0)]],\n              size_t gid [[thread_position_in_grid]]) {\n  y[gid] = 0;\n}\n", 3, "parameter gid [[thread_position_in_grid]] has type size_t"},
		{"pointer without address space", "kernel void k(float* y [[buffer(0)]]) {\n  y[0] = 0;\n}\n", 3, "pointer parameter y has no address space"},
		{"new", "kernel void k(device float* y [[buffer(0)]]) {\n  thread float* p = new float[4];\n}\n", 4, "new and delete"},
		{"delete", "kernel void k(device float* y [[buffer(0)]]) {\n  thread float* p = nullptr;\n  delete p;\n}\n", 5, "new and delete"},
		{"variable-length array (parameter)", "kernel void k(device float* y [[buffer(0)]], constant uint& n [[buffer(1)]]) {\n  float acc[n];\n  y[0] = acc[0];\n}\n", 4, "array acc[n] sized at run time"},
		{"variable-length array (local)", "kernel void k(device float* y [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {\n  uint count = lane + 1;\n  float acc[count];\n  y[0] = acc[0];\n}\n", 5, "array acc[count] sized at run time"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Translate(Source{Name: "x.metal", Text: strictHead + tt.body}, nil)
			if !errors.Is(err, ErrNotMSL) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v, want ErrNotMSL", err)
			}
			for _, w := range []string{"x.metal:" + strconv.Itoa(tt.line) + ":", tt.want, "MSL spec §"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// What looks like those constructs but is MSL passes: size_t in a buffer
// reference (MLX), "= delete", a function pointer as a template parameter
// (ggml), conversion operators and overloads calling through other
// names, words that start like a keyword, arrays sized by constants and
// template parameters, and the constructs only in comments or strings.
func TestStrictnessGateAccepts(t *testing.T) {
	src := strictHead + `constant uint tile = 16;
#define ROWS 4
struct C {
  float re;
  C(const thread C&) = delete;
  constexpr operator float() const thread { return float(re); }
};
template <typename T, int N, void (*op)(thread T&)>
void apply(thread T* v) { for (int i = 0; i < N; i++) op(v[i]); }
inline float twice(float x) { return metal::fma(x, 2.0f, 0.0f); }
template <int N> float sum(thread const float* a) { float s = 0; for (int i = 0; i < N; i++) s += a[i]; return s; }
// double, std::max, virtual, throw, new: only in a comment.
kernel void k(device float* y [[buffer(0)]],
              const constant size_t& n [[buffer(1)]],
              const uint2 gid [[thread_position_in_grid]],
              ushort lane [[thread_index_in_simdgroup]]) {
  const uint count = 8;
  float acc[tile];
  float more[ROWS * 2];
  float last[count];
  float new_max = twice(y[0]);
  acc[0] = new_max + more[0] + last[0] + sum<4>(acc);
  y[gid.x] = acc[lane % tile];
}
`
	if _, err := Translate(Source{Name: "ok.metal", Text: src}, nil); err != nil {
		t.Fatal(err)
	}
}
