package serve

import (
	"io/fs"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/router"
)

// countingStat answers stat for the paths in dirs, and counts its calls.
type countingStat struct {
	dirs  map[string]bool
	calls atomic.Int32
}

func (c *countingStat) stat(path string) (fs.FileInfo, error) {
	c.calls.Add(1)
	if c.dirs[path] {
		return os.Stat(".")
	}
	return nil, fs.ErrNotExist
}

func TestPublicRepo(t *testing.T) {
	st := &countingStat{dirs: map[string]bool{"models/support-bot": true}}
	for _, tc := range []struct{ ref, want string }{
		{"convaiinnovations/laya", "convaiinnovations/laya"},
		{"convaiinnovations/laya/multilingual", "convaiinnovations/laya/multilingual"},
		{"models/support-bot", "support-bot"}, // a relative directory that exists
		{"/srv/models/real-en/", "real-en"},
		{"./real-en", "real-en"},
		{"~/models/real-en", "real-en"},
		{"a/b/c/real-en", "real-en"},
	} {
		if got := publicRepo(tc.ref, st.stat); got != tc.want {
			t.Errorf("publicRepo(%q) = %q, want %q", tc.ref, got, tc.want)
		}
	}
}

// A router's routing decisions stat each checkpoint's reference once, however many
// requests are routed and whatever model names clients send.
func TestRoutedRepoStatOnce(t *testing.T) {
	r, err := router.New()
	if err != nil {
		t.Fatal(err)
	}
	m := RouterModels(r).(*routed)
	st := &countingStat{}
	m.repos.stat = st.stat
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("Is it about money?")}}
	states := []laya.State{laya.Text("I was billed twice, please refund me"), laya.Text("Где мой заказ?")}
	repos := map[string]bool{}
	for i := range 300 {
		opts := router.RouteOptions{Model: "client-model-" + strconv.Itoa(i)}
		if i%3 == 0 {
			opts = router.RouteOptions{Task: "typed_decisions"}
		}
		d, err := m.route(states[i%2], qs, opts)
		if err != nil {
			t.Fatal(err)
		}
		repos[d.Repo] = true
	}
	if len(repos) != 3 {
		t.Fatalf("routed to %v, want the three checkpoints", repos)
	}
	if n := st.calls.Load(); n != 3 {
		t.Errorf("300 routed requests over 3 checkpoints made %d stat calls, want 3", n)
	}
	if n := len(m.repos.names); n != 3 {
		t.Errorf("kept %d names, want the 3 configured: %v", n, m.repos.names)
	}
}

// The server's one checkpoint (--model) is named with one stat however many
// requests ask.
func TestSingleRepoStatOnce(t *testing.T) {
	st := &countingStat{}
	single := SingleModel("convaiinnovations/laya").(*single)
	single.repos.stat = st.stat
	for range 100 {
		d, _ := single.route(laya.Text("x"), nil, router.RouteOptions{})
		if d.Repo != "convaiinnovations/laya" {
			t.Fatalf("repo %q", d.Repo)
		}
	}
	if n := st.calls.Load(); n != 1 {
		t.Errorf("100 requests to one checkpoint made %d stat calls, want 1", n)
	}
}
