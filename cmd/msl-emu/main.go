// Command msl-emu runs one Metal compute kernel by hand on the CPU with the
// MSL emulator (package metal/emu), like dispatchThreadgroups on a Mac, and
// lists what a .metal file's kernels expect to be bound.
//
// Run "msl-emu -h" for the flags and a full example. Exit status: 0 when the
// kernel ran, 1 for a compile error or a kernel fault the emulator caught, 2
// for a usage error. The files: run.go (msl-emu run, in steps), list.go
// (msl-emu list), data.go (buffer contents and dumps), constants.go
// (function constants).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/laya-metal/laya/internal/cli"
)

const usageText = `msl-emu runs one Metal kernel on the CPU with the MSL emulator.

Usage:
  msl-emu run FILE.metal --kernel NAME --groups X,Y,Z --threadgroup X,Y,Z [flags]
  msl-emu list FILE.metal     print each kernel and the arguments it binds
  msl-emu --version

Flags of run:
  --kernel NAME          kernel to run (a [[host_name]] for template instances)
  --groups X,Y,Z         threadgroups per grid (Y and Z default to 1)
  --threadgroup X,Y,Z    threads per threadgroup (at most 1024 in all)
  --buffer I=SPEC        [[buffer(I)]] device buffer; repeatable. SPEC is
                           @FILE            raw little-endian bytes of a file
                           zeros:N          N zero bytes
                           f32:1,2.5,-3     values of one type
                           u32:4,f32:0.5    a sequence: a TYPE: prefix switches
                                            the type of the values after it
                         types: f32 f16 bf16 i8 u8 i16 u16 i32 u32 i64 u64,
                         and pad:N for N zero bytes (struct padding)
  --bytes I=SPEC         [[buffer(I)]] data passed by value (setBytes, for
                         constant T& / constant Params& parameters), same
                         SPEC forms, e.g. --bytes 2=u32:4,f32:0.5
  --threadgroup-mem I=N  [[threadgroup(I)]] argument of N bytes
  --constant C=[T:]V     function constant C (its index, or its name in the
                         source) set to V: true/false, an integer or a float;
                         T (bool, int, uint, short, ushort, char, uchar, long,
                         ulong, float, half, bfloat) is optional and checked
                         against the declaration
  --out I=FILE           write buffer I to FILE after the run (raw bytes;
                         FILE "-" prints it as float32 values)
  --dump I=TYPE          print buffer I after the run as text, one value per
                         element: f32, f16, bf16, i32, u32, i16, u16, i8, u8,
                         i64, u64 or hex
  -D NAME[=VALUE]        preprocessor macro, as the host's
                         MTLCompileOptions.preprocessorMacros; repeatable
  --schedule S           forward (default), reverse or shuffle:SEED
  --asan                 build with AddressSanitizer: out-of-bounds device
                         accesses are reported with the .metal line
  --clang PATH           compiler (default clang-19, then clang)

Exit status: 0 when the kernel ran; 1 for a compile error or a kernel bug the
emulator caught (divergent barrier, return before a barrier, threadgroup
memory over 32 KiB, out-of-bounds access under --asan); 2 for a usage error.

Example: add two vectors of 4 floats with kernels/elementwise.metal:

  msl-emu run kernels/elementwise.metal --kernel vector_add \
      --groups 1 --threadgroup 32 \
      --buffer 0=f32:1,2,3,4 --buffer 1=f32:10,20,30,40 --buffer 2=zeros:16 \
      --bytes 3=u32:4 --dump 2=f32
  prints: 11 22 33 44
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and maps it to the documented exit status.
func exitCode(err error, stderr io.Writer) int { return cli.Report(stderr, "msl-emu", err) }

// usagef is a mistake in the command line (exit status 2), as opposed to a
// problem of the kernel (1).
func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

// run is the whole command, callable from tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usageText)
		if len(args) == 0 {
			return usagef("missing command: run or list")
		}
		return flag.ErrHelp
	}
	if cli.IsVersion(args) {
		_, err := fmt.Fprintln(stdout, cli.Version("msl-emu"))
		return err
	}
	switch args[0] {
	case "run":
		return runKernel(ctx, args[1:], stdout, stderr)
	case "list":
		return listKernels(args[1:], stdout)
	}
	return usagef("unknown command %q (want run or list)", args[0])
}
