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
