// host.cuh — the host side: per-device state, tensor maps, the choice of kernel and its launch.
// A part of gemm_hopper.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// ------------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------------
struct DeviceState {
  bool init = false;
  int sms = 0, path = 0, smem_optin = 0;
  float* ws = nullptr;          // split-K partial sums, kept all-zero between launches
  unsigned* counters = nullptr; // per-tile arrival counters, kept zero between launches
  size_t ws_floats = 0;
  int n_counters = 0;
  bool ws_failed = false;
};
constexpr int kMaxDevices = 64;
std::mutex g_mu;
DeviceState g_dev[kMaxDevices];

DeviceState& device_state(int dev) {
  DeviceState& d = g_dev[dev];
  if (d.init) return d;
  cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
#ifdef KA_EMULATE
  d.path = 2;  // the emulated sm_90a kernels
#else
  int* p = nullptr;
  d.path = 0;
  if (cudaMalloc(&p, sizeof(int)) == cudaSuccess) {
    arch_probe_kernel<<<1, 1>>>(p);
    int h = 0;
    if (cudaMemcpy(&h, p, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess) d.path = h;
    cudaFree(p);
  }
#endif
  (void)cudaGetLastError();
  d.init = true;
  return d;
}

// The workspace for split-K: at most #SMs tiles are ever split (splits > 1 only when tiles < #SMs;
// PERSIST = 1: only the tail of < #co-resident-clusters tile groups, CL tiles each, slot (i·CL + rank)),
// so #SMs · (largest tile) floats and #SMs counters, allocated once, zeroed once.
bool ensure_workspace(DeviceState& d, size_t tile_floats) {
  const size_t need = static_cast<size_t>(d.sms) * tile_floats;
  if (d.ws && d.ws_floats >= need && d.n_counters >= d.sms) return true;
  if (d.ws_failed) return false;
  if (d.ws) {
    cudaDeviceSynchronize();
    cudaFree(d.ws);
    cudaFree(d.counters);
    d.ws = nullptr;
    d.counters = nullptr;
  }
  if (cudaMalloc(&d.ws, need * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&d.counters, static_cast<size_t>(d.sms) * sizeof(unsigned)) != cudaSuccess ||
      cudaMemset(d.ws, 0, need * sizeof(float)) != cudaSuccess ||
      cudaMemset(d.counters, 0, static_cast<size_t>(d.sms) * sizeof(unsigned)) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {
    (void)cudaGetLastError();
    d.ws_failed = true;
    d.ws = nullptr;
    d.counters = nullptr;
    return false;
  }
  d.ws_floats = need;
  d.n_counters = d.sms;
  return true;
}

#ifdef KA_EMULATE
template <typename T>
bool make_map(CUtensorMap* map, const void* ptr, int rows, int K, int box_rows) {
  map->base = static_cast<const unsigned char*>(ptr);
  map->dims[0] = K;
  map->dims[1] = rows;
  map->row_bytes = static_cast<int64_t>(K) * 2;
  map->box[0] = 64;
  map->box[1] = box_rows;
  map->elem = 2;
  map->swizzle = 128;
  return true;
}
#else
// cuTensorMapEncodeTiled's signature (CUDA 12.0 ABI), as cudaTypedefs.h spells it.
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiledFn encode_fn() {
  static EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    (void)cudaGetLastError();
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// A row-major [rows, K] operand as a 2-D tensor map: boxes of 64 K-elements × box_rows rows, 128B
// swizzle, zero fill outside the tensor (rows ≥ `rows`, columns ≥ K).
template <typename T>
bool make_map(CUtensorMap* map, const void* ptr, int rows, int K, int box_rows) {
  auto fn = encode_fn();
  if (!fn) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * sizeof(T)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t estr[2] = {1, 1};
  const CUtensorMapDataType dt =
      std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return fn(map, dt, 2, const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
#endif

// K slices per tile when the tiles alone leave SMs idle: the fewest (≤ SPLITK, ≥ 2 k-tiles each)
// whose CTAs keep ≥ 90% of the resident slots (#SMs × CTAs per SM) busy in their last wave, else
// the count that keeps the most busy. (The smallest power of two with tiles · s ≥ #SMs, the rule
// before, gave 64 tiles 4 slices, two waves of one CTA per SM where 2 slices fill one.)
int choose_splits(int tiles, int k_tiles, int slots) {
  int best = 1;
  double best_busy = 0;
  for (int s = 1; s <= kSplitK && (s == 1 || 2 * s <= k_tiles); ++s) {
    const long long ctas = static_cast<long long>(tiles) * s, waves = (ctas + slots - 1) / slots;
    const double busy = static_cast<double>(ctas) / static_cast<double>(waves * slots);
    if (busy >= 0.9) return s;
    if (busy > best_busy + 1e-9) {
      best_busy = busy;
      best = s;
    }
  }
  return best;
}

// One launch of hopper_gemm_kernel<T, WG, TQ, STAGES, SWAP>; false when it cannot run (the caller
// then takes another path).
template <typename T, int WG, int TQ, int STAGES, bool SWAP>
bool launch_hopper(DeviceState& d, int dev, const T* A, const T* B, T* C, int M, int N, int K) {
  constexpr int TP = 64 * WG;
  constexpr int smem = smem_bytes(TP, TQ, STAGES);
  if (smem > d.smem_optin) return false;
  auto kernel = hopper_gemm_kernel<T, WG, TQ, STAGES, SWAP>;
  static bool attr_set[kMaxDevices] = {};
  if (!attr_set[dev]) {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    attr_set[dev] = true;
  }
  const int P = SWAP ? N : M, Q = SWAP ? M : N;
  const T* X = SWAP ? B : A;
  const T* Y = SWAP ? A : B;
  CUtensorMap mx, my;
  if (!make_map<T>(&mx, X, P, K, TP) || !make_map<T>(&my, Y, Q, K, TQ)) return false;
  const int tilesP = (P + TP - 1) / TP, tilesQ = (Q + TQ - 1) / TQ;
  const long long tiles = static_cast<long long>(tilesP) * tilesQ;
  if (tiles > 0x7fffffffLL) return false;
  const int k_tiles = (K + 63) / 64;
  int per_sm = 1;  // resident CTAs per SM (the small rings of narrow widths fit several)
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WG * 128 + 32, smem) != cudaSuccess || per_sm < 1) {
    (void)cudaGetLastError();
    per_sm = 1;
  }
  // (split only while tiles < #SMs: the workspace holds #SMs tiles)
  int splits = tiles < d.sms ? choose_splits(static_cast<int>(tiles), k_tiles, d.sms * per_sm) : 1;
  if (splits > 1 && !ensure_workspace(d, static_cast<size_t>(TP) * TQ)) splits = 1;
  dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
  KA_LAUNCH(kernel, grid, WG * 128 + 32, smem, mx, my, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, splits, kRaster);
  return cudaPeekAtLastError() == cudaSuccess;
}

#ifndef KA_EMULATE
// The launch configuration of `clusters` clusters of CL CTAs of `threads` threads and `smem` bytes
// of dynamic shared memory, on the default stream (cfg points at `at`: not copyable).
struct ClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute at[1];
  ClusterLaunch(int cl, int clusters, int threads, int smem) {
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cl;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(static_cast<unsigned>(cl * clusters), 1, 1);
    cfg.blockDim = dim3(threads, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = 0;
    cfg.attrs = at;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};
#endif

// One launch of hopper_gemm_persistent<T, WG, TQ, STAGES, CL, PP> (PERSIST = 1, or 2 with PP); false
// when it cannot run.
template <typename T, int WG, int TQ, int STAGES, int CL, bool PP>
bool launch_persistent(DeviceState& d, int dev, const T* A, const T* B, T* C, int M, int N, int K) {
  constexpr int TP = PP ? 64 : 64 * WG;
  constexpr int smem = PP ? smem_bytes_pingpong(TQ, STAGES) : smem_bytes_persist(TP, TQ, STAGES);
  if (smem > d.smem_optin) return false;
  auto kernel = hopper_gemm_persistent<T, WG, TQ, STAGES, CL, PP>;
  static bool attr_set[kMaxDevices] = {};
  static int max_clusters[kMaxDevices] = {};  // co-resident clusters of CL CTAs (CL > 1)
  if (!attr_set[dev]) {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
#ifndef KA_EMULATE
    if (CL > 1) {
      const ClusterLaunch launch_cfg(CL, d.sms / CL, WG * 128 + 32, smem);
      int n = 0;
      if (cudaOccupancyMaxActiveClusters(&n, kernel, &launch_cfg.cfg) != cudaSuccess || n <= 0) {
        (void)cudaGetLastError();
        return false;
      }
      max_clusters[dev] = n;
    }
#else
    max_clusters[dev] = d.sms / CL > 0 ? d.sms / CL : 1;  // one CTA per emulated SM
#endif
    attr_set[dev] = true;
  }
  const T* X = A;
  const T* Y = B;
  CUtensorMap mx, my, mc;
  if (!make_map<T>(&mx, X, M, K, TP) || !make_map<T>(&my, Y, N, K, TQ / CL)) return false;
  // TMA-store epilogue: C as a [M, N] tensor, 64×64 boxes, 128B swizzle (needs 16-byte rows pitch).
  int tma_store = reinterpret_cast<uintptr_t>(C) % 16 == 0 && N % 8 == 0 && KA_DIAG != 3 ? 1 : 0;
  if (tma_store && !make_map<T>(&mc, C, M, N, 64)) tma_store = 0;
  if (!tma_store) mc = mx;  // unused by the kernel
  const int tilesP = (M + TP - 1) / TP, tilesQ = (N + TQ - 1) / TQ;
  const long long groups_ll = static_cast<long long>((tilesP + CL - 1) / CL) * tilesQ;  // tile groups of CL rows
  if (groups_ll > 0x3fffffffLL) return false;
  const int groups = static_cast<int>(groups_ll);
  const int k_tiles = (K + 63) / 64;
  // Work units: whole waves of tile groups over the co-resident clusters (P of them), then the
  // remaining `tail` groups (the partial last wave) cut into tsplit K slices, the largest power of
  // two ≤ SPLITK with tail · tsplit ≤ P (and ≥ 2 k-tiles per slice): the tail takes one round of
  // 1/tsplit of a tile instead of a whole tile. (Fewer groups than P: the whole problem is the tail.)
  const int P = CL == 1 ? d.sms : max_clusters[dev];
  const int full_units = (groups / P) * P, tail = groups - full_units;
  int tsplit = 1;  // PP: no split (each warpgroup's ring positions assume whole tiles)
  while (!PP && tail > 0 && 2 * tsplit <= kSplitK && static_cast<long long>(tail) * 2 * tsplit <= P && 4 * tsplit <= k_tiles)
    tsplit *= 2;
  if (tsplit > 1 && !ensure_workspace(d, static_cast<size_t>(TP) * TQ)) tsplit = 1;
  const long long units = static_cast<long long>(full_units) + static_cast<long long>(tail) * tsplit;
  if (units > 0x7fffffffLL) return false;
  if (CL == 1) {
    const int grid = static_cast<int>(units < d.sms ? units : d.sms);
    KA_LAUNCH(kernel, grid, WG * 128 + 32, smem, mx, my, mc, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, full_units,
              tail, tsplit, kRaster, tma_store);
  } else {
    const int ncl = static_cast<int>(units < max_clusters[dev] ? units : max_clusters[dev]);
#ifndef KA_EMULATE
    const ClusterLaunch launch_cfg(CL, ncl, WG * 128 + 32, smem);
    if (cudaLaunchKernelEx(&launch_cfg.cfg, kernel, mx, my, mc, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, full_units, tail,
                           tsplit, static_cast<int>(kRaster), tma_store) != cudaSuccess)
      return false;
#else
    emu::launch_cluster(dim3(CL * ncl), dim3(WG * 128 + 32), smem, CL, [=] {
      kernel(mx, my, mc, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, full_units, tail, tsplit, static_cast<int>(kRaster),
             tma_store);
    });
#endif
  }
  return cudaPeekAtLastError() == cudaSuccess;
}

// The small-M path: the narrowest compiled swap-AB width (8, 16, ..., SMALLN) that holds M.
template <typename T>
bool launch_small(DeviceState& d, int dev, const T* A, const T* B, T* C, int M, int N, int K) {
  if constexpr (kSmallN >= 8) if (M <= 8) return launch_hopper<T, kSmallWG, 8, small_stages(8), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 16) if (M <= 16) return launch_hopper<T, kSmallWG, 16, small_stages(16), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 32) if (M <= 32) return launch_hopper<T, kSmallWG, 32, small_stages(32), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 64) if (M <= 64) return launch_hopper<T, kSmallWG, 64, small_stages(64), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 128) if (M <= 128) return launch_hopper<T, kSmallWG, 128, small_stages(128), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 256) if (M <= 256) return launch_hopper<T, kSmallWG, 256, small_stages(256), true>(d, dev, A, B, C, M, N, K);
  return false;
}

template <typename T>
void gemm(const T* A, const T* B, T* C, int M, int N, int K) {
  int dev = 0;
  cudaGetDevice(&dev);
  if (dev < 0 || dev >= kMaxDevices) dev = 0;
  std::lock_guard<std::mutex> lock(g_mu);
  DeviceState& d = device_state(dev);
  auto al = [](const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
  const bool vec_ok = al(A, 16) && al(B, 16) && al(C, 4) && K % 8 == 0 && N % 2 == 0;
  if (d.path == 2 && vec_ok) {
    bool ok = false;
    if (kSmallN > 0 && M <= kSmallN) ok = launch_small<T>(d, dev, A, B, C, M, N, K);
    if constexpr (kPersist >= 1) {
      if (!ok) ok = launch_persistent<T, kBM / 64, kBN, kStages, kCluster, kPersist == 2>(d, dev, A, B, C, M, N, K);
    } else {
      if (!ok) ok = launch_hopper<T, kBM / 64, kBN, kStages, false>(d, dev, A, B, C, M, N, K);
    }
    if (ok) return;
    (void)cudaGetLastError();
  }
  if (d.path >= 1 && vec_ok) {
    dim3 grid(static_cast<unsigned>((N + 63) / 64), static_cast<unsigned>((M + 63) / 64));
    KA_LAUNCH(sm80_gemm_kernel<T>, grid, 128, 0, A, B, C, M, N, K);
    if (cudaPeekAtLastError() == cudaSuccess) return;
    (void)cudaGetLastError();
  }
  dim3 grid(static_cast<unsigned>((N + 127) / 128), static_cast<unsigned>(M));
  KA_LAUNCH(simple_gemm_kernel<T>, grid, 128, 0, A, B, C, M, N, K);
}

