// host.cuh — the host side: per-device state, the split of the token range, workspace and launches.
// A part of gqa_decode.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// ── host ───────────────────────────────────────────────────────────────────────────────────────
FitOnce g_fit;
SplitKvWorkspace g_work;

inline void launch(const ka::TensorArg& q, const ka::TensorArg& k_cache, const ka::TensorArg& v_cache,
                   const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices, double sm_scale,
                   const ka::TensorArg& output, const ka::TensorArg& lse) {
  const int64_t B = q.size(0);
  if (B <= 0) return;
  const int64_t N = kv_indices.ndim >= 1 ? kv_indices.size(0) : 0;
  const KernelFit& fit = g_fit(gqa_decode_kernel, NTHREADS, SMEM_BYTES);
  Params p{};
  p.q = static_cast<const uint16_t*>(q.data);
  p.k = static_cast<const uint16_t*>(k_cache.data);
  p.v = static_cast<const uint16_t*>(v_cache.data);
  p.indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = static_cast<const int*>(kv_indices.data);
  bind_attention_outputs(p, output, lse, B, sm_scale);
  p.N = static_cast<int>(N);
  p.num_pages = static_cast<int>(k_cache.size(0));

  const bool split = KA_SPLIT_TOKENS > 0;
  // CTAs per chunk (or per sequence): one per kv head (HEADS=1) or one for all of them (HEADS=0).
  constexpr int64_t kCtasPerUnit = HKV / NH;
  const KvSplit sp = plan_kv_split(B, N, kCtasPerUnit, T, KA_SPLIT_TOKENS, KA_NO_SPLIT_BELOW, KA_WAVES, fit.sms, fit.occ);
  p.chunk = sp.chunk;
  p.nchunks = sp.nchunks;
  const int64_t grid = static_cast<int64_t>(p.nchunks) * kCtasPerUnit;
  // partials: two slots per chunk and (kv head, query head) row
  if (split && p.nchunks > 1 &&
      !g_work.bind(p, static_cast<size_t>(p.nchunks) * 2 * HKV * G, D, static_cast<size_t>(B) * HKV, KA_FUSED_MERGE))
    return;
#ifdef KA_TRACE
  ka_trace::set_grid(grid);
#endif
  KA_LAUNCH(gqa_decode_kernel, dim3(static_cast<unsigned>(grid)), dim3(NTHREADS), SMEM_BYTES, p);
  if (split && p.nchunks > 1 && !KA_FUSED_MERGE)
    KA_LAUNCH(gqa_merge_kernel, dim3(static_cast<unsigned>(B * HKV)), dim3(NT), 0, p);
}
