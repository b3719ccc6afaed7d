package hub

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// CacheDirFromEnv returns the hub cache directory the way huggingface_hub
// finds it: $HF_HUB_CACHE, then the legacy $HUGGINGFACE_HUB_CACHE, then
// $HF_HOME/hub, then $XDG_CACHE_HOME/huggingface/hub, then
// ~/.cache/huggingface/hub.
func CacheDirFromEnv() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return expandHome(d)
	}
	if d := os.Getenv("HUGGINGFACE_HUB_CACHE"); d != "" {
		return expandHome(d)
	}
	return filepath.Join(hfHome(), "hub")
}

func hfHome() string {
	if d := os.Getenv("HF_HOME"); d != "" {
		return expandHome(d)
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(expandHome(d), "huggingface")
	}
	return filepath.Join(expandHome("~/.cache"), "huggingface")
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// EndpointFromEnv returns $HF_ENDPOINT without a trailing slash, or DefaultEndpoint.
func EndpointFromEnv() string {
	if e := strings.TrimRight(strings.TrimSpace(os.Getenv("HF_ENDPOINT")), "/"); e != "" {
		return e
	}
	return DefaultEndpoint
}

// TokenFromEnv returns $HF_TOKEN, the legacy $HUGGING_FACE_HUB_TOKEN, or the
// token that `huggingface-cli login` stored ($HF_TOKEN_PATH or $HF_HOME/token).
func TokenFromEnv() string {
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(k)); t != "" {
			return t
		}
	}
	p := os.Getenv("HF_TOKEN_PATH")
	if p == "" {
		p = filepath.Join(hfHome(), "token")
	}
	if b, err := os.ReadFile(expandHome(p)); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// OfflineFromEnv reports whether HF_HUB_OFFLINE is set to a true value
// (1, ON, YES, TRUE in any case, as huggingface_hub's _is_true reads it).
func OfflineFromEnv() bool {
	switch strings.ToUpper(strings.TrimSpace(os.Getenv("HF_HUB_OFFLINE"))) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}
