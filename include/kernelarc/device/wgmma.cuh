// kernelarc/device/wgmma.cuh — Hopper warpgroup MMA (sm_90a): instruction selection for
// wgmma.mma_async m64nNk16 with fp32 accumulators, the shared-memory matrix descriptors, and the
// async-group bookkeeping.
//   Wgmma<N, In, TA, TB>::ss(d, da, db, scale_d)   A and B from descriptors
//   Wgmma<N, In, TA, TB>::rs(d, a, db, scale_d)    A from registers (a[4]: bf16/f16 pairs), B from a descriptor
//       N in {8, 16, 32, 64, 128, 256}; In = Bf16 or F16; TA/TB: transpose bits (0: K-major,
//       1: MN-major); scale_d = 0 starts from zero; d is float[N/8][4] per thread (n8 block j holds
//       D[16w+g][8j+2q..+1], D[16w+g+8][8j+2q..+1] for warp w, lane 4g+q of the warpgroup).
//   wgmma_ss<N>(d, da, db), wgmma_ss_tb<N>, wgmma_rs<N>(d, a, db), wgmma_rs_tb<N>
//                                                  bf16, accumulating (scale-d 1): both operands
//                                                  K-major, or B MN-major (_tb)
//   wgmma_fence(), wgmma_commit(), wgmma_wait_n<N>()   order register writes / close / retire groups
//   fence_operands(d), fence_operand(r)                keep accumulator accesses on their side of a wait
//   fence_proxy_async()                                generic-proxy smem writes before async reads
//   sw128_desc(addr, lbo), sw64_desc(addr, lbo)        descriptors of 128/64-byte-swizzled operands
//   make_desc(addr, lbo, sbo, swizzle_mode)            any descriptor (mode 0 none, 1 128B, 2 64B, 3 32B)
// Device code built for an arch without wgmma (not sm_90a) gets bodies that trap, so that the
// mma.sync points of a family still build there. The emulator checks fences, groups and operand
// lifetimes (kernelarc/emu/ka_emu.h).
// The Wgmma specialisations are written out per N (their register lists); a new N follows the pattern.
#pragma once
#include <kernelarc/device/target.cuh>

#include <type_traits>

#if defined(KA_EMULATE) || !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KA_WGMMA_HW 1
#else
#define KA_WGMMA_HW 0
#endif

namespace ka_dev {

KA_DEV uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t mode) {
  return static_cast<uint64_t>((addr & 0x3ffffu) >> 4) | (static_cast<uint64_t>((lbo >> 4) & 0x3fffu) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3fffu) << 32) | (static_cast<uint64_t>(mode) << 62);
}
// 128-byte swizzle: lbo (K-major: unused, 16; MN-major: between 64-element blocks along M/N),
// stride 1024 bytes between groups of 8 rows.
KA_DEV uint64_t sw128_desc(uint32_t addr, uint32_t lbo) {
  return static_cast<uint64_t>((addr & 0x3ffffu) >> 4) | (static_cast<uint64_t>((lbo >> 4) & 0x3fffu) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (1ull << 62);
}
// 64-byte swizzle: stride 512 bytes between groups of 8 rows.
KA_DEV uint64_t sw64_desc(uint32_t addr, uint32_t lbo) {
  return static_cast<uint64_t>((addr & 0x3ffffu) >> 4) | (static_cast<uint64_t>((lbo >> 4) & 0x3fffu) << 16) |
         (static_cast<uint64_t>(512 >> 4) << 32) | (2ull << 62);
}

template <int R, int C>
KA_DEV void fence_operands(float (&d)[R][C]) {
#ifndef KA_EMULATE
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
#endif
}

template <int R, int C>
KA_DEV void fence_operands(uint32_t (&d)[R][C]) {
#ifndef KA_EMULATE
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) asm volatile("" : "+r"(d[i][j])::"memory");
#endif
}
KA_DEV void fence_operand(float& r) {
#ifndef KA_EMULATE
  asm volatile("" : "+f"(r)::"memory");
#endif
}

template <int N, typename In, int TA, int TB>
struct Wgmma;

#ifdef KA_EMULATE
inline void wgmma_fence() { ka_emu_ops::wgmma_fence(); }
inline void wgmma_commit() { ka_emu_ops::wgmma_commit(); }
template <int N>
inline void wgmma_wait_n() { ka_emu_ops::wgmma_wait(N); }
inline void fence_proxy_async() {}
template <int N, typename In, int TA, int TB>
struct Wgmma {
  static constexpr int kF16 = std::is_same<In, F16>::value ? 1 : 0;
  static void ss(float (&d)[N / 8][4], uint64_t da, uint64_t db, int scale_d) {
    ka_emu_ops::wgmma_issue({N, &d[0][0], false, {0, 0, 0, 0}, da, db, TA, TB, scale_d, kF16});
  }
  static void rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    ka_emu_ops::wgmma_issue({N, &d[0][0], true, {a[0], a[1], a[2], a[3]}, 0, db, 0, TB, scale_d, kF16});
  }
};
#elif KA_WGMMA_HW
KA_DEV void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
KA_DEV void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
KA_DEV void wgmma_wait_n() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
KA_DEV void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// One m64nNk16 shape for one element type (PTX type T): ss takes A from a descriptor, rs from
// registers. D: the accumulator operands ("{%0, …}"), then for ss and rs the number of the
// scale-d operand (SP, RP) and the operands after the accumulators (SA, RA); the rest: the
// accumulators' constraints. KA_WGMMA_SHAPES gives both element types of one N.
#define KA_WGMMA_SHAPE(N, IN, T, D, SP, SA, RP, RA, ...)                                               \
  template <int TA, int TB>                                                                           \
  struct Wgmma<N, IN, TA, TB> {                                                                       \
    static KA_DEV void ss(float (&d)[N / 8][4], uint64_t da, uint64_t db, int scale_d) {              \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SP ", 0;\n"                                   \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " " D ", " SA ";\n}\n"   \
                   : __VA_ARGS__                                                                      \
                   : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB));                               \
    }                                                                                                 \
    static KA_DEV void rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db, int scale_d) {   \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" RP ", 0;\n"                                   \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " " D ", " RA ";\n}\n"   \
                   : __VA_ARGS__                                                                      \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(TB));      \
    }                                                                                                 \
  };
#define KA_WGMMA_SHAPES(N, ...) KA_WGMMA_SHAPE(N, Bf16, "bf16", __VA_ARGS__) KA_WGMMA_SHAPE(N, F16, "f16", __VA_ARGS__)

KA_WGMMA_SHAPES(8, "{%0, %1, %2, %3}", "6", "%4, %5, p, 1, 1, %7, %8", "9", "{%4, %5, %6, %7}, %8, p, 1, 1, %10",
                "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]))
KA_WGMMA_SHAPES(16, "{%0, %1, %2, %3, %4, %5, %6, %7}", "10", "%8, %9, p, 1, 1, %11, %12", "13", "{%8, %9, %10, %11}, %12, p, 1, 1, %14",
                "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]))
KA_WGMMA_SHAPES(32, "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}", "18", "%16, %17, p, 1, 1, %19, %20", "21", "{%16, %17, %18, %19}, %20, p, 1, 1, %22",
                "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]))
KA_WGMMA_SHAPES(64, "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}", "34", "%32, %33, p, 1, 1, %35, %36", "37", "{%32, %33, %34, %35}, %36, p, 1, 1, %38",
                "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]))
KA_WGMMA_SHAPES(128, "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}", "66", "%64, %65, p, 1, 1, %67, %68", "69", "{%64, %65, %66, %67}, %68, p, 1, 1, %70",
                "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]))
KA_WGMMA_SHAPES(256, "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}", "130", "%128, %129, p, 1, 1, %131, %132", "133", "{%128, %129, %130, %131}, %132, p, 1, 1, %134",
                "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3]))
#undef KA_WGMMA_SHAPES
#undef KA_WGMMA_SHAPE
#else
KA_DEV void wgmma_fence() { __trap(); }
KA_DEV void wgmma_commit() { __trap(); }
template <int N>
KA_DEV void wgmma_wait_n() { __trap(); }
KA_DEV void fence_proxy_async() { __trap(); }
template <int N, typename In, int TA, int TB>
struct Wgmma {
  static KA_DEV void ss(float (&)[N / 8][4], uint64_t, uint64_t, int) { __trap(); }
  static KA_DEV void rs(float (&)[N / 8][4], const uint32_t (&)[4], uint64_t, int) { __trap(); }
};
#endif

template <int N>
KA_DEV void wgmma_ss(float (&d)[N / 8][4], uint64_t da, uint64_t db) {
  Wgmma<N, Bf16, 0, 0>::ss(d, da, db, 1);
}
template <int N>
KA_DEV void wgmma_ss_tb(float (&d)[N / 8][4], uint64_t da, uint64_t db) {
  Wgmma<N, Bf16, 0, 1>::ss(d, da, db, 1);
}
template <int N>
KA_DEV void wgmma_rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db) {
  Wgmma<N, Bf16, 0, 0>::rs(d, a, db, 1);
}
template <int N>
KA_DEV void wgmma_rs_tb(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db) {
  Wgmma<N, Bf16, 0, 1>::rs(d, a, db, 1);
}

}  // namespace ka_dev
