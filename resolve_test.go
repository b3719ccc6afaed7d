package laya

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya/hub"
)

// fakeHubCache writes a checkpoint into an HF-cache layout (snapshot files as
// plain copies, huggingface_hub's fallback where symlinks are unavailable).
func fakeHubCache(t *testing.T, repo, commit, subfolder string) string {
	t.Helper()
	cache := t.TempDir()
	repoDir := filepath.Join(cache, "models--"+filepath.Base(filepath.Dir(repo))+"--"+filepath.Base(repo))
	os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commit), 0o644)
	for _, f := range hub.CheckpointFiles {
		if f.Optional {
			continue
		}
		p := filepath.Join(repoDir, "snapshots", commit, subfolder, filepath.FromSlash(f.Name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("{}"), 0o644)
	}
	return cache
}

// The reference alone names the subfolder and revision; the client says
// how to reach the Hub (here: a cache and an endpoint nothing listens on).
func TestResolveHub(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cache := fakeHubCache(t, "convaiinnovations/laya", commit, "multilingual")
	client := &hub.Client{Endpoint: "http://127.0.0.1:1", CacheDir: cache}
	offline := &hub.Client{Endpoint: "http://127.0.0.1:1", CacheDir: cache, Offline: true}
	snapshot := filepath.Join(cache, "models--convaiinnovations--laya", "snapshots", commit, "multilingual")
	tests := []struct {
		name    string
		ref     string
		client  *hub.Client
		wantDir string
		wantErr error
	}{
		{name: "subfolder in reference", ref: "convaiinnovations/laya/multilingual", client: client, wantDir: snapshot},
		{name: "revision pinned to the commit", ref: "convaiinnovations/laya/multilingual@" + commit, client: offline, wantDir: snapshot},
		{name: "empty revision", ref: "convaiinnovations/laya@", client: client, wantErr: hub.ErrBadRef},
		{name: "bad revision", ref: "convaiinnovations/laya@../../x", client: client, wantErr: hub.ErrBadRef},
		{name: "offline, root not cached", ref: "convaiinnovations/laya", client: offline, wantErr: hub.ErrOffline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := resolveHub(context.Background(), tt.ref, tt.client)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || dir != tt.wantDir {
				t.Fatalf("resolveHub = %q, %v; want %q", dir, err, tt.wantDir)
			}
		})
	}
}

// Load goes through the client WithHub gives, and leaves it as it was.
func TestLoadWithHubClient(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cache := fakeHubCache(t, "convaiinnovations/laya", commit, "multilingual")
	client := &hub.Client{Endpoint: "http://127.0.0.1:1", CacheDir: cache, Offline: true}
	before := [4]any{client.Endpoint, client.CacheDir, client.Offline, client.Token}
	_, err := Load(context.Background(), "convaiinnovations/laya/multilingual@"+commit, WithHub(client))
	// The fake snapshot's files are "{}": resolving succeeds, reading the
	// checkpoint then fails, which shows the snapshot was found.
	if err == nil || errors.Is(err, hub.ErrOffline) || !strings.Contains(err.Error(), commit) {
		t.Fatalf("Load = %v, want a checkpoint error from inside the snapshot %s", err, commit)
	}
	if after := [4]any{client.Endpoint, client.CacheDir, client.Offline, client.Token}; after != before {
		t.Errorf("Load modified the client: %v, was %v", after, before)
	}
}

func TestIsHubReference(t *testing.T) {
	local := t.TempDir()
	for ref, want := range map[string]bool{
		"convaiinnovations/laya":              true,
		"convaiinnovations/laya/multilingual": true,
		"aac6fef/laya-mlx@main":               true,
		local:                                 false,
		"./ckpt/x":                            false,
		"testdata/oracle":                     false, // exists on disk
		"laya":                                false,
	} {
		if got := isHubReference(ref); got != want {
			t.Errorf("isHubReference(%q) = %v, want %v", ref, got, want)
		}
	}
}
