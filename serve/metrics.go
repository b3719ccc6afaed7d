package serve

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream laya-serve's instruments (laya/serving.py Metrics): the same
// names, labels, help texts and buckets, in a registry of the server's own so several
// servers can live in one process.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec // model, status: ok error timeout rejected rate_limited
	rejections *prometheus.CounterVec // reason: queue_full draining client_limit
	latency    prometheus.Histogram
	queueWait  prometheus.Histogram
	inference  prometheus.Histogram
	batchSize  prometheus.Histogram
	batches    *prometheus.CounterVec // result: ok fallback error
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laya_requests_total", Help: "Decisions by model and outcome"}, []string{"model", "status"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laya_rejections_total", Help: "Requests shed before inference, by reason"}, []string{"reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "laya_request_latency_seconds", Help: "End-to-end request latency",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "laya_queue_wait_seconds", Help: "Time from arrival to dispatch",
			Buckets: []float64{0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}}),
		inference: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "laya_inference_seconds", Help: "Time for one batch forward",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "laya_batch_size", Help: "Requests per forward pass",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64}}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "laya_batches_total", Help: "Forward passes by outcome"}, []string{"result"}),
	}
	m.reg.MustRegister(m.requests, m.rejections, m.latency, m.queueWait, m.inference, m.batchSize, m.batches)
	// Gauges are read at scrape time from the server's own counters, so they cannot
	// drift from what /ready reports.
	gauge := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("laya_queue_depth", "Requests waiting in the queue", func() float64 { return float64(s.batcher.depth()) })
	gauge("laya_queue_oldest_seconds", "Age of the oldest request still waiting in the queue", func() float64 { return s.batcher.oldest().Seconds() })
	gauge("laya_active_requests", "Requests currently dispatching", func() float64 { return float64(s.batcher.active.Load()) })
	// Cluster-wide under LAYA_STATE_URL (laya_clients_active stays this replica's).
	gauge("laya_inflight_total", "In-flight requests; cluster-wide under a shared store", func() float64 { return float64(s.state.snapshot().inflight) })
	gauge("laya_clients_active", "Clients with at least one request in flight", func() float64 { return float64(s.state.snapshot().clientsActive) })
	gauge("laya_circuits_open", "Clients whose inference breaker is currently open", func() float64 { return float64(s.state.snapshot().circuitsOpen) })
	gauge("laya_circuits_tracked", "Clients with breaker state tracked (local view)", func() float64 { return float64(s.state.snapshot().circuitsTracked) })
	gauge("laya_models_loaded", "Resident checkpoints", func() float64 { return float64(len(s.models.loaded())) })
	gauge("laya_device_lost", "1 once the backend lost its device (restart the process), else 0", func() float64 {
		if s.batcher.deviceLost.Load() != nil {
			return 1
		}
		return 0
	})
	return m
}
