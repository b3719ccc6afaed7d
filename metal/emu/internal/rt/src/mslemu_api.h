// mslemu_api.h: what kernels (through msl_shim.h and the generated entry
// points) call in the emulator runtime, mslemu_runtime.cpp.
#ifndef MSLEMU_API_H
#define MSLEMU_API_H
#include <stddef.h>
#include <stdint.h>

namespace mslemu {
struct Ctx {
  uint32_t tpig[3];   // thread_position_in_grid
  uint32_t tpitg[3];  // thread_position_in_threadgroup
  uint32_t tgpig[3];  // threadgroup_position_in_grid
  uint32_t tptg[3];   // threads_per_threadgroup
  uint32_t tgpg[3];   // threadgroups_per_grid
  uint32_t tpg[3];    // threads_per_grid
  uint32_t tiitg;     // thread_index_in_threadgroup
  uint32_t lane;      // thread_index_in_simdgroup
  uint32_t sgitg;     // simdgroup_index_in_threadgroup
  uint32_t sgptg;     // simdgroups_per_threadgroup
  uint32_t width;     // thread_execution_width / threads_per_simdgroup
  uint32_t qlane;     // thread_index_in_quadgroup
  uint32_t qgitg;     // quadgroup_index_in_threadgroup
  uint32_t qgptg;     // quadgroups_per_threadgroup
};
const Ctx* ctx();
void tg_barrier(const char* file, int line);
// CollOp sees the 32 lanes of one simdgroup; in[l]/out[l] are null for lanes
// that do not take part (exited, or waiting at another call site).
typedef void (*CollOp)(void* const* in, void* const* out);
void collective(const void* in, size_t in_size, void* out, size_t out_size, CollOp op,
                const char* file, int line);
// tg_array poisons a threadgroup array the first time a threadgroup reaches
// its declaration and, when counted, adds it to the 32 KiB budget.
void tg_array(void* p, size_t bytes, const char* file, int line, int counted);
// tg_array_init is tg_array for a declaration with an initializer: the
// first thread of the threadgroup to reach it copies init instead of poisoning.
void tg_array_init(void* p, const void* init, size_t bytes, const char* file, int line, int counted);
[[noreturn]] void fail(const char* file, int line, const char* msg);
// report records a diagnostic without leaving the current context; collective
// ops (which the scheduler runs) use it. A null file names the call site.
void report(const char* file, int line, const char* msg);

typedef void (*Thunk)(void* const* bufs, void* const* tgmem);
typedef void (*BindConstants)(const uint64_t* values, const uint8_t* defined);
// Registrar is how each translation unit announces its kernels when the
// shared object is loaded (static constructors run at dlopen).
struct Registrar {
  Registrar(const char* name, Thunk thunk, BindConstants bind, size_t tg_static_bytes,
            const char* file, int line);
};
}  // namespace mslemu
#endif
