package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/laya-metal/laya/serve"
)

// A Server is an http.Handler: here it runs under httptest; a real deployment calls
// Run with a listener, which adds the connection timeouts and graceful shutdown.
func ExampleServer() {
	cfg := serve.DefaultConfig()
	cfg.Warmup = false
	srv, err := serve.New(cfg, serve.SingleModel("../testdata/oracle/checkpoints/real-en"))
	if err != nil {
		panic(err)
	}
	srv.Start(context.Background())
	defer srv.Shutdown(context.Background())
	for !srv.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	body, _ := os.Open("../testdata/requests/email.json")
	defer body.Close()
	resp, err := http.Post(ts.URL+"/v1/systemone", "application/json", body)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Answers map[string]struct {
			Type   string
			Choice string
		}
		Usage struct {
			Truncated bool
		}
		Routing struct {
			Model string
		}
	}
	json.NewDecoder(resp.Body).Decode(&answer)
	fmt.Println(resp.Status, answer.Answers["department"].Type, answer.Answers["department"].Choice, answer.Usage.Truncated, answer.Routing.Model)
	// Output: 200 OK choice sales false real-en
}
