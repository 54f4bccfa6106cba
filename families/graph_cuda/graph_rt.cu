// graph_rt.cu — the runtime of the generated family graph_cuda: what the CUDA graph backend's
// generated code (src/graph/codegen_cuda.cpp, appended after this file) calls. Its parts:
//   kgc_core.cuh  dtypes, loads/stores/rounding, pointwise maths, row reductions, launch sizing,
//                 the workspace arena, constant upload
//   kgc_gemm.cuh  strided batched GEMMs through cuBLASLt (a plain kernel where it refuses)
// KernelArc prepends the knob defines (family.json):
//   KA_THREADS   threads per block of the elementwise kernels
//   KA_EPT       elements per thread of the elementwise kernels (a block covers THREADS * EPT)
//   KA_RTHREADS  threads per row of the row kernels (reductions, softmax, norms)
//   KA_ROWS      rows per block of the row kernels
//   KA_FUSE      1: one kernel per fusion group; 0: one per op (read by the code generator)
//   KA_TF32      1: float32 GEMMs may use TF32 where the problem's tolerance allows (the generator decides)
// Builds with nvcc (links -lcublasLt) and with g++ -DKA_EMULATE (the CPU emulator; GEMMs then run
// the plain kernel).
#ifndef KA_EMULATE
#include <cublasLt.h>
#endif
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/reduce.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <type_traits>
#include <vector>

#if !defined(KA_THREADS) || !defined(KA_EPT) || !defined(KA_RTHREADS) || !defined(KA_ROWS)
#error "graph_cuda: KA_THREADS, KA_EPT, KA_RTHREADS and KA_ROWS must be defined (KernelArc does this)"
#endif
static_assert(KA_RTHREADS <= 32 ? (KA_RTHREADS & (KA_RTHREADS - 1)) == 0 : KA_RTHREADS % 32 == 0,
              "RTHREADS: a power of two <= 32, or a multiple of 32");
static_assert(KA_RTHREADS * KA_ROWS <= 1024 && (KA_RTHREADS * KA_ROWS) % 32 == 0, "RTHREADS * ROWS: a multiple of 32, at most 1024");

#include "kgc_core.cuh"
#include "kgc_gemm.cuh"
