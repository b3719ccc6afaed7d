package laya

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/laya-metal/laya/hub"
)

// Hugging Face Hub references ("org/name", "org/name/subfolder",
// "org/name@revision") resolve to a snapshot directory in the shared HF
// cache (package hub); files Python tools downloaded are reused, and a cached
// checkpoint resolves without the network.

// Progress reports a checkpoint file's download (see WithProgress).
type Progress = hub.Progress

// HubOption configures how a Hub reference is resolved.
type HubOption func(*hubConfig) error

type hubConfig struct {
	revision  string
	subfolder string
	token     string
	offline   bool
	progress  func(Progress)
	client    *hub.Client // tests and servers with their own endpoint/cache
}

// WithRevision pins a branch, tag or commit (default "main"; a 40-hex commit
// makes the checkpoint immutable). It must agree with an "@rev" in the reference.
func WithRevision(revision string) HubOption {
	return func(c *hubConfig) error {
		if strings.TrimSpace(revision) == "" {
			return fmt.Errorf("%w: empty revision; give a branch, tag or commit, or leave WithRevision out", hub.ErrBadRef)
		}
		c.revision = revision
		return nil
	}
}

// WithSubfolder loads the checkpoint from a subfolder of the repository,
// e.g. "multilingual" in the convaiinnovations/laya bundle.
func WithSubfolder(subfolder string) HubOption {
	return func(c *hubConfig) error {
		c.subfolder = strings.Trim(subfolder, "/")
		return nil
	}
}

// WithToken sets the Hub token for private or gated repositories, in place
// of $HF_TOKEN.
func WithToken(token string) HubOption {
	return func(c *hubConfig) error {
		c.token = token
		return nil
	}
}

// WithOffline never touches the network, as HF_HUB_OFFLINE=1 does: the
// checkpoint must already be in the cache.
func WithOffline() HubOption {
	return func(c *hubConfig) error {
		c.offline = true
		return nil
	}
}

// WithProgress receives download progress; for a terminal bar pass
// hub.TerminalProgress(os.Stderr).
func WithProgress(fn func(Progress)) HubOption {
	return func(c *hubConfig) error {
		c.progress = fn
		return nil
	}
}

// WithHubClient resolves through a configured client (endpoint, cache
// directory, HTTP client) instead of one built from the environment.
func WithHubClient(client *hub.Client) HubOption {
	return func(c *hubConfig) error {
		c.client = client
		return nil
	}
}

// IsHubReference reports whether ref names a Hub repository rather than a
// local directory: it does not exist on disk, does not start like a path
// (/, ./, ../, ~) and has the org/name shape.
func IsHubReference(ref string) bool {
	if _, err := os.Stat(ref); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return hub.LooksLikeRepoID(ref)
}

// ResolveHub returns the local directory of a Hub checkpoint, downloading the
// files a Laya checkpoint needs when they are not cached yet.
func ResolveHub(ctx context.Context, ref string, opts ...HubOption) (string, error) {
	var cfg hubConfig
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return "", err
		}
	}
	return resolveHub(ctx, ref, cfg)
}

// resolveHub is the Load-side entry: resolveCheckpoint calls it for a
// reference IsHubReference accepts.
func resolveHub(ctx context.Context, ref string, cfg hubConfig) (string, error) {
	r, err := hub.ParseRef(ref)
	if err != nil {
		return "", fmt.Errorf("laya: %w", err)
	}
	if cfg.revision != "" {
		if r.Revision != "" && r.Revision != cfg.revision {
			return "", fmt.Errorf("laya: %w: %q pins revision %q but WithRevision says %q; give one of them",
				hub.ErrBadRef, ref, r.Revision, cfg.revision)
		}
		r.Revision = cfg.revision
	}
	if cfg.subfolder != "" {
		if r.Subfolder != "" && r.Subfolder != cfg.subfolder {
			return "", fmt.Errorf("laya: %w: %q names subfolder %q but WithSubfolder says %q; give one of them",
				hub.ErrBadRef, ref, r.Subfolder, cfg.subfolder)
		}
		r.Subfolder = cfg.subfolder
	}
	if err := r.Validate(); err != nil {
		return "", fmt.Errorf("laya: %w", err)
	}
	client := cfg.client
	if client == nil {
		client = hub.NewClient()
	} else {
		copied := *client
		client = &copied
	}
	if cfg.token != "" {
		client.Token = cfg.token
	}
	if cfg.offline {
		client.Offline = true
	}
	if cfg.progress != nil {
		client.Progress = cfg.progress
	}
	snap, err := client.Checkpoint(ctx, r)
	if err != nil {
		return "", fmt.Errorf("laya: checkpoint %s: %w", r, err)
	}
	return snap.Dir, nil
}

// LoadHub resolves a Hub reference (see ResolveHub) and loads the checkpoint.
func LoadHub(ctx context.Context, ref string, hubOpts []HubOption, opts ...Option) (*Agent, error) {
	return Load(ctx, ref, append([]Option{WithHub(hubOpts...)}, opts...)...)
}
