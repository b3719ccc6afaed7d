package snake

import (
	"context"
	"sync"
	"time"
)

// tickContext is the context one decision runs under. context.WithDeadline would
// allocate a context and a timer every tick; the loop instead keeps one tickContext per
// request slot and re-arms it, replacing its done channel only after a cancellation
// (a deadline miss), so a tick that meets its deadline allocates nothing.
//
// The loop enforces the deadline itself (its own timer) and cancels through cancel;
// Deadline only tells the model how long it has. Value defers to the run's context.
type tickContext struct {
	parent   context.Context
	mu       sync.Mutex
	done     chan struct{}
	err      error
	deadline time.Time
}

func newTickContext() *tickContext {
	return &tickContext{parent: context.Background(), done: make(chan struct{})}
}

// arm prepares the context for a new request. Only the loop calls it, and only while no
// request runs under the context.
func (c *tickContext) arm(parent context.Context, deadline time.Time) {
	c.mu.Lock()
	if c.err != nil {
		c.done = make(chan struct{})
		c.err = nil
	}
	c.parent, c.deadline = parent, deadline
	c.mu.Unlock()
}

// cancel ends the current request with err (context.DeadlineExceeded or
// context.Canceled); later calls do nothing.
func (c *tickContext) cancel(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
	c.mu.Unlock()
}

func (c *tickContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, !c.deadline.IsZero()
}

func (c *tickContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *tickContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *tickContext) Value(key any) any {
	c.mu.Lock()
	p := c.parent
	c.mu.Unlock()
	return p.Value(key)
}
