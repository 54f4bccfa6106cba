#!/usr/bin/env bash
# The attention (and GEMM diagnosis) GPU steps as one resumable queue of named steps, for a GPU
# machine whose commands are time-limited (at most ~10 minutes each; /tmp survives between commands
# only while the machine stays up). Run it from the repo root on the GPU machine, after these steps
# here:
#   scripts/device-pack.sh                 # .dev (kernelarc, its libraries) and .data/problems
#   mkdir -p .data/old && git archive f766fa6 families | tar x -C .data/old   # map_ab's baseline
#   WORK=$PWD/.dev/gemm BUILD_ONLY=1 SKINNY_LABELS='^none$' bash bench/regress/gemm_family.sh  # GEMM steps only
# and carry .dev and .data. Each run does the steps not yet done, in STEPS order, while the next
# one fits in what is left of DEADLINE (seconds, default 570); a step's done-marker lives in STATE
# (default /tmp/ka-next), so the next run on the same machine goes on where this one stopped (on a
# fresh machine everything starts again: name the steps still wanted in STEPS). A step that does
# not fit ends the run (order is priority), unless SKIP_BIG=1 lets smaller later steps run.
# The A/B steps promote a point that beat the family's seed (correct everywhere, geomean time 2% or
# more below; bench/tools/ab_promote.py) to first seed in a copy of families/ under STATE, which the
# campaign steps then pass to optimize (--families).
# Every step's line is appended to $OUT/next_summary.txt at once (a cut run still says what ran);
# each step's logs come back as one archive under $OUT.
#
# Default order (STEPS): raf stream_order camp018_oracle camp018: the plain-read ceiling of the
# decode sizes under the judge's flush (on an H200, every size vectorised since c03acc5); whether the
# item stream's slower plain iterations come from ORDER 2; then 018 judged with a budget of 4 (every
# seed judged since de66fa7). The campaign steps reproduce the attention figures of
# bench/RESULTS.md by name (camp012, camp014(_oracle), camp016, camp018(_oracle), camp019(_oracle)).
# The GEMM steps stay available by name. With the reference timings borrowed from the sol cache
# (ce4a63f; the key names the GPU, see bench/tools/sol_cache.sh) 018's and 019's oracles take ~95 s
# on an H200, so an `_oracle` step usually makes the problem's whole run and marks its second step
# done; where nothing is borrowed, 019's oracle needs most of a run.
# Steps (seconds reserved; the campaign steps use what is left of the run, up to their cap):
#   mla_ab     (300) prefill target: the MLA prefill seed (WARPS 12, PERSIST 0) against the item
#              stream (PERSIST 1, ORDER 1 and 2) on 019's five large workloads that the self-test
#              can time in one process (bench/tools/prefill_ab.sh)
#   gemm_m16294 (150) GEMM large-M target: ncu of p11 and d01 at M 16294 and 16896 on 5120x2048 (below)
#   gemm_diag  (100) GEMM large-M target: the persistent GEMM points against cuBLAS at M 8192-16896 on
#              the four wide shapes (first run 2026-12-05, bench/HISTORY.md: p11's epilogue is the
#              16% at N 5120, K 2048, M 16294; cluster points at ~1 us per k-tile): now p11 beside
#              d01 (no epilogue), d03 (C stored from registers, fixed), four staging buffers per
#              warpgroup (EPI_BUFS=4: p24-p27) and the cluster points after the CTA-scope stage
#              release (p12, p17, p23, p27), the new points checked first on every shape; then ncu
#              (full set) on cuBLAS's kernel and p24 at N 5120, K 2048, M 16294
#   epi_ab     (330) the 16-byte output stores (9f37686) against OLD's 4-byte ones, MLA seed, item
#              stream and GQA seed (first run 2026-12-05 16:49: 0.89-0.93x the time)
#   mla_trace  (160) KA_TRACE of the MLA prefill seed and item stream on 74202b1d and fe63f292 (the
#              stream's iterations by kind since 46f72f4; first run 2026-12-06 00:24, H100)
#   stream_order (170) the same trace of the item stream with ORDER 0, 1 and 2 (never run)
#   dec_trace  (210) KA_TRACE of both decode seeds on 018's and 012's smallest and largest > 32 MB
#              workloads (first run 2026-12-05 17:12 on an H100, bench/HISTORY.md)
#   dec_ab     (250) 018's decode: the seed against EARLY=1 and FUSED_MERGE=0, on the twelve > 32
#              MB workloads, then traces of the EARLY points (first run 2026-12-05 19:33, H200:
#              EARLY 1.10-1.16x the time, FUSED_MERGE=0 0.92x)
#   map_ab     (180) the MLA prefill seed with map_item (ce42851) against f766fa6's in .data/old
#              (first run 2026-12-05 19:34, H200: 1.017x the time, bench/HISTORY.md)
#   raf        (90) bench/tools/read_after_flush.py at 012's and 018's > 32 MB KV sizes (first run
#              2026-12-06 00:23 on an H100, 14 s; seven sizes there read unvectorised, fixed in c03acc5)
#   camp012    (300) the attention targets' correctness, decode and baseline lines on 012 (BUDGET 6)
#   gqa_ab     (300) prefill target: the GQA prefill seed (its first run since the half last key
#              tile, b4c33de) against itself with two Q buffers (QBUFS=2) and with the item change
#              overlapped too (XITEM=1), both first runs, on 016's and 014's > 50 GFLOP workloads
#   camp016    (260) the attention targets' correctness, prefill and baseline lines on 016 (BUDGET 6;
#              the piecewise plan composes the PERSIST=2 point for the large workloads since 5baeaf6)
#   camp018_oracle, camp018   (400, 540) 018 in two runs: the first makes the oracle's sets
#              (ORACLE_S, what is left of the run; they stay in /tmp/ka-cache), the second makes
#              any still missing and judges in one run
#   camp019_oracle, camp019   (400, 540) the same for 019
#   camp014_oracle, camp014   (400, 540) the same for 014 (its oracle makes ~44 of 60 sets in 300 s)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
FINAL=${OUT:-/tmp/ka-out}
mkdir -p "$FINAL"
STATE=${STATE:-/tmp/ka-next}
mkdir -p "$STATE"
deadline_start "${DEADLINE:-570}"
STEPS=${STEPS:-"raf stream_order camp018_oracle camp018"}
SUM=$FINAL/next_summary.txt
say() { echo "$*" | tee -a "$SUM"; }
OPT_ARGS_ATT="--no-sol --time-compile --agents explorer,exploiter,modeler,transfer"

# promote TAG FAMILY BASELINE: the A/B's winner (correct on every workload BASELINE ran, geomean time
# at least 2% below it) becomes FAMILY's first seed in $STATE/families, which the campaigns of this
# run then read.
promote() {
  local tag=$1 fam=$2 base=$3 x=$STATE/$1_rows
  rm -rf "$x" && mkdir -p "$x"
  tar xzf "$FINAL/$tag/prefill_ab_logs.tgz" -C "$x" prefill_ab/ab.jsonl 2>/dev/null || { say "$tag: no rows to promote from"; return; }
  python3 bench/tools/ab_promote.py "$x/prefill_ab/ab.jsonl" --family "$fam" --baseline "$base" \
    --families-out "$STATE/families" --date "$(date -u +%F)" 2>&1 | tee -a "$SUM" | tail -1
}

step_mla_ab() {
  local seed=QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=1,PERSIST=0,MMA=1,SAHEAD=0
  OUT=$FINAL/mla_ab OLD=/nonexistent GQA_BOTH="" GQA_NEW="" MLA_BOTH="" \
    MLA_NEW="$seed ${seed/PERSIST=0/PERSIST=1} ${seed/ORDER=1,PERSIST=0/ORDER=2,PERSIST=1}" \
    MLA_ONLY=${MLA_ONLY:-74202b1d,733a7bbe,053a88a3,54187805,fe63f292} STEP_S=${STEP_S:-220} \
    bash bench/tools/prefill_ab.sh >"$STATE/mla_ab.out" 2>&1
  grep -vE '^(no |$)' "$STATE/mla_ab.out" | tail -30 >>"$SUM"
  promote mla_ab mla_prefill_cuda "$seed"
}

# The output written as whole 16-byte chunks (a quad transpose; both prefill families) against the
# 4-byte stores of OLD (.data/old: `git archive <rev before> families | tar x -C .data/old` here),
# on the MLA seed and item stream and the GQA seed.
step_epi_ab() {
  local mla=QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=1,PERSIST=0,MMA=1,SAHEAD=0
  local gqa=WARPS=12,KV_TILE=64,STAGES=3,ORDER=2,Q_IN_SMEM=1,PERSIST=2,MMA=1,OVERLAP=1,WS=1,PINGPONG=1,QREG=0
  OUT=$FINAL/epi_ab OLD=${OLD:-.data/old} GQA_BOTH="$gqa" GQA_NEW="" MLA_BOTH="$mla ${mla/ORDER=1,PERSIST=0/ORDER=2,PERSIST=1}" \
    MLA_NEW="" STEP_S=${STEP_S:-200} bash bench/tools/prefill_ab.sh >"$STATE/epi_ab.out" 2>&1
  grep -vE '^(no |$)' "$STATE/epi_ab.out" | tail -32 >>"$SUM"
}

# The MLA prefill seed's one-round-trip tile lookup (map_item, ce42851) against OLD's (.data/old:
# `mkdir -p .data/old && git archive f766fa6 families | tar x -C .data/old` here, before packing),
# on 019's five large workloads.
step_map_ab() {
  local mla=QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=1,PERSIST=0,MMA=1,SAHEAD=0
  [[ -d ${OLD:-.data/old}/families ]] || { say "map_ab: no ${OLD:-.data/old}/families (see the step's comment)"; return 1; }
  OUT=$FINAL/map_ab OLD=${OLD:-.data/old} GQA_BOTH="" GQA_NEW="" MLA_BOTH="$mla" MLA_NEW="" STEP_S=${STEP_S:-200} \
    bash bench/tools/prefill_ab.sh >"$STATE/map_ab.out" 2>&1
  grep -vE '^(no |$)' "$STATE/map_ab.out" | tail -20 >>"$SUM"
}

# Where an MLA prefill CTA's time goes (KA_TRACE build, bench/tools/attention_selftest.py --trace): the
# seed and the item stream on the short-sequence workload 74202b1d and the long fe63f292.
mla_trace_points() {  # TAG POINT...: trace POINTs (knob lists) on TRACE_ONLY's workloads into $FINAL/TAG
  local D=$FINAL/$1 k=()
  shift
  for p in "$@"; do k+=(--knobs "$p"); done
  mkdir -p "$D"
  timeout -k 10 150 python3 bench/tools/attention_selftest.py --mode cuda --family mla_prefill --cases workloads \
    --only "${TRACE_ONLY:-74202b1d,fe63f292}" --time --trace "${k[@]}" --jsonl "$D/trace.jsonl" >"$D/trace.txt" 2>&1
  echo "exit $?" >>"$D/trace.txt"
  { echo "== ${D##*/}"; grep -E '\[(ok|FAIL)|exit' "$D/trace.txt" | sed -E 's/ \([0-9.]+ s\)$//' | cut -c1-1500; } >>"$SUM"
}
MLA_SEED=QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=1,PERSIST=0,MMA=1,SAHEAD=0
step_mla_trace() { mla_trace_points mla_trace "$MLA_SEED" "${MLA_SEED/ORDER=1,PERSIST=0/ORDER=2,PERSIST=1}"; }
# The item stream in each order (first run 2026-12-06 00:24 on an H100: with ORDER 2 its plain
# iterations took 1.50 us (median) against the seed's 1.24 us per tile; ORDER 2 starts every CTA on
# the heaviest items at once, ORDER 0/1 on consecutive tiles): is the slower steady state the
# order's or the stream's own?
step_stream_order() {
  local s=${MLA_SEED/PERSIST=0/PERSIST=1}
  mla_trace_points stream_order "${s/ORDER=1/ORDER=0}" "$s" "${s/ORDER=1/ORDER=2}"
}

# Where a decode call's time goes (KA_TRACE builds of both decode families' seeds): 018's smallest
# and largest > 32 MB workloads (35 and 87 MB at 48-61 us: a ~40 us cost that does not grow with
# the KV, never located) and 012's (34 and 126 MB).
step_dec_trace() {
  local D=$FINAL/dec_trace
  mkdir -p "$D"
  timeout -k 10 200 python3 bench/tools/attention_selftest.py --mode cuda --family both --points seeds --cases workloads \
    --only "${TRACE_ONLY:-7e083fc8,5bef8d88,d0698b8f,7a7fc288}" --time --trace --jsonl "$D/trace.jsonl" >"$D/trace.txt" 2>&1
  echo "exit $?" >>"$D/trace.txt"
  { echo "== dec_trace"; grep -E '\[(ok|FAIL)|exit' "$D/trace.txt" | sed -E 's/ \([0-9.]+ s\)$//' | cut -c1-900; } >>"$SUM"
}

# 018's decode loop: the seed against EARLY=1 (two tiles in flight during the wait) and the merge as
# a second kernel (FUSED_MERGE=0, the second seed), each and together, on 018's > 32 MB workloads
# (self-test timing, one process), then a trace of the fastest-looking pair on two of them.
step_dec_ab() {
  local seed=WARPS=8,TILE=64,STAGES=2,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,MMA=1,EARLY=0 D=$FINAL/dec_ab
  local pts=("$seed" "${seed/EARLY=0/EARLY=1}" "${seed/FUSED_MERGE=1/FUSED_MERGE=0}" "${seed/FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,MMA=1,EARLY=0/FUSED_MERGE=0,NO_SPLIT_BELOW=0,L2_PREFETCH=0,MMA=1,EARLY=1}")
  local args=() k
  for k in "${pts[@]}"; do args+=(--knobs "$k"); done
  mkdir -p "$D"
  timeout -k 10 150 python3 bench/tools/attention_selftest.py --mode cuda --family mla --cases workloads \
    --only "${DEC_ONLY:-7e083fc8,60b29b12,b018a35e,86a0eb47,80797c3d,f4367b30,b15c7099,65082ffb,d771f51c,939f995a,1c3743b9,5bef8d88}" \
    --time "${args[@]}" --jsonl "$D/ab.jsonl" >"$D/ab.txt" 2>&1
  echo "exit $?" >>"$D/ab.txt"
  timeout -k 10 80 python3 bench/tools/attention_selftest.py --mode cuda --family mla --cases workloads --only 7e083fc8,5bef8d88 \
    --time --trace --knobs "${pts[1]}" --knobs "${pts[3]}" --jsonl "$D/trace.jsonl" >"$D/trace.txt" 2>&1
  echo "exit $?" >>"$D/trace.txt"
  {
    echo "== dec_ab"
    grep -E 'checks|FAIL|exit|valid' "$D/ab.txt" | head -8
    python3 bench/tools/ab_summary.py "$D/ab.jsonl" 2>&1 | tail -30
    grep -E '\[(ok|FAIL)|exit' "$D/trace.txt" | sed -E 's/ \([0-9.]+ s\)$//' | cut -c1-900
  } >>"$SUM"
}

# raf: the fastest plain read of each decode size under the judge's flush, sequential and as random 1 KB
# rows from a 1 GB pool (bench/tools/read_after_flush.py):
# the ceiling the decode target (80% of copy) is read against, besides the 4 GiB copy rate.
step_raf() {
  local D=$FINAL/raf
  mkdir -p "$D"
  timeout -k 10 120 python3 bench/tools/read_after_flush.py --json "$D/raf.jsonl" \
    --sizes-mb 16,33.9,35.4,39.1,42.8,46.5,51.7,55.3,59.0,62.7,66.4,71.8,79.2,86.6,94.8,103.7,112.6,126.0,256,1024 \
    >"$D/raf.txt" 2>&1
  echo "exit $?" >>"$D/raf.txt"
  { echo "== raf"; grep -v Warning "$D/raf.txt" | tail -24; } >>"$SUM"
}

step_gqa_ab() {
  local seed=WARPS=12,KV_TILE=64,STAGES=3,ORDER=2,Q_IN_SMEM=1,PERSIST=2,MMA=1,OVERLAP=1,WS=1,PINGPONG=1,QREG=0
  OUT=$FINAL/gqa_ab OLD=/nonexistent GQA_BOTH="" GQA_NEW="$seed $seed,QBUFS=2 $seed,QBUFS=2,XITEM=1" MLA_BOTH="" MLA_NEW="" \
    GQA_ONLY=${GQA_ONLY:-5c51d2e8,007ddabb,9fb16120} STEP_S=${STEP_S:-230} \
    bash bench/tools/prefill_ab.sh >"$STATE/gqa_ab.out" 2>&1
  grep -vE '^(no |$)' "$STATE/gqa_ab.out" | tail -30 >>"$SUM"
  promote gqa_ab gqa_prefill_cuda "$seed"
}

step_gemm_diag() {
  local G=.dev/gemm D=$FINAL/gemm_diag l
  mkdir -p "$D"
  [[ -x $G/selftest ]] || { say "gemm_diag: no $G/selftest (build it here with BUILD_ONLY=1, see the header)"; return 1; }
  # d01/d02: p11 without its epilogue / also without its wgmmas (KA_DIAG): what the epilogue and the
  # TMA ring alone cost; d03: p11 storing C from registers (no shared memory, no TMA store); p21/p22:
  # the ping-pong kernel (PERSIST=2; p23 with B multicast over 2 CTAs, never emulated: the emulator has
  # no clusters), whose outputs the self-test checks as for every point.
  # M 8448 and 16896 are whole waves of 128-row tiles at N 5120 (10 and 20 x 132).
  for l in p11_p1_bn256_s4_sn32_r1 d01_p11_noepi d03_p11_stg p24_p1e4_bn256_s3_r1 p25_p1e4_bn256_s3_r0 p26_ppe4_bn256_s4_r1 \
    p27_ppc2e4_bn256_s4_r1 p23_ppc2_bn256_s4_r1 p17_pc2_bn128_s5_r1 p12_pc2_bn256_s4_sn256_r1 p20_p1_bn256_s4_r0 p21_pp_bn256_s4_r1; do
    [[ -f $G/pts/$l/candidate.so ]] || { echo "no $l" >>"$D/notes.txt"; continue; }
    timeout 90 "$G/selftest" --lib "$G/pts/$l/candidate.so" --label "$l" --reps 20 --hang-s 15 --dtypes fp16 \
      --shapes 5120x2048,4096x4096,28672x4096,2048x4096 --ms 8192,8448,16294,16896 >"$D/selftest_$l.txt" 2>&1
    echo "exit $?" >>"$D/selftest_$l.txt"
  done
  # The new points' first runs: correctness (no timing) on every shape, both dtypes, M 1 to 16294.
  for l in p24_p1e4_bn256_s3_r1 p26_ppe4_bn256_s4_r1 p27_ppc2e4_bn256_s4_r1 p23_ppc2_bn256_s4_r1; do
    [[ -f $G/pts/$l/candidate.so ]] || continue
    timeout 90 "$G/selftest" --lib "$G/pts/$l/candidate.so" --label "check_$l" --reps 0 --hang-s 15 \
      --ms 1,13,33,200,1024,4097,16294 >"$D/check_$l.txt" 2>&1
    echo "exit $?" >>"$D/check_$l.txt"
  done
  # ROW label dtype M N K status max_err bad ours_us cublas_us (bench/tools/gemm_family_selftest.cu).
  grep -h '^ROW' "$D"/selftest_*.txt >"$D/rows.txt"
  if command -v ncu >/dev/null && [[ -f $G/pts/p24_p1e4_bn256_s3_r1/candidate.so ]]; then
    timeout -k 10 150 ncu --clock-control none --set full --kernel-name regex:'gemm|nvjet|xmma|cutlass' \
      --launch-count 4 "$G/selftest" --lib "$G/pts/p24_p1e4_bn256_s3_r1/candidate.so" --label p24 \
      --reps 1 --hang-s 30 --dtypes fp16 --shapes 5120x2048 --ms 16294 >"$D/ncu_p24_5120.txt" 2>&1
    echo "exit $?" >>"$D/ncu_p24_5120.txt"
  fi
  {
    echo "== gemm_diag ($(date -u +%FT%TZ))"
    # cuBLAS time / ours per point (columns) and case (rows: N K M); status other than ok marked.
    python3 - "$D/rows.txt" <<'PY'
import collections, sys
t, labels = collections.OrderedDict(), []
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 11: continue
    lab, m, n, k, st, us, cub = p[1], p[3], p[4], p[5], p[6], float(p[9]), float(p[10])
    if lab not in labels: labels.append(lab)
    row = t.setdefault((n, k, m), {})
    row.setdefault("cub", f"{cub:.1f}")
    row[lab] = (f"{cub / us:.3f}" if us > 0 else "-") + ("" if st == "ok" else "!")
print("N K M cublas_us | " + " ".join(l.split("_")[0] for l in labels))
for key, row in t.items():
    print(" ".join(key), row["cub"], "|", " ".join(row.get(l, "-") for l in labels))
PY
    for f in "$D"/check_*.txt; do
      [[ -f $f ]] && echo "$(basename "$f" .txt): $(grep -c '^ROW.* ok ' "$f") ok of $(grep -c '^ROW' "$f") rows; not ok: $(grep '^ROW' "$f" | grep -v ' ok ' | head -3 | tr '\n' ';') $(tail -1 "$f")"
    done
    grep -E '^  [^ ].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Shared Memory|Registers Per|Issue Slots Busy|No Eligible|exit' \
      "$D/ncu_p24_5120.txt" 2>/dev/null | head -40
  } >>"$SUM"
  tar czf "$FINAL/gemm_diag.tgz" -C "$FINAL" gemm_diag && rm -rf "$D"
}

# Why M 16294 is slower than the whole-wave 16896 for every storing point (2026-12-05 14:53 run:
# p11 508 vs 477 us on 5120x2048; d01 without the epilogue 440 vs 456; d03's register stores +28 us
# too): p11 and d01 at both M, L2 flushed, ncu's throughput, memory and scheduler sections, one
# kernel each (ours and cuBLAS's: the second launch of each process is the timed one after warm-up).
step_gemm_m16294() {
  local G=.dev/gemm D=$FINAL/gemm_m16294 l m
  mkdir -p "$D"
  command -v ncu >/dev/null || { say "gemm_m16294: no ncu"; return 1; }
  for l in p11_p1_bn256_s4_sn32_r1 d01_p11_noepi; do
    for m in 16294 16896; do
      timeout -k 10 100 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section SchedulerStats --section WarpStateStats --section LaunchStats --kernel-name regex:'gemm|nvjet' \
        --launch-count 4 "$G/selftest" --lib "$G/pts/$l/candidate.so" --label "$l" --reps 1 --hang-s 30 \
        --dtypes fp16 --shapes 5120x2048 --ms "$m" >"$D/ncu_${l%%_*}_$m.txt" 2>&1
      echo "exit $?" >>"$D/ncu_${l%%_*}_$m.txt"
    done
  done
  {
    echo "== gemm_m16294 ($(date -u +%FT%TZ))"
    for f in "$D"/ncu_*.txt; do
      echo "-- $(basename "$f" .txt)"
      grep -E '^  [^ ].*\(|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|L2 Hit Rate|Mem Busy|Max Bandwidth|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|exit' "$f" | head -30
    done
  } >>"$SUM"
  tar czf "$FINAL/gemm_m16294.tgz" -C "$FINAL" gemm_m16294 && rm -rf "$D"
}

# campaign PROBLEM TAG BUDGET PER_PROBLEM_S ORACLE_S: one bench/regress/campaign.sh run in its own
# output folder, its optimize limited to what is left of the run.
campaign() {
  local prob=$1 tag=$2 budget=$3 pps=$4 oracle=$5 t fams=""
  [[ -d $STATE/families ]] && fams=$STATE/families  # an A/B winner promoted to seed (promote)
  t=$(( $(left) - 25 ))
  ((t > 590)) && t=590
  ((pps > t - 120)) && pps=$((t - 120))
  # READ_TB_S: the H200's measured sequential read rate (bench/tools/gather_bw.cu); none for another GPU.
  local rd=${READ_TB_S-}
  [[ -z $rd && $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null) == *H200* ]] && rd=3.54
  # RAF: the raf step's plain-read times of this run (same GPU), when it ran.
  local raf=""
  [[ -s $FINAL/raf/raf.jsonl ]] && raf=$FINAL/raf/raf.jsonl
  OUT=$FINAL/$tag CALIBRATE=0 READ_TB_S=$rd RAF=$raf COMPOSE_S=${COMPOSE_S:-50} DRAIN_S=${DRAIN_S:-50} \
    PROBS=$prob BUDGET=$budget PER_PROBLEM_S=$pps OPT_TIMEOUT=$t ORACLE_S=${oracle:-${ORACLE_S:-}} \
    OPT_ARGS="$OPT_ARGS_ATT${fams:+ --families $fams}" bash bench/regress/campaign.sh >"$STATE/$tag.out" 2>&1
  tail -40 "$STATE/$tag.out" >>"$SUM"
  # An oracle step whose oracle finished in time and whose optimize then ended by itself or by its
  # time limit (exit 0 or 124; 137 is a SIGKILL with candidates in flight) made the problem's one run,
  # so its second step is not needed.
  if [[ $oracle && $tag == *o ]] && ! grep -q "not searched: --oracle-time-limit" "$STATE/$tag.out" &&
    grep -Eq ': exit (0|124), wall' "$STATE/$tag.out"; then
    touch "$STATE/${tag%o}.done" && say "-- ${tag%o}: not needed (the oracle finished and the problem was searched)"
  fi
}
step_camp016() { campaign 016_gqa_ragged_prefill_causal_h32_kv4_d128 camp016 6 110 ""; }
step_camp018_oracle() { campaign 018_mla_paged_decode_h16_ckv512_kpe64_ps1 camp018o 4 450 $(( $(left) - 90 )); }
step_camp018() { campaign 018_mla_paged_decode_h16_ckv512_kpe64_ps1 camp018 4 450 ""; }
step_camp019_oracle() { campaign 019_mla_paged_prefill_causal_h16_ckv512_kpe64_ps1 camp019o 4 450 $(( $(left) - 90 )); }
step_camp019() { campaign 019_mla_paged_prefill_causal_h16_ckv512_kpe64_ps1 camp019 4 450 ""; }
step_camp014_oracle() { campaign 014_gqa_paged_prefill_causal_h32_kv4_d128_ps1 camp014o 6 300 $(( $(left) - 90 )); }
step_camp014() { campaign 014_gqa_paged_prefill_causal_h32_kv4_d128_ps1 camp014 6 300 ""; }
step_camp012() { campaign 012_gqa_paged_decode_h32_kv4_d128_ps1 camp012 6 300 $(( $(left) - 60 )); }

need() {
  case $1 in
    mla_ab) echo 300 ;;
    epi_ab) echo 330 ;;
    mla_trace) echo 160 ;;
    dec_trace) echo 210 ;;
    dec_ab) echo 250 ;;
    map_ab) echo 180 ;;
    gemm_diag) echo 100 ;;
    gemm_m16294) echo 150 ;;
    gqa_ab) echo 300 ;;
    camp016) echo 260 ;;
    camp012) echo 300 ;;
    raf) echo 90 ;;
    stream_order) echo 170 ;;
    *_oracle) echo 400 ;;  # its sets stay made when ORACLE_S ends it: the next step goes on from them
    *) echo 540 ;;
  esac
}

say "=== queue.sh $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); $(git rev-parse --short HEAD 2>/dev/null); steps done before: $(ls "$STATE"/*.done 2>/dev/null | xargs -rn1 basename | tr '\n' ' ')"
for s in $STEPS; do
  [[ -f $STATE/$s.done ]] && continue
  declare -F "step_$s" >/dev/null || { say "unknown step $s"; continue; }
  if (($(left) < $(need "$s"))); then
    say "-- $s needs $(need "$s") s, $(left) s left"
    [[ ${SKIP_BIG:-0} == 1 ]] && continue
    break
  fi
  t0=$(date +%s)
  say "-- $s start ($(left) s left)"
  "step_$s"
  rc=$?
  ((rc == 0)) && touch "$STATE/$s.done"
  say "-- $s exit $rc, $(( $(date +%s) - t0 )) s"
done
say "=== end, $(left) s of $DEADLINE left; done: $(ls "$STATE"/*.done 2>/dev/null | xargs -rn1 basename | tr '\n' ' ')"
