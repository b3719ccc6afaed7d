package kernels

import (
	"embed"
	"io/fs"
)

//go:embed *.metal
var files embed.FS

// FS returns the .metal sources, at the root of the file system.
func FS() fs.FS { return files }

// Source returns the text of one file, such as "softmax.metal".
func Source(name string) (string, error) {
	b, err := files.ReadFile(name)
	return string(b), err
}
