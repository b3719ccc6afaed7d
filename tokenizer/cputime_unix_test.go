//go:build unix

package tokenizer

import "syscall"

// processCPU returns the CPU time the process has used so far (user and
// system, all threads), in seconds; on a shared machine it varies less
// than wall time, which counts the time other processes had the cores.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
