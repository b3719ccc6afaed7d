package serve

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/laya-metal/laya"
)

// fourQuestions is a request of four question rows.
const fourQuestions = `{"state": "I was billed twice, please refund me", "questions": {
	"a": {"type": "noul", "instructions": "Refund?"}, "b": {"type": "noul", "instructions": "Angry?"},
	"c": {"type": "noul", "instructions": "Billing?"}, "d": {"type": "noul", "instructions": "Urgent?"}}}`

// TestPassesMeetDeadlines: requests that one pass cannot answer in time are split
// into passes that can, earliest deadline first, and one that cannot finish at all
// is answered 504 at once. With a model taking 150 ms a request and a 700 ms budget,
// 8 requests in one pass (1.2 s) all timed out before; now about four are answered.
func TestPassesMeetDeadlines(t *testing.T) {
	f := newFake(t)
	f.fail = func(n int) error {
		time.Sleep(time.Duration(n) * 150 * time.Millisecond)
		return nil
	}
	ts := startServer(t, f, func(c *Config) {
		c.BatchWindow, c.BatchMax, c.RequestTimeout = 50*time.Millisecond, 16, 700*time.Millisecond
	})
	if r := post(t, ts.url+"/v1/systemone", fourQuestions); r.status != 200 { // the first pass teaches the rate
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = post(t, ts.url+"/v1/systemone", fourQuestions).status
		}()
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 504:
		default:
			t.Errorf("status %d, want 200 or 504", s)
		}
	}
	f.mu.Lock()
	passes := append([]int(nil), f.passes...)
	f.mu.Unlock()
	if ok < 3 {
		t.Errorf("%d of 8 answered within the budget (passes %v), want at least 3", ok, passes)
	}
	for _, n := range passes {
		if n > 5 {
			t.Errorf("a pass of %d requests (%v): %d × 150 ms cannot meet a 700 ms budget", n, passes, n)
		}
	}
}

// TestPassCostCap: a pass holds at most BatchMaxTokens of estimated tokens × rows,
// so long states make small passes (and bounded memory) while short ones still
// batch together.
func TestPassCostCap(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	long := `{"state": "` + strings.Repeat("refund me please ", 600) + `", "questions": {"q": {"type": "noul", "instructions": "Refund?"}}}`
	req, err := laya.ParseRequest([]byte(long))
	if err != nil {
		t.Fatal(err)
	}
	one := jobCost(req)
	if one < 1000 {
		t.Fatalf("a 10,000-character state costs %d, want ≥ 1000 tokens", one)
	}
	ts := startServer(t, f, func(c *Config) {
		c.BatchWindow, c.BatchMax, c.BatchMaxTokens = 200*time.Millisecond, 16, 2*one
	})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := post(t, ts.url+"/v1/systemone", long); r.status != 200 {
				t.Errorf("long state: %d %s", r.status, r.body)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	close(f.gate)
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.passes) < 3 {
		t.Errorf("passes %v: 6 long states under a cap of 2 need at least 3", f.passes)
	}
	for _, n := range f.passes {
		if n > 2 {
			t.Errorf("a pass of %d long states (%v) over a cap of two", n, f.passes)
		}
	}
}

// TestPlan: passes end before their earliest deadline by the estimate; a request
// that cannot finish alone is refused only on a measured rate, never on the warm-up's
// seed (whose fixed costs overstate long requests: that refused everything once).
func TestPlan(t *testing.T) {
	now := time.Now()
	jobs := func() []*job {
		var js []*job
		for i, d := range []time.Duration{4, 1, 3, 2} { // seconds, out of order
			js = append(js, &job{cost: 100, deadline: now.Add(d * time.Second), req: laya.Request{MaxLen: i + 1}})
		}
		return js
	}
	shape := func(passes [][]*job) (out [][]int) {
		for _, p := range passes {
			var ids []int
			for _, j := range p {
				ids = append(ids, j.req.MaxLen)
			}
			out = append(out, ids)
		}
		return out
	}
	for _, tt := range []struct {
		name     string
		perCost  time.Duration // per unit of cost (estimates add a quarter)
		measured bool
		passes   string
		late     int
	}{
		{"no rate: one pass", 0, false, "[[2 4 3 1]]", 0},
		{"fast: one pass", time.Millisecond, true, "[[2 4 3 1]]", 0},
		// 0.625 s a request with the quarter: 2 alone (two would end at 1.25 > 1 s),
		// then 4 and 3 by 1.875 s (< 2 s), then 1 by 2.5 s.
		{"measured 0.5 s", 5 * time.Millisecond, true, "[[2] [4 3] [1]]", 0},
		// 1.25 s a request: 2 cannot end by 1 s; 4 by 1.25, 3 by 2.5, 1 by 3.75.
		{"measured 1 s", 10 * time.Millisecond, true, "[[4] [3] [1]]", 1},
		{"seeded 1 s", 10 * time.Millisecond, false, "[[2] [4] [3] [1]]", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &batcher{}
			if tt.perCost > 0 {
				b.rates.observe("m", 1, tt.perCost, tt.measured)
			}
			passes, late := b.plan("m", jobs(), now)
			if got := fmt.Sprint(shape(passes)); got != tt.passes || len(late) != tt.late {
				t.Errorf("passes %s, %d late; want %s, %d late", got, len(late), tt.passes, tt.late)
			}
		})
	}
}
