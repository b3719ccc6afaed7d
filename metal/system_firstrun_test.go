package metal

import (
	"errors"
	"strings"
	"testing"
)

// Linux-run tests of the logic behind the darwin first-run checks.

func TestCheckMathMode(t *testing.T) {
	for _, tt := range []struct {
		mode    MathMode
		wantErr string
	}{
		{MathSafe, ""}, {MathRelaxed, ""},
		{MathFast, "-INFINITY"},
		{MathMode(7), "unknown math mode MathMode(7)"},
	} {
		err := checkMathMode(tt.mode)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.mode, err)
			}
			continue
		}
		if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: err = %v, want ErrShaderCompile containing %q", tt.mode, err, tt.wantErr)
		}
	}
	if wantFPFunctions(MathSafe) != FPFunctionsPrecise || wantFPFunctions(MathRelaxed) != FPFunctionsFast {
		t.Error("safe math must ask for precise functions, relaxed for Metal's default")
	}
	for f, want := range map[FPFunctions]string{FPFunctionsFast: "fast", FPFunctionsPrecise: "precise", FPFunctionsUnavailable: "n/a", 5: "FPFunctions(5)"} {
		if f.String() != want {
			t.Errorf("FPFunctions(%d) = %q, want %q", int(f), f.String(), want)
		}
	}
}

func TestAppleFamily(t *testing.T) {
	upTo := func(n int) func(int) bool {
		return func(f int) bool { return f >= 1001 && f <= 1000+n }
	}
	tests := []struct {
		name     string
		supports func(int) bool
		want     int
		wantErr  string
	}{
		{"M3 (Apple9)", upTo(9), 9, ""},
		{"M1 (Apple7)", upTo(7), 7, ""},
		{"A13 (Apple6)", upTo(6), 6, "supports GPU family Apple6; the kernels need Apple7"},
		{"Intel Mac (no Apple family)", func(int) bool { return false }, 0, "not an Apple-family GPU (an Intel Mac?)"},
		{"the newest family probed", upTo(11), 10, ""},
	}
	for _, tt := range tests {
		got := appleFamily(tt.supports)
		if got != tt.want {
			t.Errorf("%s: appleFamily = %d, want %d", tt.name, got, tt.want)
		}
		err := checkAppleFamily("GPU", got)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		} else if !errors.Is(err, ErrNoMetal) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "cpu backend") {
			t.Errorf("%s: err = %v, want ErrNoMetal containing %q and the way out", tt.name, err, tt.wantErr)
		}
	}
}

func TestInvalidUTF8At(t *testing.T) {
	for s, want := range map[string]int{"": -1, "kernel": -1, "caf\u00e9": -1, "caf\xe9": 3, "ok\xff\xfe": 2, "\ufffd literal": -1} {
		if got := invalidUTF8At(s); got != want {
			t.Errorf("invalidUTF8At(%q) = %d, want %d", s, got, want)
		}
	}
}

// scripts/maccheck/mac-check.sh greps this line out of the test log: its shape is
// part of the report format.
func TestSystemInfoLine(t *testing.T) {
	info := SystemInfo{Name: "Apple M3 Max", AppleFamily: 9, LanguageVersion: MSLVersion{3, 1}, MathMode: MathSafe,
		FPFunctions: FPFunctionsPrecise, PageSize: 16384, MaxThreadgroupMemory: 32768, MaxBufferLength: 1 << 30,
		UnifiedMemory: true, RecommendedWorkingSet: 1 << 34}
	want := `metal-device name="Apple M3 Max" family=apple9 msl=3.1 math=safe fp-functions=precise page=16384 tg-memory=32768 max-buffer=1073741824 unified-memory=true working-set=17179869184`
	if got := info.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
