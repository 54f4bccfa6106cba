// gqa_prefill.cu — KernelArc family gqa_prefill_cuda: batched causal GQA prefill, bf16 in and out,
// fp32 accumulation, on tensor cores, FlashAttention-2 style: mma.sync m16n8k16 bf16 with ldmatrix
// (KA_MMA 0, any sm_80+ GPU), or Hopper warpgroup MMA, wgmma.mma_async m64nNk16 (KA_MMA 1, sm_90a).
// One source serves both FlashInfer-Bench op types: gqa_paged_prefill (K/V rows gathered through
// kv_indices, page size 1) and gqa_ragged_prefill (K/V rows contiguous per sequence); they differ
// only in how the address of key j of a sequence is computed (KA_PAGED = has_input:kv_indices).
//
// Semantics (the definitions' references):
//   sequence b: queries q[qo_indptr[b] .. qo_indptr[b+1]), keys/values kv_indptr[b] .. kv_indptr[b+1]
//   (through kv_indices when paged); qo_len, kv_len; delta = kv_len - qo_len.
//   query i of the sequence sees keys j <= i + delta (causal mask aligned to the END of the sequence)
//   x[j]      = float(q)·float(k[j]) * sm_scale          lse = log2(sum_j exp(x[j]))  (base 2)
//   out       = bf16(softmax(x) · float(v))
//   A sequence with qo_len == 0 or kv_len == 0, and q rows before qo_indptr[0], are left as the
//   references initialise them: out = 0, lse = -inf. A row of a non-empty sequence that sees no key
//   (i + delta < 0, only when kv_len < qo_len) gets out = 0 when the reference skips it (paged,
//   KA_MASKED_ROW_ZERO = 1) and out = NaN when the reference takes the softmax of an all -inf row
//   (ragged, KA_MASKED_ROW_ZERO = 0); lse = -inf in both.
// Scores are taken to base 2 (x * log2 e) so that exp2 applies and the lse is directly the base-2
// one; P is rounded to bf16 for P·V, the softmax denominator and the lse sum the unrounded values
// (as FlashAttention does), and a row's running maximum moves lazily (see softmax_tile). The softmax
// scale must be positive (every definition's is 1/sqrt(d)): any other value gives NaN everywhere
// (out and lse), which the judge reports, rather than a wrong softmax.
//
// KernelArc prepends the defines (family.json):
//   problem  KA_NUM_QO_HEADS, KA_NUM_KV_HEADS, KA_HEAD_DIM, KA_PAGED, KA_MASKED_ROW_ZERO
//   knobs    KA_WARPS     warps per CTA; each warp owns 16 rows of the M tile (M = 16*WARPS rows =
//                         QTILE = M/G query tokens x the G query heads of one kv head, row r = token
//                         r/G, head r%G), so every K/V tile is read once for the whole group
//            KA_KV_TILE   keys per pipeline stage
//            KA_STAGES    cp.async pipeline depth (tiles in flight = STAGES-1)
//            KA_ORDER     work order of the query tiles: 0 natural (sequence, tile ascending);
//                         1 within a sequence the last (heaviest, diagonal) tile first; 2 as 1 with
//                         the sequences in decreasing order of unmasked work (longest first; each
//                         CTA ranks them in shared memory, for at most 1024 sequences, else as 1)
//            KA_Q_IN_SMEM 0: the Q fragments live in registers for the whole loop; 1: they are
//                         re-read from shared memory with ldmatrix per tile (fewer registers)
//            KA_PERSIST   0: one CTA per possible query tile and kv head (grid from the bound);
//                         1: SMs x occupancy persistent CTAs stride over the (tile, kv head) items;
//                         2 (WS=1): the persistent CTAs claim items at run time from a global
//                         counter, in work order, so a CTA that finishes early takes the next item
//                         (greedy balance of unequal causal tiles) and its producer loads that item's
//                         Q and K/V under the current one's compute (see for_each_ws_item)
//            KA_MMA       0: mma.sync m16n8k16 per warp, operands through ldmatrix from padded rows;
//                         1: wgmma per warpgroup (4 warps, 64 rows of the M tile): S = Q K^T with A = Q
//                         and B = the K tile from shared memory (both K-major), O += P V with A = P
//                         from registers (the S accumulator layout is the A fragment layout) and B =
//                         the V tile from shared memory, MN-major (transpose bit). Q, K and V tiles
//                         are stored unpadded in the 128-byte swizzle layout the descriptors name:
//                         a tile of R rows of D bf16 is D/64 column blocks of R x 128 bytes, 16-byte
//                         chunk c of row r at block c/8, byte r*128 + ((c%8) ^ (r%8))*16 (blocks
//                         1024-byte aligned). Needs WARPS % 4 == 0, head_dim 64 or 128, KV_TILE 64
//                         or 128, Q_IN_SMEM 1; an MMA=1 build for a GPU without wgmma (device code
//                         for an arch other than sm_90a) compiles but traps if called.
//            KA_OVERLAP   MMA=1 only. 0: per tile, S wgmma, wait, softmax, P V wgmma, wait. 1: the P V
//                         wgmma of tile t is issued with the S wgmma of tile t+1 and waited for only
//                         after the softmax of tile t+1 (which waits for S alone), so the tensor cores
//                         run P V while the warpgroup computes the softmax; P of tile t stays in
//                         registers for a tile, and tile t's stage is refilled one tile later (loads
//                         run STAGES-2 tiles ahead, so STAGES >= 3). Every iteration issues the same
//                         wgmmas (tile 0's "previous" P V is zeros times a 16-row zero block in
//                         shared memory): ptxas serializes the wgmmas of a loop that issues them
//                         under a branch or whose P registers are defined before the loop.
//                         With WS=1 the K and V halves of a stage are released separately, so
//                         OVERLAP=1 needs only STAGES >= 2 there (see "Warp specialisation").
//            KA_WS        MMA=1 only. 0: every warp loads its share of Q/K/V with cp.async and the CTA
//                         syncs once per K/V tile (as above). 1: warp specialisation (FlashAttention-3
//                         style): one extra producer warpgroup (warps WARPS .. WARPS+3; the CTA has
//                         32*WARPS+128 threads; setmaxnreg moves its registers to the consumers)
//                         issues every Q, K and V copy into a STAGES-deep ring guarded by
//                         mbarriers ("full" per K and per V half of a stage, and for Q; "empty"
//                         likewise), the WARPS consumer warps (WARPS/4 warpgroups) only wait, run the
//                         wgmmas and the softmax, and release what they read; no CTA-wide barrier in
//                         the tile loop, the producer runs up to STAGES tiles (and the next work
//                         item's Q with PERSIST=1) ahead. See "Warp specialisation (WS=1)".
//            KA_PINGPONG  WS=1 with 2 or 3 consumer warpgroups only. 1: the warpgroups take turns to
//                         issue their wgmmas (named barriers in a ring: warpgroup i waits for its
//                         turn, issues S = Q K^T of its tile (OVERLAP=1: and the P V of the previous
//                         tile), passes the turn to warpgroup i+1), so the tensor cores run one
//                         warpgroup's wgmmas while the other does its softmax (FA3's inter-warpgroup
//                         overlap); 0: each warpgroup issues as soon as its data is there.
//            KA_QREG      WS=1 only. 1: each consumer warp loads its 16 Q rows once per work item (ldmatrix
//                         from the swizzled Q tile, right after q_full) as the A fragments of the S
//                         wgmmas (32 registers at head_dim 128; the S wgmma reads only K from shared
//                         memory, A from registers, B K-major) and releases Q at once, so the producer
//                         can load the next item's Q early. 0: A = Q from shared memory (descriptor),
//                         Q released after the item's last S. family.json allows 1 where ptxas does not
//                         spill: WARPS 8 with 64-key tiles, or WARPS 4.
//            KA_QBUFS     WS=1, PERSIST 1 or 2, QREG=0. 1: one Q tile buffer: the producer loads the next
//                         item's Q only once the consumers released this one's (after the item's last
//                         S), so its latency falls between two items; 2: two buffers, items alternate,
//                         so the next item's Q loads during the current item (Q_BYTES more shared
//                         memory).
//            KA_XITEM     QBUFS=2 and OVERLAP=1 only. 1: an item's end overlaps the next item's start:
//                         its last P V is issued with the next item's first S (the ring's previous
//                         tile, as inside an item) instead of alone, and its output is written after
//                         that P V retired, outside the tile step, with O then restarting from 0; the
//                         pending softmax state waits in shared memory and the write goes one row at a
//                         time (with both in registers ptxas serialized the wgmmas for want of
//                         registers, C7511, the consumers of WARPS 8 at R213 of 216; now R149 of 152
//                         at WARPS 12, R189-R213 of 216 at WARPS 8).
//
// Work decomposition. grid = (upper bound of query tiles, kv heads). The bound comes from shapes
// only (ceil(total_q / QTILE) + batch + 1), so the host never reads the index arrays; each CTA
// maps blockIdx.x to (sequence, query tile) by a warp scan of per-sequence tile counts over
// qo_indptr (rows before qo_indptr[0] form a leading pseudo-sequence with no keys), and CTAs past
// the last tile return at once. A CTA whose rows all see no key only writes the empty-row values.
// Otherwise it needs keys [0, kv_hi) with kv_hi = min(kv_len, last_row + delta + 1); tiles wholly
// below min(kv_len, first_row + delta + 1) need no mask, the rest (diagonal) are masked per element.
// WS=1: when kv_hi ends in the first half of the item's last tile, that tile's S is computed over
// that half only (wgmma N = KV_TILE / 2) and its P V stops there too.
//
// Warp specialisation (WS=1). Warps 0 .. WARPS-1 are the consumers (warpgroup w/4 owns CTA rows
// 64*(w/4) .. +63, as with WS=0), warps WARPS .. WARPS+3 the producer warpgroup (a warpgroup must
// start at a warp index that is a multiple of 4, so the producer comes last). A warpgroup rather
// than one warp: ptxas sizes the registers of a wgmma kernel for the CTA rounded up to whole
// warpgroups (a 288-thread build got 168 registers per thread, as for 384, and spilled at
// KV_TILE=128), so a lone producer warp saves no registers; with a whole producer warpgroup,
// setmaxnreg moves them: the producer drops to PROD_REGS (72; 48 with 3 consumer warpgroups) and
// the consumers rise to CONS_REGS (216; 152), from the 168 (128) every thread gets at launch
// (CUDA 13.0: the consumers' SASS uses up to R203 at KV_TILE=128; the persistent producer spilled
// at 56). With one consumer warpgroup (WARPS=4, 256 threads) every thread already has up to 255 and
// nothing moves. The 128 producer threads share the copies (fewer instructions per warp than one warp
// doing them all).
//   Copies. The 128-byte swizzle puts the 16-byte chunks of a row at XOR-permuted places in two
// column blocks, so a row is never contiguous in shared memory and a bulk copy (linear bytes)
// cannot fill it; a tensor-map TMA could, but not through kv_indices one row at a time without a
// tensor map per row, and the emulator has no TMA. So the producer uses 16-byte cp.async.cg (the
// gqa_decode PRODUCER=1 idiom): producer thread i copies chunk i % KCH of rows i / KCH + RPI*j
// (RPI = 128 / KCH rows per pass, 8 at head_dim 128), each to its swizzled place (tile_off; the
// swizzle phase of a thread's rows is fixed when RPI is a multiple of 8), rows beyond kv_hi (and
// Q rows beyond the tile) zero-filled by src-size 0. Per K/V tile of 128 keys at head_dim 128 that
// is 16 K and 16 V cp.async per producer thread plus 16 page-id loads (paged).
//   Protocol. mbarriers: per stage s full_k[s], full_v[s] (count 128: every producer thread arrives
// by cp.async.mbarrier.arrive.noinc, i.e. once its earlier cp.async landed) and empty_k[s],
// empty_v[s] (count WARPS: lane 0 of each consumer warp, after its warpgroup's wgmma that read
// the half retired); q_full (128) and q_empty (WARPS) for the Q tile. Tile number `it` counts the
// K/V tiles of all the CTA's work items (the ring and the phases carry over items with
// PERSIST=1): stage it % STAGES, fill k = it / STAGES, waited with parity k & 1; the producer
// waits empty of fill k-1 (parity (k-1) & 1) before fill k >= 1. Q of the n-th item with keys:
// q_full parity n & 1, the producer waits q_empty parity (n-1) & 1 before reloading Q; the
// consumers release Q after the S wgmma of the item's last tile retired (QREG=1: once it is in
// their registers). K of a tile is released
// after its S wgmma retired, V after its P V wgmma retired (OVERLAP=1: one tile later), so the
// producer refills K while the softmax still runs. Phases never alias: a fill k+1 is issued only
// after every consumer warp released fill k, which it did after waiting for it. Consumers wait on
// a full barrier, __syncwarp (the spin loop's lanes reconverge before the .aligned wgmma), and
// fence.proxy.async (the cp.async data, generic proxy, before the wgmma reads, async proxy). The
// producer, after its last copy, waits for the full phases of the last min(STAGES, tiles) tiles
// and of the last Q, so that it never exits with copies in flight. Work items with no key (all
// rows masked) are written by the consumer threads and skipped by the producer (no copy, no
// barrier use). The only __syncthreads are ORDER=2's ranking and the one after the barriers'
// initialisation (and the zero block's, OVERLAP=1), before the roles split.
//   PINGPONG=1: named barriers 2 .. 1+WARPS/4, one per consumer warpgroup, over 256 threads:
// warpgroup i waits on barrier 2+i (bar.sync) before issuing its tile's wgmmas and arrives on
// barrier 2+(i+1)%NWG (bar.arrive) after issuing them; the last warpgroup arrives once on barrier
// 2 at the start, so warpgroup 0 goes first. All warpgroups of a CTA run the same number of
// tiles, so the turns alternate strictly (one arrival is left pending at exit).
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/launch.cuh>
#include <kernelarc/device/mma.cuh>
#include <kernelarc/device/ragged.cuh>
#include <kernelarc/device/softmax.cuh>
#include <kernelarc/device/sync.cuh>
#include <kernelarc/device/wgmma.cuh>

#include <climits>
#include <cstdint>

KA_REQUIRE_DEFINES("gqa_prefill_cuda", KA_NUM_QO_HEADS, KA_NUM_KV_HEADS, KA_HEAD_DIM, KA_PAGED, KA_MASKED_ROW_ZERO,
                   KA_WARPS, KA_KV_TILE, KA_STAGES, KA_ORDER, KA_Q_IN_SMEM, KA_PERSIST, KA_MMA, KA_OVERLAP, KA_WS,
                   KA_PINGPONG, KA_QREG);
#ifndef KA_QBUFS
#define KA_QBUFS 1  // knobs added later: their defaults are the behaviour before them
#endif
#ifndef KA_XITEM
#define KA_XITEM 0
#endif

// Internal linkage for everything but the entry (a judge worker keeps earlier candidates loaded).
namespace ka_gqap {
namespace {

constexpr int HQ = KA_NUM_QO_HEADS;
constexpr int HKV = KA_NUM_KV_HEADS;
constexpr int D = KA_HEAD_DIM;
constexpr int G = HQ / HKV;
constexpr int W = KA_WARPS;
constexpr int NT = 32 * W;
constexpr int M = 16 * W;                // rows of the CTA tile
constexpr int QT = M / G;                // query tokens per CTA tile
constexpr int T = KA_KV_TILE;
constexpr int STAGES = KA_STAGES;
constexpr int MMA = KA_MMA;
constexpr int PIPE = KA_OVERLAP;
constexpr int AHEAD = STAGES - 1 - PIPE;  // tiles whose loads are in flight ahead of the one computed
constexpr int ROWB = MMA ? 2 * D : 2 * D + 16;  // smem bytes per row (mma.sync: 16 B pad, conflict-free ldmatrix)
constexpr int KCH = 2 * D / 16;          // 16-byte chunks per row
constexpr int RPP = NT / KCH;            // rows per pass of all threads
constexpr int NR = T / RPP;              // K (and V) rows per thread per tile
constexpr int QR = M / RPP;              // Q rows per thread
constexpr int KSTEPS = D / 16;
constexpr int NTT = T / 8;               // S n-tiles per warp
constexpr int KT = T / 16;               // P·V k-steps
constexpr int NTD = D / 8;               // O n-tiles
constexpr int STAGE_BYTES = 2 * T * ROWB;
constexpr int Q_BYTES = M * ROWB;
constexpr int QB2 = KA_QBUFS == 2 ? 1 : 0;         // QBUFS=2: two Q buffers, items alternate
constexpr int Q_REGION = Q_BYTES * (1 + QB2);
constexpr int XITEM = KA_XITEM;
constexpr int MAXB_SORT = 1024;
constexpr int SORT_BYTES = KA_ORDER == 2 ? MAXB_SORT * 8 : 0;
constexpr int ALIGN_SLACK = MMA ? 1024 : 0;  // the swizzled tiles start 1024-byte aligned
constexpr int ZERO_BYTES = PIPE ? 16 * 2 * D : 0;  // OVERLAP: 16 rows of zeros, the B of the P V at tile 0
constexpr int WS = KA_WS;
constexpr int NWG = W / 4;                   // consumer warpgroups (MMA=1)
constexpr int PROD = 128;                    // WS=1: producer threads (one warpgroup, warps W .. W+3)
constexpr int NTHREADS = NT + PROD * WS;     // WS=1: plus the producer warpgroup
// WS=1, setmaxnreg: registers per thread of the producer and of the consumer warpgroups after the
// split (the launch gives every thread 65536 / NTHREADS, rounded down to 8: 168 with 2 consumer
// warpgroups, 128 with 3); 128 * PROD_REGS + NT * CONS_REGS <= 65536. One consumer warpgroup
// (256 threads, up to 255 registers each at launch) needs no move.
constexpr int PROD_REGS = NWG == 3 ? 48 : 72;
constexpr int CONS_REGS = NWG == 3 ? 152 : 216;
constexpr int BAR_OFF = STAGES * STAGE_BYTES + Q_REGION + SORT_BYTES + ZERO_BYTES;  // WS=1 mbarriers
constexpr bool DYN = KA_PERSIST == 2;         // WS=1: items claimed at run time (see PERSIST)
// full_k, full_v, empty_k, empty_v per stage; q_full, q_empty; PERSIST=2: item_full, item_empty (2
// each) and the 2 item slots; QBUFS=2: q_full and q_empty of the second Q buffer (at +64).
constexpr int BAR_BYTES = WS ? STAGES * 32 + (QB2 ? 80 : 16 + (DYN ? 48 : 0)) : 0;
// XITEM=1: where an item's end waits for the next item's first tile step, out of the registers: each
// consumer thread's softmax state (16 bytes), then each consumer warp's row0 and nq (16 bytes).
constexpr int XS_OFF = BAR_OFF + BAR_BYTES;
constexpr int XS_BYTES = XITEM ? 16 * (NT + W) : 0;
constexpr int SMEM_BYTES =
    STAGES * STAGE_BYTES + Q_REGION + SORT_BYTES + ZERO_BYTES + BAR_BYTES + XS_BYTES + 16 + ALIGN_SLACK;
constexpr float kNegInf = -__builtin_huge_valf();
template <int N>
struct IntC {  // a compile-time int as a value (the tile step's S width)
  static constexpr int value = N;
};

static_assert(HQ % HKV == 0 && M % G == 0, "16*WARPS must be a multiple of the group size");
static_assert(D % 32 == 0 && D <= 256, "head_dim must be a multiple of 32, at most 256");
static_assert(WS || (NT % KCH == 0 && T % RPP == 0 && M % RPP == 0), "WARPS / KV_TILE / head_dim");
static_assert(T % 16 == 0, "KV_TILE");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory above 227 KB");
static_assert(MMA == 0 || (W % 4 == 0 && (D == 64 || D == 128) && (T == 64 || T == 128) && KA_Q_IN_SMEM == 1),
              "MMA=1: WARPS % 4 == 0, head_dim 64 or 128, KV_TILE 64 or 128, Q_IN_SMEM 1");
static_assert(PIPE == 0 || (MMA == 1 && (STAGES >= 3 || WS)), "OVERLAP=1: MMA=1 and STAGES >= 3 (WS=1: 2)");
static_assert(WS == 0 || (WS == 1 && MMA == 1 && PROD % KCH == 0 && BAR_OFF % 8 == 0), "WS=1: MMA=1");
static_assert(WS == 0 || NWG == 1 || PROD * PROD_REGS + NT * CONS_REGS <= 65536, "WS=1: setmaxnreg budget");
static_assert(KA_PINGPONG == 0 || (KA_PINGPONG == 1 && WS == 1 && NWG >= 2 && NWG <= 3),
              "PINGPONG=1: WS=1 and 2 or 3 consumer warpgroups");
static_assert(KA_QREG == 0 || (KA_QREG == 1 && WS == 1), "QREG=1: WS=1");
static_assert(KA_QBUFS == 1 || (KA_QBUFS == 2 && WS == 1 && KA_PERSIST >= 1 && KA_QREG == 0),
              "QBUFS=2: WS=1, PERSIST 1 or 2, QREG=0");
static_assert(XITEM == 0 || (QB2 && PIPE), "XITEM=1: QBUFS=2 and OVERLAP=1");
static_assert(KA_PERSIST <= 1 || (KA_PERSIST == 2 && WS == 1), "PERSIST=2: WS=1");

// Byte offset of 16-byte chunk c of row r in a shared tile of `rows` rows (see KA_MMA).
__host__ __device__ constexpr int tile_off(int r, int c, int rows) {
  return MMA == 0 ? r * ROWB + c * 16 : (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

// ── primitives (the device layer, kernelarc/device/) ───────────────────────────────────────────
using namespace ka_dev;

#if KA_MMA
// The descriptor of the operand `off` bytes (a multiple of 16) after the one d describes: the start
// address field (bits 0-13, address / 16) takes the offset with one 32-bit add (shared addresses stay
// below 256 KB, so it never carries into the next field), where sw128_desc costs ~5 instructions; a
// tile loop computes ~20 descriptors per tile.
__device__ __forceinline__ uint64_t desc_at(uint64_t d, uint32_t off) {
  const uint32_t lo = static_cast<uint32_t>(d) + (off >> 4), hi = static_cast<uint32_t>(d >> 32);
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
// O += P V for one tile: B = V rows 16kt .. 16kt+15 (2 groups of 8 rows, SBO 1024), N = D across
// the column blocks (LBO = T*128 bytes apart), MN-major; A = P from registers, pa[kt] the
// fragment of k-step kt (keys 16kt .. 16kt+15, see to_frags). The B descriptors of the V rows at vsm:
__device__ __forceinline__ void pv_descs(const unsigned char* vsm, uint64_t (&dv)[KT]) {
  const uint64_t v0 = sw128_desc(smem_u32(vsm), T * 128);
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) dv[kt] = desc_at(v0, kt * 16 * 128);
}
// OVERLAP's P V before the first tile: a P of zeros times the zero block, so that every iteration
// issues the same wgmmas (ptxas serializes a pipelined loop whose wgmmas sit under a branch, or
// whose A registers are defined before the loop).
__device__ __forceinline__ void pv_of_zeros(const unsigned char* zero_blk, uint64_t (&dv)[KT], uint32_t (&pa)[KT][4]) {
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) {
    dv[kt] = sw128_desc(smem_u32(zero_blk), 16 * 128);
    pa[kt][0] = pa[kt][1] = pa[kt][2] = pa[kt][3] = 0u;
  }
}
// The S accumulator layout of two n8 blocks is the A fragment layout of one k16 step.
__device__ __forceinline__ void to_frags(const uint32_t (&pk)[NTT][2], uint32_t (&pa)[KT][4]) {
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) {
    pa[kt][0] = pk[2 * kt][0];
    pa[kt][1] = pk[2 * kt][1];
    pa[kt][2] = pk[2 * kt + 1][0];
    pa[kt][3] = pk[2 * kt + 1][1];
  }
}
#endif

__device__ __forceinline__ int ceil_div_i(int a, int b) { return (a + b - 1) / b; }

struct Params {
  const uint16_t* q;     // [total_q][HQ][D]
  const uint16_t* k;     // paged [P][1][HKV][D]; ragged [total_kv][HKV][D]
  const uint16_t* v;
  const int* qo_indptr;  // [B+1]
  const int* kv_indptr;  // [B+1]
  const int* indices;    // [N] (paged)
  uint16_t* out;         // [total_q][HQ][D]
  float* lse;            // [total_q][HQ]
  int B, total_q, num_rows;  // num_rows: pages (paged) or total_kv (ragged)
  int tiles;                 // upper bound of the query tiles (from shapes)
  float scale_log2;
};

// The online softmax of one S tile (every path): kernelarc/device/softmax.cuh's softmax_tile, with
// the state of a warp's two rows.
using Rows = SoftmaxRows;
#include "epilogue.cuh"

#include "work_items.cuh"

#if KA_WS
__device__ __forceinline__ void ws_main(const Params& p, unsigned char* smem, const int* ord);
#else
__device__ __forceinline__ void do_tile(const Params& p, unsigned char* smem, int b, int tile, int g);
#endif

// KA_PERSIST 0: one CTA per (tile bound, kv head); 1: persistent CTAs (SMs x occupancy) walk the
// work items (tile, kv head) with a stride, tiles in work order, so no CTA is spent on the slack of
// the shape-based bound and a CTA's writes of rows that see no key cost no launch; 2: the same CTAs
// claim the items at run time (WS=1 only).
__global__ void __launch_bounds__(NTHREADS) gqa_prefill_kernel(Params p) {
  KA_DYN_SMEM(smem_raw);
  constexpr uint32_t AL = MMA ? 1024 : 16;  // the swizzled tiles need 1024-byte alignment
  unsigned char* const smem = smem_raw + ((AL - (smem_u32(smem_raw) & (AL - 1))) & (AL - 1));
  unsigned char* const qs_smem = smem + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x, lane = tid & 31;
#if KA_OVERLAP
  for (int i = tid; i < ZERO_BYTES / 16; i += NT)  // the zero block (read by wgmma after a proxy fence)
    reinterpret_cast<uint4*>(qs_smem + Q_REGION + SORT_BYTES)[i] = make_uint4(0u, 0u, 0u, 0u);
#endif

  // ── which tile ──
  const int* ord = nullptr;
  if constexpr (KA_ORDER == 2) {
    if (p.B > 1 && p.B <= MAXB_SORT) {  // (one sequence: the order is ORDER 1's, no index reads)
      float* cost = reinterpret_cast<float*>(qs_smem + Q_REGION);
      int* order = reinterpret_cast<int*>(cost + MAXB_SORT);
      order_by_causal_cost(p.qo_indptr, p.kv_indptr, p.B, cost, order, tid, NT);
      ord = order;
    }
  }
#if KA_WS
  ws_main(p, smem, ord);
#else
  if constexpr (KA_PERSIST == 0) {
    int b, tile;
    if (!map_tile(p, ord, blockIdx.x, lane, b, tile)) return;  // CTA-uniform
    do_tile(p, smem, b, tile, blockIdx.y);
  } else {
    TileCursor<QT> cur;
    const int64_t items = static_cast<int64_t>(p.tiles) * HKV;
    for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
      int b, tile;
      if (!cur.advance(p.qo_indptr, p.B, ord, static_cast<int>(w / HKV), b, tile)) break;  // CTA-uniform
      __syncthreads();  // the previous item's readers of Q / stages are done
      do_tile(p, smem, b, tile, static_cast<int>(w % HKV));
    }
  }
#endif
}

#include "do_tile.cuh"

#if KA_WS
#include "ws_producer.cuh"
#include "ws_consumer.cuh"
#endif  // KA_WS

// ── host ───────────────────────────────────────────────────────────────────────────────────────
FitOnce g_fit;

inline void launch(const ka::TensorArg& q, const ka::TensorArg& k, const ka::TensorArg& v, const ka::TensorArg& qo_indptr,
                   const ka::TensorArg& kv_indptr, const ka::TensorArg* kv_indices, double sm_scale,
                   const ka::TensorArg& output, const ka::TensorArg& lse) {
  const int64_t total_q = q.size(0);
  const int64_t B = qo_indptr.size(0) - 1;
  if (total_q <= 0 || B < 0) return;
  if (!(sm_scale > 0.0)) {  // the row maxima are taken over unscaled scores (softmax_tile)
    fill_attention_nan(output, lse, total_q * HQ, D);
    return;
  }
  const KernelFit& fit = g_fit(gqa_prefill_kernel, NTHREADS, SMEM_BYTES);
  Params p{};
  p.q = static_cast<const uint16_t*>(q.data);
  p.k = static_cast<const uint16_t*>(k.data);
  p.v = static_cast<const uint16_t*>(v.data);
  p.qo_indptr = static_cast<const int*>(qo_indptr.data);
  p.kv_indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = kv_indices ? static_cast<const int*>(kv_indices->data) : nullptr;
  bind_attention_outputs(p, output, lse, B, sm_scale);
  p.total_q = static_cast<int>(total_q);
  p.num_rows = static_cast<int>(k.size(0));
  const int64_t tiles = prefill_tile_bound(total_q, B, QT);
  p.tiles = static_cast<int>(tiles);
  if (KA_PERSIST == 0) {
    KA_LAUNCH(gqa_prefill_kernel, dim3(static_cast<unsigned>(tiles), HKV), dim3(NTHREADS), SMEM_BYTES, p);
  } else {
    int64_t ctas = static_cast<int64_t>(fit.sms) * fit.occ;
    if (ctas > tiles * HKV) ctas = tiles * HKV;
    KA_LAUNCH(gqa_prefill_kernel, dim3(static_cast<unsigned>(ctas)), dim3(NTHREADS), SMEM_BYTES, p);
  }
}

}  // namespace
}  // namespace ka_gqap

#if KA_PAGED
void run(const ka::TensorArg& q, const ka::TensorArg& k_cache, const ka::TensorArg& v_cache, const ka::TensorArg& qo_indptr,
         const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices, double sm_scale, const ka::TensorArg& output,
         const ka::TensorArg& lse) {
  if (k_cache.ndim == 4 && k_cache.size(1) != 1) return;  // page size 1 only (the family's targets)
  ka_gqap::launch(q, k_cache, v_cache, qo_indptr, kv_indptr, &kv_indices, sm_scale, output, lse);
}
#else
void run(const ka::TensorArg& q, const ka::TensorArg& k, const ka::TensorArg& v, const ka::TensorArg& qo_indptr,
         const ka::TensorArg& kv_indptr, double sm_scale, const ka::TensorArg& output, const ka::TensorArg& lse) {
  ka_gqap::launch(q, k, v, qo_indptr, kv_indptr, nullptr, sm_scale, output, lse);
}
#endif
