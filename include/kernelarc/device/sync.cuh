// kernelarc/device/sync.cuh — synchronisation beyond __syncthreads: mbarriers (sm_90 transaction
// barriers that async copies complete), named barriers over a subset of warps, warp election,
// thread-block clusters, the register move between warpgroups, and an acquire-release counter.
//   mbar_init(bar, count), mbar_fence_init()        initialise; make it visible to the async proxy
//   mbar_arrive(bar), mbar_arrive_expect_tx(bar, n) one arrival (and n bytes expected)
//   mbar_try_wait(bar, parity) / mbar_wait(…)        has the phase of this parity completed
//   cp_async_mbar_arrive_noinc(bar)                  arrive once this thread's cp.async landed
//   mbar_arrive_cluster(bar, rank)                   arrive on the same barrier in CTA `rank`
//   named_sync(id, n), named_arrive(id, n)           bar.sync / bar.arrive over n threads
//   named_sync<ID, N>()                              the same with both as immediates
//   elect_one()                                      true in one lane of a full warp
//   cluster_ctarank(), cluster_sync()
//   setmaxnreg_inc<N>(), setmaxnreg_dec<N>()         warpgroup register budget
//   atom_add_acq_rel_gpu(p, v)                       device-scope acq_rel fetch-add (last-CTA logic)
//   last_arrival(counter, n)                         true for the last of n CTAs counting on counter
// A fresh mbarrier counts its "parity 1" phase as complete, so a producer's first pass over a ring
// of empty barriers does not block.
#pragma once
#include <kernelarc/device/target.cuh>

namespace ka_dev {

#ifdef KA_EMULATE
using ka_emu_ops::cp_async_mbar_arrive_noinc;
using ka_emu_ops::elect_one;
using ka_emu_ops::mbar_arrive;
using ka_emu_ops::mbar_arrive_expect_tx;
using ka_emu_ops::mbar_fence_init;
using ka_emu_ops::mbar_init;
using ka_emu_ops::mbar_try_wait;
inline void mbar_arrive_cluster(uint32_t bar, uint32_t rank) { ka_emu_ops::mbar_arrive_remote(bar, rank); }
using ka_emu_ops::cluster_ctarank;
using ka_emu_ops::cluster_sync;
inline void named_sync(int id, int count) { emu::named_sync(id, count); }
inline void named_arrive(int id, int count) { emu::named_arrive(id, count); }
template <int ID, int COUNT>
inline void named_sync() { emu::named_sync(ID, COUNT); }
template <int N>
inline void setmaxnreg_inc() {}  // a register budget: nothing to emulate
template <int N>
inline void setmaxnreg_dec() {}
inline int atom_add_acq_rel_gpu(int* p, int v) { return atomicAdd(p, v); }
#else
KA_DEV void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialisation visible to the async proxy (bulk copies' complete_tx) and, after the
// barrier that follows, to the other threads.
KA_DEV void mbar_fence_init() { KA_SM90(asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory")); }
KA_DEV void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  KA_SM90(asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory"));
}
// Release: this thread's shared-memory reads before it are done before a waiter refills the stage.
KA_DEV void mbar_arrive(uint32_t bar) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory"); }
// Acquire: the copies that completed the phase are visible to this thread.
KA_DEV bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  KA_SM90(asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory"));
  return ok != 0;
}
// .noinc: the barrier's count includes this arrival.
KA_DEV void cp_async_mbar_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Default semantics (release at CTA scope), as a TMA pipeline releases a stage to the CTAs that
// multicast into it; producers wait on it with the plain mbar_wait.
KA_DEV void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  KA_SM90(asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory"));
}
KA_DEV uint32_t cluster_ctarank() {
  uint32_t r;
  KA_SM90(asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)));
  return r;
}
KA_DEV void cluster_sync() {
  KA_SM90(asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory"));
}
KA_DEV void named_sync(int id, int count) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory"); }
KA_DEV void named_arrive(int id, int count) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory"); }
template <int ID, int COUNT>
KA_DEV void named_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(COUNT) : "memory");
}
KA_DEV bool elect_one() {
  uint32_t e;
  KA_SM90(asm volatile("{\n .reg .pred e;\n elect.sync _|e, 0xffffffff;\n selp.u32 %0, 1, 0, e;\n}\n" : "=r"(e)));
  return e != 0;
}
template <int N>
KA_DEV void setmaxnreg_inc() {
  KA_SM90A(asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)));
}
template <int N>
KA_DEV void setmaxnreg_dec() {
  KA_SM90A(asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)));
}
// One instruction instead of a fence, a relaxed atomic and a second fence: release makes this
// CTA's writes (ordered before by a barrier) visible device-wide, acquire lets the last CTA see all.
KA_DEV int atom_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
#endif
KA_DEV void mbar_wait(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
// One arrival of `arrivals` on a zeroed counter (by one thread, after a barrier over the CTA's
// writes): true for the last one, which then sees every earlier arrival's writes.
KA_DEV bool last_arrival(int* counter, int arrivals) { return atom_add_acq_rel_gpu(counter, 1) == arrivals - 1; }

}  // namespace ka_dev
