package router

import (
	"testing"

	"github.com/laya-metal/laya/lang"
)

// The language a routed request is calibrated for (moved from the root's
// lang_temperature_test.go with the router).
func TestRequestLang(t *testing.T) {
	de := &lang.Analysis{Language: "de"}
	en := &lang.Analysis{Language: "en"}
	for _, tc := range []struct {
		opts     RouteOptions
		decision Decision
		want     string
	}{
		{RouteOptions{Lang: "pt-BR"}, Decision{Detection: de}, "pt-BR"},
		{RouteOptions{}, Decision{Detection: de}, "de"},
		{RouteOptions{}, Decision{Detection: en}, ""},
		{RouteOptions{Lang: "en"}, Decision{Detection: en}, "en"},
		{RouteOptions{Lang: "  "}, Decision{}, ""},
	} {
		if got := requestLang(tc.opts, tc.decision); got != tc.want {
			t.Errorf("requestLang(%+v, %+v) = %q, want %q", tc.opts, tc.decision.Detection, got, tc.want)
		}
	}
}
