//go:build !unix

package serve

import "time"

func processCPU() time.Duration { return 0 }
