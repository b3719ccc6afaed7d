package serve

import (
	"runtime"
	"strings"
	"testing"
)

// TestLargeStateOverHTTP posts a state of nearly 2 MiB (the body limit) to /v1/predict,
// with the state limit raised past it, and bounds the bytes the whole process allocates while
// answering it: an upper bound of what it adds to the heap at its peak. Serialising and
// tokenizing the whole state before truncating it took 360 MB of RSS for a 7.4 MB state.
func TestLargeStateOverHTTP(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) { c.Limits.StateChars = 4 << 20 })
	text := strings.Repeat("I was billed twice for March on invoice 4411, please refund it. ", (2<<20-512)/64)
	for name, state := range map[string]string{
		"text":   `"` + text + `"`,
		"object": `{"subject": "refund", "body": "` + text + `"}`,
		"list":   `["hello", "` + text + `"]`,
	} {
		body := `{"state": ` + state + `, "questions": {"refund": {"type": "noul", "instructions": "Money back?"}}}`
		if len(body) > 2<<20 {
			t.Fatalf("%s: body of %d bytes is over the limit", name, len(body))
		}
		post(t, ts.url+"/v1/predict", body) // warm
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := post(t, ts.url+"/v1/predict", body)
		runtime.ReadMemStats(&after)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d-byte body, %.1f MB allocated by client and server", name, len(body), float64(allocated)/(1<<20))
		if allocated > 64<<20 {
			t.Errorf("%s: %d MB allocated answering a 2 MiB state, want ≤ 64 MB", name, allocated>>20)
		}
	}
}
