package cuda

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
)

// The kernels' cubin is kept on disk between processes: NVRTC compiles
// kernels.cu (every head dim's and precision's variants) at each Open,
// which a one-shot `laya predict` or a restarted server pays every time
// (the tensor-core attention variants alone added about 0.45 s to it). The file is named by a hash of everything the
// cubin depends on (the source, the target, the flags, NVRTC's version),
// so a changed kernel or toolkit never meets an old cubin; one the driver
// refuses anyway (a file cut short, an older driver) is compiled again and
// replaced.

// kernelCacheDir is the directory Options.KernelCache opt names: "" the
// user cache directory's, "off" none ("").
func kernelCacheDir(opt string) string {
	switch opt {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "laya-metal", "cuda")
	}
	return opt
}

// cubinKey names a cubin by what it is compiled from.
func cubinKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		// Length-prefixed, so that no two lists hash alike.
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(p))))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// loadCubin loads the cubin named key from dir when it is there and load
// takes it; else it compiles one, loads it and keeps it in dir. dir ""
// keeps nothing. A cache that cannot be read or written only costs the
// compile: the error is load's or compile's. fromCache reports a hit.
func loadCubin(dir, key string, compile func() ([]byte, error), load func([]byte) error) (fromCache bool, err error) {
	var path string
	if dir != "" {
		path = filepath.Join(dir, key+".cubin")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			if load(b) == nil {
				return true, nil
			}
			os.Remove(path)
		}
	}
	cubin, err := compile()
	if err != nil {
		return false, err
	}
	if err := load(cubin); err != nil {
		return false, err
	}
	if path != "" {
		writeCached(path, cubin)
		pruneFiles(dir, ".cubin", keptCubins)
	}
	return false, nil
}

// keptCubins bounds the cache: each build of the kernels, toolkit, GPU
// architecture and set of tunables leaves its own cubin (a few MiB), two
// where it needed the extras, and only the latest few are met again.
const keptCubins = 8

// keptTuneFiles bounds the GEMMs' tune files (tunecache.go) of a directory
// as keptCubins bounds its cubins: each cuBLASLt library, GPU and tuning
// setting leaves its own.
const keptTuneFiles = 8

// pruneFiles removes all but the keep most recently written files of dir
// whose names end in ext (cubins, tune files).
func pruneFiles(dir, ext string, keep int) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
	if len(paths) <= keep {
		return
	}
	type file struct {
		path string
		mod  int64
	}
	var files []file
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			files = append(files, file{p, fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(b.mod, a.mod) })
	for _, f := range files[min(keep, len(files)):] {
		os.Remove(f.path)
	}
}

// writeCached writes b to path (a cubin, a tune file) through a temporary
// file and a rename, so that another process never reads half a file, and
// reports whether it did; failures are otherwise ignored (a read-only or
// full disk only costs the next Open its compile, or its timing).
func writeCached(path string, b []byte) bool {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Ext(path)+"-*")
	if err != nil {
		return false
	}
	_, err = tmp.Write(b)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err == nil
}
