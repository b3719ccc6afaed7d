// Command serveload measures laya serve under load and under slow clients, and
// writes the rows of BENCHMARKS.md's serve-load and serve-slowclient tables.
//
// It starts the laya binary given (laya serve --model MODEL on a free loopback
// port, with the LAYA_* settings of its own environment, on -backend and with
// every -serve-arg appended), then:
//
//   - load: for each concurrency, that many clients post BODY back to back for
//     DURATION; a row has the compute device the server reports in /ready (so a
//     table says which backend measured it), requests and questions a second
//     (questions: the number in BODY's "questions" times req/s), P50/P99 latency,
//     the statuses, the mean requests per forward pass (laya_batch_size over the
//     level) and the server's peak RSS during the level (sampled from /proc every
//     20 ms, Linux only); with -once each client sends one request instead, a burst;
//   - slowclient: 4 normal clients post back to back while 64 connections from
//     another loopback address (127.0.0.2) misbehave (stalled headers, stalled
//     bodies, bodies trickled at 100 bytes/s); a row has what the normal clients
//     saw and how long the server kept the slow connections.
//
// Usage, from the module root:
//
//	go build -o /tmp/laya ./cmd/laya
//	go run ./scripts/bench/serveload -laya /tmp/laya -model testdata/oracle/checkpoints/real-en \
//	    -label real-en -c 1,8,32,64,128 -duration 5s -load OUT/serve-load.csv -slow OUT/serve-slowclient.csv
//
// On the cuda backend (laya built with -tags cuda), up to 64 requests a pass
// (LAYA_BATCH_MAX) in padded forwards of up to 32 question rows (laya serve
// --batch-size), after 5 requests that warm it up and must be answered:
//
//	LAYA_BATCH_MAX=64 serveload -laya BIN/laya -model /tmp/english-full -backend cuda \
//	    -serve-arg=--batch-size=32 -warmup 5 -c 1,8,64 -duration 5s -load OUT/serve-load-cuda.csv
//
// Rows are appended to the CSV files (the header is written when a file is new;
// a file whose header differs is refused rather than mixed), so several
// checkpoints can share one table. If laya serve exits before it is ready (a
// backend that cannot open, a bad -serve-arg), serveload exits 1 at once with a
// line naming laya serve's exit and the first line it printed. With
// LAYA_API_KEY set, every request carries it, as laya probe's do.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

// loadHeader and slowHeader are the CSV tables' columns.
var (
	loadHeader = []string{"checkpoint", "backend", "clients", "answered", "req/s", "questions/s", "P50 ms", "P99 ms",
		"statuses", "mean batch", "peak RSS MB"}
	slowHeader = []string{"checkpoint", "64 slow connections", "normal req/s", "P50 ms", "P99 ms", "normal statuses",
		"slow connections closed after"}
)

func run(args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("serveload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	laya := fs.String("laya", "./laya", "the laya binary")
	model := fs.String("model", "testdata/oracle/checkpoints/real-en", "checkpoint `DIR` to serve")
	label := fs.String("label", "", "checkpoint name in the table (default: the directory's name)")
	bodyFile := fs.String("body", "testdata/requests/email.json", "request `FILE` posted to /v1/systemone")
	levels := fs.String("c", "1,8,32,64,128", "concurrencies, comma-separated")
	duration := fs.Duration("duration", 5*time.Second, "time at each concurrency")
	loadOut := fs.String("load", "", "append the load rows to this CSV (none: skip the load run)")
	slowOut := fs.String("slow", "", "append the slow-client rows to this CSV (none: skip)")
	backendName := fs.String("backend", "", "laya serve --backend `NAME` (default: laya serve's own choice)")
	var serveArgs []string
	fs.Func("serve-arg", "one more argument for laya serve, as `-serve-arg=--batch-size=64` (repeatable)", func(v string) error {
		serveArgs = append(serveArgs, v)
		return nil
	})
	warmup := fs.Int("warmup", 0, "requests sent one at a time before the first level, not counted; any but a 200 stops the run")
	readyWithin := fs.Duration("ready-timeout", 5*time.Minute, "give up when laya serve is not ready within this `long`")
	fs.BoolVar(&once, "once", false, "each client sends one request (a burst) instead of posting for -duration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (serve flags go in -serve-arg)", fs.Arg(0))
	}
	if *label == "" {
		*label = lastElem(*model)
	}
	var cs []int
	for _, f := range strings.Split(*levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return fmt.Errorf("-c %q: want positive concurrencies, comma-separated", *levels)
		}
		cs = append(cs, c)
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	questions := countQuestions(body)
	serveFlags := slices.Clone(serveArgs)
	if *backendName != "" {
		serveFlags = append([]string{"--backend", *backendName}, serveFlags...)
	}
	srv, err := start(*laya, *model, serveFlags, *readyWithin, stderr)
	if err != nil {
		return err
	}
	defer func() {
		// A server that crashed or failed its drain makes the rows suspect.
		if serr := srv.stop(); err == nil {
			err = serr
		}
	}()
	for i := range *warmup {
		if err := srv.warm(body); err != nil {
			return fmt.Errorf("warm-up request %d of %d: %w", i+1, *warmup, err)
		}
	}
	// /ready names the device to key holders only; the flag is the next best.
	device := cmp.Or(srv.device, *backendName, "default")
	if *loadOut != "" {
		var rows [][]string
		for _, c := range cs {
			row := srv.load(*label, device, questions, c, *duration, body)
			fmt.Fprintln(stdout, strings.Join(row, "  "))
			rows = append(rows, row)
		}
		if err := appendCSV(*loadOut, loadHeader, rows); err != nil {
			return err
		}
	}
	if *slowOut != "" {
		var rows [][]string
		for _, kind := range []string{"none", "stalled headers", "stalled bodies", "bodies at 100 B/s"} {
			row := srv.slow(*label, kind, *duration, body)
			fmt.Fprintln(stdout, strings.Join(row, "  "))
			rows = append(rows, row)
		}
		if err := appendCSV(*slowOut, slowHeader, rows); err != nil {
			return err
		}
	}
	return nil
}

// countQuestions is the number of questions in a /v1/systemone body (an
// object or a list under "questions"), or 0 when it has none that can be
// counted.
func countQuestions(body []byte) int {
	var req struct {
		Questions json.RawMessage `json:"questions"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(req.Questions, &m) == nil {
		return len(m)
	}
	var l []json.RawMessage
	if json.Unmarshal(req.Questions, &l) == nil {
		return len(l)
	}
	return 0
}

// once makes each load client send a single request.
var once bool

type server struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, once exited is closed
	first  *firstLine
	device string // what /ready reports as the compute device
	key    string // LAYA_API_KEY, read once: the load loop's requests carry it
}

func start(bin, model string, extra []string, readyWithin time.Duration, stderr io.Writer) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--model", model, "--addr", addr, "--log-level", "error"}, extra...)
	cmd := exec.Command(bin, args...)
	first := &firstLine{}
	cmd.Stderr = io.MultiWriter(stderr, first)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{url: "http://" + addr, cmd: cmd, exited: make(chan struct{}), first: first, key: os.Getenv("LAYA_API_KEY")}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	deadline := time.After(readyWithin)
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("laya %s exited before it was ready (%v): %s",
				strings.Join(args, " "), s.err, cmp.Or(first.String(), "it printed nothing"))
		case <-deadline:
			s.stop()
			return nil, fmt.Errorf("laya serve not ready within %v", readyWithin)
		case <-poll.C:
		}
		if s.ready() {
			return s, nil
		}
	}
}

// ready asks /ready once, keeping the device it names.
func (s *server) ready() bool {
	resp, err := single.Do(s.newRequest(context.Background(), "GET", "/ready", nil))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var r struct {
		Device string `json:"device"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&r)
	s.device = r.Device
	return resp.StatusCode == 200
}

// stop drains the server with SIGTERM; an error says it had exited before
// (a crash) or that the drain failed.
func (s *server) stop() error {
	select {
	case <-s.exited:
		return fmt.Errorf("laya serve exited during the run (%v): %s", s.err, cmp.Or(s.first.String(), "it printed nothing"))
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(stopWithin):
		// Past laya serve's own drain budget (30 s by default): stuck, say
		// in a device call, and not to be left running.
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("laya serve still running %v after SIGTERM; killed", stopWithin)
	}
	if s.err != nil {
		return fmt.Errorf("laya serve's drain failed (%v): %s", s.err, cmp.Or(s.first.String(), "it printed nothing"))
	}
	return nil
}

// stopWithin is how long stop waits for laya serve to drain and exit.
const stopWithin = 2 * time.Minute

// single sends serveload's own requests (/ready, /metrics, the warm-up),
// bounded as the clients' are.
var single = &http.Client{Timeout: 5 * time.Minute}

// newRequest is a request to the server carrying LAYA_API_KEY, when set, as
// the bearer token (as laya probe does), so that a server with a key is
// measured rather than answering 401.
func (s *server) newRequest(ctx context.Context, method, path string, body []byte) *http.Request {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, r)
	if err != nil {
		panic(err) // s.url and path are ours
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	return req
}

// warm posts body once and wants a 200.
func (s *server) warm(body []byte) error {
	resp, err := single.Do(s.newRequest(context.Background(), "POST", "/v1/systemone", body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.Join(bytes.Fields(b), []byte(" ")))
	}
	return nil
}

// firstLine keeps the first non-empty line written to it (cut at 4 KiB):
// with --log-level error, what laya serve prints first is why it stopped,
// the lines after it are usage hints or the unwinding.
type firstLine struct {
	mu   sync.Mutex
	line []byte
	done bool
}

func (l *firstLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range p {
		switch {
		case l.done:
			return len(p), nil
		case c == '\n':
			l.done = len(bytes.TrimSpace(l.line)) > 0
		case len(l.line) < 4096:
			l.line = append(l.line, c)
		}
	}
	return len(p), nil
}

func (l *firstLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(bytes.TrimSpace(l.line))
}

// batches reads laya_batch_size's sum and count from /metrics.
func (s *server) batches() (sum, count float64) {
	resp, err := single.Do(s.newRequest(context.Background(), "GET", "/metrics", nil))
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "laya_batch_size_sum":
			sum = v
		case "laya_batch_size_count":
			count = v
		}
	}
	return sum, count
}

// rssPeak samples the server's resident set until stop, returning the peak in MB.
func (s *server) rssPeak(stop <-chan struct{}) <-chan float64 {
	out := make(chan float64, 1)
	go func() {
		peak := 0.0
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid)); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
						kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
						peak = max(peak, kb/1024)
					}
				}
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// result is what one set of clients saw.
type result struct {
	mu        sync.Mutex
	latencies []time.Duration
	statuses  map[string]int
}

func (r *result) add(status string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses == nil {
		r.statuses = map[string]int{}
	}
	r.statuses[status]++
	if status == "200" {
		r.latencies = append(r.latencies, d)
	}
}

func (r *result) percentile(p float64) string {
	if len(r.latencies) == 0 {
		return "–"
	}
	l := slices.Clone(r.latencies)
	slices.Sort(l)
	return strconv.FormatFloat(float64(l[min(len(l)-1, int(p*float64(len(l))))].Microseconds())/1000, 'f', 0, 64)
}

func (r *result) statusText() string {
	var keys []string
	for k := range r.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, r.statuses[k]))
	}
	return strings.Join(parts, " ")
}

// clients runs n clients posting body back to back until ctx ends.
func (s *server) clients(ctx context.Context, n int, body []byte, res *result) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}).DialContext}
	// Past laya serve's own request timeout (120 s by default) a request
	// still unanswered means a wedged server: counted as an error rather
	// than waited on for ever.
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				resp, err := client.Do(s.newRequest(context.WithoutCancel(ctx), "POST", "/v1/systemone", body))
				if err != nil {
					res.add("error", time.Since(t0))
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				res.add(strconv.Itoa(resp.StatusCode), time.Since(t0))
				if once {
					return
				}
				if resp.StatusCode == 503 || resp.StatusCode == 429 {
					time.Sleep(50 * time.Millisecond) // as a client honouring Retry-After would, shortened
				}
			}
		}()
	}
	wg.Wait()
	tr.CloseIdleConnections()
}

func (s *server) load(label, device string, questions, c int, d time.Duration, body []byte) []string {
	sum0, n0 := s.batches()
	stop := make(chan struct{})
	peak := s.rssPeak(stop)
	res := &result{}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	start := time.Now()
	s.clients(ctx, c, body, res)
	elapsed := time.Since(start)
	cancel()
	close(stop)
	sum1, n1 := s.batches()
	mean := "–"
	if n1 > n0 {
		mean = strconv.FormatFloat((sum1-sum0)/(n1-n0), 'f', 1, 64)
	}
	perSecond := float64(len(res.latencies)) / elapsed.Seconds()
	qps := "–"
	if questions > 0 {
		qps = strconv.FormatFloat(perSecond*float64(questions), 'f', 1, 64)
	}
	return []string{label, device, strconv.Itoa(c), strconv.Itoa(len(res.latencies)),
		strconv.FormatFloat(perSecond, 'f', 1, 64), qps,
		res.percentile(0.50), res.percentile(0.99), res.statusText(), mean,
		strconv.FormatFloat(<-peak, 'f', 0, 64)}
}

// slow runs 4 normal clients beside 64 misbehaving connections from 127.0.0.2.
func (s *server) slow(label, kind string, d time.Duration, body []byte) []string {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var closedAfter []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	var opened atomic.Int64
	if kind != "none" {
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
				conn, err := dialer.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
				if err != nil {
					return
				}
				defer conn.Close()
				opened.Add(1)
				t0 := time.Now()
				switch kind {
				case "stalled headers":
					fmt.Fprintf(conn, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\n")
				case "stalled bodies":
					fmt.Fprintf(conn, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{", len(body))
				case "bodies at 100 B/s":
					fmt.Fprintf(conn, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body))
					go func() {
						for i := 0; i < len(body); i += 10 {
							if _, err := conn.Write(body[i:min(i+10, len(body))]); err != nil {
								return
							}
							time.Sleep(100 * time.Millisecond)
						}
					}()
				}
				// Held until the server closes it (or 60 s).
				conn.SetReadDeadline(time.Now().Add(60 * time.Second))
				io.Copy(io.Discard, conn)
				mu.Lock()
				closedAfter = append(closedAfter, time.Since(t0))
				mu.Unlock()
			}()
		}
		time.Sleep(300 * time.Millisecond) // the slow connections first
	}
	res := &result{}
	start := time.Now()
	s.clients(ctx, 4, body, res)
	elapsed := time.Since(start)
	wg.Wait()
	closed := "–"
	if len(closedAfter) > 0 {
		slices.Sort(closedAfter)
		closed = fmt.Sprintf("%.1f s median, %.1f s max (%d connections)", closedAfter[len(closedAfter)/2].Seconds(),
			closedAfter[len(closedAfter)-1].Seconds(), opened.Load())
	}
	return []string{label, kind, strconv.FormatFloat(float64(len(res.latencies))/elapsed.Seconds(), 'f', 1, 64),
		res.percentile(0.50), res.percentile(0.99), res.statusText(), closed}
}

func appendCSV(name string, header []string, rows [][]string) error {
	_, err := os.Stat(name)
	fresh := errors.Is(err, os.ErrNotExist)
	if !fresh {
		// Rows under another table's header would render as a wrong table.
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		have, err := csv.NewReader(f).Read()
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", name, err)
		}
		if have != nil && !slices.Equal(have, header) {
			return fmt.Errorf("%s has the columns %q, not %q: write to a new file", name, have, header)
		}
		fresh = have == nil
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if fresh {
		w.Write(header)
	}
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func lastElem(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
