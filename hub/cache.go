package hub

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// repoCache is one repository's folder in the hub cache.
type repoCache struct {
	dir string // <cache>/models--org--name
}

func (c repoCache) refPath(revision string) string {
	return filepath.Join(c.dir, "refs", filepath.FromSlash(revision))
}
func (c repoCache) snapshotDir(commit string) string {
	return filepath.Join(c.dir, "snapshots", commit)
}
func (c repoCache) snapshotFile(commit, repoPath string) string {
	return filepath.Join(c.snapshotDir(commit), filepath.FromSlash(repoPath))
}
func (c repoCache) blobPath(etag string) string {
	return filepath.Join(c.dir, "blobs", etag)
}
func (c repoCache) noExistPath(commit, repoPath string) string {
	return filepath.Join(c.dir, ".no_exist", commit, filepath.FromSlash(repoPath))
}
func (c repoCache) lockPath(etag string) string {
	// .locks sits beside the repository folders: <cache>/.locks/models--org--name/<etag>.lock
	return filepath.Join(filepath.Dir(c.dir), ".locks", filepath.Base(c.dir), etag+".lock")
}

// commitFor returns the commit a revision resolves to in the cache: the
// revision itself when it is a commit hash whose snapshot exists, else the
// content of refs/<revision>.
func (c repoCache) commitFor(revision string) (string, bool) {
	if commitPattern.MatchString(revision) {
		if st, err := os.Stat(c.snapshotDir(revision)); err == nil && st.IsDir() {
			return revision, true
		}
	}
	b, err := os.ReadFile(c.refPath(revision))
	if err != nil {
		return "", false
	}
	commit := strings.TrimSpace(string(b))
	if !commitPattern.MatchString(commit) {
		return "", false
	}
	return commit, true
}

// writeRef records that revision points at commit, atomically, so a reader
// never sees a half-written hash.
func (c repoCache) writeRef(revision, commit string) error {
	if revision == commit {
		return nil
	}
	return writeFileAtomic(c.refPath(revision), []byte(commit))
}

// hasFile reports whether the snapshot has repoPath and it leads to a
// regular file (a dangling link to a deleted blob does not count).
func (c repoCache) hasFile(commit, repoPath string) bool {
	st, err := os.Stat(c.snapshotFile(commit, repoPath))
	return err == nil && st.Mode().IsRegular()
}

// markMissing records that an optional file is absent at commit in
// huggingface_hub's form (.no_exist/<commit>/<path>, which its
// try_to_load_from_cache reports as known absent), so that the cache reads
// the same to it. This package never reads the record: a lookup only
// counts required files.
func (c repoCache) markMissing(commit, repoPath string) error {
	p := c.noExistPath(commit, repoPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// linkSnapshot points snapshots/<commit>/<repoPath> at the blob with a
// relative symlink, the form huggingface_hub creates (so the cache can be
// moved as a whole). Where symlinks are refused, the blob is copied instead,
// which is huggingface_hub's fallback too.
func (c repoCache) linkSnapshot(commit, repoPath, etag string) error {
	dst := c.snapshotFile(commit, repoPath)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("hub: create snapshot directory: %w", err)
	}
	blob := c.blobPath(etag)
	rel, err := filepath.Rel(filepath.Dir(dst), blob)
	if err != nil {
		return fmt.Errorf("hub: relative path to blob: %w", err)
	}
	tmp := dst + ".tmp-" + randomSuffix()
	if err := os.Symlink(rel, tmp); err != nil {
		if cerr := copyFile(blob, tmp); cerr != nil {
			return fmt.Errorf("hub: link %s: symlink failed (%v) and copy failed: %w", dst, err, cerr)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: link %s: %w", dst, err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("hub: create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp-" + randomSuffix()
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("hub: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: write %s: %w", path, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
