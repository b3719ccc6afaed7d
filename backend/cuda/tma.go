//go:build linux

package cuda

import (
	"fmt"
	"unsafe"
)

// tensorMap is a CUtensorMap: 128 bytes, 64-byte aligned where it is
// passed, opaque (cuTensorMapEncodeTiled writes it; the TMA reads it).
type tensorMap [16]uint64

// The cuda.h values cuTensorMapEncodeTiled takes here.
const (
	tensorFloat16    = 6 // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
	tensorSwizzle128 = 3 // CU_TENSOR_MAP_SWIZZLE_128B
	tensorL2Promo128 = 2 // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
)

// encodeTensorMap describes to the TMA a 2D fp16 matrix at addr of rows
// rows of cols elements, rowBytes apart, and the box a copy takes (box0
// elements of box1 rows), with the 128-byte swizzle that wgmma reads
// (box0 at most 64) or none; elements past the matrix read as zeros. Like
// every driver call here, on b's thread.
func (b *Backend) encodeTensorMap(addr uintptr, rows, cols, rowBytes int64, box0, box1 int, swizzle bool) (tensorMap, error) {
	var m tensorMap
	if !b.drv.Has("cuTensorMapEncodeTiled") {
		return m, fmt.Errorf("cuda: the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer)")
	}
	dims := [2]uint64{uint64(cols), uint64(rows)}
	strides := [1]uint64{uint64(rowBytes)}
	box := [2]uint32{uint32(box0), uint32(box1)}
	estr := [2]uint32{1, 1}
	sw := uintptr(0)
	if swizzle {
		sw = tensorSwizzle128
	}
	// The map is written through a 64-byte aligned address: a Go array's
	// alignment is its elements', so the call writes into scratch at the
	// first such address in it (the argument's conversion in the call
	// keeps scratch on the heap, where it stays put).
	scratch := make([]byte, 128+64)
	off := int(-uintptr(unsafe.Pointer(&scratch[0])) & 63)
	err := b.drv.Call("cuTensorMapEncodeTiled", uintptr(unsafe.Pointer(&scratch[off])), tensorFloat16, 2, addr,
		uintptr(unsafe.Pointer(&dims[0])), uintptr(unsafe.Pointer(&strides[0])), uintptr(unsafe.Pointer(&box[0])),
		uintptr(unsafe.Pointer(&estr[0])), 0, sw, tensorL2Promo128, 0)
	if err != nil {
		return m, fmt.Errorf("cuda: a tensor map of %d×%d fp16 (box %d×%d): %w", rows, cols, box1, box0, err)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&m[0])), 128), scratch[off:])
	return m, nil
}
