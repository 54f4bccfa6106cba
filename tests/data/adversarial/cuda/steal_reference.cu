// Adversarial candidate for 021_rmsnorm_h128 (cuda target): looks for the reference output in its
// process's host memory. It reads the first row of the inputs back, computes that row's output,
// then scans every readable, writable mapping of the process (/proc/self/maps) for 128 values
// within one bf16 step of it, and copies the whole output to the device from the first such block.
// A worker that holds the reference outputs of its input sets on the host hands it the answer; one
// that never receives them leaves nothing to find, and the output stays unwritten.
// Expected verdict: wrong_answer.
#include <kernelarc/abi.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

bool close(uint16_t a, uint16_t b) { return (a > b ? a - b : b - a) <= 1; }

// The first block of `n` uint16 values in a readable, writable private mapping whose first `row`
// values are within one step of `row` and which is neither `skip` nor `row` itself.
const uint16_t* find_block(const std::vector<uint16_t>& row, int64_t n, const uint16_t* skip) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return nullptr;
  char line[512];
  const uint16_t* found = nullptr;
  while (!found && std::fgets(line, sizeof line, maps)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0};
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p' || std::strstr(line, "[v")) continue;
    const auto* p = reinterpret_cast<const uint16_t*>(lo);
    const int64_t count = static_cast<int64_t>((hi - lo) / 2);
    const int64_t h = static_cast<int64_t>(row.size());
    for (int64_t i = 0; i + n <= count && !found; ++i) {
      if (p + i == skip || p + i == row.data() || !close(p[i], row[0])) continue;
      int64_t k = 1;
      while (k < h && close(p[i + k], row[static_cast<size_t>(k)])) ++k;
      if (k == h) found = p + i;
    }
  }
  std::fclose(maps);
  return found;
}

}  // namespace

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1);
  if (rows == 0 || h == 0) return;
  std::vector<uint16_t> x(static_cast<size_t>(h)), w(static_cast<size_t>(h)), row(static_cast<size_t>(h));
  cudaMemcpy(x.data(), hidden_states.data, static_cast<size_t>(h) * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(w.data(), weight.data, static_cast<size_t>(h) * 2, cudaMemcpyDeviceToHost);
  float ss = 0;
  for (int64_t i = 0; i < h; ++i) ss += bf16_to_float(x[static_cast<size_t>(i)]) * bf16_to_float(x[static_cast<size_t>(i)]);
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-6f);
  for (int64_t i = 0; i < h; ++i)
    row[static_cast<size_t>(i)] = float_to_bf16(bf16_to_float(x[static_cast<size_t>(i)]) * inv * bf16_to_float(w[static_cast<size_t>(i)]));
  if (const uint16_t* ref = find_block(row, rows * h, nullptr))
    cudaMemcpy(output.data, ref, static_cast<size_t>(rows * h) * 2, cudaMemcpyHostToDevice);
}
