//go:build !linux && !darwin

package weights

import (
	"io"
	"os"
)

// mapFile reads the file into memory where mmap is not wired up; Mapping
// then reports nil because the bytes are not page-aligned file pages.
func mapFile(f *os.File, size int64) (data []byte, mapped bool, err error) {
	data = make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, false, err
	}
	return data, false, nil
}

func unmapFile([]byte) error { return nil }
