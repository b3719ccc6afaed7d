package hub

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var zeroTime time.Time

func unescape(s string) (string, error) { return url.PathUnescape(s) }

func testClient(h *fakeHub, cache string) *Client {
	return &Client{Endpoint: h.hub.URL, CacheDir: cache, UserAgent: "test", retries: 0}
}

func readSnapshotFile(t *testing.T, snap *Snapshot, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(snap.Dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("read %s from snapshot: %v", name, err)
	}
	return b
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in      string
		want    Ref
		wantErr bool
	}{
		{in: "convaiinnovations/laya", want: Ref{Repo: "convaiinnovations/laya"}},
		{in: "convaiinnovations/laya@v1.0", want: Ref{Repo: "convaiinnovations/laya", Revision: "v1.0"}},
		{in: "convaiinnovations/laya/multilingual", want: Ref{Repo: "convaiinnovations/laya", Subfolder: "multilingual"}},
		{in: "aac6fef/laya-mlx/a/b@refs/pr/3", want: Ref{Repo: "aac6fef/laya-mlx", Subfolder: "a/b", Revision: "refs/pr/3"}},
		{in: "org/name@" + commitA, want: Ref{Repo: "org/name", Revision: commitA}},
		{in: "laya", wantErr: true},
		{in: "org/name@", wantErr: true},
		{in: "org/name@../../etc", wantErr: true},
		{in: "org/name/../x", wantErr: true},
		{in: "org--x/name", wantErr: true},
		{in: "org/na me", wantErr: true},
		{in: "/abs/path", wantErr: true},
		{in: "org//name", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrBadRef) {
				t.Errorf("ParseRef(%q) error = %v, want ErrBadRef", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if back, err := ParseRef(got.String()); err != nil || back != got {
			t.Errorf("ParseRef(%q.String()) = %+v, %v", tt.in, back, err)
		}
	}
}

func TestLooksLikeRepoID(t *testing.T) {
	for in, want := range map[string]bool{
		"convaiinnovations/laya":   true,
		"org/name@main":            true,
		"./checkpoints/tiny":       false,
		"../x/y":                   false,
		"/abs/x":                   false,
		"~/models/laya":            false,
		"plainname":                false,
		`C:\models\laya`:           false,
		"org/name/sub/folder@main": true,
	} {
		if got := LooksLikeRepoID(in); got != want {
			t.Errorf("LooksLikeRepoID(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestEnv(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		env       map[string]string
		wantCache string
		wantEP    string
		wantTok   string
		offline   bool
	}{
		{env: map[string]string{"HF_HOME": home}, wantCache: filepath.Join(home, "hub"), wantEP: DefaultEndpoint},
		{env: map[string]string{"HF_HOME": home, "HF_HUB_CACHE": "/x/cache"}, wantCache: "/x/cache", wantEP: DefaultEndpoint},
		{env: map[string]string{"HF_HOME": home, "XDG_CACHE_HOME": "/xdg"}, wantCache: filepath.Join(home, "hub"), wantEP: DefaultEndpoint},
		{env: map[string]string{"XDG_CACHE_HOME": "/xdg"}, wantCache: "/xdg/huggingface/hub", wantEP: DefaultEndpoint},
		{env: map[string]string{"HF_HOME": home, "HF_ENDPOINT": "https://mirror.example/", "HF_TOKEN": " tok ", "HF_HUB_OFFLINE": "yes"},
			wantCache: filepath.Join(home, "hub"), wantEP: "https://mirror.example", wantTok: "tok", offline: true},
		{env: map[string]string{"HF_HOME": home, "HF_HUB_OFFLINE": "0"}, wantCache: filepath.Join(home, "hub"), wantEP: DefaultEndpoint},
	}
	for i, tt := range tests {
		for _, k := range []string{"HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE"} {
			t.Setenv(k, tt.env[k])
		}
		if tt.env["HF_HOME"] == "" {
			t.Setenv("HF_TOKEN_PATH", filepath.Join(home, "no-token"))
		}
		c := NewClient()
		if c.CacheDir != tt.wantCache || c.Endpoint != tt.wantEP || c.Token != tt.wantTok || c.Offline != tt.offline {
			t.Errorf("case %d: client = cache %q endpoint %q token %q offline %v; want %q %q %q %v",
				i, c.CacheDir, c.Endpoint, c.Token, c.Offline, tt.wantCache, tt.wantEP, tt.wantTok, tt.offline)
		}
	}
	// The token huggingface-cli login stores is used when HF_TOKEN is unset.
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	os.WriteFile(filepath.Join(home, "token"), []byte("stored\n"), 0o600)
	if got := TokenFromEnv(); got != "stored" {
		t.Errorf("TokenFromEnv with $HF_HOME/token = %q, want stored", got)
	}
}

func TestDownloadCheckpointLayout(t *testing.T) {
	h := newFakeHub(t)
	files := checkpointFiles("", 200_000)
	h.addRepo("org/laya", true, commitA, files)
	h.requireTok = "secret"
	cache := t.TempDir()
	c := testClient(h, cache)
	c.Token = "secret"
	var events []Progress
	c.Progress = func(p Progress) { events = append(events, p) }

	snap, err := c.Checkpoint(context.Background(), Ref{Repo: "org/laya"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != commitA {
		t.Errorf("commit = %s, want %s", snap.Commit, commitA)
	}
	repoDir := filepath.Join(cache, "models--org--laya")
	if want := filepath.Join(repoDir, "snapshots", commitA); snap.Dir != want {
		t.Errorf("Dir = %s, want %s", snap.Dir, want)
	}
	if b, _ := os.ReadFile(filepath.Join(repoDir, "refs", "main")); string(b) != commitA {
		t.Errorf("refs/main = %q, want %s", b, commitA)
	}
	for _, f := range CheckpointFiles {
		if f.Optional {
			continue
		}
		if got := readSnapshotFile(t, snap, f.Name); !bytes.Equal(got, files[f.Name].data) {
			t.Errorf("%s: content differs (%d bytes, want %d)", f.Name, len(got), len(files[f.Name].data))
		}
		// huggingface_hub layout: relative symlink into blobs/<etag>.
		link := filepath.Join(snap.Dir, filepath.FromSlash(f.Name))
		target, err := os.Readlink(link)
		if err != nil {
			t.Errorf("%s is not a symlink: %v", f.Name, err)
			continue
		}
		if filepath.IsAbs(target) {
			t.Errorf("%s links to absolute %s", f.Name, target)
		}
		if got := filepath.Clean(filepath.Join(filepath.Dir(link), target)); got != filepath.Join(repoDir, "blobs", files[f.Name].etag()) {
			t.Errorf("%s links to %s, want blobs/%s", f.Name, got, files[f.Name].etag())
		}
	}
	if _, err := os.Stat(filepath.Join(snap.Dir, "README.md")); err == nil {
		t.Error("README.md was downloaded; only checkpoint files should be")
	}
	if _, err := os.Stat(filepath.Join(repoDir, ".no_exist", commitA, "mlx_config.json")); err != nil {
		t.Errorf("missing optional file not recorded in .no_exist: %v", err)
	}
	for i, a := range h.hubAuth {
		if a != "Bearer secret" {
			t.Errorf("hub request %d Authorization = %q", i, a)
		}
	}
	if h.cdnRequests == 0 {
		t.Fatal("no LFS request reached the CDN")
	}
	for i, a := range h.cdnAuth {
		if a != "" {
			t.Errorf("CDN request %d got the token (%q); it must not leave the Hub host", i, a)
		}
	}
	var done bool
	for _, e := range events {
		if e.File == "model.safetensors" && e.Done {
			done = e.Downloaded == 200_000 && e.Total == 200_000
		}
	}
	if !done {
		t.Errorf("no final progress event for model.safetensors with 200000/200000 bytes")
	}
	leftovers, _ := filepath.Glob(filepath.Join(repoDir, "blobs", "*.incomplete"))
	if len(leftovers) > 0 {
		t.Errorf("partial files left behind: %v", leftovers)
	}
}

func TestCachedResolutionNeedsNoNetwork(t *testing.T) {
	h := newFakeHub(t)
	h.addRepo("org/laya", false, commitA, checkpointFiles("multilingual", 5000))
	cache := t.TempDir()
	ref := Ref{Repo: "org/laya", Subfolder: "multilingual"}
	first, err := testClient(h, cache).Checkpoint(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := h.hub.URL
	h.close() // from here any network access fails

	for _, offline := range []bool{false, true} {
		c := &Client{Endpoint: endpoint, CacheDir: cache, Offline: offline}
		snap, err := c.Checkpoint(context.Background(), ref)
		if err != nil {
			t.Fatalf("offline=%v: cached checkpoint not resolved: %v", offline, err)
		}
		if snap.Dir != first.Dir || !strings.HasSuffix(snap.Dir, filepath.Join(commitA, "multilingual")) {
			t.Errorf("offline=%v: Dir = %s, want %s", offline, snap.Dir, first.Dir)
		}
	}
	// Pinning the commit itself also resolves from the cache.
	c := &Client{Endpoint: endpoint, CacheDir: cache}
	if _, err := c.Checkpoint(context.Background(), Ref{Repo: "org/laya", Subfolder: "multilingual", Revision: commitA}); err != nil {
		t.Errorf("commit revision not resolved from cache: %v", err)
	}
	if _, ok := c.Cached(ref, CheckpointFiles); !ok {
		t.Error("Cached reports the checkpoint missing")
	}
}

// A cache written by Python's huggingface_hub (built here by hand in its
// layout) is used as it is.
func TestReadsPythonCache(t *testing.T) {
	cache := t.TempDir()
	repoDir := filepath.Join(cache, "models--convaiinnovations--laya")
	os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commitB), 0o644)
	rc := repoCache{dir: repoDir}
	for i, f := range CheckpointFiles {
		if f.Optional {
			continue
		}
		etag := strings.Repeat(string(rune('a'+i)), 40)
		os.MkdirAll(filepath.Join(repoDir, "blobs"), 0o755)
		os.WriteFile(rc.blobPath(etag), []byte(f.Name), 0o644)
		if err := rc.linkSnapshot(commitB, "typed-decisions/"+f.Name, etag); err != nil {
			t.Fatal(err)
		}
	}
	c := &Client{Endpoint: "http://127.0.0.1:1", CacheDir: cache, Offline: true}
	snap, err := c.Checkpoint(context.Background(), Ref{Repo: "convaiinnovations/laya", Subfolder: "typed-decisions"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readSnapshotFile(t, snap, "encoder/config.json"); string(got) != "encoder/config.json" {
		t.Errorf("encoder/config.json = %q", got)
	}
	// The English checkpoint at the root is not cached: a dangling answer would be wrong.
	_, err = c.Checkpoint(context.Background(), Ref{Repo: "convaiinnovations/laya"})
	if !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("root checkpoint offline: err = %v, want ErrOffline naming HF_HUB_OFFLINE", err)
	}
}

func TestErrors(t *testing.T) {
	h := newFakeHub(t)
	h.addRepo("org/laya", false, commitA, checkpointFiles("", 100))
	h.addRepo("org/private", true, commitA, checkpointFiles("", 100))
	broken := checkpointFiles("", 100)
	delete(broken, "encoder/config.json")
	h.addRepo("org/broken", false, commitA, broken)
	h.requireTok = "secret"
	tests := []struct {
		name     string
		ref      Ref
		token    string
		offline  bool
		want     error
		mentions []string
	}{
		{name: "private without token", ref: Ref{Repo: "org/private"}, want: ErrUnauthorized, mentions: []string{"HF_TOKEN", "org/private"}},
		{name: "private with wrong token", ref: Ref{Repo: "org/private"}, token: "nope", want: ErrUnauthorized, mentions: []string{"HF_TOKEN"}},
		{name: "unknown repo", ref: Ref{Repo: "org/nothing"}, want: ErrRepoNotFound, mentions: []string{"org/nothing"}},
		{name: "unknown revision", ref: Ref{Repo: "org/laya", Revision: "v9"}, want: ErrRevisionNotFound, mentions: []string{`"v9"`}},
		{name: "unknown subfolder", ref: Ref{Repo: "org/laya", Subfolder: "klingon"}, want: ErrFileNotFound, mentions: []string{"klingon", "subfolder"}},
		{name: "missing required file", ref: Ref{Repo: "org/broken"}, want: ErrFileNotFound, mentions: []string{"encoder/config.json"}},
		{name: "offline, nothing cached", ref: Ref{Repo: "org/laya"}, offline: true, want: ErrOffline, mentions: []string{"HF_HUB_OFFLINE", "org/laya"}},
		{name: "bad revision", ref: Ref{Repo: "org/laya", Revision: "../x"}, want: ErrBadRef, mentions: []string{"../x"}},
		{name: "bad repo", ref: Ref{Repo: "laya"}, want: ErrBadRef, mentions: []string{"org/name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testClient(h, t.TempDir())
			c.Token, c.Offline = tt.token, tt.offline
			_, err := c.Checkpoint(context.Background(), tt.ref)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestResumeAfterConnectionCut(t *testing.T) {
	const size = 300_000
	const cut = 120_000
	h := newFakeHub(t)
	files := checkpointFiles("", size)
	h.addRepo("org/laya", false, commitA, files)
	h.cutAfter = cut
	cache := t.TempDir()
	c := testClient(h, cache) // no retries: the cut surfaces as an error
	_, err := c.Checkpoint(context.Background(), Ref{Repo: "org/laya"})
	if err == nil {
		t.Fatal("download with a cut connection succeeded")
	}
	partial := filepath.Join(cache, "models--org--laya", "blobs", files["model.safetensors"].etag()+".incomplete")
	st, serr := os.Stat(partial)
	if serr != nil || st.Size() == 0 || st.Size() > cut {
		t.Fatalf("partial file after cut: %v, size %d (want 1..%d)", serr, sizeOf(st), cut)
	}
	have := st.Size()

	var firstEvent *Progress
	c.Progress = func(p Progress) {
		if firstEvent == nil && p.File == "model.safetensors" {
			firstEvent = &p
		}
	}
	snap, err := c.Checkpoint(context.Background(), Ref{Repo: "org/laya"})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if got := readSnapshotFile(t, snap, "model.safetensors"); !bytes.Equal(got, files["model.safetensors"].data) {
		t.Fatal("resumed file differs from the original")
	}
	wantRange := "bytes=" + itoa(have) + "-"
	if last := h.ranges[len(h.ranges)-1]; last != wantRange {
		t.Errorf("resume Range = %q, want %q", last, wantRange)
	}
	if firstEvent == nil || firstEvent.Downloaded != have {
		t.Errorf("first progress event after resume = %+v, want Downloaded %d", firstEvent, have)
	}
}

func TestRetryWithinOneCall(t *testing.T) {
	tests := []struct {
		name    string
		noRange bool // a server that ignores Range sends the whole file again
	}{{name: "range honoured"}, {name: "range ignored", noRange: true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHub(t)
			files := checkpointFiles("", 250_000)
			h.addRepo("org/laya", false, commitA, files)
			h.cutAfter, h.noRange = 100_000, tt.noRange
			c := testClient(h, t.TempDir())
			c.retries = 2
			snap, err := c.Checkpoint(context.Background(), Ref{Repo: "org/laya"})
			if err != nil {
				t.Fatal(err)
			}
			if got := readSnapshotFile(t, snap, "model.safetensors"); !bytes.Equal(got, files["model.safetensors"].data) {
				t.Fatal("file differs from the original after a retried download")
			}
		})
	}
}

func TestHashMismatch(t *testing.T) {
	h := newFakeHub(t)
	files := checkpointFiles("", 4096)
	h.addRepo("org/laya", false, commitA, files)
	h.corrupt = true
	cache := t.TempDir()
	_, err := testClient(h, cache).Checkpoint(context.Background(), Ref{Repo: "org/laya"})
	if !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("err = %v, want ErrHashMismatch", err)
	}
	blobs, _ := filepath.Glob(filepath.Join(cache, "models--org--laya", "blobs", "*"))
	for _, b := range blobs {
		if strings.HasPrefix(filepath.Base(b), files["model.safetensors"].etag()[:16]) {
			t.Errorf("corrupt download kept as %s", b)
		}
	}
}

func TestContextCancelled(t *testing.T) {
	h := newFakeHub(t)
	h.addRepo("org/laya", false, commitA, checkpointFiles("", 100))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := testClient(h, t.TempDir()).Checkpoint(ctx, Ref{Repo: "org/laya"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if h.requests != 0 {
		t.Errorf("%d requests made with a cancelled context", h.requests)
	}
}

// Two revisions sharing a blob download it once.
func TestBlobSharedAcrossRevisions(t *testing.T) {
	h := newFakeHub(t)
	files := checkpointFiles("", 50_000)
	h.addRepo("org/laya", false, commitA, files)
	cache := t.TempDir()
	c := testClient(h, cache)
	if _, err := c.Checkpoint(context.Background(), Ref{Repo: "org/laya"}); err != nil {
		t.Fatal(err)
	}
	h.addRepo("org/laya", false, commitB, files) // main moves to commitB, same content
	before := h.cdnRequests
	snap, err := c.Checkpoint(context.Background(), Ref{Repo: "org/laya", Revision: commitB})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != commitB {
		t.Errorf("commit = %s, want %s", snap.Commit, commitB)
	}
	if h.cdnRequests != before {
		t.Errorf("%d CDN requests for blobs already cached", h.cdnRequests-before)
	}
}

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	bar := NewProgressBar(&buf)
	bar(Progress{File: "model.safetensors", Downloaded: 0, Total: 2048})
	bar(Progress{File: "model.safetensors", Downloaded: 2048, Total: 2048, Done: true})
	out := buf.String()
	for _, want := range []string{"model.safetensors", "100%", "2.0 KiB/2.0 KiB", "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output %q lacks %q", out, want)
		}
	}
	if TerminalProgress(&buf) != nil {
		t.Error("TerminalProgress draws on a non-terminal writer")
	}
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return -1
	}
	return st.Size()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
