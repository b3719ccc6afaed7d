//go:build !(linux && amd64)

// Command amx-probe is linux/amd64 only (main.go says what it measures).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "amx-probe: AMX is an x86-64 unit and the probe asks Linux for it: linux/amd64 only")
	os.Exit(2)
}
