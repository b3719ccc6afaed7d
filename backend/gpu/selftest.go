package gpu

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/laya-metal/laya/metal"
)

// ErrSelfTest is metal.ErrSelfTest: Open refused a device whose kernels
// disagree with their references (or do not compile or run). The message
// names the kernel, the shape and the worst element.
var ErrSelfTest = metal.ErrSelfTest

// SelfTestTimeout bounds the self-test of the registered backends, whose
// openers take no context: a GPU that hangs is refused, not waited for.
const SelfTestTimeout = time.Minute

// WithSelfTestTimeout calls open, the opener of a registered backend, with a
// context that ends after SelfTestTimeout, and releases it when open
// returns.
func WithSelfTestTimeout(open func(context.Context) (*Backend, error)) (*Backend, error) {
	ctx, cancel := context.WithTimeout(context.Background(), SelfTestTimeout)
	defer cancel()
	return open(ctx)
}

// passed holds the self-test reports of devices that passed, by
// metal.Fingerprinter's fingerprint: a second emulator device built from
// the same library need not run it again (tests open many).
var passed sync.Map // fingerprint → metal.SelfTestReport

// Open returns a backend named name that owns dev, once dev passed the
// self-test (metal.SelfTest): a canary of every kernel family at small
// ragged shapes against float64 references. On failure it closes dev and
// returns an error wrapping ErrSelfTest. Every registered backend built on
// this package ("metal", "metal-emu", "metal-cuda") opens through it, so
// none answers before its kernels were seen to compute right on the device.
// A device with a fingerprint runs the self-test once per process.
func Open(ctx context.Context, name string, dev metal.Device) (*Backend, error) {
	b := NewOwning(name, dev)
	fp, cacheable := dev.(metal.Fingerprinter)
	if cacheable {
		if rep, ok := passed.Load(fp.Fingerprint()); ok {
			b.selfTest = rep.(metal.SelfTestReport)
			return b, nil
		}
	}
	rep, err := metal.SelfTest(ctx, b.kern)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("backend/gpu: %s on %s: %w", name, dev.Name(), err)
	}
	if cacheable {
		passed.Store(fp.Fingerprint(), rep)
	}
	b.selfTest = rep
	return b, nil
}

// SelfTest is the report of the self-test Open ran (or the one it reused
// for a device of the same fingerprint); zero for a backend made by New or
// NewOwning.
func (b *Backend) SelfTest() metal.SelfTestReport { return b.selfTest }
