// kernelarc/device/copy.cuh — asynchronous copies into shared memory (sm_80 cp.async, sm_90 bulk
// copies and 2-D TMA tensor copies). Under the emulator, the copies are deferred as on the
// hardware (poison until their group or barrier retires them; kernelarc/emu/ka_emu.h).
//   cp_async_16(dst, src, n)        16 bytes, .cg (L2 only); n = 0 zero-fills (a masked row)
//   cp_async_16_l2_256(dst, src, n) the same with an L2 prefetch hint of 256 bytes
//   cp_async_16_hint<L2>(dst, src, n)  one of the two by a knob: L2 = 256 the hinted one, else the plain
//   cp_async_4(dst, src, n)         4 bytes, .ca
//   cp_async_commit(), cp_async_wait_n<N>()  close the open group; wait until N groups are open
//   bulk_copy_g2s(dst, src, bytes, bar)      one bulk copy completing `bytes` on mbarrier `bar`
//   tma_load_2d(dst, map, c0, c1, bar)       a box of a 2-D tensor map (c0: inner coordinate)
//   tma_load_2d_multicast(…, mask)           the box into every CTA of the cluster in `mask`
//   tma_store_2d(map, src, c0, c1), bulk_commit(), bulk_wait_read<N>(), bulk_wait_all()
//   fence_proxy_async_smem()        generic-proxy shared writes visible to the async proxy
//   st_shared_u32(addr, v)          a 32-bit shared-memory store by address (a TMA store's staging)
//   prefetch_tmap(map)              the tensor map into the constant cache
// dst and bar are shared-memory addresses (smem_u32).
#pragma once
#include <kernelarc/device/target.cuh>
#ifndef KA_EMULATE
#include <cuda.h>  // CUtensorMap
#endif

namespace ka_dev {

#ifdef KA_EMULATE
using ka_emu_ops::bulk_commit;
using ka_emu_ops::bulk_copy_g2s;
using ka_emu_ops::cp_async_16;
using ka_emu_ops::cp_async_4;
using ka_emu_ops::cp_async_commit;
inline void cp_async_16_l2_256(uint32_t dst, const void* src, int n) { ka_emu_ops::cp_async_16(dst, src, n); }
template <int N>
inline void cp_async_wait_n() { ka_emu_ops::cp_async_wait(N); }
using TensorMap = emu::TensorMap2D;
inline void tma_load_2d(uint32_t dst, const TensorMap* m, int c0, int c1, uint32_t bar) {
  ka_emu_ops::tma_load_2d(dst, *m, c0, c1, bar);
}
inline void tma_load_2d_multicast(uint32_t dst, const TensorMap* m, int c0, int c1, uint32_t bar, uint16_t mask) {
  ka_emu_ops::tma_load_2d_multicast(dst, *m, c0, c1, bar, mask);
}
inline void tma_store_2d(const TensorMap* m, uint32_t src, int c0, int c1) { ka_emu_ops::tma_store_2d(*m, src, c0, c1); }
template <int N>
inline void bulk_wait_read() { ka_emu_ops::bulk_wait(N); }
inline void bulk_wait_all() { ka_emu_ops::bulk_wait(0); }
inline void fence_proxy_async_smem() {}
using ka_emu_ops::st_shared_u32;
inline void prefetch_tmap(const TensorMap*) {}
#else
KA_DEV void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
KA_DEV void cp_async_16_l2_256(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
KA_DEV void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
KA_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
KA_DEV void cp_async_wait_n() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// This CTA's own shared memory is a valid ::cluster address.
KA_DEV void bulk_copy_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  KA_SM90(asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory"));
}
using TensorMap = CUtensorMap;
KA_DEV void tma_load_2d(uint32_t dst, const TensorMap* map, int c0, int c1, uint32_t bar) {
  KA_SM90(asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory"));
}
KA_DEV void tma_load_2d_multicast(uint32_t dst, const TensorMap* map, int c0, int c1, uint32_t bar, uint16_t mask) {
  KA_SM90(asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory"));
}
// Rows and columns outside the tensor are not written.
KA_DEV void tma_store_2d(const TensorMap* map, uint32_t src, int c0, int c1) {
  KA_SM90(asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory"));
}
KA_DEV void bulk_commit() { KA_SM90(asm volatile("cp.async.bulk.commit_group;" ::: "memory")); }
// The shared-memory source of every bulk store group but the newest N has been read.
template <int N>
KA_DEV void bulk_wait_read() {
  KA_SM90(asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"));
}
KA_DEV void bulk_wait_all() { KA_SM90(asm volatile("cp.async.bulk.wait_group 0;" ::: "memory")); }
KA_DEV void fence_proxy_async_smem() { KA_SM90(asm volatile("fence.proxy.async.shared::cta;" ::: "memory")); }
KA_DEV void st_shared_u32(uint32_t addr, uint32_t v) { asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory"); }
KA_DEV void prefetch_tmap(const TensorMap* map) {
  KA_SM90(asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory"));
}
#endif

// An L2_PREFETCH knob's 16-byte copy: 256, with the .L2::256B prefetch hint (the first copy of a
// row brings the aligned 256 bytes around it into L2 in one request); anything else, plain.
template <int L2>
KA_DEV void cp_async_16_hint(uint32_t dst, const void* src, int n) {
  if constexpr (L2 == 256)
    cp_async_16_l2_256(dst, src, n);
  else
    cp_async_16(dst, src, n);
}

}  // namespace ka_dev
