// mslemu_abi.h: the one structure the Go side (metal/emu_*.go) and the
// runtime exchange per dispatch. Go writes it into mmap'd memory (never Go
// heap memory, so no Go pointer crosses into C) and calls mslemu_run on it.
// Keep the layout in step with emuDispatch* offsets in metal/emu_abi.go.
#ifndef MSLEMU_ABI_H
#define MSLEMU_ABI_H
#include <stdint.h>

enum { MSLEMU_FORWARD = 0, MSLEMU_REVERSE = 1, MSLEMU_SHUFFLE = 2 };
// mslemu_dispatch.status. The host classifies errors by it, not by the
// diagnostic's words (metal/emu/device.go: dispatchStatus*).
enum {
  MSLEMU_STATUS_OK = 0,
  MSLEMU_STATUS_DIAGNOSTIC = 1,
  MSLEMU_STATUS_CANCELED = 2,
  MSLEMU_STATUS_THREADGROUP_MEMORY = 3
};

struct mslemu_dispatch {
  char kernel[128];         // NUL-terminated kernel name
  uint64_t bufs[32];        // [[buffer(i)]] address (offset applied), or 0
  uint64_t tg_bytes[32];    // [[threadgroup(i)]] length in bytes, or 0
  uint64_t fc_value[64];    // function constant i, little-endian in its declared type
  uint8_t fc_defined[64];   // 1 when constant i was given
  uint32_t groups[3];       // threadgroups per grid
  uint32_t threads[3];      // threads per threadgroup
  uint32_t schedule;        // MSLEMU_FORWARD, _REVERSE or _SHUFFLE
  uint32_t workers;         // OS threads; 0 = one per CPU
  uint64_t seed;            // for MSLEMU_SHUFFLE
  uint32_t cancel;          // set by the host to stop between threadgroups
  uint32_t status;          // MSLEMU_STATUS_*: 0 ok, 1 diagnostic, 2 canceled, 3 threadgroup memory over the limit
  char err[2048];           // the diagnostic
};

#ifdef __cplusplus
static_assert(sizeof(mslemu_dispatch) == 3312, "mslemu_dispatch layout changed: update metal/emu_abi.go");
extern "C" {
#endif
int mslemu_run(struct mslemu_dispatch* d);
int64_t mslemu_tg_static(const char* name);
#ifdef __cplusplus
}
#endif
#endif
