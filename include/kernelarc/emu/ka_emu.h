// kernelarc/emu/ka_emu.h — a host (CPU) emulation of the small CUDA subset that the device layer
// (kernelarc/device/) and the families use, so that their index arithmetic, fragment layouts,
// pipelines, segment bookkeeping and split-KV merges can be checked on a machine without a GPU.
// It is never part of a KernelArc build: kernelarc/device/target.cuh includes it when KA_EMULATE is
// defined (bench/tools/attention_selftest.py --mode emu and the family tests compile a family source with
// g++ -DKA_EMULATE); the layer's primitives then call the ka_emu_ops functions of the same names.
//
// Model. One CTA runs at a time; each CUDA thread is a fiber (ucontext) scheduled cooperatively,
// so a thread runs until it blocks in a CTA barrier or in a warp collective. CTAs of a launch run
// in a seeded random order (KA_EMU_SEED), so "last CTA done" logic sees different orders.
// Warp collectives (shfl, ballot, any, ldmatrix, mma.sync) need all 32 lanes at the same collective; a
// lane at a different one, a barrier some thread never reaches, or a thread that exits while the
// others wait is reported and aborts. cp.async writes poison (0xFF bytes: NaN as bf16 and fp32) into
// its destination when issued and copies the data only when a cp.async.wait_group retires its
// group, so reading a stage before waiting for it, or refilling a stage another warp still reads,
// shows up as NaN. Fragment layouts follow the PTX ISA (ldmatrix, ldmatrix .trans,
// mma.m16n8k16.row.col with bf16 inputs and fp32 accumulators).
// Hopper warpgroup MMA (gqa_prefill_cuda's MMA=1 path): wgmma.mma_async m64nNk16 with bf16 inputs
// and fp32 accumulators, A from a shared-memory descriptor or from registers, B from a descriptor,
// K-major or MN-major (the transpose bits), swizzle none / 32B / 64B / 128B, applied to the absolute
// shared address as the hardware does (wgmma_desc_addr). It is a warpgroup collective (all 128
// threads of the warpgroup, same descriptors). Its results are asynchronous: at issue the
// accumulator registers are poisoned (NaN) and the results land only when wgmma.wait_group retires
// their commit group, so reading (or writing) accumulators before the wait shows up; a wgmma
// issued with nothing in flight and no wgmma.fence since the last wait is reported (the fence that
// orders register writes before the async read). The shared-memory operands are read at issue, but
// count as being read until every warp of the warpgroup retired the wgmma (wgmma.wait_group, which
// first lets the other threads run; stricter than hardware, where the first warp's wait suffices):
// a cp.async or bulk copy issued into those bytes before then (a stage refilled, or released to a
// producer, too early) is reported. fence.proxy.async is accepted and not checked.
// Hopper mbarriers and bulk copies (gqa_decode_cuda's BULK=1 path): mbarrier.init,
// arrive.expect_tx, try_wait.parity, cp.async.bulk global -> shared with complete_tx, elect.sync.
// A bulk copy is not performed at issue: its destination is poisoned (as for cp.async) and the
// copy is recorded as pending on its mbarrier; the pending copies are performed, each completing
// its bytes of the transaction count, only when the barrier's phase has all its arrivals, at the
// first try_wait (or arrival) that looks at it. A try_wait succeeds only when the phase of the
// asked parity has completed (arrivals == count and tx == 0), otherwise the thread blocks until it
// does. Reported and aborted: tx-count overflow or underflow (more bytes completed than expected),
// an arrival beyond the count while the phase still misses bytes, a bulk copy into shared memory a
// pending bulk copy still writes, operations on an address without an initialised mbarrier, a CTA
// that exits with bulk copies in flight, and a deadlock (every live thread waits, e.g. on a phase
// that can never complete), with the barriers' states.
// cp.async.mbarrier.arrive.noinc (gqa_decode_cuda's PRODUCER=1 path): the arrival is counted at
// once, and the thread's cp.async issued before it (committed or not) are tracked by the barrier
// as well: they are performed when that phase completes (as bulk copies are), so a reader that
// waits for neither the phase nor the copies' group sees the poison; as on the hardware they also
// stay in their commit groups, so a cp.async.wait_group that retires the group performs them first,
// and each copy is performed once (a barrier completing later does not write it again over newer
// data; tests/test_emu.cpp). A thread that exits while such copies are pending is reported, and a
// cp.async or bulk copy into bytes that a pending copy still writes is reported (stage refilled too
// early).
// Tensor-map TMA (gemm_hopper_cuda): cp.async.bulk.tensor.2d loads of a box (row-major global
// tensor, zero fill outside it, the 128B swizzle applied to the absolute shared address as the
// hardware does) are bulk copies pending on their mbarrier like the ones above; tensor stores from
// shared memory (cp.async.bulk.tensor.2d.global.shared::cta, rows and columns outside the tensor not
// written) join the thread's bulk async-group and read shared memory only when a
// cp.async.bulk.wait_group(.read) retires their group, so a staging buffer rewritten (st.shared
// through st_shared_u32) before its store was read is reported, and so is a thread that exits with
// stores in flight. wgmma takes fp16 operands as well as bf16 (WgmmaIn::f16).
// Named barriers (bar.sync id, count; bar.arrive id, count arrives without waiting):
// count a positive multiple of 32, the same in every arrival of
// one phase; the phase completes when `count` threads arrived, and then every warp that took part
// must have arrived with all 32 lanes (a warp arriving twice in one phase is reported); a barrier
// that never fills (e.g. a thread it counts on has exited) shows up as a deadlock. Threads outside
// the count may exit while it is in progress.
// Thread-block clusters (gemm_hopper_cuda's CLUSTER > 1, launched with launch_cluster): the CTAs of a
// cluster run together (their threads interleaved by one scheduler; clusters one after another, in a
// seeded random order), %cluster_ctarank, barrier.cluster (every thread of every CTA of the cluster),
// mbarrier arrivals on a peer CTA's barrier (mapa + mbarrier.arrive.shared::cluster) and TMA loads
// multicast to the CTAs of a mask (each gets the box at the same shared offset and completes its
// bytes on its own barrier at the same offset). Reported: a remote arrival or multicast into a CTA
// whose threads have all exited (a peer may still touch its shared memory: the cluster barrier
// before exit is missing), a rank or mask outside the cluster, a thread that exits while others wait
// at the cluster barrier.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
struct int4 { int x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline float2 make_float2(float a, float b) { return {a, b}; }

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

typedef int cudaError_t;
typedef void* cudaStream_t;
enum { cudaSuccess = 0 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };

namespace emu {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "ka_emu: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

inline int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

struct Copy {
  uint32_t dst;
  const void* src;
  int src_bytes;  // size or 0 (zero fill)
  int size = 16;  // 16 or 4 bytes
  uint64_t seq = 0;  // unique per issued cp.async: one copy can be tracked by its group and by mbarriers
};
inline uint64_t next_copy_seq() {
  static uint64_t n = 0;
  return ++n;
}

enum Wait { kRunnable = 0, kBarrier = 1, kWarp = 2, kDone = 3, kWarpGroup = 4, kMbar = 5, kNamedBar = 6, kCluster = 7 };

// One cp.async.bulk global -> shared, issued and not yet performed (a tensor-map load: its box,
// gathered and swizzled at issue, in `own`).
struct BulkCopy {
  uint32_t dst;
  const void* src;
  uint32_t bytes;
  std::shared_ptr<std::vector<unsigned char>> own = nullptr;
};
// A 2-D tensor map as the kernels use them (cuTensorMapEncodeTiled's row-major case): dims[0]
// elements per row (contiguous), dims[1] rows, row_bytes apart; boxes of box[0] x box[1]; swizzle 0
// or 128 (bytes).
struct TensorMap2D {
  const unsigned char* base = nullptr;
  int64_t dims[2] = {0, 0};
  int64_t row_bytes = 0;
  int box[2] = {0, 0};
  int elem = 2;
  int swizzle = 0;
};
// A tensor store (shared -> global) issued by a thread, performed when its bulk group retires.
struct BulkStore {
  TensorMap2D map;
  uint32_t src;
  int c0, c1;
};
// An mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier"):
// pending arrivals and the transaction count of the current phase, and the completed phases.
struct MBar {
  int count = 0;                 // arrivals per phase (init)
  int pending = 0;               // arrivals the current phase still misses
  int64_t tx = 0;                // bytes expected (expect_tx) minus bytes completed, current phase
  uint64_t phase = 0;            // completed phases; the current phase's parity is phase & 1
  std::vector<BulkCopy> copies;  // issued, not yet performed (they complete on this barrier)
  std::vector<std::pair<int, Copy>> cp_copies;  // (thread, cp.async) behind a .noinc arrival, performed at completion
};
// A named barrier (bar.sync id, count) in progress.
struct NamedBar {
  int expected = 0;   // thread count of the current phase (0: none in progress)
  int arrived = 0;
  uint64_t gen = 0;
  std::vector<int> per_warp;  // arrivals per warp in the current phase
};

// The shared-memory bytes one wgmma reads (its A and B operands from descriptors). They count as
// being read until each of the warpgroup's 4 warps has retired the wgmma's group
// (wgmma.wait_group, a warp-aligned instruction: any lane's retirement stands for its warp).
// Hardware completes the operation by the first warp's wait; waiting for all 4 is stricter, so
// that a warp that releases the operands before its own wait is caught even when another warp
// of the warpgroup happened to wait first.
struct WgRead {
  std::vector<uint32_t> addrs;  // 2-byte elements
  unsigned warps = 0;           // bit w: warp w of the warpgroup retired it
  bool done = false;
};

struct Fiber {
  ucontext_t ctx;
  std::vector<char> stack;
  int tid = 0;
  int state = kRunnable;
  uint64_t wait_gen = 0;
  std::vector<Copy> open;                 // issued, not committed
  std::vector<std::vector<Copy>> groups;  // committed, oldest first
  // wgmma.mma_async results in flight: (register, value), issued (open) or committed (wg_groups).
  std::vector<std::pair<float*, float>> wg_open;
  std::vector<std::vector<std::pair<float*, float>>> wg_groups;
  std::vector<std::shared_ptr<WgRead>> wg_open_reads;                 // their shared-memory reads,
  std::vector<std::vector<std::shared_ptr<WgRead>>> wg_group_reads;  // parallel to wg_open / wg_groups
  std::unordered_map<float*, std::pair<float, int>> wg_latest;  // register -> (newest in-flight value, writes in flight)
  bool wg_fenced = false;
  uint32_t wait_bar = 0, wait_parity = 0;  // kMbar: the mbarrier and the parity waited for
  int wait_named = 0;                      // kNamedBar: the barrier id
  std::vector<BulkStore> st_open;                 // tensor stores issued, not committed
  std::vector<std::vector<BulkStore>> st_groups;  // committed bulk async-groups, oldest first
};

// A warpgroup collective (128 threads) in progress: each thread leaves pointers to its input and
// output (its fiber's stack stays put while it waits); the last to arrive computes all outputs.
struct WgSlot {
  int count = 0;
  int kind = -1;
  uint64_t gen = 0;
  const void* in[128];
  void* out[128];
};

// A warp collective in progress: every lane deposits an input, the last to arrive computes every
// lane's output.
struct WarpSlot {
  int count = 0;
  int kind = -1;
  uint64_t gen = 0;
  unsigned char in[32][64];
  unsigned char out[32][64];
};

struct Cta;
// A thread-block cluster in progress: its CTAs by rank, and barrier.cluster's state.
struct Cluster {
  std::vector<Cta*> ctas;
  int nthreads = 0, bar_count = 0;
  uint64_t bar_gen = 0;
};

struct Cta {
  int nthreads = 0;
  dim3 block, grid, bidx;
  std::vector<Fiber> fibers;
  ucontext_t sched;
  int current = -1;
  int bar_count = 0;
  uint64_t bar_gen = 0;
  std::vector<WarpSlot> warps;
  std::vector<WgSlot> wgs;
  std::vector<unsigned char> smem;
  std::function<void()> body;
  std::unordered_map<uint32_t, MBar> mbars;  // by shared-memory address
  std::vector<unsigned char> bulk_pending;   // per shared byte: 1 while a pending bulk copy writes it
  std::vector<uint16_t> wg_reading;          // per shared byte: in-flight wgmmas that read it
  std::vector<uint16_t> st_reading;          // per shared byte: tensor stores in flight that read it
  NamedBar named[16];
  Cluster* cluster = nullptr;  // every launch has one (of 1 CTA unless launch_cluster)
  int rank = 0;                // %cluster_ctarank
  bool exited = false;         // all its threads have exited
};

inline Cta*& cta() {
  static Cta* c = nullptr;
  return c;
}
inline Fiber& self() { return cta()->fibers[cta()->current]; }
inline int tid() { return cta()->current; }

inline void block_and_yield() { swapcontext(&self().ctx, &cta()->sched); }

inline void fiber_entry() {
  Cta* c = cta();
  c->body();
  Fiber& f = c->fibers[c->current];
  if (!f.open.empty() || !f.groups.empty()) {
    // Outstanding cp.async at exit: complete them (hardware does), but they are likely a bug
    // when a stage is read afterwards; the kernels here always wait before leaving.
    for (auto& g : f.groups)
      for (auto& cp : g)
        if (cp.src_bytes) std::memcpy(&c->smem[cp.dst], cp.src, cp.size);
  }
  if (!f.wg_open.empty() || !f.wg_groups.empty()) fail("a thread exited with wgmma.mma_async results in flight (no wgmma.wait_group)");
  if (!f.st_open.empty() || !f.st_groups.empty()) fail("a thread exited with tensor stores in flight (no cp.async.bulk.wait_group)");
  for (const auto& [addr, b] : c->mbars)
    for (const auto& pc : b.cp_copies)
      if (pc.first == f.tid) fail("a thread exited with cp.async in flight behind a cp.async.mbarrier.arrive.noinc (phase not completed)");
  f.state = kDone;
  swapcontext(&f.ctx, &c->sched);
}

struct Dim3Ref {
  unsigned x, y, z;
};
inline dim3 thread_idx() {
  const Cta* c = cta();
  int t = c->current;
  return dim3(t % c->block.x, (t / c->block.x) % c->block.y, t / (c->block.x * c->block.y));
}

inline void cta_sync() {
  Cta* c = cta();
  Fiber& f = self();
  if (c->warps[tid() / 32].count != 0) fail("__syncthreads while this thread's warp is inside a warp collective");
  if (c->wgs[tid() / 128].count != 0) fail("__syncthreads while this thread's warpgroup is inside a wgmma");
  c->bar_count++;
  if (c->bar_count == c->nthreads) {
    c->bar_count = 0;
    c->bar_gen++;
    return;  // the others wake when the scheduler sees the new generation
  }
  f.state = kBarrier;
  f.wait_gen = c->bar_gen;
  block_and_yield();
}

// barrier.cluster.arrive + wait (aligned): every thread of every CTA of the cluster.
inline void cluster_sync() {
  Cta* c = cta();
  Cluster* cl = c->cluster;
  Fiber& f = self();
  if (c->warps[tid() / 32].count != 0) fail("barrier.cluster while this thread's warp is inside a warp collective");
  if (c->wgs[tid() / 128].count != 0) fail("barrier.cluster while this thread's warpgroup is inside a wgmma");
  if (++cl->bar_count == cl->nthreads) {
    cl->bar_count = 0;
    cl->bar_gen++;
    return;
  }
  f.state = kCluster;
  f.wait_gen = cl->bar_gen;
  block_and_yield();
}
// Runs f with CTA `rank` of this thread's cluster as the current CTA (its shared memory, its
// mbarriers): the shared::cluster address space. `what` is reported if that CTA has exited.
template <typename F>
inline void on_peer(uint32_t rank, const char* what, F f) {
  Cta* me = cta();
  if (rank >= me->cluster->ctas.size()) fail("a shared::cluster access to a CTA rank outside the cluster");
  Cta* peer = me->cluster->ctas[rank];
  if (peer->exited) fail(what);
  cta() = peer;
  f();
  cta() = me;
}

// Named barriers: n arrivals at barrier id (count threads, a multiple of 32) from this thread's warp;
// true when they complete the phase. A warp that arrives twice in one phase (its lanes counted more
// than 32 times, e.g. a bar.arrive repeated before the phase completed) is reported: the phase
// would complete without the threads it was meant to wait for.
inline bool named_bar_add(int id, int count, int n) {
  Cta* c = cta();
  if (id < 0 || id > 15) fail("bar.sync/arrive: barrier id out of range");
  if (count <= 0 || count % 32 || count > c->nthreads) fail("bar.sync/arrive: thread count not a positive multiple of 32 within the CTA");
  NamedBar& b = c->named[id];
  if (b.expected == 0) {
    b.expected = count;
    b.per_warp.assign(c->warps.size(), 0);
  } else if (b.expected != count) {
    fail("bar.sync/arrive: threads arrive at one named barrier with different thread counts");
  }
  if ((b.per_warp[tid() / 32] += n) > 32) fail("bar.sync/arrive: a warp arrived twice at one phase of a named barrier");
  if ((b.arrived += n) == b.expected) {
    for (int w : b.per_warp)
      if (w != 0 && w != 32) fail("bar.sync/arrive: a warp took part with only some of its lanes");
    b.expected = b.arrived = 0;
    b.gen++;
    return true;
  }
  return false;
}
// bar.sync id, count: arrive and wait for the phase to complete.
inline void named_sync(int id, int count) {
  if (cta()->warps[tid() / 32].count != 0) fail("bar.sync while this thread's warp is inside a warp collective");
  if (named_bar_add(id, count, 1)) return;
  Fiber& f = self();
  f.state = kNamedBar;
  f.wait_named = id;
  f.wait_gen = cta()->named[id].gen;
  block_and_yield();
}
// bar.arrive id, count: the warp's 32 arrivals, without waiting. A warp collective here (all 32 lanes
// at the same bar.arrive), so that a lane cannot run ahead of the others past a non-blocking
// arrival, which a converged warp on hardware does not do.
inline void named_arrive(int id, int count);

// Warp collective: deposit `in` (at most 64 bytes), get this lane's output from `compute`, which
// runs once, in the last lane to arrive, over all 32 inputs.
template <typename In, typename Out, typename F>
Out collective(int kind, const In& in, F compute) {
  static_assert(sizeof(In) <= 64 && sizeof(Out) <= 64, "collective payload too large");
  Cta* c = cta();
  const int t = tid();
  const int lane = t % 32;
  WarpSlot& w = c->warps[t / 32];
  if (w.count == 0) w.kind = kind;
  else if (w.kind != kind) fail("lanes of one warp are in different warp collectives (divergence)");
  std::memcpy(w.in[lane], &in, sizeof(In));
  w.count++;
  if (w.count == 32) {
    In ins[32];
    Out outs[32];
    for (int l = 0; l < 32; ++l) std::memcpy(&ins[l], w.in[l], sizeof(In));
    compute(ins, outs);
    for (int l = 0; l < 32; ++l) std::memcpy(w.out[l], &outs[l], sizeof(Out));
    w.count = 0;
    w.gen++;
  } else {
    Fiber& f = self();
    f.state = kWarp;
    f.wait_gen = w.gen;
    block_and_yield();
  }
  Out o;
  std::memcpy(&o, w.out[lane], sizeof(Out));
  return o;
}

inline void named_arrive(int id, int count) {
  collective<int, int>(7, 0, [&](const int*, int* out) {
    named_bar_add(id, count, 32);
    for (int l = 0; l < 32; ++l) out[l] = 0;
  });
}

// Warpgroup collective: all 128 threads of the warpgroup (threads 128w .. 128w+127) must arrive.
template <typename In, typename Out, typename F>
void wg_collective(int kind, const In& in, Out& out, F compute) {
  Cta* c = cta();
  const int t = tid();
  if ((t / 128 + 1) * 128 > c->nthreads) fail("a warpgroup instruction in an incomplete warpgroup (the CTA's last, short one)");
  WgSlot& w = c->wgs[t / 128];
  if (w.count == 0) w.kind = kind;
  else if (w.kind != kind) fail("threads of one warpgroup are in different warpgroup instructions (divergence)");
  w.in[t % 128] = &in;
  w.out[t % 128] = &out;
  w.count++;
  if (w.count == 128) {
    const In* ins[128];
    Out* outs[128];
    for (int l = 0; l < 128; ++l) ins[l] = static_cast<const In*>(w.in[l]), outs[l] = static_cast<Out*>(w.out[l]);
    compute(ins, outs, t / 128 * 128);
    w.count = 0;
    w.gen++;
  } else {
    Fiber& f = self();
    f.state = kWarpGroup;
    f.wait_gen = w.gen;
    block_and_yield();
  }
}

inline MBar& mbar_at(uint32_t addr) {
  auto it = cta()->mbars.find(addr);
  if (it == cta()->mbars.end()) fail("mbarrier operation on a shared address that holds no initialised mbarrier");
  return it->second;
}
// Performs cp.async `cp` of thread `tid` (its destination was poisoned at issue) and forgets every
// reference to it: a copy stays in its commit group (cp.async.wait_group) and may also be tracked by
// the mbarriers of later cp.async.mbarrier.arrive.noinc of its thread; whichever completes first
// performs it, exactly once (a later copy into the same bytes must not be overwritten by a stale one).
inline void perform_copy(Cta* c, int tid, const Copy& cp) {
  if (cp.src_bytes) std::memcpy(&c->smem[cp.dst], cp.src, cp.size);
  else std::memset(&c->smem[cp.dst], 0, cp.size);
  std::memset(&c->bulk_pending[cp.dst], 0, cp.size);
  auto drop = [&](std::vector<Copy>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Copy& x) { return x.seq == cp.seq; }), v.end());
  };
  Fiber& f = c->fibers[tid];
  for (auto& g : f.groups) drop(g);
  drop(f.open);
  for (auto& [addr, b] : c->mbars)
    b.cp_copies.erase(std::remove_if(b.cp_copies.begin(), b.cp_copies.end(),
                                     [&](const std::pair<int, Copy>& x) { return x.first == tid && x.second.seq == cp.seq; }),
                      b.cp_copies.end());
}
// Completes the current phase of b if it can: once all arrivals are in, the pending copies are
// performed (each completing its bytes), and the phase completes when the tx-count is then zero.
inline bool mbar_try_complete(MBar& b) {
  if (b.pending != 0) return false;
  Cta* c = cta();
  for (const BulkCopy& cp : b.copies) {
    std::memcpy(&c->smem[cp.dst], cp.src, cp.bytes);
    std::memset(&c->bulk_pending[cp.dst], 0, cp.bytes);
    b.tx -= cp.bytes;
    if (b.tx < 0) fail("mbarrier tx-count underflow: bulk copies complete more bytes than the phase's expect_tx");
  }
  b.copies.clear();
  auto tracked = std::move(b.cp_copies);
  b.cp_copies.clear();
  for (const auto& [t, cp] : tracked) perform_copy(c, t, cp);
  if (b.tx != 0) return false;
  b.phase++;
  b.pending = b.count;
  return true;
}
inline void mbar_report() {
  for (const auto& [addr, b] : cta()->mbars)
    std::fprintf(stderr, "ka_emu:   mbarrier @%u: %d of %d arrivals, tx %lld bytes outstanding, %zu copies pending, %llu phases completed\n",
                 addr, b.count - b.pending, b.count, static_cast<long long>(b.tx), b.copies.size() + b.cp_copies.size(),
                 static_cast<unsigned long long>(b.phase));
  for (const Fiber& f : cta()->fibers)
    if (f.state == kMbar)
      std::fprintf(stderr, "ka_emu:   thread %d waits on mbarrier @%u for parity %u\n", f.tid, f.wait_bar, f.wait_parity);
}

inline void init_cta(Cta& c) {
  cta() = &c;
  const size_t stack_bytes = 512 * 1024;
  c.fibers.clear();
  c.fibers.resize(c.nthreads);
  c.warps.assign((c.nthreads + 31) / 32, WarpSlot{});
  c.wgs.assign((c.nthreads + 127) / 128, WgSlot{});
  c.bar_count = 0;
  c.bar_gen = 0;
  c.mbars.clear();
  c.bulk_pending.assign(c.smem.size(), 0);
  c.wg_reading.assign(c.smem.size(), 0);
  c.st_reading.assign(c.smem.size(), 0);
  for (NamedBar& nb : c.named) nb = NamedBar{};
  for (int i = 0; i < c.nthreads; ++i) {
    Fiber& f = c.fibers[i];
    f.tid = i;
    f.stack.resize(stack_bytes);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = stack_bytes;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_entry, 0);
  }
}

// Runs the CTAs of one cluster (one CTA outside cluster launches) to completion, their threads
// interleaved by one scheduler.
inline void run_cluster(std::vector<Cta>& ctas) {
  Cluster cl;
  for (size_t r = 0; r < ctas.size(); ++r) {
    ctas[r].cluster = &cl;
    ctas[r].rank = static_cast<int>(r);
    cl.ctas.push_back(&ctas[r]);
    cl.nthreads += ctas[r].nthreads;
    init_cta(ctas[r]);
  }
  std::vector<int> done_of(ctas.size(), 0);
  size_t live = ctas.size();
  static std::mt19937_64 rng(env_int("KA_EMU_SEED", 1) + 1);
  const size_t first = ctas.size() > 1 ? rng() % ctas.size() : 0;  // the rank that runs ahead
  while (live > 0) {
    bool progressed = false;
    for (size_t q = 0; q < ctas.size(); ++q) {
      const size_t r = (first + q) % ctas.size();
      Cta& c = ctas[r];
      if (c.exited) continue;
      cta() = &c;
      int& done = done_of[r];
      // This CTA runs until none of its threads can go on (or all have exited), then the next one:
      // CTAs of a cluster drift as far apart as their synchronisation allows, so a peer that could
      // still touch a CTA after it exited gets to.
      for (bool ran = true; ran && done < c.nthreads;) {
        ran = false;
        for (int i = 0; i < c.nthreads; ++i) {
          Fiber& f = c.fibers[i];
          if (f.state == kDone) continue;
          if (f.state == kCluster) {
            if (cl.bar_gen == f.wait_gen) continue;
            f.state = kRunnable;
          } else if (f.state == kBarrier) {
            if (c.bar_gen == f.wait_gen) continue;
            f.state = kRunnable;
          } else if (f.state == kWarp) {
            if (c.warps[i / 32].gen == f.wait_gen) continue;
            f.state = kRunnable;
          } else if (f.state == kWarpGroup) {
            if (c.wgs[i / 128].gen == f.wait_gen) continue;
            f.state = kRunnable;
          } else if (f.state == kNamedBar) {
            if (c.named[f.wait_named].gen == f.wait_gen) continue;
            f.state = kRunnable;
          } else if (f.state == kMbar) {
            MBar& b = mbar_at(f.wait_bar);
            mbar_try_complete(b);
            if ((b.phase & 1) == f.wait_parity) continue;
            f.state = kRunnable;
          }
          c.current = i;
          swapcontext(&c.sched, &f.ctx);
          cta() = &c;  // a thread blocks only with its own CTA current (on_peer restores it)
          progressed = ran = true;
          if (f.state == kDone) {
            ++done;
            if (c.bar_count > 0) fail("a thread exited while others wait at __syncthreads");
            if (cl.bar_count > 0) fail("a thread exited while others wait at the cluster barrier");
            if (c.warps[i / 32].count > 0) fail("a thread exited while its warp waits in a warp collective");
            if (c.wgs[i / 128].count > 0) fail("a thread exited while its warpgroup waits in a wgmma");
          }
        }
      }
      if (done == c.nthreads) {
        for (auto& [addr, b] : c.mbars)
          if (!b.copies.empty() || !b.cp_copies.empty() || b.tx != 0) {
            mbar_report();
            fail("a CTA exited with bulk copies in flight (or expected bytes never delivered) on an mbarrier");
          }
        c.exited = true;
        --live;
      }
    }
    if (!progressed && live > 0) {
      for (Cta& c : ctas)
        if (!c.exited && !c.mbars.empty()) {
          cta() = &c;
          if (ctas.size() > 1) std::fprintf(stderr, "ka_emu:  CTA rank %d of the cluster:\n", c.rank);
          mbar_report();
        }
      fail("deadlock: every live thread waits (barrier, collective or mbarrier phase never completed)");
    }
  }
  cta() = nullptr;
}

struct LaunchStats {
  long launches = 0, ctas = 0;
};
inline LaunchStats& stats() {
  static LaunchStats s;
  return s;
}
inline size_t& max_dyn_smem() {
  static size_t v = 0;
  return v;
}

// A launch with clusters of `cl` CTAs along x (cudaLaunchKernelEx with a cluster dimension (cl, 1, 1));
// launch() is the one-CTA case.
inline void launch_cluster(dim3 grid, dim3 block, size_t smem, int cl, std::function<void()> body) {
  const int nthreads = block.x * block.y * block.z;
  if (cl < 1 || cl > 8 || grid.x % cl) fail("cluster launch: cluster size outside 1..8 or grid.x not a multiple of it");
  if (nthreads <= 0 || nthreads > 1024) fail("bad block size");
  if (smem > 227 * 1024) fail("dynamic shared memory above 227 KB");
  if (smem > 48 * 1024 && smem > max_dyn_smem()) fail("dynamic shared memory above 48 KB without cudaFuncSetAttribute");
  const long n = (long)grid.x * grid.y * grid.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) fail("empty grid (invalid configuration on a GPU)");
  if (grid.y > 65535 || grid.z > 65535) fail("grid.y/z above 65535");
  const long nc = n / cl;  // clusters; cluster k holds the CTAs of linear index k·cl .. k·cl + cl-1
  std::vector<long> order(nc);
  for (long i = 0; i < nc; ++i) order[i] = i;
  static std::mt19937_64 rng(env_int("KA_EMU_SEED", 1));
  std::shuffle(order.begin(), order.end(), rng);
  stats().launches++;
  if (env_int("KA_EMU_VERBOSE", 0))
    std::fprintf(stderr, "ka_emu: launch grid %u x %u x %u, block %d, smem %zu, cluster %d\n", grid.x, grid.y, grid.z, nthreads,
                 smem, cl);
  for (long k : order) {
    std::vector<Cta> ctas(cl);
    for (int r = 0; r < cl; ++r) {
      Cta& c = ctas[r];
      const long i = k * cl + r;
      c.nthreads = nthreads;
      c.block = block;
      c.grid = grid;
      c.bidx = dim3(i % grid.x, (i / grid.x) % grid.y, i / ((long)grid.x * grid.y));
      c.smem.assign(smem + 16, 0xA5);  // garbage, not zeros
      c.body = body;
    }
    run_cluster(ctas);
    stats().ctas += cl;
  }
}
inline void launch(dim3 grid, dim3 block, size_t smem, std::function<void()> body) { launch_cluster(grid, block, smem, 1, body); }

inline unsigned char* smem_base() { return cta()->smem.data(); }

inline void check_smem(uint32_t addr, int bytes, int align) {
  if (addr % align) fail("misaligned shared-memory access");
  if (addr + bytes > cta()->smem.size() - 16) fail("shared-memory access out of bounds");
}

}  // namespace emu

#define threadIdx (emu::thread_idx())
#define blockIdx (emu::cta()->bidx)
#define blockDim (emu::cta()->block)
#define gridDim (emu::cta()->grid)

inline void __syncthreads() { emu::cta_sync(); }
inline void __threadfence() {}
// One CTA runs at a time: atomics are plain read-modify-writes.
template <typename T>
inline T atomicAdd(T* p, T v) {
  T o = *p;
  *p = o + v;
  return o;
}
inline int atomicExch(int* p, int v) {
  int o = *p;
  *p = v;
  return o;
}
inline float2 atomicAdd(float2* p, float2 v) {
  float2 o = *p;
  p->x += v.x;
  p->y += v.y;
  return o;
}
inline int atomicMax(int* p, int v) {
  int o = *p;
  if (v > o) *p = v;
  return o;
}
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline int __float_as_int(float f) {
  int u;
  std::memcpy(&u, &f, 4);
  return u;
}
template <typename T>
inline T __ldg(const T* p) { return *p; }
template <typename T>
inline T __ldcg(const T* p) { return *p; }
template <typename T>
inline void __stcg(T* p, T v) { *p = v; }
inline int __popc(unsigned v) { return __builtin_popcount(v); }

inline float __shfl_xor_sync(unsigned mask, float v, int m) {
  if (mask != 0xffffffffu) emu::fail("partial shuffle masks are not emulated");
  struct In { float v; int m; };
  return emu::collective<In, float>(1, In{v, m}, [&](const In* in, float* out) {
    for (int l = 0; l < 32; ++l) out[l] = in[(l ^ in[l].m) & 31].v;
  });
}
inline int __shfl_xor_sync(unsigned mask, int v, int m) {
  if (mask != 0xffffffffu) emu::fail("partial shuffle masks are not emulated");
  struct In { int v; int m; };
  return emu::collective<In, int>(2, In{v, m}, [&](const In* in, int* out) {
    for (int l = 0; l < 32; ++l) out[l] = in[(l ^ in[l].m) & 31].v;
  });
}
inline float __shfl_sync(unsigned mask, float v, int src) {
  if (mask != 0xffffffffu) emu::fail("partial shuffle masks are not emulated");
  struct In { float v; int src; };
  return emu::collective<In, float>(3, In{v, src}, [&](const In* in, float* out) {
    for (int l = 0; l < 32; ++l) out[l] = in[in[l].src & 31].v;
  });
}
inline int __shfl_sync(unsigned mask, int v, int src) {
  if (mask != 0xffffffffu) emu::fail("partial shuffle masks are not emulated");
  struct In { int v; int src; };
  return emu::collective<In, int>(4, In{v, src}, [&](const In* in, int* out) {
    for (int l = 0; l < 32; ++l) out[l] = in[in[l].src & 31].v;
  });
}
// __syncwarp with a full mask: a warp collective (all 32 lanes must reach it).
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) emu::fail("partial __syncwarp masks are not emulated");
  emu::collective<int, int>(6, 0, [&](const int*, int* out) {
    for (int l = 0; l < 32; ++l) out[l] = 0;
  });
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  if (mask != 0xffffffffu) emu::fail("partial ballot masks are not emulated");
  return emu::collective<int, unsigned>(5, pred ? 1 : 0, [&](const int* in, unsigned* out) {
    unsigned b = 0;
    for (int l = 0; l < 32; ++l) b |= (in[l] ? 1u : 0u) << l;
    for (int l = 0; l < 32; ++l) out[l] = b;
  });
}
inline bool __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0u; }

// ── the PTX-level primitives the kernels use (same names as their CUDA definitions) ─────────────
namespace ka_emu_ops {

inline uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(static_cast<const unsigned char*>(p) - emu::smem_base());
}

// A copy into shared memory that an issued, not yet retired wgmma reads (a stage refilled, or
// released to a producer, before the wgmma.wait_group that retires the wgmma reading it).
inline void check_not_wg_read(uint32_t dst, int bytes) {
  const auto& rd = emu::cta()->wg_reading;
  for (int i = 0; i < bytes; ++i)
    if (rd[dst + i]) emu::fail("copy into shared memory that an in-flight wgmma still reads (stage refilled before the wgmma.wait_group that retires its reader)");
}
inline void check_not_pending(uint32_t dst, int bytes) {
  const auto& pend = emu::cta()->bulk_pending;
  for (int i = 0; i < bytes; ++i)
    if (pend[dst + i]) emu::fail("cp.async into shared memory that a pending (barrier-deferred) copy still writes (stage refilled too early)");
}
inline void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  emu::check_smem(dst, 16, 16);
  check_not_pending(dst, 16);
  check_not_wg_read(dst, 16);
  if (src_bytes != 0 && src_bytes != 16) emu::fail("cp.async src size other than 0 or 16");
  if (src_bytes && (reinterpret_cast<uintptr_t>(src) % 16)) emu::fail("cp.async from a misaligned global address");
  std::memset(&emu::smem_base()[dst], 0xFF, 16);  // poison until the group retires
  emu::self().open.push_back({dst, src, src_bytes, 16, emu::next_copy_seq()});
}
inline void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
  emu::check_smem(dst, 4, 4);
  if (src_bytes != 0 && src_bytes != 4) emu::fail("cp.async (4 bytes) src size other than 0 or 4");
  if (src_bytes && (reinterpret_cast<uintptr_t>(src) % 4)) emu::fail("cp.async from a misaligned global address");
  std::memset(&emu::smem_base()[dst], 0xFF, 4);  // poison until the group retires
  emu::self().open.push_back({dst, src, src_bytes, 4, emu::next_copy_seq()});
}
inline void cp_async_commit() {
  auto& f = emu::self();
  f.groups.push_back(std::move(f.open));
  f.open.clear();
}
inline void cp_async_wait(int n) {
  auto& f = emu::self();
  while (static_cast<int>(f.groups.size()) > n) {
    const std::vector<emu::Copy> g = f.groups.front();  // perform_copy edits the groups
    for (const auto& cp : g) emu::perform_copy(emu::cta(), f.tid, cp);
    f.groups.erase(f.groups.begin());
  }
}

struct U4 { uint32_t r[4]; };

inline uint32_t rd32(uint32_t addr) {
  emu::check_smem(addr, 4, 4);
  uint32_t v;
  std::memcpy(&v, &emu::smem_base()[addr], 4);
  return v;
}
inline uint16_t rd16(uint32_t addr) {
  emu::check_smem(addr, 2, 2);
  uint16_t v;
  std::memcpy(&v, &emu::smem_base()[addr], 2);
  return v;
}

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lanes 8i..8i+7 give the row addresses of
// matrix i; without .trans lane t receives row t/4, elements 2(t%4), 2(t%4)+1 of each matrix;
// with .trans it receives elements (2(t%4), t/4) and (2(t%4)+1, t/4).
inline void ldsm_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3, bool trans) {
  U4 o = emu::collective<uint32_t, U4>(trans ? 11 : 10, addr, [&](const uint32_t* a, U4* out) {
    for (int l = 0; l < 32; ++l) emu::check_smem(a[l], 16, 16);
    for (int t = 0; t < 32; ++t)
      for (int i = 0; i < 4; ++i) {
        if (!trans) {
          out[t].r[i] = rd32(a[8 * i + t / 4] + 4 * (t % 4));
        } else {
          uint32_t lo = rd16(a[8 * i + 2 * (t % 4)] + 2 * (t / 4));
          uint32_t hi = rd16(a[8 * i + 2 * (t % 4) + 1] + 2 * (t / 4));
          out[t].r[i] = lo | (hi << 16);
        }
      }
  });
  r0 = o.r[0];
  r1 = o.r[1];
  r2 = o.r[2];
  r3 = o.r[3];
}

inline float bf(uint32_t bits16) { return __uint_as_float((bits16 & 0xffffu) << 16); }

// IEEE binary16 bits to float (normals, subnormals, inf, NaN).
inline float hf(uint32_t bits16) {
  const uint32_t h = bits16 & 0xffffu, sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  uint32_t f;
  if (e == 0) {
    if (m == 0) return __uint_as_float(sign);
    const float v = static_cast<float>(m) * (1.0f / 16777216.0f);  // m * 2^-24
    return sign ? -v : v;
  }
  if (e == 31) f = sign | 0x7f800000u | (m << 13);
  else f = sign | ((e + 112) << 23) | (m << 13);
  return __uint_as_float(f);
}

// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32, D = A*B + C (elements decoded by `el`).
inline void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, float (*el)(uint32_t)) {
  struct In { uint32_t a[4], b[2]; float c[4]; };
  struct Out { float d[4]; };
  In in;
  for (int i = 0; i < 4; ++i) in.a[i] = a[i], in.c[i] = c[i];
  in.b[0] = b0;
  in.b[1] = b1;
  Out o = emu::collective<In, Out>(20, in, [&](const In* x, Out* out) {
    float A[16][16], B[16][8], C[16][8];
    for (int t = 0; t < 32; ++t) {
      const int g = t / 4, q = t % 4;
      A[g][2 * q] = el(x[t].a[0]), A[g][2 * q + 1] = el(x[t].a[0] >> 16);
      A[g + 8][2 * q] = el(x[t].a[1]), A[g + 8][2 * q + 1] = el(x[t].a[1] >> 16);
      A[g][2 * q + 8] = el(x[t].a[2]), A[g][2 * q + 9] = el(x[t].a[2] >> 16);
      A[g + 8][2 * q + 8] = el(x[t].a[3]), A[g + 8][2 * q + 9] = el(x[t].a[3] >> 16);
      B[2 * q][g] = el(x[t].b[0]), B[2 * q + 1][g] = el(x[t].b[0] >> 16);
      B[2 * q + 8][g] = el(x[t].b[1]), B[2 * q + 9][g] = el(x[t].b[1] >> 16);
      C[g][2 * q] = x[t].c[0], C[g][2 * q + 1] = x[t].c[1];
      C[g + 8][2 * q] = x[t].c[2], C[g + 8][2 * q + 1] = x[t].c[3];
    }
    float D[16][8];
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        float s = C[m][n];
        for (int k = 0; k < 16; ++k) s += A[m][k] * B[k][n];
        D[m][n] = s;
      }
    for (int t = 0; t < 32; ++t) {
      const int g = t / 4, q = t % 4;
      out[t].d[0] = D[g][2 * q], out[t].d[1] = D[g][2 * q + 1];
      out[t].d[2] = D[g + 8][2 * q], out[t].d[3] = D[g + 8][2 * q + 1];
    }
  });
  for (int i = 0; i < 4; ++i) c[i] = o.d[i];
}
inline void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) { mma_16816(c, a, b0, b1, bf); }
inline void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) { mma_16816(c, a, b0, b1, hf); }

// ── Hopper warpgroup MMA (wgmma) ──
// Matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address >> 4, 16-29
// leading dimension byte offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 base offset,
// 62-63 swizzle (0 none, 1 128B, 2 64B, 3 32B).
struct WgDesc {
  uint32_t start, lbo, sbo, base_off, swz_bytes;  // swz_bytes: 0 (none), 32, 64 or 128
};
inline WgDesc wgmma_decode(uint64_t d) {
  WgDesc w;
  w.start = static_cast<uint32_t>(d & 0x3fff) << 4;
  w.lbo = static_cast<uint32_t>((d >> 16) & 0x3fff) << 4;
  w.sbo = static_cast<uint32_t>((d >> 32) & 0x3fff) << 4;
  w.base_off = static_cast<uint32_t>((d >> 49) & 7);
  const int mode = static_cast<int>(d >> 62);
  w.swz_bytes = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
  return w;
}
// Shared address of element (mn, k) of a 16-bit operand (mn: the M or N index, k: the K index)
// described by w, K-major (k contiguous) or MN-major (mn contiguous). Canonical layouts in units of
// 16-byte chunks of 8 elements:
//   K-major,  no swizzle: 8x1 chunk core matrices; mn%8 -> 16 B, mn/8 -> SBO, k/8 -> LBO.
//   K-major,  swizzle S:  atoms of 8 rows x S bytes along k; mn%8 -> S bytes, mn/8 -> SBO
//                         (k within one instruction, 16 elements = 32 B, stays inside the atom
//                         row; LBO is unused).
//   MN-major, no swizzle: mn%8 contiguous, mn/8 -> SBO; k%8 -> 16 B, k/8 -> LBO.
//   MN-major, swizzle S:  atoms of S bytes along mn x 8 rows along k; mn/(S/2) -> LBO,
//                         k%8 -> S bytes, k/8 -> SBO.
// The swizzle XORs address bits [4, 4+log2(S/16)) with bits [7, ...) of the absolute address (as
// TMA's, below).
inline uint32_t swizzle_addr(uint32_t a, uint32_t bytes) { return bytes ? a ^ (((a >> 7) & (bytes / 16 - 1)) << 4) : a; }
inline uint32_t wgmma_desc_addr(const WgDesc& w, bool mn_major, int mn, int k) {
  uint32_t a = w.start;
  if (!mn_major) {
    if (w.swz_bytes == 0) a += (mn / 8) * w.sbo + (mn % 8) * 16 + (k / 8) * w.lbo + (k % 8) * 2;
    else {
      const int e = static_cast<int>(w.swz_bytes) / 2;  // elements per atom row
      if (k >= e) emu::fail("wgmma: K-major operand row wider than the swizzle atom (not emulated)");
      a += (mn / 8) * w.sbo + (mn % 8) * w.swz_bytes + k * 2;
    }
  } else {
    if (w.swz_bytes == 0) a += (mn / 8) * w.sbo + (mn % 8) * 2 + (k / 8) * w.lbo + (k % 8) * 16;
    else {
      const int e = static_cast<int>(w.swz_bytes) / 2;
      a += (mn / e) * w.lbo + (mn % e) * 2 + (k / 8) * w.sbo + (k % 8) * w.swz_bytes;
    }
  }
  return swizzle_addr(a, w.swz_bytes);
}

struct WgmmaIn {
  int n;                 // N
  float* d;              // this thread's N/2 accumulators
  bool a_reg;            // A from registers (a[]) or from the descriptor da
  uint32_t a[4];
  uint64_t da, db;
  int tnsp_a, tnsp_b, scale_d;
  int f16 = 0;  // operands fp16 (else bf16)
};
struct WgmmaOut {
  float v[128];
  std::shared_ptr<emu::WgRead> reads;
};

// wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16: D = A(64x16) * B(16xN) + (scale_d ? D : 0).
// Thread t of the warpgroup (warp w = t/32, lane l, g = l/4, q = l%4) holds, per n8 block j,
// d[4j..4j+3] = D[16w+g][8j+2q], D[16w+g][8j+2q+1], D[16w+g+8][8j+2q], D[16w+g+8][8j+2q+1]; A from
// registers: a0 = A[16w+g][2q, 2q+1], a1 = A[16w+g+8][2q, 2q+1], a2 = A[16w+g][2q+8, 2q+9],
// a3 = A[16w+g+8][2q+8, 2q+9] (bf16 pairs, low half first).
inline void wgmma_issue(const WgmmaIn& in) {
  auto& me = emu::self();
  if (in.n % 8 || in.n < 8 || in.n > 256) emu::fail("wgmma: N must be a multiple of 8 in [8, 256]");
  if (!me.wg_fenced && me.wg_open.empty() && me.wg_groups.empty())
    emu::fail("wgmma.mma_async issued without a wgmma.fence since the last wgmma.wait_group");
  WgmmaOut out;
  emu::wg_collective(30, in, out, [&](const WgmmaIn* const* x, WgmmaOut* const* outs, int t0) {
    const WgmmaIn& x0 = *x[0];
    for (int t = 1; t < 128; ++t)
      if (x[t]->n != x0.n || x[t]->a_reg != x0.a_reg || x[t]->db != x0.db || (!x0.a_reg && x[t]->da != x0.da) ||
          x[t]->tnsp_a != x0.tnsp_a || x[t]->tnsp_b != x0.tnsp_b || x[t]->scale_d != x0.scale_d || x[t]->f16 != x0.f16)
        emu::fail("wgmma: threads of the warpgroup disagree on shape, descriptors or immediates");
    const int N = x0.n;
    float (*el)(uint32_t) = x0.f16 ? hf : bf;
    static float A[64][16], B[16][256], C[64][256];
    auto reads = std::make_shared<emu::WgRead>();
    if (x0.a_reg) {
      for (int t = 0; t < 128; ++t) {
        const int w = t / 32, g = (t % 32) / 4, q = t % 4;
        const uint32_t* a = x[t]->a;
        A[16 * w + g][2 * q] = el(a[0]), A[16 * w + g][2 * q + 1] = el(a[0] >> 16);
        A[16 * w + g + 8][2 * q] = el(a[1]), A[16 * w + g + 8][2 * q + 1] = el(a[1] >> 16);
        A[16 * w + g][2 * q + 8] = el(a[2]), A[16 * w + g][2 * q + 9] = el(a[2] >> 16);
        A[16 * w + g + 8][2 * q + 8] = el(a[3]), A[16 * w + g + 8][2 * q + 9] = el(a[3] >> 16);
      }
    } else {
      const WgDesc da = wgmma_decode(x0.da);
      if (da.base_off) emu::fail("wgmma: descriptor base offset other than 0 is not emulated");
      for (int m = 0; m < 64; ++m)
        for (int k = 0; k < 16; ++k) {
          const uint32_t ad = wgmma_desc_addr(da, x0.tnsp_a != 0, m, k);
          A[m][k] = el(rd16(ad));
          reads->addrs.push_back(ad);
        }
    }
    const WgDesc db = wgmma_decode(x0.db);
    if (db.base_off) emu::fail("wgmma: descriptor base offset other than 0 is not emulated");
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < N; ++n) {
        const uint32_t ad = wgmma_desc_addr(db, x0.tnsp_b != 0, n, k);
        B[k][n] = el(rd16(ad));
        reads->addrs.push_back(ad);
      }
    auto& rd = emu::cta()->wg_reading;
    for (uint32_t ad : reads->addrs) ++rd[ad], ++rd[ad + 1];
    for (int t = 0; t < 128; ++t) outs[t]->reads = reads;
    // C: each thread's accumulators, the newest in-flight value where an earlier wgmma still owns them.
    for (int t = 0; t < 128; ++t) {
      auto& f = emu::cta()->fibers[t0 + t];
      const int w = t / 32, g = (t % 32) / 4, q = t % 4;
      for (int i = 0; i < N / 2; ++i) {
        float* r = x[t]->d + i;
        const auto it = f.wg_latest.find(r);
        const float v = it != f.wg_latest.end() ? it->second.first : *r;
        const int j = i / 4, e = i % 4;
        C[16 * w + g + (e >= 2 ? 8 : 0)][8 * j + 2 * q + (e & 1)] = x0.scale_d ? v : 0.f;
      }
    }
    for (int t = 0; t < 128; ++t) {
      const int w = t / 32, g = (t % 32) / 4, q = t % 4;
      for (int i = 0; i < N / 2; ++i) {
        const int j = i / 4, e = i % 4;
        const int m = 16 * w + g + (e >= 2 ? 8 : 0), n = 8 * j + 2 * q + (e & 1);
        float s = C[m][n];
        for (int k = 0; k < 16; ++k) s += A[m][k] * B[k][n];
        outs[t]->v[i] = s;
      }
    }
  });
  for (int i = 0; i < in.n / 2; ++i) {
    float* r = in.d + i;
    me.wg_open.push_back({r, out.v[i]});
    auto& l = me.wg_latest[r];
    l.first = out.v[i];
    l.second++;
    *r = __uint_as_float(0x7fffffffu);  // poison until the wait retires it
  }
  me.wg_open_reads.push_back(std::move(out.reads));
}
inline void wgmma_fence() { emu::self().wg_fenced = true; }
inline void wgmma_commit() {
  auto& f = emu::self();
  f.wg_groups.push_back(std::move(f.wg_open));
  f.wg_open.clear();
  f.wg_group_reads.push_back(std::move(f.wg_open_reads));
  f.wg_open_reads.clear();
}
inline void wgmma_wait(int n) {
  auto& f = emu::self();
  if (static_cast<int>(f.wg_groups.size()) > n) {
    // The wgmmas take time: let the other threads run before this one retires them, so that a
    // thread that released their operands early (e.g. arrived on an "empty" mbarrier before this
    // wait) lets a producer refill them while they are still read (reported by the copy).
    f.state = emu::kRunnable;
    emu::block_and_yield();
  }
  while (static_cast<int>(f.wg_groups.size()) > n) {
    for (auto& [r, v] : f.wg_groups.front()) {
      *r = v;
      const auto it = f.wg_latest.find(r);
      if (--it->second.second == 0) f.wg_latest.erase(it);
    }
    f.wg_groups.erase(f.wg_groups.begin());
    // The group's wgmmas are complete for this warp: their shared-memory reads end once every warp
    // of the warpgroup retired them.
    auto& rd = emu::cta()->wg_reading;
    for (auto& w : f.wg_group_reads.front()) {
      w->warps |= 1u << ((f.tid % 128) / 32);
      if (!w->done && w->warps == 15u) {
        for (uint32_t ad : w->addrs) --rd[ad], --rd[ad + 1];
        w->done = true;
      }
    }
    f.wg_group_reads.erase(f.wg_group_reads.begin());
  }
  if (f.wg_groups.empty() && f.wg_open.empty()) f.wg_fenced = false;
}
inline void fence_proxy_async() {}

// ── mbarriers and bulk copies ──
inline void mbar_init(uint32_t bar, int count) {
  emu::check_smem(bar, 8, 8);
  if (count < 1 || count > (1 << 20) - 1) emu::fail("mbarrier.init: count out of range");
  auto& m = emu::cta()->mbars;
  const auto it = m.find(bar);
  if (it != m.end() && !it->second.copies.empty()) emu::fail("mbarrier.init on a barrier with bulk copies pending");
  emu::MBar b;
  b.count = b.pending = count;
  m[bar] = b;
  std::memset(&emu::smem_base()[bar], 0x5A, 8);  // opaque: the kernel must not read it as data
}
inline void mbar_fence_init() {}
inline void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  emu::MBar& b = emu::mbar_at(bar);
  if (b.pending == 0 && !emu::mbar_try_complete(b))
    emu::fail("mbarrier arrival beyond the count while the phase still misses bytes (arrival count underflow)");
  b.tx += bytes;
  if (b.tx > (1 << 20) - 1) emu::fail("mbarrier tx-count overflow (more than 2^20-1 bytes expected in one phase)");
  b.pending--;
}
// mbarrier.arrive (release, one arrival, no transaction bytes).
inline void mbar_arrive(uint32_t bar) { mbar_arrive_expect_tx(bar, 0); }
// cp.async.mbarrier.arrive.noinc: the arrival is counted now (noinc: the barrier's count already
// includes it), and every cp.async this thread issued before it moves onto the barrier's current
// phase, to be performed when the phase completes; readers that do not wait see the poison.
inline void cp_async_mbar_arrive_noinc(uint32_t bar) {
  emu::MBar& b = emu::mbar_at(bar);
  if (b.pending == 0 && !emu::mbar_try_complete(b))
    emu::fail("mbarrier arrival beyond the count while the phase still misses bytes (arrival count underflow)");
  auto& f = emu::self();
  // Every cp.async of this thread still in flight is tracked by this barrier too (the arrival
  // happens once they all completed); they stay in their commit groups.
  auto track = [&](const std::vector<emu::Copy>& v) {
    for (const emu::Copy& cp : v) {
      std::memset(&emu::cta()->bulk_pending[cp.dst], 1, cp.size);
      b.cp_copies.push_back({f.tid, cp});
    }
  };
  for (const auto& g : f.groups) track(g);
  track(f.open);
  mbar_arrive_expect_tx(bar, 0);
}
inline bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  if (parity > 1) emu::fail("mbarrier.try_wait.parity: parity other than 0 or 1");
  while (true) {
    emu::MBar& b = emu::mbar_at(bar);
    if ((b.phase & 1) != parity) return true;  // the phase of this parity has completed
    if (emu::mbar_try_complete(b) && (b.phase & 1) != parity) return true;
    auto& f = emu::self();
    f.state = emu::kMbar;
    f.wait_bar = bar;
    f.wait_parity = parity;
    emu::block_and_yield();
  }
}
inline void bulk_copy_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  if (bytes == 0 || bytes % 16) emu::fail("cp.async.bulk: size not a positive multiple of 16");
  if (reinterpret_cast<uintptr_t>(src) % 16) emu::fail("cp.async.bulk from a misaligned global address");
  emu::check_smem(dst, static_cast<int>(bytes), 16);
  emu::MBar& b = emu::mbar_at(bar);
  auto& pend = emu::cta()->bulk_pending;
  for (uint32_t i = 0; i < bytes; ++i)
    if (pend[dst + i]) emu::fail("bulk copy into shared memory that a pending bulk copy still writes (stage refilled too early)");
  check_not_wg_read(dst, static_cast<int>(bytes));
  std::memset(&pend[dst], 1, bytes);
  std::memset(&emu::smem_base()[dst], 0xFF, bytes);  // poison until the phase completes
  b.copies.push_back({dst, src, bytes});
}
// elect.sync with a full mask: a warp collective, true in lane 0 (the lowest active lane).
inline bool elect_one() {
  return emu::collective<int, int>(40, 0, [&](const int*, int* out) {
    for (int l = 0; l < 32; ++l) out[l] = l == 0;
  });
}

// ── tensor-map TMA (2-D) ──
// f(byte offset in the global tensor, shared address) for each element of box (c0, c1) of m that lies
// inside the tensor; the box is row-major at `smem`, swizzled as m says.
template <typename F>
inline void for_each_box_element(const emu::TensorMap2D& m, uint32_t smem, int c0, int c1, F f) {
  const int row = m.box[0] * m.elem;
  for (int r = 0; r < m.box[1]; ++r)
    for (int c = 0; c < m.box[0]; ++c) {
      const int64_t gr = static_cast<int64_t>(c1) + r, gc = static_cast<int64_t>(c0) + c;
      if (gr >= 0 && gr < m.dims[1] && gc >= 0 && gc < m.dims[0])
        f(gr * m.row_bytes + gc * m.elem, swizzle_addr(smem + static_cast<uint32_t>(r * row + c * m.elem), m.swizzle));
    }
}
// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, {c0, c1}], [bar]
inline void tma_load_2d(uint32_t dst, const emu::TensorMap2D& m, int c0, int c1, uint32_t bar) {
  const int row = m.box[0] * m.elem;
  const uint32_t bytes = static_cast<uint32_t>(row * m.box[1]);
  if (m.swizzle == 128 && (row != 128 || dst % 1024)) emu::fail("TMA 128B swizzle: 128-byte box rows into 1024-byte aligned shared memory");
  emu::check_smem(dst, static_cast<int>(bytes), 128);
  emu::MBar& b = emu::mbar_at(bar);
  auto& pend = emu::cta()->bulk_pending;
  for (uint32_t i = 0; i < bytes; ++i)
    if (pend[dst + i]) emu::fail("TMA load into shared memory that a pending copy still writes (stage refilled too early)");
  check_not_wg_read(dst, static_cast<int>(bytes));
  auto box = std::make_shared<std::vector<unsigned char>>(bytes, 0);  // zero fill outside the tensor
  for_each_box_element(m, dst, c0, c1, [&](int64_t off, uint32_t a) { std::memcpy(box->data() + (a - dst), m.base + off, m.elem); });
  std::memset(&pend[dst], 1, bytes);
  std::memset(&emu::smem_base()[dst], 0xFF, bytes);  // poison until the phase completes
  b.copies.push_back({dst, box->data(), bytes, box});
}
// The same with .multicast::cluster: the box lands at shared offset dst of every CTA of the cluster
// whose rank bit is set in mask, each completing its bytes on its own mbarrier at offset bar.
inline void tma_load_2d_multicast(uint32_t dst, const emu::TensorMap2D& m, int c0, int c1, uint32_t bar, uint16_t mask) {
  const size_t n = emu::cta()->cluster->ctas.size();
  if (mask == 0 || (n < 16 && (mask >> n) != 0)) emu::fail("TMA multicast: CTA mask empty or naming ranks outside the cluster");
  for (uint32_t r = 0; r < n; ++r)
    if (mask >> r & 1u)
      emu::on_peer(r, "TMA multicast into a CTA that has exited (no cluster barrier before exit)",
                   [&] { tma_load_2d(dst, m, c0, c1, bar); });
}
// mapa.shared::cluster + mbarrier.arrive.shared::cluster: one arrival on the mbarrier at offset bar
// of CTA `rank` of the cluster (this CTA's own rank included).
inline void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
  emu::on_peer(rank, "mbarrier arrival on a CTA that has exited (no cluster barrier before exit)", [&] { mbar_arrive(bar); });
}
inline uint32_t cluster_ctarank() { return static_cast<uint32_t>(emu::cta()->rank); }
inline void cluster_sync() { emu::cluster_sync(); }
// cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [map, {c0, c1}], [src]
inline void tma_store_2d(const emu::TensorMap2D& m, uint32_t src, int c0, int c1) {
  const int row = m.box[0] * m.elem;
  const int bytes = row * m.box[1];
  if (m.swizzle == 128 && (row != 128 || src % 1024)) emu::fail("TMA store, 128B swizzle: 128-byte box rows from 1024-byte aligned shared memory");
  emu::check_smem(src, bytes, 128);
  auto& rd = emu::cta()->st_reading;
  for (int i = 0; i < bytes; ++i) ++rd[src + i];
  emu::self().st_open.push_back({m, src, c0, c1});
}
inline void bulk_commit() {
  auto& f = emu::self();
  f.st_groups.push_back(std::move(f.st_open));
  f.st_open.clear();
}
// cp.async.bulk.wait_group(.read) n: the stores of all but the newest n groups are performed (their
// shared-memory source read, the global tensor written).
inline void bulk_wait(int n) {
  auto& f = emu::self();
  auto& rd = emu::cta()->st_reading;
  while (static_cast<int>(f.st_groups.size()) > n) {
    for (const emu::BulkStore& st : f.st_groups.front()) {
      const emu::TensorMap2D& m = st.map;
      for_each_box_element(m, st.src, st.c0, st.c1, [&](int64_t off, uint32_t a) {
        std::memcpy(const_cast<unsigned char*>(m.base) + off, &emu::smem_base()[a], m.elem);
      });
      for (int i = 0; i < m.box[0] * m.elem * m.box[1]; ++i) --rd[st.src + i];
    }
    f.st_groups.erase(f.st_groups.begin());
  }
}
// st.shared.b32: reported when a tensor store in flight still reads the bytes.
inline void st_shared_u32(uint32_t addr, uint32_t v) {
  emu::check_smem(addr, 4, 4);
  const auto& rd = emu::cta()->st_reading;
  for (int i = 0; i < 4; ++i)
    if (rd[addr + i]) emu::fail("st.shared into a staging buffer that a tensor store in flight still reads (no cp.async.bulk.wait_group.read)");
  std::memcpy(&emu::smem_base()[addr], &v, 4);
}

inline uint16_t f2bf(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
// float to IEEE binary16 bits, round to nearest even (subnormals, overflow to inf, NaN quieted).
inline uint16_t f2h(float x) {
  const uint32_t f = __float_as_uint(x), sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xff) - 127 + 15;
  uint32_t man = f & 0x7fffffu;
  if (((f >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  const uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry into the exponent rounds up to inf
  return static_cast<uint16_t>(sign | h);
}

}  // namespace ka_emu_ops

// ── host runtime stubs ───────────────────────────────────────────────────────────────────────
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (!*p) return 2;
  std::memset(*p, 0xEE, (n + 255) / 256 * 256);  // garbage: device memory is not zeroed
  return cudaSuccess;
}
template <typename T>
inline cudaError_t cudaMalloc(T** p, size_t n) {  // the runtime's typed overload
  return cudaMalloc(reinterpret_cast<void**>(p), n);
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  std::memset(p, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = nullptr) {
  std::memset(p, v, n);
  return cudaSuccess;
}
template <typename K>
inline cudaError_t cudaFuncSetAttribute(K, cudaFuncAttribute a, int v) {
  if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) emu::max_dyn_smem() = std::max<size_t>(emu::max_dyn_smem(), v);
  return cudaSuccess;
}
template <typename K>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, K, int, size_t) {
  *n = emu::env_int("KA_EMU_OCC", 2);
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  *v = a == cudaDevAttrMultiProcessorCount ? emu::env_int("KA_EMU_SMS", 8) : 227 * 1024;
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "emulated"; }
