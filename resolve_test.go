package laya

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

func TestResolveHub(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cache := fakeHubCache(t, "convaiinnovations/laya", commit, "multilingual")
	client := &hub.Client{Endpoint: "http://127.0.0.1:1", CacheDir: cache}
	snapshot := filepath.Join(cache, "models--convaiinnovations--laya", "snapshots", commit, "multilingual")
	tests := []struct {
		name    string
		ref     string
		opts    []HubOption
		wantDir string
		wantErr error
	}{
		{name: "subfolder in reference", ref: "convaiinnovations/laya/multilingual", wantDir: snapshot},
		{name: "subfolder option", ref: "convaiinnovations/laya", opts: []HubOption{WithSubfolder("multilingual")}, wantDir: snapshot},
		{name: "revision pinned to the commit", ref: "convaiinnovations/laya@" + commit, opts: []HubOption{WithSubfolder("multilingual"), WithOffline()}, wantDir: snapshot},
		{name: "conflicting revisions", ref: "convaiinnovations/laya@v1", opts: []HubOption{WithRevision("v2")}, wantErr: hub.ErrBadRef},
		{name: "conflicting subfolders", ref: "convaiinnovations/laya/a", opts: []HubOption{WithSubfolder("b")}, wantErr: hub.ErrBadRef},
		{name: "empty revision", ref: "convaiinnovations/laya", opts: []HubOption{WithRevision(" ")}, wantErr: hub.ErrBadRef},
		{name: "bad revision", ref: "convaiinnovations/laya", opts: []HubOption{WithRevision("../../x")}, wantErr: hub.ErrBadRef},
		{name: "offline, root not cached", ref: "convaiinnovations/laya", opts: []HubOption{WithOffline()}, wantErr: hub.ErrOffline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]HubOption{WithHubClient(client)}, tt.opts...)
			dir, err := ResolveHub(context.Background(), tt.ref, opts...)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || dir != tt.wantDir {
				t.Fatalf("ResolveHub = %q, %v; want %q", dir, err, tt.wantDir)
			}
		})
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
		if got := IsHubReference(ref); got != want {
			t.Errorf("IsHubReference(%q) = %v, want %v", ref, got, want)
		}
	}
}
