// kernelarc/device/trace.cuh — the per-CTA timeline hooks of diagnostic builds: with KA_TRACE
// defined (bench/tools/attention_selftest.py --trace; never a candidate), thread 0 of the CTA records
// through kernelarc/trace.h; otherwise the hooks are empty and compile to nothing.
//   trace_at(event, first)   event 0..3 (0 entry, 1 first tile ready, 2 last tile ready, 3 exit);
//                            first: clear the CTA's record and note its SM
//   trace_tiles(n)           the CTA's tile count
#pragma once
#include <kernelarc/device/target.cuh>
#ifdef KA_TRACE
#include <kernelarc/trace.h>
#endif

namespace ka_dev {

#ifdef KA_TRACE
KA_DEV void trace_at(int event, bool first = false) {
  if (threadIdx.x == 0) ka_trace::at(event, first);
}
KA_DEV void trace_tiles(int n) {
  if (threadIdx.x == 0) ka_trace::count(n);
}
#else
KA_DEV void trace_at(int, bool = false) {}
KA_DEV void trace_tiles(int) {}
#endif

}  // namespace ka_dev
