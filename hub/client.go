package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// File is one file of a checkpoint, named relative to the checkpoint
// directory (the subfolder, when there is one).
type File struct {
	Name     string
	Optional bool // absent on the Hub is fine
}

// CheckpointFiles are the files a Laya checkpoint is made of (laya-spec §4.1:
// upstream's snapshot_download allow_patterns, laya-mlx's list). Nothing else
// in the repository is downloaded.
var CheckpointFiles = []File{
	{Name: "rl_agent_config.json"},
	{Name: "encoder/config.json"},
	{Name: "tokenizer/tokenizer.json"},
	{Name: "tokenizer/tokenizer_config.json"},
	{Name: "mlx_config.json", Optional: true},
	{Name: "model.safetensors"},
}

// Snapshot is a resolved checkpoint in the cache.
type Snapshot struct {
	Ref    Ref
	Commit string // the 40-hex commit the revision resolved to
	Dir    string // snapshots/<commit>[/<subfolder>]: load the checkpoint from here
}

// Client resolves references against the cache and, unless offline, the Hub.
// The zero value is not ready; use NewClient, then adjust fields before use.
type Client struct {
	Endpoint   string       // Hub base URL, e.g. https://huggingface.co
	Token      string       // sent as "Authorization: Bearer" to Endpoint only
	CacheDir   string       // the hub cache (…/huggingface/hub)
	Offline    bool         // never touch the network
	HTTPClient *http.Client // nil means http.DefaultClient's transport
	// Progress, when set, is called as files download (see Progress).
	Progress func(Progress)
	// UserAgent is sent with every request.
	UserAgent string

	retries    int           // extra attempts after a connection breaks mid-file
	retryDelay time.Duration // pause before each extra attempt
}

// NewClient returns a client configured from the environment (HF_ENDPOINT,
// HF_TOKEN, HF_HUB_CACHE/HF_HOME, HF_HUB_OFFLINE).
func NewClient() *Client {
	return &Client{
		Endpoint:   EndpointFromEnv(),
		Token:      TokenFromEnv(),
		CacheDir:   CacheDirFromEnv(),
		Offline:    OfflineFromEnv(),
		UserAgent:  "laya-go/hub",
		retries:    5,
		retryDelay: time.Second,
	}
}

// Checkpoint resolves a Laya checkpoint: from the cache when every required
// file is there, else by downloading the missing ones.
func (c *Client) Checkpoint(ctx context.Context, ref Ref) (*Snapshot, error) {
	return c.Fetch(ctx, ref, CheckpointFiles)
}

// Cached returns the snapshot when every required file is in the cache,
// without any network access.
func (c *Client) Cached(ref Ref, files []File) (*Snapshot, bool) {
	if ref.Validate() != nil {
		return nil, false
	}
	snap, missing, _ := c.lookup(ref, files)
	return snap, len(missing) == 0
}

// lookup reports what the cache holds: the snapshot (when the commit is
// known), the required files missing from it, and whether the commit is known.
func (c *Client) lookup(ref Ref, files []File) (*Snapshot, []string, bool) {
	rc := c.repoCache(ref.Repo)
	commit, ok := rc.commitFor(ref.revision())
	if !ok {
		var all []string
		for _, f := range files {
			if !f.Optional {
				all = append(all, ref.repoFile(f.Name))
			}
		}
		return nil, all, false
	}
	var missing []string
	for _, f := range files {
		p := ref.repoFile(f.Name)
		if !f.Optional && !rc.hasFile(commit, p) {
			missing = append(missing, p)
		}
	}
	return c.snapshot(ref, commit), missing, true
}

func (c *Client) snapshot(ref Ref, commit string) *Snapshot {
	dir := c.repoCache(ref.Repo).snapshotDir(commit)
	if ref.Subfolder != "" {
		dir = filepath.Join(dir, filepath.FromSlash(ref.Subfolder))
	}
	return &Snapshot{Ref: ref, Commit: commit, Dir: dir}
}

func (c *Client) repoCache(repo string) repoCache {
	return repoCache{dir: filepath.Join(c.CacheDir, cacheFolderName(repo))}
}

// Fetch makes files available in the cache and returns their snapshot.
func (c *Client) Fetch(ctx context.Context, ref Ref, files []File) (*Snapshot, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if snap, missing, _ := c.lookup(ref, files); len(missing) == 0 {
		return snap, nil
	} else if c.Offline {
		return nil, fmt.Errorf("%w: %s is missing %s in the cache %s; HF_HUB_OFFLINE is set, so unset it (or run once with network) to download it",
			ErrOffline, ref, strings.Join(missing, ", "), c.CacheDir)
	}
	if c.CacheDir == "" {
		return nil, fmt.Errorf("hub: no cache directory; set HF_HUB_CACHE or HF_HOME")
	}

	rev := ref.revision()
	info, err := c.revisionInfo(ctx, ref.Repo, rev)
	if err != nil {
		return nil, err
	}
	rc := c.repoCache(ref.Repo)
	if err := rc.writeRef(rev, info.SHA); err != nil {
		return nil, err
	}
	siblings := make(map[string]bool, len(info.Siblings))
	hasSubfolder := ref.Subfolder == ""
	for _, s := range info.Siblings {
		siblings[s.RFilename] = true
		if strings.HasPrefix(s.RFilename, ref.Subfolder+"/") {
			hasSubfolder = true
		}
	}
	if len(siblings) > 0 && !hasSubfolder {
		return nil, fmt.Errorf("%w: %s@%s has no subfolder %q; check the subfolder name (the repository has %d files)",
			ErrFileNotFound, ref.Repo, rev, ref.Subfolder, len(siblings))
	}
	for _, f := range files {
		p := ref.repoFile(f.Name)
		if rc.hasFile(info.SHA, p) {
			continue
		}
		if len(siblings) > 0 && !siblings[p] {
			if f.Optional {
				rc.markMissing(info.SHA, p)
				continue
			}
			return nil, fmt.Errorf("%w: %s@%s (commit %s) has no %s; a Laya checkpoint needs it: check the repository and subfolder",
				ErrFileNotFound, ref.Repo, rev, info.SHA, p)
		}
		if err := c.fetchFile(ctx, rc, ref.Repo, info.SHA, p); err != nil {
			if f.Optional && errors.Is(err, ErrFileNotFound) {
				rc.markMissing(info.SHA, p)
				continue
			}
			return nil, err
		}
	}
	return c.snapshot(ref, info.SHA), nil
}

type revisionInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
	} `json:"siblings"`
}

// revisionInfo asks the models API which commit a revision is and which
// files it has: GET {endpoint}/api/models/{repo}/revision/{rev}.
func (c *Client) revisionInfo(ctx context.Context, repo, rev string) (*revisionInfo, error) {
	u := c.Endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(rev)
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, err
	}
	resp, err := c.client(false).Do(req)
	if err != nil {
		return nil, fmt.Errorf("hub: ask %s for %s@%s: %w (set HF_HUB_OFFLINE=1 to use only the cache)", c.Endpoint, repo, rev, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(resp, repo, rev, "")
	}
	var info revisionInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("%w: %s: model info for %s@%s is not JSON: %v", ErrServer, c.Endpoint, repo, rev, err)
	}
	if !commitPattern.MatchString(info.SHA) {
		return nil, fmt.Errorf("%w: %s: model info for %s@%s has no commit sha (got %q)", ErrServer, c.Endpoint, repo, rev, info.SHA)
	}
	return &info, nil
}

// fileMeta is what a HEAD on the resolve URL says about a file.
type fileMeta struct {
	etag string // LFS sha256 (64 hex) or git oid
	size int64  // -1 if unknown
}

// etagPattern keeps server-supplied ETags usable as blob file names.
var etagPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,128}$`)
var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (c *Client) resolveURL(repo, commit, repoPath string) string {
	return c.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(commit) + "/" + (&url.URL{Path: repoPath}).EscapedPath()
}

// head reads a file's metadata without following the redirect to the CDN:
// X-Linked-Etag/X-Linked-Size describe the LFS object, the plain ETag and
// Content-Length a regular file.
func (c *Client) head(ctx context.Context, repo, commit, repoPath string) (fileMeta, error) {
	req, err := c.newRequest(ctx, http.MethodHead, c.resolveURL(repo, commit, repoPath))
	if err != nil {
		return fileMeta{}, err
	}
	resp, err := c.client(true).Do(req)
	if err != nil {
		return fileMeta{}, fmt.Errorf("hub: HEAD %s in %s: %w", repoPath, repo, err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fileMeta{}, c.statusError(resp, repo, commit, repoPath)
	}
	etag := resp.Header.Get("X-Linked-Etag")
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	etag = strings.Trim(strings.TrimPrefix(strings.TrimSpace(etag), "W/"), `"`)
	if !etagPattern.MatchString(etag) {
		return fileMeta{}, fmt.Errorf("%w: %s in %s: the Hub sent no usable ETag (%q), so the file cannot be cached", ErrServer, repoPath, repo, etag)
	}
	meta := fileMeta{etag: etag, size: -1}
	sz := resp.Header.Get("X-Linked-Size")
	if sz == "" && resp.StatusCode < 300 {
		sz = resp.Header.Get("Content-Length")
	}
	if n, err := strconv.ParseInt(sz, 10, 64); err == nil && n >= 0 {
		meta.size = n
	}
	return meta, nil
}

// fetchFile puts one file into blobs/ (unless an identical blob is already
// there, e.g. from another revision) and links it into the snapshot.
func (c *Client) fetchFile(ctx context.Context, rc repoCache, repo, commit, repoPath string) error {
	meta, err := c.head(ctx, repo, commit, repoPath)
	if err != nil {
		return err
	}
	blob := rc.blobPath(meta.etag)
	if !blobComplete(blob, meta.size) {
		unlock, err := lockFile(ctx, rc.lockPath(meta.etag))
		if err != nil {
			return err
		}
		// Another process may have finished the blob while we waited.
		if !blobComplete(blob, meta.size) {
			err = c.download(ctx, repo, commit, repoPath, blob, meta)
		}
		unlock()
		if err != nil {
			return err
		}
	}
	return rc.linkSnapshot(commit, repoPath, meta.etag)
}

func blobComplete(path string, size int64) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && (size < 0 || st.Size() == size)
}

// errRetry marks a broken transfer worth resuming.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

// download writes the file into blob+".incomplete", resuming what an earlier
// attempt (ours or huggingface_hub's) left there, verifies it and renames it
// into place.
func (c *Client) download(ctx context.Context, repo, commit, repoPath, blob string, meta fileMeta) error {
	partial := blob + ".incomplete"
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub: create blobs directory: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt <= c.retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("hub: download of %s from %s interrupted (partial file kept for resume): %w", repoPath, repo, ctx.Err())
			case <-time.After(c.retryDelay):
			}
		}
		err := c.downloadOnce(ctx, repo, commit, repoPath, partial, meta)
		if err == nil {
			lastErr = nil
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("hub: download of %s from %s interrupted (partial file kept for resume): %w", repoPath, repo, ctx.Err())
		}
		var retry errRetry
		if !errors.As(err, &retry) {
			return err
		}
		lastErr = err
	}
	if lastErr != nil {
		return fmt.Errorf("hub: download of %s from %s failed after %d attempts (partial file kept; run again to resume): %w", repoPath, repo, c.retries+1, lastErr)
	}
	if err := verifyBlob(partial, meta); err != nil {
		os.Remove(partial)
		return fmt.Errorf("%s in %s@%s: %w; the bad download was deleted, run again to retry", repoPath, repo, commit, err)
	}
	if err := os.Rename(partial, blob); err != nil {
		return fmt.Errorf("hub: move finished download into %s: %w", blob, err)
	}
	return nil
}

func (c *Client) downloadOnce(ctx context.Context, repo, commit, repoPath, partial string, meta fileMeta) error {
	have, err := fileSize(partial)
	if err != nil {
		return fmt.Errorf("hub: read partial download %s: %w", partial, err)
	}
	if meta.size >= 0 && have > meta.size {
		have = 0 // a different file sat under this name; start over
	}
	if meta.size >= 0 && have == meta.size {
		return nil
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.resolveURL(repo, commit, repoPath))
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := c.client(false).Do(req)
	if err != nil {
		return errRetry{fmt.Errorf("GET %s: %w", repoPath, err)}
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0 && contentRangeStart(resp.Header.Get("Content-Range")) == have:
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusOK:
		flags |= os.O_TRUNC
		have = 0
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		os.Remove(partial) // our partial file does not fit the server's: start over
		return errRetry{fmt.Errorf("%w: range request for %s refused; restarting", ErrServer, repoPath)}
	case resp.StatusCode >= 500:
		return errRetry{c.statusError(resp, repo, commit, repoPath)}
	case resp.StatusCode >= 400:
		return c.statusError(resp, repo, commit, repoPath)
	default:
		return fmt.Errorf("%w: GET %s in %s: status %s", ErrServer, repoPath, repo, resp.Status)
	}
	f, err := os.OpenFile(partial, flags, 0o644)
	if err != nil {
		return fmt.Errorf("hub: open %s: %w", partial, err)
	}
	pw := &progressWriter{w: f, p: Progress{Repo: repo, File: repoPath, Downloaded: have, Total: meta.size}, cb: c.Progress}
	pw.report()
	_, copyErr := io.Copy(pw, resp.Body)
	closeErr := f.Close()
	if copyErr != nil {
		return errRetry{fmt.Errorf("reading %s: %w", repoPath, copyErr)}
	}
	if closeErr != nil {
		return fmt.Errorf("hub: write %s: %w", partial, closeErr)
	}
	if meta.size >= 0 && pw.p.Downloaded < meta.size {
		return errRetry{fmt.Errorf("reading %s: connection closed at %d of %d bytes", repoPath, pw.p.Downloaded, meta.size)}
	}
	pw.p.Done = true
	pw.report()
	return nil
}

func contentRangeStart(h string) int64 {
	// "bytes 100-199/200"
	h = strings.TrimPrefix(strings.TrimSpace(h), "bytes ")
	dash := strings.IndexByte(h, '-')
	if dash <= 0 {
		return -1
	}
	n, err := strconv.ParseInt(h[:dash], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// verifyBlob checks the size the Hub announced and, for LFS files (whose
// ETag is the sha256 of the content), the hash.
func verifyBlob(path string, meta fileMeta) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if meta.size >= 0 && n != meta.size {
		return fmt.Errorf("%w: got %d bytes, the Hub announced %d", ErrSizeMismatch, n, meta.size)
	}
	if sha256Pattern.MatchString(meta.etag) {
		if got := hex.EncodeToString(h.Sum(nil)); got != meta.etag {
			return fmt.Errorf("%w: got sha256 %s, the Hub's LFS ETag says %s", ErrHashMismatch, got, meta.etag)
		}
	}
	return nil
}

type progressWriter struct {
	w  io.Writer
	p  Progress
	cb func(Progress)
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	n, err := pw.w.Write(b)
	pw.p.Downloaded += int64(n)
	pw.report()
	return n, err
}

func (pw *progressWriter) report() {
	if pw.cb != nil {
		pw.cb(pw.p)
	}
}

func (c *Client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("hub: bad URL %q (check HF_ENDPOINT): %w", u, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	// Sizes and hashes are of the stored bytes; never let a proxy compress them.
	req.Header.Set("Accept-Encoding", "identity")
	return req, nil
}

// client returns an HTTP client whose redirects never carry the token to
// another host (Go itself would forward it to a subdomain such as the LFS
// CDN). With stopAtOtherHost, a redirect to another host is returned rather
// than followed, which is how HEAD reads the Hub's own headers; same-host
// redirects (a renamed repository) are still followed.
func (c *Client) client(stopAtOtherHost bool) *http.Client {
	base := c.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	cl := *base
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.URL.Host != via[0].URL.Host {
			if stopAtOtherHost {
				return http.ErrUseLastResponse
			}
			req.Header.Del("Authorization")
		}
		return nil
	}
	return &cl
}

// statusError turns an error status into a sentinel error that says what to
// do. The Hub names the cause in X-Error-Code (RepoNotFound,
// RevisionNotFound, EntryNotFound, GatedRepo).
func (c *Client) statusError(resp *http.Response, repo, rev, file string) error {
	code := resp.Header.Get("X-Error-Code")
	msg := resp.Header.Get("X-Error-Message")
	if msg != "" {
		msg = " (" + msg + ")"
	}
	what := repo + "@" + rev
	if file != "" {
		what = file + " in " + what
	}
	tokenHint := "set HF_TOKEN to a token with read access (https://huggingface.co/settings/tokens)"
	if c.Token != "" {
		tokenHint = "the token in HF_TOKEN was refused or lacks access to it; check the token"
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%w: %s: 401 from %s%s: the repository is private, gated or does not exist; %s",
			ErrUnauthorized, what, c.Endpoint, msg, tokenHint)
	case resp.StatusCode == http.StatusForbidden || code == "GatedRepo":
		return fmt.Errorf("%w: %s: %d from %s%s: access is restricted (gated repository?): accept its terms on the Hub page, and %s",
			ErrUnauthorized, what, resp.StatusCode, c.Endpoint, msg, tokenHint)
	case code == "RevisionNotFound":
		return fmt.Errorf("%w: %s has no revision %q%s; use a branch, tag or commit that exists (default %q)",
			ErrRevisionNotFound, repo, rev, msg, DefaultRevision)
	case code == "EntryNotFound" || (resp.StatusCode == http.StatusNotFound && file != "" && code != "RepoNotFound"):
		return fmt.Errorf("%w: %s does not exist%s; check the repository and subfolder", ErrFileNotFound, what, msg)
	case code == "RepoNotFound" || resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s: no such repository at %s%s; check the spelling (org/name), or if it is private %s",
			ErrRepoNotFound, repo, c.Endpoint, msg, tokenHint)
	}
	return fmt.Errorf("%w: %s: %s from %s%s", ErrServer, what, resp.Status, c.Endpoint, msg)
}
