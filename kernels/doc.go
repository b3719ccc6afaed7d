// Package kernels holds the hand-written Metal Shading Language kernels, one
// .metal file per op family, embedded so that both Metal backends compile the
// very same text: the Apple GPU at run time (newLibraryWithSource) and the MSL
// emulator with clang.
//
// The files keep to the subset the emulator's shim understands: MSL
// constructors rather than C-style casts, an explicit [[buffer(n)]] on every
// buffer parameter, threadgroup arrays declared on one line without an
// initializer, function constants instead of compiled variants, and fp32
// accumulation. Each kernel's Go dispatch, float64 reference and emulator
// test live side by side in package metal (kernel_<family>.go).
package kernels
