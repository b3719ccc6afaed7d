// mslemu_runner.cpp: the ASan-mode executable. AddressSanitizer inside a Go
// process would need the Go binary built with it, so ASan runs happen here:
// the host passes its buffers as inherited file descriptors (3, 4, ...) and a
// job file of dispatch records. Each buffer is copied into its own malloc'd
// block for the run, so a read or write one element past its end lands in an
// ASan redzone and is reported with the .metal line; results are copied back.
//
// Job file: "MSLEMUJ1", u32 nbuffers, u32 ndispatch, u64 size[nbuffers],
// mslemu_dispatch[ndispatch], u64 blob_len, blob. In a dispatch, bufs[i] is 0
// (unbound), 1<<62 | buffer<<40 | offset, or 1<<63 | length<<32 | offset
// into the blob (setBytes data).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "mslemu_abi.h"

static bool readn(FILE* f, void* p, size_t n) { return n == 0 || fread(p, 1, n, f) == n; }

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s JOBFILE\n", argv[0]);
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  char magic[8];
  uint32_t nbuf = 0, ndisp = 0;
  if (!readn(f, magic, 8) || memcmp(magic, "MSLEMUJ1", 8) != 0 || !readn(f, &nbuf, 4) || !readn(f, &ndisp, 4)) {
    fprintf(stderr, "MSLEMU-ERROR: 1 bad job file\n");
    return 2;
  }
  std::vector<uint64_t> size(nbuf);
  std::vector<char*> shared(nbuf), heap(nbuf);
  for (uint32_t i = 0; i < nbuf; i++) {
    if (!readn(f, &size[i], 8)) return 2;
    void* p = mmap(nullptr, size[i], PROT_READ | PROT_WRITE, MAP_SHARED, int(3 + i), 0);
    if (p == MAP_FAILED) {
      fprintf(stderr, "MSLEMU-ERROR: 1 cannot map buffer %u\n", i);
      return 2;
    }
    shared[i] = static_cast<char*>(p);
    heap[i] = static_cast<char*>(malloc(size[i] ? size[i] : 1));
    memcpy(heap[i], shared[i], size[i]);
  }
  std::vector<mslemu_dispatch> ds(ndisp);
  if (!readn(f, ds.data(), sizeof(mslemu_dispatch) * ndisp)) return 2;
  uint64_t blob_len = 0;
  if (!readn(f, &blob_len, 8)) return 2;
  std::vector<char> blob_storage(blob_len + 1);
  if (!readn(f, blob_storage.data(), blob_len)) return 2;
  fclose(f);
  int rc = 0;
  for (auto& d : ds) {
    for (int i = 0; i < 32; i++) {
      uint64_t v = d.bufs[i];
      if (v >> 63) {
        // Each setBytes block gets its own allocation too.
        uint64_t off = v & 0xffffffffULL, len = (v >> 32) & 0x7fffffffULL;
        char* p = static_cast<char*>(malloc(len ? len : 1));
        memcpy(p, blob_storage.data() + off, len);
        d.bufs[i] = uint64_t(uintptr_t(p));
      } else if (v >> 62) {
        uint64_t b = (v >> 40) & 0x3fffff, off = v & ((1ULL << 40) - 1);
        d.bufs[i] = b < nbuf ? uint64_t(uintptr_t(heap[b] + off)) : 0;
      }
    }
    fprintf(stderr, "MSLEMU-RUNNING: %s\n", d.kernel);
    if (mslemu_run(&d) != 0) {
      // The status first, so the host classifies the error by it.
      fprintf(stderr, "MSLEMU-ERROR: %u %s\n", d.status, d.err);
      rc = 3;
      break;
    }
  }
  for (uint32_t i = 0; i < nbuf; i++) memcpy(shared[i], heap[i], size[i]);
  return rc;
}
