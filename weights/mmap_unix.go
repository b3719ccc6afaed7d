//go:build linux || darwin

package weights

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole file read-only. The length is rounded up to a page
// so that Metal's newBufferWithBytesNoCopy can wrap the mapping as is (it
// wants a page-aligned pointer and a page-multiple length; Apple Silicon
// pages are 16 KiB, hence os.Getpagesize and not 4096). Bytes between EOF
// and the end of the last page read as zero.
func mapFile(f *os.File, size int64) (data []byte, mapped bool, err error) {
	page := int64(os.Getpagesize())
	length := (size + page - 1) / page * page
	if length != int64(int(length)) {
		return nil, false, unix.EFBIG
	}
	data, err = unix.Mmap(int(f.Fd()), 0, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

func unmapFile(data []byte) error { return unix.Munmap(data) }
