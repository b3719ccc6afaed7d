package metal

import "testing"

// Labels come on by themselves when validation is asked for, so that the
// validation layer's messages name the operation.
func TestLabelsFromEnv(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"LAYA_METAL_LABELS": "1"}, true},
		{map[string]string{"MTL_SHADER_VALIDATION": "1"}, true},
		{map[string]string{"MTL_DEBUG_LAYER": "1"}, true},
		{map[string]string{"MTL_DEBUG_LAYER": "0", "LAYA_METAL_LABELS": "0"}, false},
	} {
		if got := labelsFromEnv(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("labelsFromEnv(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}

// A system device's fingerprint changes with anything that changes its
// compiled kernels: a self-test passed under one does not speak for
// another.
func TestSystemFingerprint(t *testing.T) {
	files := map[string]string{"kernels/a.metal": "kernel void a() {}", "kernels/h.h": "#define X 1"}
	base := systemFingerprint("Apple M1", 0x100, files, DefaultMSLVersion, MathSafe)
	if base != systemFingerprint("Apple M1", 0x100, map[string]string{"kernels/h.h": "#define X 1", "kernels/a.metal": "kernel void a() {}"}, DefaultMSLVersion, MathSafe) {
		t.Error("the fingerprint depends on map order")
	}
	for name, fp := range map[string]string{
		"another GPU":    systemFingerprint("Apple M1", 0x101, files, DefaultMSLVersion, MathSafe),
		"another source": systemFingerprint("Apple M1", 0x100, map[string]string{"kernels/a.metal": "kernel void a() { }", "kernels/h.h": "#define X 1"}, DefaultMSLVersion, MathSafe),
		"a renamed file": systemFingerprint("Apple M1", 0x100, map[string]string{"kernels/b.metal": "kernel void a() {}", "kernels/h.h": "#define X 1"}, DefaultMSLVersion, MathSafe),
		"relaxed math":   systemFingerprint("Apple M1", 0x100, files, DefaultMSLVersion, MathRelaxed),
		"MSL 3.2":        systemFingerprint("Apple M1", 0x100, files, MSLVersion{3, 2}, MathSafe),
	} {
		if fp == base {
			t.Errorf("%s: same fingerprint", name)
		}
	}
}
