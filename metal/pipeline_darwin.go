//go:build darwin

package metal

import (
	"fmt"
	"strconv"
	"unsafe"
)

// systemPipeline is an MTLComputePipelineState owned by the device ledger.
type systemPipeline struct {
	dev        *systemDevice
	id         objcID
	kernel     string
	maxThreads int
	simdWidth  int
	// staticTGMemory is staticThreadgroupMemoryLength: the threadgroup
	// arrays the kernel declares, which count toward the device limit
	// together with the [[threadgroup(n)]] arguments.
	staticTGMemory int
}

func (p *systemPipeline) Kernel() string                { return p.kernel }
func (p *systemPipeline) MaxThreadsPerThreadgroup() int { return p.maxThreads }
func (p *systemPipeline) ThreadExecutionWidth() int     { return p.simdWidth }

// Pipeline returns the cached pipeline for (kernel, constants), building it
// on first use from the library that defines kernel.
func (d *systemDevice) Pipeline(kernel string, constants ...Constant) (Pipeline, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	values, key, err := encodeConstants(kernel, constants)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	p, ok := d.pipelines[key]
	d.mu.Unlock()
	if ok {
		return p, nil
	}
	lib, ok := d.kernelLibrary[kernel]
	if !ok {
		return nil, d.unknownKernel(kernel)
	}
	inPool(func() { p, err = d.newPipeline(lib, kernel, values) })
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if existing, ok := d.pipelines[key]; ok {
		// Another goroutine built the same pipeline meanwhile.
		inPool(func() { d.ledger.drop(uintptr(p.id)) })
		return existing, nil
	}
	d.pipelines[key] = p
	return p, nil
}

func (d *systemDevice) newPipeline(lib objcID, kernel string, values []constantValue) (*systemPipeline, error) {
	// Always specialise through MTLFunctionConstantValues, even an empty
	// set: a kernel that declares function constants fails at pipeline
	// creation without values, and the error then names what is missing.
	fcv := msgID(msgID(cls.MTLFunctionConstantValues, sel.alloc), sel.init)
	if fcv == 0 {
		return nil, fmt.Errorf("%w: kernel %s: MTLFunctionConstantValues alloc/init returned nil", ErrPipeline, kernel)
	}
	defer releaseObject(uintptr(fcv))
	for _, v := range values {
		// setConstantValue copies the value, so pointing at Go memory for
		// the duration of the call is enough.
		msgVoidPtrUintUint(fcv, sel.setConstantValueTypeAtIndex, unsafe.Pointer(&v.bytes[0]), v.dataType, uint64(v.index))
	}
	name, err := newNSString(kernel, "kernel name "+strconv.Quote(kernel))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPipeline, err)
	}
	defer releaseObject(uintptr(name))

	var nsErr objcID
	fn := msgIDIDIDErr(lib, sel.newFunctionWithNameConstantValuesError, name, fcv, &nsErr)
	if fn == 0 {
		return nil, fmt.Errorf("%w: kernel %s (%s): %s", ErrPipeline, kernel, d.kernelFile[kernel], nsErrorText(nsErr))
	}
	// The pipeline keeps what it needs; the function is ours to release.
	defer releaseObject(uintptr(fn))

	nsErr = 0
	state := msgIDIDErr(d.device, sel.newComputePipelineStateWithFunctionError, fn, &nsErr)
	if state == 0 {
		return nil, fmt.Errorf("%w: kernel %s (%s): %s", ErrPipeline, kernel, d.kernelFile[kernel], nsErrorText(nsErr))
	}
	d.ledger.add(uintptr(state), "pipeline "+kernel)
	return &systemPipeline{
		dev:            d,
		id:             state,
		kernel:         kernel,
		maxThreads:     int(msgUint(state, sel.maxTotalThreadsPerThreadgroup)),
		simdWidth:      int(msgUint(state, sel.threadExecutionWidth)),
		staticTGMemory: int(msgUint(state, sel.staticThreadgroupMemoryLength)),
	}, nil
}
