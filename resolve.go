package laya

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/laya-metal/laya/hub"
)

// Hugging Face Hub references ("org/name", "org/name/subfolder",
// "org/name@revision", "org/name/subfolder@revision") resolve to a snapshot
// directory in the shared HF cache (package hub); files Python tools
// downloaded are reused, and a cached checkpoint resolves without the
// network. The reference is the one place a revision or subfolder is given,
// so nothing can disagree with it; everything else about reaching the Hub
// (endpoint, token, cache, offline, progress) is the hub.Client's.

// WithHub resolves Hub references through client (endpoint, token, cache
// directory, offline mode, progress callback, HTTP client) instead of
// hub.NewClient(), which reads HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE/HF_HOME
// and HF_HUB_OFFLINE. Load does not modify client; one client may serve any
// number of loads.
func WithHub(client *hub.Client) Option {
	return func(c *loadConfig) error {
		if client == nil {
			return errors.New("laya: WithHub(nil); pass a *hub.Client (hub.NewClient() reads the environment)")
		}
		c.hub = client
		return nil
	}
}

// isHubReference reports whether ref names a Hub repository rather than a
// local directory: it does not exist on disk, does not start like a path
// (/, ./, ../, ~) and has the org/name shape.
func isHubReference(ref string) bool {
	if _, err := os.Stat(ref); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return hub.LooksLikeRepoID(ref)
}

// resolveHub returns the local directory of a Hub checkpoint, downloading
// the files a Laya checkpoint needs when they are not cached yet; client nil
// means hub.NewClient().
func resolveHub(ctx context.Context, ref string, client *hub.Client) (string, error) {
	r, err := hub.ParseRef(ref)
	if err != nil {
		return "", fmt.Errorf("laya: %w", err)
	}
	if err := r.Validate(); err != nil {
		return "", fmt.Errorf("laya: %w", err)
	}
	if client == nil {
		client = hub.NewClient()
	}
	snap, err := client.Checkpoint(ctx, r)
	if err != nil {
		return "", fmt.Errorf("laya: checkpoint %s: %w", r, err)
	}
	return snap.Dir, nil
}
