// Package emu is the MSL emulator: a metal.Device that compiles .metal
// sources with clang (16 or later) against a shim header (internal/rt) after
// translating them with an MSL preprocessor (metal/internal/mslpp), and runs every
// GPU thread as a fiber on the CPU.
//
// It runs threadgroups, simdgroups and lanes in one of three schedules
// (forward, reverse, seeded shuffle) so that a kernel that is only correct
// under one order, i.e. has a race, fails a test; it reports divergent
// barriers, returns before a barrier, threadgroup memory over 32 KiB and
// reads of never-written threadgroup memory with the .metal line, and with
// Options.ASan finds out-of-bounds device accesses (in a separate runner
// process). Open it with Open; the zero Options compile package kernels'
// sources.
//
// Programs link it only when they import it (or backend/metalemu, which
// registers the "metal-emu" backend on it).
package emu
