package hub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeHub imitates the parts of the Hub protocol the client uses: the models
// API, resolve URLs with HF's headers and error codes, and a CDN on another
// host that LFS files redirect to.
type fakeHub struct {
	t     *testing.T
	hub   *httptest.Server
	cdn   *httptest.Server
	mu    sync.Mutex
	repos map[string]*fakeRepo

	// behaviour switches
	cutAfter   int64  // >0: the first CDN GET of a full file stops after this many bytes
	corrupt    bool   // CDN flips a byte of LFS content
	noRange    bool   // CDN ignores Range headers
	requireTok string // token private repos need

	// observations
	cdnAuth     []string // Authorization headers the CDN saw
	hubAuth     []string // Authorization headers the hub saw
	ranges      []string // Range headers the CDN saw
	requests    int
	cdnRequests int
}

type fakeRepo struct {
	private  bool
	branches map[string]string // revision -> commit
	commits  map[string]map[string]fakeFile
}

type fakeFile struct {
	data []byte
	lfs  bool
}

func (f fakeFile) etag() string {
	if f.lfs {
		s := sha256.Sum256(f.data)
		return hex.EncodeToString(s[:])
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(f.data))
	h.Write(f.data)
	return hex.EncodeToString(h.Sum(nil))
}

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	commitB = "89abcdef0123456789abcdef0123456789abcdef"
)

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, repos: map[string]*fakeRepo{}}
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(h.close)
	return h
}

func (h *fakeHub) close() {
	h.hub.Close()
	h.cdn.Close()
}

// checkpointFiles builds the five required files plus a large-ish LFS weight file.
func checkpointFiles(prefix string, weightSize int) map[string]fakeFile {
	weights := make([]byte, weightSize)
	for i := range weights {
		weights[i] = byte(i*7 + i/251)
	}
	p := func(s string) string {
		if prefix == "" {
			return s
		}
		return prefix + "/" + s
	}
	return map[string]fakeFile{
		p("rl_agent_config.json"):            {data: []byte(`{"encoder":"x","head_layers":2}`)},
		p("encoder/config.json"):             {data: []byte(`{"model_type":"modernbert"}`)},
		p("tokenizer/tokenizer.json"):        {data: []byte(`{"model":{"type":"BPE"}}`), lfs: true},
		p("tokenizer/tokenizer_config.json"): {data: []byte(`{}`)},
		p("model.safetensors"):               {data: weights, lfs: true},
		"README.md":                          {data: []byte("# not needed")},
	}
}

func (h *fakeHub) addRepo(name string, private bool, commit string, files map[string]fakeFile) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[name]
	if r == nil {
		r = &fakeRepo{private: private, branches: map[string]string{}, commits: map[string]map[string]fakeFile{}}
		h.repos[name] = r
	}
	r.branches["main"] = commit
	r.commits[commit] = files
}

func hfError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.WriteHeader(status)
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests++
	h.hubAuth = append(h.hubAuth, r.Header.Get("Authorization"))
	h.mu.Unlock()

	path := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(path, "/api/models/"); ok {
		// org/name/revision/<escaped rev>
		parts := strings.SplitN(rest, "/", 4)
		if len(parts) != 4 || parts[2] != "revision" {
			http.NotFound(w, r)
			return
		}
		rev, _ := unescape(parts[3])
		repo, commit, files, ok := h.lookup(w, r, parts[0]+"/"+parts[1], rev)
		if !ok {
			return
		}
		_ = repo
		type sib struct {
			RFilename string `json:"rfilename"`
		}
		out := struct {
			SHA      string `json:"sha"`
			Siblings []sib  `json:"siblings"`
		}{SHA: commit}
		for name := range files {
			out.Siblings = append(out.Siblings, sib{name})
		}
		json.NewEncoder(w).Encode(out)
		return
	}
	// /org/name/resolve/<rev>/<path>
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 5)
	if len(parts) != 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	rev, _ := unescape(parts[3])
	file, _ := unescape(parts[4])
	_, commit, files, ok := h.lookup(w, r, parts[0]+"/"+parts[1], rev)
	if !ok {
		return
	}
	f, ok := files[file]
	if !ok {
		hfError(w, 404, "EntryNotFound", file+" does not exist")
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if f.lfs {
		w.Header().Set("X-Linked-Etag", `"`+f.etag()+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
		w.Header().Set("ETag", `"not-the-blob-name"`)
		w.Header().Set("Location", h.cdn.URL+"/lfs/"+f.etag())
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `W/"`+f.etag()+`"`)
	http.ServeContent(w, r, "", zeroTime, strings.NewReader(string(f.data)))
}

func (h *fakeHub) lookup(w http.ResponseWriter, r *http.Request, name, rev string) (*fakeRepo, string, map[string]fakeFile, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	repo, ok := h.repos[name]
	if !ok {
		hfError(w, 404, "RepoNotFound", "Repository not found")
		return nil, "", nil, false
	}
	if repo.private && r.Header.Get("Authorization") != "Bearer "+h.requireTok {
		hfError(w, 401, "RepoNotFound", "Invalid username or password.")
		return nil, "", nil, false
	}
	commit := repo.branches[rev]
	if commit == "" {
		commit = rev
	}
	files, ok := repo.commits[commit]
	if !ok {
		hfError(w, 404, "RevisionNotFound", "Invalid rev id: "+rev)
		return nil, "", nil, false
	}
	return repo, commit, files, true
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.cdnRequests++
	h.cdnAuth = append(h.cdnAuth, r.Header.Get("Authorization"))
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	var data []byte
	for _, repo := range h.repos {
		for _, files := range repo.commits {
			for _, f := range files {
				if f.lfs && "/lfs/"+f.etag() == r.URL.Path {
					data = append([]byte(nil), f.data...)
				}
			}
		}
	}
	var cut int64
	if h.cutAfter > 0 && int64(len(data)) > h.cutAfter && r.Header.Get("Range") == "" {
		cut, h.cutAfter = h.cutAfter, 0 // only the first full request of a big file is cut
	}
	corrupt, noRange := h.corrupt, h.noRange
	h.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	if corrupt {
		data[len(data)/2] ^= 0xff
	}
	if noRange {
		r.Header.Del("Range")
	}
	if cut > 0 && r.Method == http.MethodGet {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-body
	}
	http.ServeContent(w, r, "", zeroTime, strings.NewReader(string(data)))
}
