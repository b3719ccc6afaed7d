// Package phase lets a benchmark see where a request's host time goes: a
// caller puts a Times in the request's context, and the agent adds the time
// of each phase of the request to it. Without one the agent only looks for
// it.
package phase

import (
	"context"
	"time"
)

// Times is the time a request spent in each phase, added up over the
// requests that carried it. It is not safe for concurrent use: one request
// at a time.
type Times struct {
	Parse    time.Duration // the request's JSON into a state and questions
	Prepare  time.Duration // validating the questions and tokenizing their rows
	Forward  time.Duration // the network: recording, running (the device's time included) and reading back
	Assemble time.Duration // the answers from the network's outputs
}

type key struct{}

// With returns ctx carrying t.
func With(ctx context.Context, t *Times) context.Context { return context.WithValue(ctx, key{}, t) }

// From returns the Times ctx carries, or nil.
func From(ctx context.Context) *Times {
	t, _ := ctx.Value(key{}).(*Times)
	return t
}

// Add adds the time since start to *d (one of t's fields) and returns now,
// the next phase's start.
func (t *Times) Add(d *time.Duration, start time.Time) time.Time {
	now := time.Now()
	*d += now.Sub(start)
	return now
}

// Start is time.Now when t is not nil.
func (t *Times) Start() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}
