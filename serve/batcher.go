package serve

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
)

// Micro-batching after upstream's Batcher (laya/serving.py): one bounded queue; one
// dispatcher takes the first waiting request, gathers more for up to the batch window
// (or until BatchMax; with BatchGreedy only those already queued), groups them by
// checkpoint and answers each group with one PredictBatch. A pass that fails is retried request by request, so one bad input does
// not fail its batch-mates.

var (
	errQueueFull    = errors.New("request queue is full")
	errShuttingDown = errors.New("server is shutting down")
)

// job is one request waiting for, or in, a forward pass.
type job struct {
	ctx      context.Context
	key      string // checkpoint
	req      laya.Request
	cost     int       // estimated tokens × rows (jobCost)
	deadline time.Time // when its caller stops waiting
	enqueued time.Time
	started  time.Time
	done     chan jobResult // buffered: the dispatcher never blocks on a gone caller
}

type jobResult struct {
	answer    laya.BatchAnswer
	err       error // the pass failed (inference, cancellation, shutdown)
	inference time.Duration
	batchSize int
}

type batcher struct {
	cfg     *Config
	models  Models
	metrics *metrics
	log     func(msg string, args ...any)

	queue chan *job
	rates passRates
	// deviceLost is the first pass error that wrapped backend.ErrDeviceLost:
	// the backend cannot run again in this process, so /health and /ready
	// report it (and admission refuses) until a restart.
	deviceLost atomic.Pointer[string]
	queued     atomic.Int64 // reserved queue slots
	active     atomic.Int64 // requests in a pass

	// dispatching counts the batches being dispatched; passEnd is closed, and
	// replaced, each time one is done, waking a greedy dispatcher that waits for
	// the device (run).
	dispatching atomic.Int64
	passEndMu   sync.Mutex
	passEnd     chan struct{}

	// oldestMu guards waiting: enqueue times of queued jobs, oldest first, for
	// laya_queue_oldest_seconds.
	oldestMu sync.Mutex
	waiting  []time.Time

	// hardStop cancels passes in flight once the shutdown grace is spent.
	hardCtx  context.Context
	hardStop context.CancelFunc
	stop     chan struct{} // closed: exit once the queue is empty
	stopMu   sync.RWMutex  // submit holds it to read stop; shutdown to close it
	stopped  chan struct{}
}

func newBatcher(cfg *Config, models Models, m *metrics, log func(string, ...any)) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &batcher{
		cfg: cfg, models: models, metrics: m, log: log,
		queue:   make(chan *job, cfg.QueueMax),
		passEnd: make(chan struct{}),
		hardCtx: ctx, hardStop: cancel,
		stop: make(chan struct{}), stopped: make(chan struct{}),
	}
}

func (b *batcher) depth() int64 { return b.queued.Load() }

func (b *batcher) oldest() time.Duration {
	b.oldestMu.Lock()
	defer b.oldestMu.Unlock()
	if len(b.waiting) == 0 {
		return 0
	}
	return time.Since(b.waiting[0])
}

// submit queues jobs all or none: a batch request needs a slot per state.
func (b *batcher) submit(jobs []*job) error {
	b.stopMu.RLock()
	defer b.stopMu.RUnlock()
	select {
	case <-b.stop:
		return errShuttingDown
	default:
	}
	n := int64(len(jobs))
	for {
		q := b.queued.Load()
		if q+n > int64(b.cfg.QueueMax) {
			return errQueueFull
		}
		if b.queued.CompareAndSwap(q, q+n) {
			break
		}
	}
	now := time.Now()
	for _, j := range jobs {
		j.cost = jobCost(j.req)
		if d, ok := j.ctx.Deadline(); ok {
			j.deadline = d
		} else {
			j.deadline = now.Add(100 * 365 * 24 * time.Hour)
		}
	}
	b.oldestMu.Lock()
	for _, j := range jobs {
		j.enqueued = now
		b.waiting = append(b.waiting, now)
		b.queue <- j // never blocks: a slot was reserved
	}
	b.oldestMu.Unlock()
	return nil
}

// take removes a job from the queue's accounting.
func (b *batcher) take(j *job) {
	b.queued.Add(-1)
	b.oldestMu.Lock()
	if len(b.waiting) > 0 {
		b.waiting = b.waiting[1:]
	}
	b.oldestMu.Unlock()
}

// start runs n dispatchers (LAYA_INFER_WORKERS); stopped closes when all have exited.
func (b *batcher) start(n int) {
	var wg sync.WaitGroup
	for range max(n, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.run()
		}()
	}
	go func() {
		wg.Wait()
		close(b.stopped)
	}()
}

// run dispatches until stop is closed and the queue is empty.
func (b *batcher) run() {
	// carry is a request taken from the queue that would have pushed a pass past
	// BatchMaxTokens: it starts the next one.
	var carry *job
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-b.queue:
			case <-b.stop:
				select {
				case first = <-b.queue:
				default:
					return
				}
			}
			b.take(first)
		}
		batch := []*job{first}
		cost := first.cost
		// add takes j into the batch, or keeps it for the next when it does not fit.
		add := func(j *job) bool {
			b.take(j)
			if cost+j.cost > b.cfg.BatchMaxTokens {
				carry = j
				return false
			}
			batch, cost = append(batch, j), cost+j.cost
			return true
		}
		// takeQueued adds what is already queued, waiting for nothing.
		takeQueued := func() {
			for len(batch) < b.cfg.BatchMax {
				select {
				case j := <-b.queue:
					if !add(j) {
						return
					}
				default:
					return
				}
			}
		}
		switch {
		case b.cfg.BatchGreedy:
			takeQueued()
			b.gatherWhileBusy(&batch, add, takeQueued)
		case b.cfg.BatchWindow > 0 && b.cfg.BatchMax > 1 && cost < b.cfg.BatchMaxTokens:
			timer := time.NewTimer(b.cfg.BatchWindow)
		gather:
			for len(batch) < b.cfg.BatchMax {
				select {
				case j := <-b.queue:
					if !add(j) {
						break gather
					}
				case <-timer.C:
					break gather
				case <-b.stop:
					// Draining: take what is already queued, do not wait for more.
					takeQueued()
					break gather
				}
			}
			timer.Stop()
		}
		b.dispatch(batch)
	}
}

// gatherWhileBusy keeps a greedy dispatcher's batch open while another
// dispatcher's batch holds the device (LAYA_INFER_WORKERS > 1): it takes what
// arrives until the batch is full (BatchMax, or a request that would push it
// past BatchMaxTokens: add keeps that one for the next) or until the other's
// passes end, then returns. So a second pass overlaps the first only when it
// is full, its host work (rows, tokens, recording) then running while the GPU
// works on the first; under a lighter load the requests wait for the device
// together instead of splitting into small passes side by side, each costing
// nearly what a full one does (on an H100 two dispatchers without this ran
// passes of 2.4 requests at 8 clients where one ran 4).
func (b *batcher) gatherWhileBusy(batch *[]*job, add func(*job) bool, takeQueued func()) {
	for len(*batch) < b.cfg.BatchMax {
		// The channel before the count: a batch finishing in between closes it.
		b.passEndMu.Lock()
		ended := b.passEnd
		b.passEndMu.Unlock()
		if b.dispatching.Load() == 0 {
			return
		}
		select {
		case j := <-b.queue:
			if !add(j) {
				return
			}
		case <-ended:
		case <-b.stop:
			takeQueued()
			return
		}
	}
}

// dispatched marks the end of a dispatch: the count down, the waiting
// dispatchers woken.
func (b *batcher) dispatched() {
	b.dispatching.Add(-1)
	b.passEndMu.Lock()
	close(b.passEnd)
	b.passEnd = make(chan struct{})
	b.passEndMu.Unlock()
}

// dispatch answers one gathered batch, a pass per checkpoint in first-arrival order.
func (b *batcher) dispatch(batch []*job) {
	b.dispatching.Add(1)
	defer b.dispatched()
	var keys []string
	groups := map[string][]*job{}
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			// Timed out or abandoned while queued: no pass for it.
			j.done <- jobResult{err: err}
			continue
		}
		if _, ok := groups[j.key]; !ok {
			keys = append(keys, j.key)
		}
		groups[j.key] = append(groups[j.key], j)
	}
	for _, key := range keys {
		passes, late := b.plan(key, groups[key], time.Now())
		for _, j := range late {
			j.done <- jobResult{err: context.DeadlineExceeded}
		}
		for _, p := range passes {
			live := p[:0]
			for _, j := range p {
				if err := j.ctx.Err(); err != nil {
					j.done <- jobResult{err: err} // its deadline passed during the passes before
					continue
				}
				live = append(live, j)
			}
			if len(live) > 0 {
				b.pass(key, live)
			}
		}
	}
}

// pass runs one checkpoint's group, falling back to one pass per request on failure.
func (b *batcher) pass(key string, group []*job) {
	now := time.Now()
	for _, j := range group {
		j.started = now
		b.metrics.queueWait.Observe(now.Sub(j.enqueued).Seconds())
	}
	b.active.Add(int64(len(group)))
	defer b.active.Add(-int64(len(group)))
	answers, dur, err := b.predict(key, group)
	if err == nil {
		cost := 0
		for _, j := range group {
			cost += j.cost
		}
		b.rates.observe(key, cost, dur, true)
		b.metrics.batches.WithLabelValues("ok").Inc()
		for i, j := range group {
			j.done <- jobResult{answer: answers[i], inference: dur, batchSize: len(group)}
		}
		return
	}
	// A lost device fails every request the same way: no use retrying them one by one.
	if len(group) == 1 || b.hardCtx.Err() != nil || errors.Is(err, backend.ErrDeviceLost) {
		b.metrics.batches.WithLabelValues("error").Inc()
		for _, j := range group {
			j.done <- jobResult{err: err, inference: dur, batchSize: len(group)}
		}
		return
	}
	b.metrics.batches.WithLabelValues("fallback").Inc()
	b.log("batch failed, retrying per request", "model", key, "batch_size", len(group), "error", err.Error())
	for _, j := range group {
		if err := j.ctx.Err(); err != nil {
			j.done <- jobResult{err: err}
			continue
		}
		answers, dur, err := b.predict(key, []*job{j})
		if err != nil {
			b.metrics.batches.WithLabelValues("error").Inc()
			j.done <- jobResult{err: err, inference: dur, batchSize: 1}
			continue
		}
		j.done <- jobResult{answer: answers[0], inference: dur, batchSize: 1}
	}
}

// predict runs one PredictBatch for jobs. Its context ends when every job's has (each
// caller gone or timed out) or when the shutdown grace is spent.
func (b *batcher) predict(key string, jobs []*job) ([]laya.BatchAnswer, time.Duration, error) {
	ctx, cancel := context.WithCancel(b.hardCtx)
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(jobs)))
	for _, j := range jobs {
		stop := context.AfterFunc(j.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	model, release, err := b.models.predictor(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	reqs := make([]laya.Request, len(jobs))
	for i, j := range jobs {
		reqs[i] = j.req
	}
	start := time.Now()
	answers, err := model.PredictBatch(ctx, reqs)
	dur := time.Since(start)
	if err == nil {
		b.metrics.inference.Observe(dur.Seconds())
		b.metrics.batchSize.Observe(float64(len(jobs)))
	}
	b.noteDeviceLost(key, err)
	if err != nil && b.hardCtx.Err() != nil {
		err = errShuttingDown
	}
	return answers, dur, err
}

// noteDeviceLost records err when it wraps backend.ErrDeviceLost (the first one
// stays): from then on /health and /ready report it and admission refuses.
func (b *batcher) noteDeviceLost(key string, err error) {
	if !errors.Is(err, backend.ErrDeviceLost) {
		return
	}
	msg := err.Error()
	if b.deviceLost.CompareAndSwap(nil, &msg) {
		b.log("device lost: /health and /ready report 503 until the server restarts", "model", key, "error", msg)
	}
}

// shutdown lets the dispatcher finish the queue, cancelling passes once ctx ends.
func (b *batcher) shutdown(ctx context.Context) error {
	b.stopMu.Lock()
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	b.stopMu.Unlock()
	select {
	case <-b.stopped:
		return nil
	case <-ctx.Done():
		b.hardStop()
		<-b.stopped
		return ctx.Err()
	}
}
