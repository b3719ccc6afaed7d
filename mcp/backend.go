package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

// Backend answers the tools: Local runs the checkpoints in this process, Remote asks a
// running laya serve.
type Backend interface {
	// Predict answers the questions about state on model ("" or "auto": routed) and
	// returns the result with the routing decision as JSON.
	Predict(ctx context.Context, state laya.State, qs laya.Questions, model string) (*laya.Result, laya.Value, error)
	// Route says which checkpoint would answer, without running one.
	Route(state laya.State, qs laya.Questions, model string) (router.Decision, error)
	// Shortlist answers with the embedding shortlist of many-option choice questions.
	Shortlist(ctx context.Context, state laya.State, qs laya.Questions, model string, k int) (*laya.ShortlistResult, laya.Value, error)
}

// ErrUnsupported reports a tool a backend cannot run (a shortlist needs the checkpoint's
// encoder in this process).
var ErrUnsupported = errors.New("mcp: not supported by this backend")

func routeOptions(model string) router.RouteOptions {
	if model == "auto" {
		model = ""
	}
	return router.RouteOptions{Model: model}
}

// Local answers with a router in this process; it loads each checkpoint on first use.
func Local(r *router.Router) Backend { return local{r} }

type local struct{ r *router.Router }

func (l local) Predict(ctx context.Context, state laya.State, qs laya.Questions, model string) (*laya.Result, laya.Value, error) {
	res, err := l.r.Predict(ctx, state, qs, routeOptions(model))
	if err != nil {
		return nil, laya.Value{}, err
	}
	return res.Result, res.Routing.Value(), nil
}

func (l local) Route(state laya.State, qs laya.Questions, model string) (router.Decision, error) {
	return l.r.Route(state, qs, routeOptions(model))
}

func (l local) Shortlist(ctx context.Context, state laya.State, qs laya.Questions, model string, k int) (*laya.ShortlistResult, laya.Value, error) {
	d, err := l.r.Route(state, qs, routeOptions(model))
	if err != nil {
		return nil, laya.Value{}, err
	}
	m, release, err := l.r.Acquire(ctx, d.Model)
	if err != nil {
		return nil, laya.Value{}, err
	}
	defer release()
	agent, ok := m.(*laya.Agent)
	if !ok {
		return nil, laya.Value{}, fmt.Errorf("%w: checkpoint %q has no encoder to embed options with", ErrUnsupported, d.Model)
	}
	res, err := laya.PredictShortlist(ctx, agent, state, qs, laya.AgentEmbedder(agent, 0, 0), k)
	if err != nil {
		return nil, laya.Value{}, err
	}
	return res, d.Value(), nil
}

// Remote answers from a running laya serve at baseURL (its POST /v1/systemone), so that
// an MCP client does not hold a second copy of the checkpoints (upstream LAYA_BASE_URL).
// Routing for laya_route is decided here, as the server decides it, without a model.
func Remote(baseURL, apiKey string, client *http.Client) (Backend, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("mcp: base URL %q must be an http(s) server URL without a query or fragment", baseURL)
	}
	if client == nil {
		client = &http.Client{Timeout: 300 * time.Second}
	}
	r, err := router.New()
	if err != nil {
		return nil, err
	}
	return &remote{base: u.String(), key: apiKey, client: client, r: r}, nil
}

type remote struct {
	base, key string
	client    *http.Client
	r         *router.Router
}

// maxRemoteBody bounds what is read of a server's answer.
const maxRemoteBody = 16 << 20

func (rm *remote) Predict(ctx context.Context, state laya.State, qs laya.Questions, model string) (*laya.Result, laya.Value, error) {
	members := []pyjson.Member{{Key: "state", Value: state.Value()}, {Key: "questions", Value: qs.Value()}}
	if model != "" && model != "auto" {
		members = append(members, pyjson.Member{Key: "model", Value: pyjson.String(model)})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rm.base+"/v1/systemone", bytes.NewReader([]byte(pyjson.Object(members...).String())))
	if err != nil {
		return nil, laya.Value{}, fmt.Errorf("mcp: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if rm.key != "" {
		req.Header.Set("Authorization", "Bearer "+rm.key)
	}
	resp, err := rm.client.Do(req)
	if err != nil {
		return nil, laya.Value{}, fmt.Errorf("mcp: cannot reach laya serve at %s: %w", rm.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteBody))
	if err != nil {
		return nil, laya.Value{}, fmt.Errorf("mcp: reading laya serve's answer: %w", err)
	}
	v, perr := pyjson.Parse(body)
	if resp.StatusCode != http.StatusOK {
		detail := strings.TrimSpace(string(body))
		if d, ok := v.Get("detail"); perr == nil && ok {
			detail = pyjson.Str(d)
		}
		return nil, laya.Value{}, &RemoteError{Status: resp.StatusCode, Detail: detail}
	}
	if perr != nil {
		return nil, laya.Value{}, fmt.Errorf("mcp: laya serve answered a body that is not JSON: %w", perr)
	}
	res, err := laya.ResultFromValue(v)
	if err != nil {
		return nil, laya.Value{}, err
	}
	routing, _ := v.Get("routing")
	return res, routing, nil
}

func (rm *remote) Route(state laya.State, qs laya.Questions, model string) (router.Decision, error) {
	return rm.r.Route(state, qs, routeOptions(model))
}

func (rm *remote) Shortlist(context.Context, laya.State, laya.Questions, string, int) (*laya.ShortlistResult, laya.Value, error) {
	return nil, laya.Value{}, fmt.Errorf("%w: laya_shortlist embeds options with the checkpoint's encoder, which lives in laya serve at %s; run laya mcp without --base-url for it", ErrUnsupported, rm.base)
}

// RemoteError is an answer of laya serve other than 200.
type RemoteError struct {
	Status int
	Detail string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("mcp: laya serve answered %d: %s", e.Status, e.Detail)
}
