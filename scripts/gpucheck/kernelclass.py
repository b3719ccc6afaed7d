"""The row a kernel's GPU time is summed under, for kernel-gaps.py and
ncu-sums.py alike: cuBLAS's and cuBLASLt's kernels (GEMMs, GEMVs, split-K
reductions) all under one, since their names carry tile configurations that
change with the shape, and each of the backend's own kernels under its name.
Ours are extern "C" and none of their names has the words below; cuBLAS's
are C++-mangled (_Z...) or nvjet, cutlass or xmma kernels."""
import re

CUBLAS = "cuBLAS GEMM"
_CUBLAS = re.compile(r"^_Z|nvjet|cutlass|xmma|gemm|gemv|splitKreduce", re.I)


def kernel_class(name):
    name = name.split("(")[0]
    return CUBLAS if _CUBLAS.search(name) else name
