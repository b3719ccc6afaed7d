package serve

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServe measures /v1/systemone over loopback on the real-en test checkpoint:
// throughput and latency percentiles by client concurrency, with micro-batching on
// (LAYA_BATCH_WINDOW_MS=10) and off (0). b.N requests are shared by the clients; the
// requests cycle through the upstream oracle's real-en cases (1 to 20 questions).
//
//	go test ./serve -run '^$' -bench Serve -benchtime 256x
func BenchmarkServe(b *testing.B) {
	cases := goldenCases(b)
	// Batching on and off run back to back at each concurrency, so that load from
	// elsewhere on a shared machine falls on both alike.
	for _, clients := range []int{1, 8, 32, 64} {
		for _, batching := range []bool{true, false} {
			name := fmt.Sprintf("clients=%d/batching=%v", clients, batching)
			b.Run(name, func(b *testing.B) {
				ts := startServer(b, realModel(b), func(c *Config) {
					if !batching {
						c.BatchWindow = 0
					}
					c.QueueMax = 1024
				})
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
				var next atomic.Int64
				latencies := make([]time.Duration, b.N)
				var wg sync.WaitGroup
				b.ResetTimer()
				start, cpu := time.Now(), processCPU()
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(next.Add(1)) - 1
							if i >= b.N {
								return
							}
							t0 := time.Now()
							resp, err := client.Post(ts.url+"/v1/systemone", "application/json", strings.NewReader(string(cases[i%len(cases)].Request)))
							if err != nil {
								b.Error(err)
								return
							}
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode != 200 {
								b.Errorf("status %d", resp.StatusCode)
							}
							latencies[i] = time.Since(t0)
						}
					}()
				}
				wg.Wait()
				elapsed, cpuUsed := time.Since(start), processCPU()-cpu
				b.StopTimer()
				slices.Sort(latencies)
				pct := func(p float64) float64 {
					return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
				}
				h := scrape(b, ts.url)["laya_batch_size"].Metric[0].Histogram
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
				b.ReportMetric(pct(0.50), "p50_ms")
				b.ReportMetric(pct(0.99), "p99_ms")
				b.ReportMetric(h.GetSampleSum()/float64(h.GetSampleCount()), "mean_batch")
				// Server and clients share the process: CPU per request, both included.
				b.ReportMetric(float64(cpuUsed.Microseconds())/1000/float64(b.N), "cpu_ms/req")
			})
		}
	}
}
