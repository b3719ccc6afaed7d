package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// readSource reads a .metal file, naming it as given: the emulator's
// diagnostics then point at the file the way the user wrote it.
func readSource(file string) ([]metal.KernelSource, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, cli.Usage(err)
	}
	return []metal.KernelSource{{Name: file, Text: string(text)}}, nil
}

func listKernels(args []string, stdout io.Writer) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return usagef("list needs one FILE.metal")
	}
	srcs, err := readSource(args[0])
	if err != nil {
		return err
	}
	infos, err := emu.ParseKernels(srcs)
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		fmt.Fprintf(stdout, "%s: no kernels\n", args[0])
		return nil
	}
	for _, k := range infos {
		fmt.Fprintf(stdout, "kernel %s (%s:%d)", k.Name, k.File, k.Line)
		if k.MaxThreadsPerThreadgroup > 0 {
			fmt.Fprintf(stdout, " max %d threads per threadgroup", k.MaxThreadsPerThreadgroup)
		}
		if k.Condition != "" {
			// The last directive names the branch; -D may select it.
			ds := strings.Split(strings.TrimSpace(k.Condition), "\n")
			fmt.Fprintf(stdout, " only under %s", strings.Join(ds, " / "))
		}
		fmt.Fprintln(stdout)
		for _, p := range k.Params {
			var how string
			switch {
			case p.Index < 0:
				how = "builtin"
			case strings.HasPrefix(p.Binding, "threadgroup"):
				how = fmt.Sprintf("--threadgroup-mem %d=BYTES", p.Index)
			case p.ByValue:
				how = fmt.Sprintf("--bytes %d=SPEC", p.Index)
			default:
				how = fmt.Sprintf("--buffer %d=SPEC", p.Index)
			}
			opt := ""
			if p.FunctionConstant != "" {
				opt = " (only when function constant " + p.FunctionConstant + " is true)"
			}
			fmt.Fprintf(stdout, "  [[%s]] %s %s: %s%s\n", p.Binding, p.Type, p.Name, how, opt)
		}
		for _, c := range k.Constants {
			fmt.Fprintf(stdout, "  [[function_constant(%d)]] %s %s: --constant %d=VALUE\n", c.Index, c.Type, c.Name, c.Index)
		}
	}
	return nil
}
