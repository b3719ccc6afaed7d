package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/laya-metal/laya/serve"
)

func init() {
	register("probe", command{
		summary: "ask a running laya serve for /health, /ready or /drain (container probes, preStop)",
		run:     runProbe,
	})
}

const probeUsage = `Usage: laya probe [--url URL] [--post] [--wait DURATION] [--timeout DURATION]

Sends one request to a running laya serve and exits 0 when it answers 2xx, 1
otherwise, printing the answer. For images with no shell or curl (the distroless
image's HEALTHCHECK, a Kubernetes preStop hook). With LAYA_API_KEY set, the request
carries it as the bearer token. Without --url it asks /health where laya serve
listens: LAYA_HOST (127.0.0.1 when unset or 0.0.0.0, ::1 for ::) and LAYA_PORT
(8642 when unset). --wait sleeps after the answer: a preStop drain keeps the pod
serving while the load balancer takes it out of rotation.

Examples:
  $ laya probe
  $ laya probe --url http://127.0.0.1:8642/ready
  $ laya probe --post --url http://127.0.0.1:8642/drain --wait 5s

Flags:
`

func runProbe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("probe", probeUsage, stderr)
	url := fs.String("url", "http://"+probeAddr()+"/health", "`URL` to ask")
	post := fs.Bool("post", false, "POST instead of GET (/drain, /undrain)")
	wait := fs.Duration("wait", 0, "sleep this `long` after the answer")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this `long`")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *timeout <= 0 || *wait < 0 {
		return usagef("--timeout must be > 0 and --wait ≥ 0")
	}
	method := http.MethodGet
	if *post {
		method = http.MethodPost
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, *url, nil)
	if err != nil {
		return usagef("--url %q: %v", *url, err)
	}
	if key := os.Getenv("LAYA_API_KEY"); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, *url, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	fmt.Fprintf(stdout, "%s\n", body)
	if *wait > 0 {
		select {
		case <-time.After(*wait):
		case <-ctx.Done():
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s %s: %s", method, *url, resp.Status)
	}
	return nil
}

// probeAddr is where laya serve listens by LAYA_HOST and LAYA_PORT, as a client
// reaches it: a wildcard host is reached on loopback.
func probeAddr() string {
	addr := envAddr(serve.DefaultConfig().Addr)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}
