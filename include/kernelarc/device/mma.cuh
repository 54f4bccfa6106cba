// kernelarc/device/mma.cuh — warp-level tensor-core MMA (sm_80+): shared-memory fragment loads
// and mma.sync m16n8k16 with fp32 accumulators.
//   ldsm_x4(addr, r0..r3)    ldmatrix .x4: four 8x8 b16 matrices (lane 8i+j gives row j of matrix i)
//   ldsm_x4_t(addr, r0..r3)  the same, transposed (.trans)
//   ldsm_x4(addr, r[4])      the array form, ordered with the other memory accesses (a memory
//                            clobber: the compiler keeps it after earlier shared-memory writes)
//   mma_bf16(c, a, b0, b1)   c[4] += A(16x16, row) * B(16x8, col), bf16 inputs
//   mma_f16(c, a, b0, b1)    the same with fp16 inputs
//   mma_bf16_ldsm_t<N>(c, a, base)  c[0..N) += a · B for N n-tiles of 8 columns, the B fragments
//                            read two n-tiles per ldmatrix .x4.trans at base + 32 bytes each (P · V
//                            with V row-major in shared memory)
//   quad_transpose(v, j)     lanes 4q..4q+3 hold v[0..3]; after it lane j = lane & 3 holds word i
//                            = v_i[j] (two xor exchanges of half the words each); every lane calls it
//   scale_rows(c, a0, a1)    accumulator rows g (c[n][0..1]) *= a0 and g + 8 (c[n][2..3]) *= a1
//   zero_acc(c)              every accumulator of c[N][4] = 0
// Fragment layouts are the PTX ISA's (lane 4g+q holds c = C[g][2q..2q+1], C[g+8][2q..2q+1]).
#pragma once
#include <kernelarc/device/target.cuh>

namespace ka_dev {

#ifdef KA_EMULATE
inline void ldsm_x4(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  ka_emu_ops::ldsm_x4(a, r0, r1, r2, r3, false);
}
inline void ldsm_x4_t(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  ka_emu_ops::ldsm_x4(a, r0, r1, r2, r3, true);
}
inline void ldsm_x4(uint32_t a, uint32_t (&r)[4]) { ka_emu_ops::ldsm_x4(a, r[0], r[1], r[2], r[3], false); }
using ka_emu_ops::mma_bf16;
using ka_emu_ops::mma_f16;
#else
KA_DEV void ldsm_x4(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
KA_DEV void ldsm_x4_t(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
KA_DEV void ldsm_x4(uint32_t a, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
}
KA_DEV void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
KA_DEV void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

template <int N>
KA_DEV void mma_bf16_ldsm_t(float (&c)[N][4], const uint32_t (&a)[4], uint32_t base) {
#pragma unroll
  for (int n2 = 0; n2 < N / 2; ++n2) {
    uint32_t b0, b1, b2, b3;
    ldsm_x4_t(base + n2 * 32, b0, b1, b2, b3);
    mma_bf16(c[2 * n2], a, b0, b1);
    mma_bf16(c[2 * n2 + 1], a, b2, b3);
  }
}

KA_DEV void quad_transpose(uint32_t (&v)[4], int j) {
  const bool b1 = j & 2, b0 = j & 1;
  {
    const uint32_t x0 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b1 ? v[0] : v[2]), 2));
    const uint32_t x1 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b1 ? v[1] : v[3]), 2));
    if (b1) v[0] = x0, v[1] = x1;
    else v[2] = x0, v[3] = x1;
  }
  {
    const uint32_t x0 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b0 ? v[0] : v[1]), 1));
    const uint32_t x1 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b0 ? v[2] : v[3]), 1));
    if (b0) v[0] = x0, v[2] = x1;
    else v[1] = x0, v[3] = x1;
  }
}

template <int N>
KA_DEV void scale_rows(float (&c)[N][4], float a0, float a1) {
#pragma unroll
  for (int n = 0; n < N; ++n) {
    c[n][0] *= a0;
    c[n][1] *= a0;
    c[n][2] *= a1;
    c[n][3] *= a1;
  }
}

template <int N>
KA_DEV void zero_acc(float (&c)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n) c[n][0] = c[n][1] = c[n][2] = c[n][3] = 0.f;
}

}  // namespace ka_dev
