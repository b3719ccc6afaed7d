// Package phase lets a benchmark see where a request's host time goes: a
// caller puts a Times in the request's context, and the agent adds the time
// of each phase of the request to it. Without one the agent only looks for
// it.
package phase

import (
	"context"
	"time"
)

// Phase is a part of a request.
type Phase int

const (
	Parse    Phase = iota // the request's JSON into a state and questions
	Prepare               // validating the questions and tokenizing their rows
	Forward               // the network: recording, running (the device's time included) and reading back
	Assemble              // the answers from the network's outputs
	phases
)

// Times is the time a request spent in each phase, added up over the
// requests that carried it. It is not safe for concurrent use: one request
// at a time.
type Times [phases]time.Duration

type key struct{}

// With returns ctx carrying t.
func With(ctx context.Context, t *Times) context.Context { return context.WithValue(ctx, key{}, t) }

// From returns the Times ctx carries, or nil.
func From(ctx context.Context) *Times {
	t, _ := ctx.Value(key{}).(*Times)
	return t
}

// Start is time.Now, or nothing when t is nil.
func (t *Times) Start() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}

// Add adds the time since start to phase p and returns now, the next
// phase's start; when t is nil it does nothing.
func (t *Times) Add(p Phase, start time.Time) time.Time {
	if t == nil {
		return start
	}
	now := time.Now()
	t[p] += now.Sub(start)
	return now
}
