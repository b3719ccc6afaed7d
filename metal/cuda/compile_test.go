//go:build linux

package cuda_test

import (
	"sort"
	"testing"

	"github.com/laya-metal/laya/metal/cuda"
)

// Every kernel of package kernels compiles with NVRTC (function constants
// unset: value-initialised) and stays within Apple's limits.
func TestCompileAll(t *testing.T) {
	dev := openDevice(t, cuda.Options{})
	names := cuda.KernelNames(dev)
	sort.Strings(names)
	for _, n := range names {
		p, err := dev.Pipeline(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		t.Logf("%s: max %d threads, %d bytes static threadgroup memory", n, p.MaxThreadsPerThreadgroup(),
			p.(interface{ StaticThreadgroupMemory() int }).StaticThreadgroupMemory())
	}
	s, _ := cuda.Stats(dev)
	t.Logf("NVRTC: %d compiles in %v", s.Compiles, s.CompileTime)
}
