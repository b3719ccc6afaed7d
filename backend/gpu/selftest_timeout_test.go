package gpu

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The registered openers take no context; WithSelfTestTimeout is where
// their self-test gets its bound, so a hung GPU is refused rather than
// waited for, and the context's timer does not outlive the open.
func TestWithSelfTestTimeout(t *testing.T) {
	errOpen := errors.New("open failed")
	want := &Backend{}
	for _, c := range []struct {
		name string
		b    *Backend
		err  error
	}{{"ok", want, nil}, {"error", nil, errOpen}} {
		var seen context.Context
		start := time.Now()
		b, err := WithSelfTestTimeout(func(ctx context.Context) (*Backend, error) {
			seen = ctx
			return c.b, c.err
		})
		if b != c.b || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: got (%p, %v), want open's (%p, %v)", c.name, b, err, c.b, c.err)
		}
		end := time.Now()
		deadline, ok := seen.Deadline()
		if !ok || deadline.Before(start.Add(SelfTestTimeout)) || deadline.After(end.Add(SelfTestTimeout)) {
			t.Errorf("%s: open's context has deadline %v after the call (set %v), want %v", c.name, deadline.Sub(start), ok, SelfTestTimeout)
		}
		if !errors.Is(seen.Err(), context.Canceled) {
			t.Errorf("%s: open's context after the call: %v, want it canceled", c.name, seen.Err())
		}
	}
}
