// Package cli holds what the laya, laya-bench and msl-emu commands share:
// usage errors and their exit status, the --version line, and progress that
// is drawn only for a person watching a terminal.
//
// A usage error is one line naming the flag and what it takes, then a
// pointer to the command's -h, with exit status 2 (the Go tools'
// convention); the full usage text is printed only when asked for. Every
// other failure exits 1.
package cli
