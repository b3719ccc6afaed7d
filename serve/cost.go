package serve

import (
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/laya-metal/laya"
)

// Passes by cost. A request's cost is its question rows times the tokens of one row
// (the state and its question, estimated from their characters and capped at the
// token window): what a forward pass's time and activation memory grow with. The
// dispatcher
//
//   - gathers a pass until BatchMax requests or BatchMaxTokens of cost, whichever
//     comes first (a request over the cost cap alone runs alone), so a pass of long
//     states is small and its memory bounded;
//   - learns each checkpoint's seconds per unit of cost from the passes it ran, and
//     never starts a pass it expects to outlast the earliest deadline in it: the
//     requests are taken earliest deadline first and the pass stops growing where
//     the estimate would cross a deadline; a request that cannot finish even alone
//     gets its 504 at once instead of holding a pass that would fail everyone.

// rowWindow caps the tokens counted for one row when the request sets no max_len:
// checkpoints truncate longer states to their window (512 or 1,024 by default).
const rowWindow = 1024

// charsPerToken is a conservative estimate for the tokenizers served (more tokens
// than characters/4 for most text).
const charsPerToken = 3

// jobCost estimates a request's tokens × rows.
func jobCost(req laya.Request) int {
	stateChars := utf8.RuneCountInString(req.State.Serialize())
	window := rowWindow
	if req.MaxLen > 0 {
		window = req.MaxLen
	}
	rows, cost := 0, 0
	for _, q := range req.Questions {
		tokens := (stateChars+len(q.Definition.String()))/charsPerToken + 8
		cost += min(tokens, window)
		rows++
	}
	if rows == 0 {
		return min(stateChars/charsPerToken+8, window)
	}
	return cost
}

// passRates keeps each checkpoint's seconds per unit of cost: an exponentially
// weighted mean over its passes. The warm-up pass seeds it; a seed only splits
// passes (a tiny pass's fixed costs make its rate far too high for long requests)
// and never refuses a request, which takes a rate measured on requests' own passes.
type passRates struct {
	mu sync.Mutex
	m  map[string]rate
}

type rate struct {
	perCost  float64 // seconds
	measured bool    // from a pass of requests, not the warm-up seed
}

func (p *passRates) observe(key string, cost int, d time.Duration, measured bool) {
	if cost <= 0 || d <= 0 {
		return
	}
	r := rate{perCost: d.Seconds() / float64(cost), measured: measured}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]rate{}
	}
	if old, ok := p.m[key]; ok && old.measured && measured {
		r.perCost = 0.7*old.perCost + 0.3*r.perCost
	} else if ok && old.measured {
		return // a seed does not overwrite a measurement
	}
	p.m[key] = r
}

// measured reports whether key's rate comes from its requests' passes.
func (p *passRates) measured(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[key].measured
}

// estimate is how long a pass of cost is expected to take on key (0: no pass seen),
// with a quarter added: a pass planned to end just at a deadline misses it as often
// as not, and then every request in it fails.
func (p *passRates) estimate(key string, cost int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Duration(1.25 * p.m[key].perCost * float64(cost) * float64(time.Second))
}

// plan splits one checkpoint's group into passes run one after another: earliest
// deadline first, each ending (by the estimate) before the earliest deadline in it.
// Requests that cannot finish even alone after the passes before them come back in
// late (only once the rate is measured). With no rate yet the group is one pass.
func (b *batcher) plan(key string, group []*job, now time.Time) (passes [][]*job, late []*job) {
	slices.SortStableFunc(group, func(x, y *job) int { return x.deadline.Compare(y.deadline) })
	start := now
	refuse := b.rates.measured(key)
	var pass []*job
	cost := 0
	flush := func() {
		if len(pass) > 0 {
			passes = append(passes, pass)
			start = start.Add(b.rates.estimate(key, cost))
			pass, cost = nil, 0
		}
	}
	for _, j := range group {
		// Sorted: pass[0] holds the pass's earliest deadline.
		if len(pass) > 0 && start.Add(b.rates.estimate(key, cost+j.cost)).After(pass[0].deadline) {
			flush()
		}
		if refuse && len(pass) == 0 && start.Add(b.rates.estimate(key, j.cost)).After(j.deadline) {
			late = append(late, j)
			continue
		}
		pass, cost = append(pass, j), cost+j.cost
	}
	flush()
	return passes, late
}
