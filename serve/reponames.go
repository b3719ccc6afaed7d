package serve

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// repoNames decides once per checkpoint reference how a routing block names it
// (publicRepo). The decision may stat the filesystem, and every routed request
// asks it; a reference means the same checkpoint for the life of the server. The
// references come from the server's own model table (router.Decision.Repo), never
// from a client, so the map is no larger than the table.
type repoNames struct {
	stat func(string) (fs.FileInfo, error) // os.Stat when nil

	mu    sync.RWMutex
	names map[string]string
}

// public is ref as clients see it.
func (c *repoNames) public(ref string) string {
	if ref == "" {
		return ""
	}
	c.mu.RLock()
	name, ok := c.names[ref]
	c.mu.RUnlock()
	if ok {
		return name
	}
	stat := c.stat
	if stat == nil {
		stat = os.Stat
	}
	name = publicRepo(ref, stat)
	c.mu.Lock()
	if c.names == nil {
		c.names = map[string]string{}
	}
	c.names[ref] = name
	c.mu.Unlock()
	return name
}

// publicRepo is a routing block's repo as clients see it: a Hub id as it is, a local
// directory by its name.
func publicRepo(ref string, stat func(string) (fs.FileInfo, error)) string {
	local := strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "~") ||
		strings.Contains(ref, "\\") || strings.Count(ref, "/") > 2
	if !local {
		if _, err := stat(ref); err == nil {
			local = true
		}
	}
	if !local {
		return ref
	}
	return filepath.Base(filepath.Clean(ref))
}
