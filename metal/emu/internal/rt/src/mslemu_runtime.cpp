// mslemu_runtime.cpp: runs an emulated MSL dispatch. Every GPU thread is a
// fiber; each OS worker thread takes whole threadgroups, so all fibers of a
// threadgroup share one OS thread and "static thread_local" arrays are
// threadgroup memory.
//
// Scheduling is simdgroup-major (the proof of concept's choice, spec Part 1):
// one simdgroup runs until all its lanes block at a threadgroup barrier, then
// the next runs. That maximises skew between simdgroups, so a missing
// threadgroup_barrier shows as a wrong answer. Three orders (forward, reverse,
// seeded shuffle) decide which simdgroup, lane and threadgroup go first.
//
// Context switch: a callee-saved-register asm swap on x86-64 and arm64
// (swapcontext costs a sigprocmask syscall per switch and made the GEMM test
// 2x slower in the proof of concept), ucontext elsewhere and under
// -DMSLEMU_UCONTEXT (ASan builds, because ASan intercepts swapcontext to keep
// its stack bookkeeping right).
#if !defined(__x86_64__) && !defined(__aarch64__) && !defined(MSLEMU_UCONTEXT)
#define MSLEMU_UCONTEXT 1
#endif
#if defined(MSLEMU_UCONTEXT)
#define _XOPEN_SOURCE 700
#ifdef __APPLE__
#define _DARWIN_C_SOURCE 1
#endif
#include <ucontext.h>
#endif

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "mslemu_abi.h"

#include "mslemu_api.h"

#define EXPORT __attribute__((visibility("default")))

namespace {

constexpr int kSimdWidth = 32;
constexpr size_t kMaxTGMem = 32768;
constexpr size_t kSlot = 256;
#if defined(__SANITIZE_ADDRESS__) || defined(MSLEMU_ASAN)
constexpr size_t kStack = 512 * 1024;
#else
constexpr size_t kStack = 128 * 1024;
#endif

struct Kernel {
  const char* name;
  mslemu::Thunk thunk;
  mslemu::BindConstants bind;
  size_t tg_static;
  const char* file;
  int line;
  const Kernel* dup;  // another kernel of the same name, if any
};

std::vector<Kernel>& registry() {
  static std::vector<Kernel> r;
  return r;
}

const Kernel* find_kernel(const char* name) {
  for (auto& k : registry())
    if (strcmp(k.name, name) == 0) return &k;
  return nullptr;
}

enum State { RUNNABLE, WAIT_TG, WAIT_SIMD, DONE, ABORTED };

#if !defined(MSLEMU_UCONTEXT)
extern "C" void mslemu_swap(void** save_sp, void* load_sp);
// Mach-O prefixes C symbols with "_" and has no .type/.size directives.
#if defined(__APPLE__)
#define MSLEMU_ASM_FUNC(name) ".globl _" #name "\n.private_extern _" #name "\n.p2align 4\n_" #name ":\n"
#define MSLEMU_ASM_END(name) ""
#elif defined(__aarch64__)
#define MSLEMU_ASM_FUNC(name) ".globl " #name "\n.hidden " #name "\n.type " #name ",%function\n.p2align 4\n" #name ":\n"
#define MSLEMU_ASM_END(name) ".size " #name ", .-" #name "\n"
#else
#define MSLEMU_ASM_FUNC(name) ".globl " #name "\n.hidden " #name "\n.type " #name ",@function\n.p2align 4\n" #name ":\n"
#define MSLEMU_ASM_END(name) ".size " #name ", .-" #name "\n"
#endif
#if defined(__x86_64__)
// Pushes the SysV callee-saved registers, swaps stacks, pops and returns into
// the other context. A new fiber's stack is laid out to "return" into
// fiber_main.
constexpr int kSwapSlots = 6;  // r15 r14 r13 r12 rbx rbp, then the return address
__asm__(
    ".text\n" MSLEMU_ASM_FUNC(mslemu_swap)
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n" MSLEMU_ASM_END(mslemu_swap));
#else
// AAPCS64 callee-saved state: x19-x28, the frame pointer x29, the link
// register x30, sp and the low halves d8-d15 of v8-v15. The frame is 160
// bytes (16-byte aligned); "ret" jumps to the restored x30, which for a new
// fiber is fiber_main. x18 is the platform register on Apple and is left alone.
constexpr int kSwapSlots = 20;  // x19..x30 (12), d8..d15 (8)
__asm__(
    ".text\n" MSLEMU_ASM_FUNC(mslemu_swap)
    "  sub sp, sp, #160\n"
    "  stp x19, x20, [sp, #0]\n"
    "  stp x21, x22, [sp, #16]\n"
    "  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n"
    "  stp x27, x28, [sp, #64]\n"
    "  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n"
    "  stp d10, d11, [sp, #112]\n"
    "  stp d12, d13, [sp, #128]\n"
    "  stp d14, d15, [sp, #144]\n"
    "  mov x9, sp\n"
    "  str x9, [x0]\n"
    "  mov sp, x1\n"
    "  ldp x19, x20, [sp, #0]\n"
    "  ldp x21, x22, [sp, #16]\n"
    "  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n"
    "  ldp x27, x28, [sp, #64]\n"
    "  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n"
    "  ldp d10, d11, [sp, #112]\n"
    "  ldp d12, d13, [sp, #128]\n"
    "  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #160\n"
    "  ret\n" MSLEMU_ASM_END(mslemu_swap));
#endif
#endif

struct Fiber {
  mslemu::Ctx c;
  State st;
#if defined(MSLEMU_UCONTEXT)
  ucontext_t uc;
#else
  void* sp;
#endif
  char* stack;
  const char* file;
  int line;
  size_t depth;  // stack bytes in use at the collective
  mslemu::CollOp op;
  size_t out_size;
  alignas(16) unsigned char in[kSlot];
  alignas(16) unsigned char out[kSlot];
};

struct Run;

// Worker is one OS thread's state while it runs threadgroups.
struct Worker {
  Run* run;
  Fiber* fibers;
  int nfibers;
  char* stacks;
  size_t stacks_len;
  Fiber* cur;
#if defined(MSLEMU_UCONTEXT)
  ucontext_t sched;
#else
  void* sched_sp;
#endif
  void* tgmem[32];
  std::vector<void*> tg_seen;
  size_t tg_used;  // bytes of threadgroup memory in use by the current group
  uint64_t rng;
  bool failed;
  const Fiber* site;  // the collective being run, for report(nullptr, ...)
};

thread_local Worker* tw;

struct Run {
  mslemu_dispatch* d;
  const Kernel* k;
  uint32_t groups[3], threads[3];
  uint64_t ngroups;
  int nthreads;
  int nsimd;
  size_t tg_params;
  std::vector<uint64_t> order;  // threadgroup order
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
};

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class T>
void shuffle(T* a, int n, uint64_t& rng) {
  for (int i = n - 1; i > 0; i--) {
    int j = int(splitmix(rng) % uint64_t(i + 1));
    T t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

// record keeps the first diagnostic of a dispatch; later ones are usually
// consequences of it.
void record(Run* r, int status, const char* fmt, ...) {
  std::lock_guard<std::mutex> lock(r->mu);
  if (r->failed.exchange(true)) return;
  r->d->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->d->err, sizeof r->d->err, fmt, ap);
  va_end(ap);
}

void to_sched(Worker* w, Fiber* f) {
#if defined(MSLEMU_UCONTEXT)
  swapcontext(&f->uc, &w->sched);
#else
  mslemu_swap(&f->sp, w->sched_sp);
#endif
}

void to_fiber(Worker* w, Fiber* f) {
  w->cur = f;
#if defined(MSLEMU_UCONTEXT)
  swapcontext(&w->sched, &f->uc);
#else
  mslemu_swap(&w->sched_sp, f->sp);
#endif
  w->cur = nullptr;
}

void fiber_main() {
  Worker* w = tw;
  Fiber* f = w->cur;
  w->run->k->thunk(reinterpret_cast<void* const*>(w->run->d->bufs), w->tgmem);
  f->st = DONE;
  to_sched(w, f);
  __builtin_trap();  // a finished fiber is never resumed
}

#if defined(MSLEMU_UCONTEXT)
extern "C" void fiber_main_c() { fiber_main(); }
#endif

void init_fiber(Worker* w, Fiber* f) {
  f->st = RUNNABLE;
#if defined(MSLEMU_UCONTEXT)
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = f->stack;
  f->uc.uc_stack.ss_size = kStack;
  f->uc.uc_link = nullptr;
  makecontext(&f->uc, (void (*)())fiber_main_c, 0);
#else
  (void)w;
  uintptr_t top = (uintptr_t(f->stack) + kStack) & ~uintptr_t(15);
#if defined(__x86_64__)
  // Six saved registers and the "return address" fiber_main; after the ret,
  // rsp is 8 below a 16-byte boundary, as at any function entry.
  void** sp = reinterpret_cast<void**>(top - 64);
  for (int i = 0; i < kSwapSlots; i++) sp[i] = nullptr;
  sp[kSwapSlots] = reinterpret_cast<void*>(&fiber_main);
  sp[kSwapSlots + 1] = nullptr;
#else
  // A zeroed 160-byte frame whose x30 slot (byte 88) is fiber_main: the
  // swap's ret enters it with sp = top, 16-byte aligned, and x29 = 0 ends
  // frame-pointer unwinding there.
  void** sp = reinterpret_cast<void**>(top - 160);
  for (int i = 0; i < kSwapSlots; i++) sp[i] = nullptr;
  sp[11] = reinterpret_cast<void*>(&fiber_main);
#endif
  f->sp = sp;
#endif
}

void fmt_site(char* buf, size_t n, const char* file, int line) {
  if (file)
    snprintf(buf, n, "%s:%d", file, line);
  else
    snprintf(buf, n, "?");
}

// describe writes "thread (x,y,z) of threadgroup (x,y,z)".
void describe(char* buf, size_t n, const Fiber* f) {
  snprintf(buf, n, "thread (%u,%u,%u) of threadgroup (%u,%u,%u)", f->c.tpitg[0], f->c.tpitg[1], f->c.tpitg[2],
           f->c.tgpig[0], f->c.tgpig[1], f->c.tgpig[2]);
}

bool same_site(const Fiber* a, const Fiber* b) {
  if (a->line != b->line) return false;
  if (a->file == b->file) return true;
  return a->file && b->file && strcmp(a->file, b->file) == 0;
}

// behind reports whether fiber a waits at a collective that comes before
// b's in SIMT order. Lanes of a simdgroup that diverge run the branch with
// the other lanes inactive, then reconverge: a collective inside the branch
// (deeper in a call, or on an earlier line) runs first with only the lanes
// that took the branch, and lanes waiting further on get the rest.
bool behind(const Fiber* a, const Fiber* b) {
  if (a->depth != b->depth) return a->depth > b->depth;
  return a->line < b->line;
}

// resolve_simd runs one collective that lanes of simdgroup sg wait at.
// Lanes are grouped by call site; lanes elsewhere (a barrier, exited) are
// inactive for that collective, as on the GPU when control flow diverges.
// After it, the lanes it released run before the next collective is picked,
// so that lanes reconverging at a later collective all take part in it.
bool resolve_simd(Worker* w, int sg) {
  Run* r = w->run;
  int base = sg * kSimdWidth;
  int end = base + kSimdWidth < r->nthreads ? base + kSimdWidth : r->nthreads;
  Fiber* lead = nullptr;
  for (int i = base; i < end; i++) {
    Fiber* f = &w->fibers[i];
    if (f->st == WAIT_SIMD && (!lead || behind(f, lead))) lead = f;
  }
  if (!lead) return false;
  void* in[kSimdWidth] = {};
  void* out[kSimdWidth] = {};
  for (int i = base; i < end; i++) {
    Fiber* f = &w->fibers[i];
    if (f->st == WAIT_SIMD && f->op == lead->op && same_site(f, lead) && f->depth == lead->depth) {
      in[i - base] = f->in;
      out[i - base] = f->out;
      f->st = RUNNABLE;
    }
  }
  w->site = lead;
  lead->op(in, out);
  w->site = nullptr;
  return true;
}

// check_barrier releases a threadgroup barrier once no fiber can run, or
// reports why it cannot be released.
bool check_barrier(Worker* w) {
  Run* r = w->run;
  Fiber* waiting = nullptr;
  Fiber* done = nullptr;
  for (int i = 0; i < r->nthreads; i++) {
    Fiber* f = &w->fibers[i];
    if (f->st == WAIT_TG && !waiting) waiting = f;
    if (f->st == DONE && !done) done = f;
  }
  if (!waiting) return false;
  char a[96], b[96], sa[256], sb[256];
  for (int i = 0; i < r->nthreads; i++) {
    Fiber* f = &w->fibers[i];
    if (f->st == WAIT_TG && !same_site(f, waiting)) {
      describe(a, sizeof a, waiting);
      describe(b, sizeof b, f);
      fmt_site(sa, sizeof sa, waiting->file, waiting->line);
      fmt_site(sb, sizeof sb, f->file, f->line);
      record(r, 1,
             "kernel %s: divergent threadgroup_barrier: %s waits at %s but %s waits at %s "
             "(every thread of a threadgroup must reach the same barrier)",
             r->k->name, a, sa, b, sb);
      w->failed = true;
      return false;
    }
  }
  if (done) {
    describe(a, sizeof a, done);
    describe(b, sizeof b, waiting);
    fmt_site(sa, sizeof sa, waiting->file, waiting->line);
    record(r, 1,
           "kernel %s: %s: threadgroup_barrier not reached by every thread: %s waits there but %s "
           "already returned (an early return before a barrier)",
           r->k->name, sa, b, a);
    w->failed = true;
    return false;
  }
  for (int i = 0; i < r->nthreads; i++)
    if (w->fibers[i].st == WAIT_TG) w->fibers[i].st = RUNNABLE;
  return true;
}

void run_group(Worker* w, uint64_t gidx) {
  Run* r = w->run;
  uint32_t gid[3] = {uint32_t(gidx % r->groups[0]), uint32_t((gidx / r->groups[0]) % r->groups[1]),
                     uint32_t(gidx / (uint64_t(r->groups[0]) * r->groups[1]))};
  for (int i = 0; i < r->nthreads; i++) {
    Fiber* f = &w->fibers[i];
    mslemu::Ctx& c = f->c;
    uint32_t t[3] = {uint32_t(i) % r->threads[0], (uint32_t(i) / r->threads[0]) % r->threads[1],
                     uint32_t(i) / (r->threads[0] * r->threads[1])};
    for (int k = 0; k < 3; k++) {
      c.tpitg[k] = t[k];
      c.tgpig[k] = gid[k];
      c.tptg[k] = r->threads[k];
      c.tgpg[k] = r->groups[k];
      c.tpg[k] = r->threads[k] * r->groups[k];
      c.tpig[k] = gid[k] * r->threads[k] + t[k];
    }
    c.tiitg = uint32_t(i);
    c.lane = uint32_t(i % kSimdWidth);
    c.sgitg = uint32_t(i / kSimdWidth);
    c.sgptg = uint32_t(r->nsimd);
    c.width = kSimdWidth;
    c.qlane = uint32_t(i % 4);
    c.qgitg = uint32_t(i / 4);
    c.qgptg = uint32_t((r->nthreads + 3) / 4);
    init_fiber(w, f);
  }
  // Threadgroup memory starts as all-ones bytes: NaN for float and half, -1
  // for integers, so reads of never-written slots show in results.
  w->tg_seen.clear();
  w->tg_used = r->k->tg_static + r->tg_params;
  for (int i = 0; i < 32; i++)
    if (w->tgmem[i]) memset(w->tgmem[i], 0xff, r->d->tg_bytes[i]);

  int sched = int(r->d->schedule);
  std::vector<int> sgs(r->nsimd);
  for (int s = 0; s < r->nsimd; s++) sgs[s] = sched == MSLEMU_REVERSE ? r->nsimd - 1 - s : s;
  int lanes[kSimdWidth];
  for (;;) {
    if (sched == MSLEMU_SHUFFLE) shuffle(sgs.data(), r->nsimd, w->rng);
    for (int s : sgs) {
      int base = s * kSimdWidth;
      int n = r->nthreads - base < kSimdWidth ? r->nthreads - base : kSimdWidth;
      for (int l = 0; l < n; l++) lanes[l] = sched == MSLEMU_REVERSE ? n - 1 - l : l;
      for (;;) {
        if (sched == MSLEMU_SHUFFLE) shuffle(lanes, n, w->rng);
        for (int l = 0; l < n; l++) {
          Fiber* f = &w->fibers[base + lanes[l]];
          if (f->st != RUNNABLE) continue;
          to_fiber(w, f);
          if (w->failed) return;
        }
        if (!resolve_simd(w, s)) break;
        if (w->failed) return;
      }
    }
    bool live = false;
    for (int i = 0; i < r->nthreads; i++)
      if (w->fibers[i].st != DONE) live = true;
    if (!live) return;
    if (!check_barrier(w)) {
      if (!w->failed) {
        record(r, 1, "kernel %s: deadlock: no thread of threadgroup (%u,%u,%u) can make progress", r->k->name,
               gid[0], gid[1], gid[2]);
        w->failed = true;
      }
      return;
    }
    if (__atomic_load_n(&r->d->cancel, __ATOMIC_RELAXED)) {
      record(r, MSLEMU_STATUS_CANCELED, "kernel %s: canceled", r->k->name);
      w->failed = true;
      return;
    }
  }
}

constexpr size_t kKeptArenas = 2;
std::mutex arena_mu;
std::vector<std::pair<char*, size_t>> arena_free;

// get_stacks takes a free arena of at least n bytes, or returns null.
std::pair<char*, size_t> get_stacks(size_t n) {
  std::lock_guard<std::mutex> lock(arena_mu);
  for (size_t i = 0; i < arena_free.size(); i++) {
    if (arena_free[i].second >= n) {
      auto a = arena_free[i];
      arena_free.erase(arena_free.begin() + long(i));
      return a;
    }
  }
  return {nullptr, 0};
}

// put_stacks keeps a few arenas for the next run and unmaps the rest. Each
// guard page splits the mapping, so an arena of N stacks is 2N kernel
// mappings; a process holds at most vm.max_map_count (65530 on Linux) of
// them across every loaded kernel library, so idle arenas are not hoarded.
void put_stacks(char* p, size_t len) {
  std::lock_guard<std::mutex> lock(arena_mu);
  if (arena_free.size() < kKeptArenas) {
    arena_free.push_back({p, len});
    return;
  }
  munmap(p, len);
}

void worker_main(Run* r, uint64_t seed, int windex) {
  // Block every signal: these threads are not Go's, and a signal meant for
  // the Go runtime must not be delivered on a fiber stack.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);

  Worker w = {};
  w.run = r;
  w.nfibers = r->nthreads;
  w.rng = seed ^ (uint64_t(windex + 1) * 0x9e3779b97f4a7c15ULL);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t per = kStack + page;  // one guard page below each stack
  // Stacks for the threadgroup's threads only, rounded up to a power of
  // two so that arenas are reused across dispatches of similar sizes.
  size_t nstacks = 32;
  while (nstacks < size_t(r->nthreads)) nstacks *= 2;
  const size_t len = per * nstacks;
  auto arena = get_stacks(len);
  w.stacks = arena.first;
  w.stacks_len = arena.second;
  if (!w.stacks) {
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      record(r, 1, "kernel %s: cannot map fiber stacks", r->k->name);
      return;
    }
    w.stacks = static_cast<char*>(p);
    w.stacks_len = len;
    for (size_t i = 0; i < nstacks; i++) {
      if (mprotect(w.stacks + i * per, page, PROT_NONE) != 0) {
        munmap(p, len);
        record(r, 1, "kernel %s: cannot protect fiber stack guard pages (vm.max_map_count?)", r->k->name);
        return;
      }
    }
  }
  std::vector<Fiber> fibers(size_t(r->nthreads));
  w.fibers = fibers.data();
  for (int i = 0; i < r->nthreads; i++) w.fibers[i].stack = w.stacks + size_t(i) * per + page;
  std::vector<std::vector<unsigned char>> tg(32);
  for (int i = 0; i < 32; i++) {
    if (r->d->tg_bytes[i]) {
      tg[i].resize(size_t(r->d->tg_bytes[i]) + 16);
      w.tgmem[i] = reinterpret_cast<void*>((uintptr_t(tg[i].data()) + 15) & ~uintptr_t(15));
    }
  }
  tw = &w;
  for (;;) {
    if (r->failed.load()) break;
    if (__atomic_load_n(&r->d->cancel, __ATOMIC_RELAXED)) {
      record(r, MSLEMU_STATUS_CANCELED, "kernel %s: canceled", r->k->name);
      break;
    }
    uint64_t i = r->next.fetch_add(1);
    if (i >= r->ngroups) break;
    run_group(&w, r->order.empty() ? i : r->order[i]);
    if (w.failed) break;
  }
  tw = nullptr;
  put_stacks(w.stacks, w.stacks_len);
}

Worker* self(const char* what) {
  Worker* w = tw;
  if (!w || !w->cur) {
    fprintf(stderr, "mslemu: %s called outside a kernel\n", what);
    __builtin_trap();
  }
  return w;
}

}  // namespace

namespace mslemu {

const Ctx* ctx() { return &self("a thread-position builtin")->cur->c; }

// report_status records a diagnostic at file:line with the dispatch status
// the host classifies it by (mslemu_abi.h).
static void report_status(const char* file, int line, const char* msg, int status) {
  Worker* w = tw;
  if (!w) return;
  char site[256];
  if (!file && w->site) {
    file = w->site->file;
    line = w->site->line;
  }
  fmt_site(site, sizeof site, file, line);
  record(w->run, status, "kernel %s: %s: %s", w->run->k->name, site, msg);
  w->failed = true;
}

void report(const char* file, int line, const char* msg) { report_status(file, line, msg, MSLEMU_STATUS_DIAGNOSTIC); }

[[noreturn]] static void fail_status(const char* file, int line, const char* msg, int status) {
  Worker* w = self("fail");
  report_status(file, line, msg, status);
  Fiber* f = w->cur;
  f->st = ABORTED;
  to_sched(w, f);
  __builtin_trap();
}

void fail(const char* file, int line, const char* msg) { fail_status(file, line, msg, MSLEMU_STATUS_DIAGNOSTIC); }

void tg_barrier(const char* file, int line) {
  Worker* w = self("threadgroup_barrier");
  Fiber* f = w->cur;
  if (__atomic_load_n(&w->run->d->cancel, __ATOMIC_RELAXED)) {
    record(w->run, MSLEMU_STATUS_CANCELED, "kernel %s: canceled", w->run->k->name);
    w->failed = true;
    f->st = ABORTED;
    to_sched(w, f);
  }
  f->st = WAIT_TG;
  f->file = file;
  f->line = line;
  to_sched(w, f);
}

void collective(const void* in, size_t in_size, void* out, size_t out_size, CollOp op, const char* file,
                       int line) {
  Worker* w = self("a simd collective");
  Fiber* f = w->cur;
  if (in_size > kSlot || out_size > kSlot) fail(file, line, "simd collective value larger than 256 bytes");
  memcpy(f->in, in, in_size);
  f->depth = size_t(uintptr_t(f->stack + kStack) - uintptr_t(__builtin_frame_address(0)));
  f->op = op;
  f->file = file;
  f->line = line;
  f->out_size = out_size;
  f->st = WAIT_SIMD;
  to_sched(w, f);
  memcpy(out, f->out, out_size);
}

static void tg_declare(void* p, const void* init, size_t bytes, const char* file, int line, int counted) {
  Worker* w = self("a threadgroup declaration");
  for (void* q : w->tg_seen)
    if (q == p) return;
  w->tg_seen.push_back(p);
  if (init)
    memcpy(p, init, bytes);
  else
    memset(p, 0xff, bytes);
  if (counted) {
    w->tg_used += bytes;
    if (w->tg_used > kMaxTGMem) {
      char msg[160];
      snprintf(msg, sizeof msg, "threadgroup memory of %zu bytes exceeds the 32768-byte limit", w->tg_used);
      fail_status(file, line, msg, MSLEMU_STATUS_THREADGROUP_MEMORY);
    }
  }
}

void tg_array(void* p, size_t bytes, const char* file, int line, int counted) {
  tg_declare(p, nullptr, bytes, file, line, counted);
}

void tg_array_init(void* p, const void* init, size_t bytes, const char* file, int line, int counted) {
  tg_declare(p, init, bytes, file, line, counted);
}

Registrar::Registrar(const char* name, Thunk thunk, BindConstants bind, size_t tg_static, const char* file,
                     int line) {
  // The Go side rejects duplicate names before compiling; this guards
  // hand-built libraries. Both copies are marked and refuse to run.
  Kernel k = {name, thunk, bind, tg_static, file, line, nullptr};
  for (auto& o : registry())
    if (strcmp(o.name, name) == 0) o.dup = k.dup = &o;
  registry().push_back(k);
}

}  // namespace mslemu

// float -> bfloat conversions, rounding to nearest even. clang lowers them
// to these libgcc/compiler-rt calls, which older libgcc versions lack; weak,
// so a runtime library that has them wins.
extern "C" __attribute__((weak)) __bf16 __truncsfbf2(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return __builtin_bit_cast(__bf16, uint16_t((u >> 16) | 0x40u));
  u += 0x7fffu + ((u >> 16) & 1u);
  return __builtin_bit_cast(__bf16, uint16_t(u >> 16));
}
extern "C" __attribute__((weak)) __bf16 __truncdfbf2(double d) {
  // Through float rounded to odd (toward zero, then the last bit set when
  // inexact), so that the second rounding to bfloat is correct.
  float f = float(d);
  if (f == f && double(f) != d) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (__builtin_fabs(double(f)) > __builtin_fabs(d)) u -= 1;
    u |= 1u;
    memcpy(&f, &u, 4);
  }
  return __truncsfbf2(f);
}

extern "C" EXPORT int64_t mslemu_tg_static(const char* name) {
  const Kernel* k = find_kernel(name);
  return k ? int64_t(k->tg_static) : -1;
}

// mslemu_kernel_line tells which definition of a kernel was compiled when
// the source defines it in several #if branches: the .metal line of the
// registered one, or -1.
extern "C" EXPORT int64_t mslemu_kernel_line(const char* name) {
  const Kernel* k = find_kernel(name);
  return k ? int64_t(k->line) : -1;
}

extern "C" EXPORT int mslemu_run(mslemu_dispatch* d) {
  d->status = 0;
  d->err[0] = 0;
  Run r;
  r.d = d;
  r.k = find_kernel(d->kernel);
  if (!r.k) {
    snprintf(d->err, sizeof d->err, "kernel %s: not found in the library", d->kernel);
    return d->status = MSLEMU_STATUS_DIAGNOSTIC;
  }
  if (r.k->dup) {
    snprintf(d->err, sizeof d->err, "kernel %s: defined more than once (%s:%d and another file)", d->kernel,
             r.k->file, r.k->line);
    return d->status = MSLEMU_STATUS_DIAGNOSTIC;
  }
  uint64_t nthreads = 1;
  r.ngroups = 1;
  for (int i = 0; i < 3; i++) {
    r.groups[i] = d->groups[i];
    r.threads[i] = d->threads[i];
    nthreads *= d->threads[i];
    r.ngroups *= d->groups[i];
  }
  if (nthreads == 0 || nthreads > 1024) {
    snprintf(d->err, sizeof d->err, "kernel %s: %llu threads per threadgroup (must be 1..1024)", d->kernel,
             (unsigned long long)nthreads);
    return d->status = MSLEMU_STATUS_DIAGNOSTIC;
  }
  if (r.ngroups == 0) return 0;
  r.nthreads = int(nthreads);
  r.nsimd = (r.nthreads + kSimdWidth - 1) / kSimdWidth;
  r.tg_params = 0;
  for (int i = 0; i < 32; i++) r.tg_params += size_t(d->tg_bytes[i]);
  if (r.k->tg_static + r.tg_params > kMaxTGMem) {
    snprintf(d->err, sizeof d->err,
             "kernel %s: %s:%d: threadgroup memory of %zu bytes (%zu in threadgroup arrays, %zu in "
             "[[threadgroup(n)]] arguments) exceeds the 32768-byte limit",
             d->kernel, r.k->file, r.k->line, r.k->tg_static + r.tg_params, r.k->tg_static, r.tg_params);
    return d->status = MSLEMU_STATUS_THREADGROUP_MEMORY;
  }
  r.k->bind(d->fc_value, d->fc_defined);
  uint64_t seed = d->seed;
  if (d->schedule == MSLEMU_REVERSE) {
    for (uint64_t i = 0; i < r.ngroups; i++) r.order.push_back(r.ngroups - 1 - i);
  } else if (d->schedule == MSLEMU_SHUFFLE) {
    for (uint64_t i = 0; i < r.ngroups; i++) r.order.push_back(i);
    uint64_t s = seed;
    for (uint64_t i = r.ngroups - 1; i > 0; i--) {
      uint64_t j = splitmix(s) % (i + 1);
      uint64_t t = r.order[i];
      r.order[i] = r.order[j];
      r.order[j] = t;
    }
  }
  uint64_t workers = d->workers ? d->workers : std::thread::hardware_concurrency();
  if (workers == 0) workers = 1;
  if (workers > r.ngroups) workers = r.ngroups;
  std::vector<std::thread> ts;
  for (uint64_t i = 0; i < workers; i++) ts.emplace_back(worker_main, &r, seed, int(i));
  for (auto& t : ts) t.join();
  return int(d->status);
}
