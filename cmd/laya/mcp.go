package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/mcp"
	"github.com/laya-metal/laya/router"
)

func init() {
	register("mcp", command{
		summary: "serve the Laya tools to LLM agents over the Model Context Protocol (stdio)",
		run:     runMCP,
	})
}

const mcpUsage = `Usage: laya mcp [--model-dir NAME=DIR ...] [--base-url URL] [--http ADDR]

Speaks the Model Context Protocol on stdin/stdout (or streamable HTTP with
--http), with the tools laya_predict, laya_predict_batch, laya_route,
laya_shortlist and laya_decide. Checkpoints load on first use through the
router (english, multilingual, typed-decisions; --model-dir points one at a
local directory). With --base-url (LAYA_BASE_URL) the tools answer from a
running laya serve instead, and this process loads nothing; laya_shortlist then
is unavailable. LAYA_API_KEY is sent as the bearer token to that server.

Register it with an MCP client, e.g. in Claude Desktop's claude_desktop_config.json:
  {"mcpServers": {"laya": {"command": "laya", "args": ["mcp"]}}}
or, sharing one server:
  {"mcpServers": {"laya": {"command": "laya", "args": ["mcp"],
                           "env": {"LAYA_BASE_URL": "http://127.0.0.1:8642"}}}}

Examples:
  $ laya mcp --model-dir english=testdata/oracle/checkpoints/real-en
  $ laya mcp --base-url http://127.0.0.1:8642
  $ laya mcp --http 127.0.0.1:8765     # streamable HTTP at http://127.0.0.1:8765/mcp

Flags:
`

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("mcp", mcpUsage, stderr)
	var dirs modelDirs
	fs.Var(&dirs, "model-dir", "`NAME=DIR` or NAME=ORG/NAME for one checkpoint (repeatable)")
	maxLoaded := fs.Int("max-loaded", 2, "checkpoints kept resident (least recently used evicted)")
	backendName := fs.String("backend", "cpu", "compute `backend`")
	baseURL := fs.String("base-url", os.Getenv("LAYA_BASE_URL"), "answer from the laya serve at `URL` (LAYA_BASE_URL)")
	httpAddr := fs.String("http", "", "serve streamable HTTP at `ADDR` (host:port) instead of stdio")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *maxLoaded < 1 {
		return usagef("--max-loaded %d: want at least 1", *maxLoaded)
	}
	var b mcp.Backend
	if *baseURL != "" {
		if len(dirs.m) > 0 {
			return usagef("--model-dir loads checkpoints here; --base-url answers from a server: give one")
		}
		remote, err := mcp.Remote(*baseURL, os.Getenv("LAYA_API_KEY"), nil)
		if err != nil {
			return usagef("--base-url: %s", strings.TrimPrefix(err.Error(), "mcp: "))
		}
		b = remote
	} else {
		opts := []router.Option{router.WithMaxLoaded(*maxLoaded), router.WithModels(dirs.m),
			router.WithLoadOptions(laya.WithBackend(*backendName), laya.WithHub(progressClient(stderr)))}
		if d := os.Getenv("LAYA_DEFAULT_MODEL"); d != "" {
			opts = append(opts, router.WithDefaultModel(d))
		}
		r, err := router.New(opts...)
		if err != nil {
			return err
		}
		defer r.Unload(r.Loaded()...)
		b = mcp.Local(r)
	}
	server := mcp.NewServer(b, cli.Version("laya"))
	if *httpAddr == "" {
		t := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
		err := server.Run(ctx, t)
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "laya mcp: streamable HTTP at http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
