// bench/tools/gather_bw.cu — how fast can a GPU read rows scattered at random in a large pool? The
// ceiling of a paged-KV decode kernel is not the copy bandwidth when its pages are small: the dev
// decode problems (012, 018) have page_size 1 and kv_indices a random permutation, so each KV head
// of a token is one 256-byte piece (GQA, 4 heads x 128 x bf16 per 1 KB token row), or for MLA one
// 1024-byte ckv row and one 128-byte kpe row, at a random place. This reads, per case, `rows`
// row pieces of `piece` bytes at random rows of `stride` bytes (a pool of 1 GiB, far above the 60
// MB L2; the L2 is flushed before each timed call) and reports the read bandwidth next to a
// sequential read of the same bytes.
// `split` > 1 reads each row as `split` pieces in `split` different CTAs running side by side
// (block b reads piece b % split of its rows), as a decode kernel with one CTA per KV head does.
//   nvcc -O3 -std=c++17 -arch=sm_90a -o gather_bw bench/tools/gather_bw.cu && ./gather_bw
// Prints one line per case and U (1 or 4 rows loaded per thread before use): piece, stride, split,
// U, MB read, median µs, GB/s, and % of the faster sequential read (U = 1 or 4 as well). No
// KernelArc code depends on it; its figures go to bench/RESULTS.md.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#define CK(x)                                                                             \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// Each group of `lanes` = piece/16 threads reads one piece with 16-byte loads; the groups of a
// block stride over the rows of this block's piece index. U rows per group are loaded before any
// is used (U loads in flight per thread). Sum by XOR so nothing is dead code.
template <int U>
__global__ void gather(const uint4* __restrict__ pool, const int* __restrict__ idx, int rows, int piece16,
                       int stride16, int split, uint4* __restrict__ sink) {
  const int lanes = piece16 < 32 ? piece16 : 32;  // threads per piece (more chunks: the c loop)
  const int per_block_groups = blockDim.x / lanes;
  const int part = blockIdx.x % split;       // which piece of each row this block reads
  const int bset = blockIdx.x / split;       // blocks reading the same part
  const int nsets = gridDim.x / split;
  const int group = threadIdx.x / lanes;
  const int lane = threadIdx.x % lanes;
  const int step = nsets * per_block_groups;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int r0 = bset * per_block_groups + group; r0 < rows; r0 += U * step) {
    for (int c = lane; c < piece16; c += 32) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int r = r0 + u * step;
        v[u] = r < rows ? __ldcs(pool + static_cast<int64_t>(idx[r]) * stride16 + part * piece16 + c)
                        : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w;
      }
    }
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u) sink[threadIdx.x] = acc;  // almost never true
}

template <int U>
__global__ void seq_read(const uint4* __restrict__ p, int64_t n16, uint4* __restrict__ sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n16; i += U * step) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = i + u * step < n16 ? __ldcs(p + i + u * step) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w;
    }
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u) sink[threadIdx.x] = acc;
}

int main() {
  const int64_t pool_bytes = int64_t(1) << 30;
  const int64_t read_bytes = int64_t(128) << 20;  // ~ 012's largest workload (126 MB of KV)
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  uint4 *pool = nullptr, *sink = nullptr;
  char* flush = nullptr;
  const size_t flush_bytes = 2 * static_cast<size_t>(prop.l2CacheSize);
  CK(cudaMalloc(&pool, pool_bytes));
  CK(cudaMemset(pool, 1, pool_bytes));
  CK(cudaMalloc(&sink, 1024 * sizeof(uint4)));
  CK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto timed = [&](auto launch) {
    std::vector<float> ms;
    for (int rep = 0; rep < 12; ++rep) {
      CK(cudaMemsetAsync(flush, rep, flush_bytes));
      CK(cudaEventRecord(e0));
      launch();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t = 0;
      CK(cudaEventElapsedTime(&t, e0, e1));
      if (rep >= 2) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] * 1e3;  // µs
  };
  const double seq1_us = timed([&] { seq_read<1><<<sms * 8, 256>>>(pool, read_bytes / 16, sink); });
  const double seq4_us = timed([&] { seq_read<4><<<sms * 8, 256>>>(pool, read_bytes / 16, sink); });
  CK(cudaGetLastError());
  const double seq_us = seq1_us < seq4_us ? seq1_us : seq4_us;
  std::printf("device %s, %d SMs; sequential read of %.0f MB: %.1f us (U=1), %.1f us (U=4), best %.0f GB/s\n",
              prop.name, sms, read_bytes / 1e6, seq1_us, seq4_us, read_bytes / seq_us / 1e3);
  std::printf("%6s %7s %5s %3s %8s %9s %8s %7s\n", "piece", "stride", "split", "U", "MB", "us", "GB/s", "of_seq");
  struct Case { int piece, stride, split; };
  const Case cases[] = {{256, 256, 1},  {256, 1024, 1}, {256, 1024, 4}, {512, 2048, 4}, {1024, 1024, 1},
                        {2048, 2048, 1}, {1152, 1152, 1}, {4096, 4096, 1}, {16384, 16384, 1}};
  std::mt19937 rng(1234);
  int* idx = nullptr;
  for (const Case& c : cases) {
    const int64_t pool_rows = pool_bytes / c.stride;
    const int rows = static_cast<int>(std::min<int64_t>(read_bytes / (static_cast<int64_t>(c.piece) * c.split), pool_rows));
    std::vector<int> perm(pool_rows);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    perm.resize(rows);
    CK(cudaMalloc(&idx, rows * sizeof(int)));
    CK(cudaMemcpy(idx, perm.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    const int piece16 = c.piece / 16, stride16 = c.stride / 16;
    const int blocks = sms * 8 / c.split * c.split;
    const double mb = static_cast<double>(rows) * c.piece * c.split / 1e6;
    for (int u : {1, 4}) {
      const double us = timed([&] {
        if (u == 1) gather<1><<<blocks, 256>>>(pool, idx, rows, piece16, stride16, c.split, sink);
        else gather<4><<<blocks, 256>>>(pool, idx, rows, piece16, stride16, c.split, sink);
      });
      CK(cudaGetLastError());
      std::printf("%6d %7d %5d %3d %8.1f %9.1f %8.0f %6.0f%%\n", c.piece, c.stride, c.split, u, mb, us, mb * 1e6 / us / 1e3,
                  100.0 * (mb * 1e6 / us) / (read_bytes / seq_us));
    }
    CK(cudaFree(idx));
  }
  return 0;
}
