"""The CUDA driver and NVRTC through ctypes, for the GPU benchmarks beside
PyTorch (l2-prefetch/l2_prefetch.py, persistent/gemm_chain.py): PyTorch
maps the driver where the host keeps it, and NVRTC comes with the toolkit
or with PyTorch's wheels. A script imports it with its own directory's
parent on sys.path.
"""

import ctypes
import glob
import os


def loaded(stem):
    """The path of a library this process has mapped whose name starts
    with stem, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if os.path.basename(path).startswith(stem):
                    return path
    except OSError:
        pass
    return None


def lib(names):
    """The first of names (paths, globs, or bare names for the dynamic
    loader's own search, which glob does not do) that loads."""
    for n in names:
        for p in glob.glob(n) if "/" in n else [n]:
            try:
                return ctypes.CDLL(p)
            except OSError:
                pass
    raise SystemExit("not found: %s" % names)


def add_chain_args(ap):
    """The arguments both scripts take: the English encoder's GEMM chain at
    one question (rows, layers, hidden and intermediate widths) and how
    long to time it."""
    ap.add_argument("--rows", type=int, default=93)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--inter", type=int, default=2624)


def libraries(torch):
    """The driver and NVRTC, once torch has initialised CUDA."""
    cuda = lib([p for p in [loaded("libcuda.so")] if p] + ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1", "libcuda.so.1"])
    site = os.path.dirname(os.path.dirname(torch.__file__))
    nvrtc = lib(["/usr/local/cuda/lib64/libnvrtc.so*", site + "/nvidia/cu*/lib/libnvrtc.so*", site + "/nvidia/cuda_nvrtc/lib/libnvrtc.so*"])
    return cuda, nvrtc


def compile_source(nvrtc, src, name, opts, cubin=False):
    """src compiled by NVRTC with opts (strings): its PTX, or its cubin;
    exits with NVRTC's log where it does not compile."""
    prog = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None) != 0:
        raise SystemExit("nvrtcCreateProgram failed")
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    if nvrtc.nvrtcCompileProgram(prog, len(opts), arr) != 0:
        n = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        raise SystemExit(buf.value.decode())
    size, get = (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
    n = ctypes.c_size_t()
    size(prog, ctypes.byref(n))
    out = ctypes.create_string_buffer(n.value)
    if get(prog, out) != 0:
        raise SystemExit("NVRTC: no %s" % ("cubin" if cubin else "PTX"))
    return out


def capture(torch, modes, body):
    """A CUDA graph of body(mode) for each of modes, each run once outside
    capture first (which sets up cuBLAS's workspace and plans)."""
    graphs = {}
    for mode in modes:
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            body(mode)
        torch.cuda.current_stream().wait_stream(st)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            body(mode)
        graphs[mode] = g
    return graphs


def replay_us(torch, g, reps, flush, per):
    """reps replays of g, each timed by events and divided by per (µs):
    flush (a tensor larger than L2) is rewritten before each, so that L2
    holds nothing of the replay's data at its start."""
    ts = []
    for _ in range(reps):
        flush.add_(1.0)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / per)
    return ts
