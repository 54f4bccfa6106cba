#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] [--grow] [--replay] — builds the libFuzzer targets with clang in build-fuzz/
# (ASan + UBSan, kernelarc_core instrumented too), replays each seed corpus in fuzz/corpus/<target>/
# as a regression test, then fuzzes each target for SECONDS (default 30). New interesting inputs go
# to build-fuzz/new-corpus/<target>/ unless --grow is given, which adds them to fuzz/corpus/<target>/.
# --replay only replays the corpora (what CI runs). Crashes are written to build-fuzz/artifacts/; the
# script exits non-zero if any target fails.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=30
grow=0
replay=0
for a in "$@"; do
  case "$a" in
    --grow) grow=1 ;;
    --replay) replay=1 ;;
    ''|*[!0-9]*) echo "usage: fuzz/run.sh [SECONDS] [--grow] [--replay]" >&2; exit 2 ;;
    *) secs="$a" ;;
  esac
done

build=build-fuzz
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKA_BUILD_FUZZERS=ON -DKA_WITH_CUDA=OFF -DKA_BUILD_TESTS=OFF \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" >/dev/null
targets=(fuzz_definition fuzz_expr fuzz_safetensors)
ninja -C "$build" "${targets[@]}"

declare -A max_len=([fuzz_definition]=8192 [fuzz_expr]=256 [fuzz_safetensors]=4096)
declare -A dict=([fuzz_definition]=definition [fuzz_expr]=expr [fuzz_safetensors]=safetensors)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$build/artifacts"
status=0
for t in "${targets[@]}"; do
  bin="$build/fuzz/$t"
  corpus="fuzz/corpus/$t"
  echo "== $t: replaying $(find "$corpus" -type f | wc -l) corpus inputs"
  if ! "$bin" -runs=0 -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$build/artifacts/$t-replay-" "$corpus" \
      >"$build/$t.replay.log" 2>&1; then
    echo "!! $t: a corpus input fails (see $build/$t.replay.log)"; tail -30 "$build/$t.replay.log"; status=1; continue
  fi
  [ "$replay" = 1 ] && continue
  if [ "$grow" = 1 ]; then dirs=("$corpus"); else
    new="$build/new-corpus/$t"; mkdir -p "$new"; dirs=("$new" "$corpus"); fi
  echo "== $t: fuzzing for ${secs}s"
  if ! "$bin" -max_total_time="$secs" -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=2048 \
      -dict="fuzz/dict/${dict[$t]}.dict" -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 \
      "${dirs[@]}" >"$build/$t.fuzz.log" 2>&1; then
    echo "!! $t: crash (see $build/$t.fuzz.log and $build/artifacts/)"; tail -40 "$build/$t.fuzz.log"; status=1; continue
  fi
  grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)" "$build/$t.fuzz.log" || true
done
exit "$status"
