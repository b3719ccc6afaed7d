package metal

import (
	"fmt"
	"io/fs"

	"github.com/laya-metal/laya/kernels"
)

// KernelSources returns the .metal files of package kernels, named
// "kernels/<file>" as diagnostics show them: the library every device
// compiles when it is given no other sources.
func KernelSources() ([]KernelSource, error) {
	names, err := fs.Glob(kernels.FS(), "*.metal")
	if err != nil {
		return nil, err
	}
	var srcs []KernelSource
	for _, n := range names {
		b, err := fs.ReadFile(kernels.FS(), n)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, KernelSource{Name: "kernels/" + n, Text: string(b)})
	}
	return srcs, nil
}

// PipelineKey is the cache key of a pipeline: the kernel and every function
// constant with its index, Go type and value, so that 1 as int32 and 1 as
// uint32 (distinct specialisations) never share a pipeline.
func PipelineKey(kernel string, constants []Constant) string {
	key := kernel
	for _, c := range constants {
		key += fmt.Sprintf("|%d=%T:%v", c.Index, c.Value, c.Value)
	}
	return key
}
