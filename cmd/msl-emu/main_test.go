package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunVectorAdd(t *testing.T) {
	dir := t.TempDir()
	a := make([]byte, 0, 4*40)
	for i := 0; i < 40; i++ {
		a = binary.LittleEndian.AppendUint32(a, math.Float32bits(float32(i)))
	}
	in := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(in, a, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.bin")
	for _, sched := range []string{"forward", "reverse", "shuffle:7"} {
		var stdout, stderr bytes.Buffer
		args := []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--groups", "2,1,1", "--threadgroup", "32",
			"--buffer", "0=@" + in, "--buffer", "1=@" + in, "--buffer", "2=zeros:160", "--bytes", "3=u32:40",
			"--schedule", sched, "--out", "2=" + out}
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v\n%s", sched, err, stderr.String())
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != float32(2*i) {
				t.Fatalf("%s: out[%d] = %v, want %d", sched, i, v, 2*i)
			}
		}
	}
}

func TestRunInlineAndPrint(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--groups", "1", "--threadgroup", "32",
		"--buffer", "0=f32:1,2,3,4", "--buffer", "1=f32:10,20,30,40", "--buffer", "2=zeros:16", "--bytes", "3=u32:4", "--out", "2=-"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "11 22 33 44" {
		t.Fatalf("printed %q, want %q", got, "11 22 33 44")
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"divergent barrier", []string{"run", "../../metal/testdata/bugs.metal", "--kernel", "divergent_barrier", "--threadgroup", "64", "--buffer", "0=zeros:256"}, "bugs.metal:8"},
		{"unknown kernel", []string{"run", "../../kernels/elementwise.metal", "--kernel", "nope", "--threadgroup", "32"}, "unknown kernel"},
		{"bad literal", []string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--threadgroup", "32", "--buffer", "0=f64:1"}, "f64"},
		{"missing kernel flag", []string{"run", "../../kernels/elementwise.metal", "--threadgroup", "32"}, "--kernel"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(stdout.String(), "msl-emu run kernels/elementwise.metal --kernel vector_add") {
		t.Error("help has no full example")
	}
}
