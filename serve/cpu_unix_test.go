//go:build unix

package serve

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) the process has used: a benchmark figure
// less disturbed than wall time by other load on a shared machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
