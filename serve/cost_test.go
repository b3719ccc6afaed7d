package serve

import (
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
