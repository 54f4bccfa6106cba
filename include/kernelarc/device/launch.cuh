// kernelarc/device/launch.cuh — host-side launch helpers shared by the families.
//   fit_kernel(kernel, threads, smem)   raises the kernel's dynamic shared-memory limit to smem
//                                       bytes and returns the device's SM count and the kernel's
//                                       co-resident CTAs per SM (at least 1); a family calls it once
//                                       per process and keeps the result (no state here: every
//                                       candidate library keeps its own)
#pragma once
#include <kernelarc/device/target.cuh>

namespace ka_dev {

struct KernelFit {
  int sms = 132;  // multiprocessors of the current device
  int occ = 1;    // CTAs of the kernel per multiprocessor
};

template <typename K>
inline KernelFit fit_kernel(K kernel, int threads, int smem) {
  KernelFit f;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, dev);
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  int occ = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, smem);
  f.occ = occ > 0 ? occ : 1;
  return f;
}

}  // namespace ka_dev
