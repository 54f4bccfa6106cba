// host.cuh — the host side: per-device state, the split of the token range, workspace and launches.
// A part of gqa_decode.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// ── host ───────────────────────────────────────────────────────────────────────────────────────
struct State {
  bool init = false;
  int sms = 132, occ = 1;
  DeviceScratch partials, counters;  // split-KV partials (fp32 O and lse); the fused merge's counters
};

State g_state;
inline State& state() { return g_state; }

inline void launch(const ka::TensorArg& q, const ka::TensorArg& k_cache, const ka::TensorArg& v_cache,
                   const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices, double sm_scale,
                   const ka::TensorArg& output, const ka::TensorArg& lse) {
  const int64_t B = q.size(0);
  if (B <= 0) return;
  const int64_t N = kv_indices.ndim >= 1 ? kv_indices.size(0) : 0;
  State& st = state();
  if (!st.init) {
    const KernelFit fit = fit_kernel(gqa_decode_kernel, NTHREADS, SMEM_BYTES);
    st.sms = fit.sms;
    st.occ = fit.occ;
    st.init = true;
  }
  Params p{};
  p.q = static_cast<const uint16_t*>(q.data);
  p.k = static_cast<const uint16_t*>(k_cache.data);
  p.v = static_cast<const uint16_t*>(v_cache.data);
  p.indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = static_cast<const int*>(kv_indices.data);
  p.out = static_cast<uint16_t*>(output.data);
  p.lse = static_cast<float*>(lse.data);
  p.B = static_cast<int>(B);
  p.N = static_cast<int>(N);
  p.num_pages = static_cast<int>(k_cache.size(0));
  p.scale_log2 = static_cast<float>(sm_scale * 1.4426950408889634);

  const bool split = KA_SPLIT_TOKENS > 0;
  // CTAs per chunk (or per sequence): one per kv head (HEADS=1) or one for all of them (HEADS=0).
  constexpr int64_t kCtasPerUnit = HKV / NH;
  const KvSplit sp = plan_kv_split(B, N, kCtasPerUnit, T, KA_SPLIT_TOKENS, KA_NO_SPLIT_BELOW, KA_WAVES, st.sms, st.occ);
  p.chunk = sp.chunk;
  p.nchunks = sp.nchunks;
  const int64_t grid = static_cast<int64_t>(p.nchunks) * kCtasPerUnit;
  if (split && p.nchunks > 1) {
    const size_t part = static_cast<size_t>(p.nchunks) * 2 * HKV * G;
    if (!st.partials.reserve(part * (D + 1) * sizeof(float) + 256, false)) return;
    p.part_o = static_cast<float*>(st.partials.ptr);
    p.part_lse = p.part_o + part * D;
    if (KA_FUSED_MERGE) {
      if (!st.counters.reserve((static_cast<size_t>(B) * HKV) * sizeof(int), true)) return;
      p.counters = static_cast<int*>(st.counters.ptr);
    }
  }
#ifdef KA_TRACE
  ka_trace::set_grid(grid);
#endif
  KA_LAUNCH(gqa_decode_kernel, dim3(static_cast<unsigned>(grid)), dim3(NTHREADS), SMEM_BYTES, p);
  if (split && p.nchunks > 1 && !KA_FUSED_MERGE)
    KA_LAUNCH(gqa_merge_kernel, dim3(static_cast<unsigned>(B * HKV)), dim3(NT), 0, p);
}
