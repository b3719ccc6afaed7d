package router

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laya-metal/laya"
)

// fakeModel stands in for an Agent: routing and residency need no network.
type fakeModel struct {
	name   string
	closed atomic.Bool
	calls  atomic.Int32
	block  chan struct{} // if set, Predict waits on it
}

func (m *fakeModel) Predict(ctx context.Context, s laya.State, q laya.Questions) (*laya.Result, error) {
	m.calls.Add(1)
	if m.block != nil {
		<-m.block
	}
	if m.closed.Load() {
		return nil, errors.New("predict on a closed model")
	}
	return &laya.Result{}, nil
}

func (m *fakeModel) Close() error { m.closed.Store(true); return nil }

type fakeLoader struct {
	mu     sync.Mutex
	loads  map[string]int
	models map[string]*fakeModel
	delay  time.Duration
	fail   map[string]error
}

func newFakeLoader() *fakeLoader {
	return &fakeLoader{loads: map[string]int{}, models: map[string]*fakeModel{}, fail: map[string]error{}}
}

func (l *fakeLoader) load(ctx context.Context, name, ref string) (laya.Predictor, error) {
	time.Sleep(l.delay)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loads[name]++
	if err := l.fail[name]; err != nil {
		return nil, err
	}
	m := &fakeModel{name: name + "@" + ref}
	l.models[name] = m
	return m, nil
}

func mustRouter(t *testing.T, opts ...Option) *Router {
	t.Helper()
	r, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRouterPredictConcurrent(t *testing.T) {
	fl := newFakeLoader()
	fl.delay = 20 * time.Millisecond
	r := mustRouter(t, WithLoader(fl.load))
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("Is it urgent?")}}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			state := laya.Text("I was charged twice for my order, please help.")
			if i%2 == 1 {
				state = laya.Text("我的订单还没有到，请帮我查一下。")
			}
			res, err := r.Predict(context.Background(), state, qs, RouteOptions{})
			if err != nil {
				errs <- err
				return
			}
			want := map[bool]string{false: "english", true: "multilingual"}[i%2 == 1]
			if res.Routing.Model != want {
				errs <- errors.New("routed to " + res.Routing.Model)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if fl.loads["english"] != 1 || fl.loads["multilingual"] != 1 {
		t.Errorf("concurrent first requests loaded %v, want one load per model", fl.loads)
	}
}
