package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// laya mcp over its stdin and stdout, driven by the SDK's client: initialize,
// tools/list, tools/call, then end of input ends the command with status 0.
func TestMCPCommandStdio(t *testing.T) {
	t.Setenv("LAYA_BASE_URL", "")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"mcp", "--model-dir", "english=../../testdata/oracle/checkpoints/real-en"}, inR, outW, &stderr)
		outW.Close()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 5 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "laya_decide", Arguments: json.RawMessage(
		`{"state": "I was charged twice, refund me.", "model": "en", "schema": {"properties": {"refund": {"type": "boolean", "description": "Does the customer ask for money back?"}}}}`)})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, `"values": {"refund": `) {
		t.Errorf("decide answered %s", text)
	}
	cs.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestMCPUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"mcp", "--base-url", "ftp://x"},
		{"mcp", "--base-url", "http://127.0.0.1:1", "--model-dir", "english=x"},
		{"mcp", "extra"},
		{"mcp", "--max-loaded", "0"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 2 || strings.Count(stderr.String(), "\n") != 2 || strings.Contains(stderr.String(), "mcp: mcp") {
			t.Errorf("laya %v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

// laya mcp --http serves the same tools over streamable HTTP, and stops with its context.
func TestMCPCommandHTTP(t *testing.T) {
	t.Setenv("LAYA_BASE_URL", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"mcp", "--http", "127.0.0.1:0", "--model-dir", "english=../../testdata/oracle/checkpoints/real-en"}, nil, io.Discard, errW)
		errW.Close()
	}()
	line, err := bufio.NewReader(errR).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "laya mcp: streamable HTTP at ")
	if err != nil || !ok {
		t.Fatalf("first stderr line %q: %v", line, err)
	}
	go io.Copy(io.Discard, errR)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "laya_route", Arguments: json.RawMessage(`{"state": "Bonjour, je voudrais un remboursement"}`)})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"model": "multilingual"`) {
		t.Fatalf("laya_route over HTTP: %v %+v", err, res)
	}
	cs.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}
