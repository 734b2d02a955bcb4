#!/usr/bin/env bash
# The sanitizer run (scripts/test.sh calls it after the main suite; docs/testing.md):
#  1. the unit tests, the integration suite against the emulator and the emulator's own checks,
#     built with AddressSanitizer and UndefinedBehaviorSanitizer (the debug-asan preset's flags,
#     at -O1 so that the suite runs in minutes); any report fails the run;
#  2. every libFuzzer target (fuzz/, clang) for FUZZ_SECONDS each (default 30) from its seed
#     corpus; a crash, a leak or a sanitizer report fails the run.
# The real-engine suite and the Node client checks run in the main suite only (they exercise
# the same proxy code paths; under ASan they would add minutes, not findings).
#   scripts/sanitize.sh                  both parts
#   SKIP_FUZZ=1 scripts/sanitize.sh      the sanitized suite only
set -euo pipefail
cd "$(dirname "$0")/.."

ASAN_DIR=${ASAN_BUILD_DIR:-build-asan}
FUZZ_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
JOBS=${JOBS:-$(nproc)}

# halt_on_error: the first report ends the process, so a test sees it as a failure; UBSan the
# same (its default is to print and go on).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

echo "sanitize: building $ASAN_DIR (ASan + UBSan)"
cmake -S . -B "$ASAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DINFERGATE_SANITIZE=ON \
      -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" >/dev/null
cmake --build "$ASAN_DIR" -j "$JOBS"
(cd "$ASAN_DIR" && ctest --output-on-failure --timeout 900 \
    -E '^(real_engine|clients_.*)$')

if [ -n "${SKIP_FUZZ:-}" ]; then
  exit 0
fi
echo "sanitize: building the fuzz targets in $FUZZ_DIR (clang, libFuzzer + ASan)"
cmake -S . -B "$FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DINFERGATE_BUILD_FUZZERS=ON -DINFERGATE_BUILD_TESTS=OFF >/dev/null
targets=(framing_fuzz codec_fuzz config_fuzz passthrough_fuzz)
cmake --build "$FUZZ_DIR" -j "$JOBS" --target "${targets[@]}"
for t in "${targets[@]}"; do
  name=${t%_fuzz}
  scratch=$(mktemp -d)
  dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
  echo "sanitize: $t for ${FUZZ_SECONDS}s"
  # The scratch corpus first: libFuzzer writes new inputs into the first directory.
  "$FUZZ_DIR/fuzz/$t" "${dict[@]}" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
      -artifact_prefix="$scratch/" "$scratch" "fuzz/corpus/$name" 2>"$scratch/log" || {
    tail -50 "$scratch/log"
    echo "sanitize: $t found a failure; the input is in $scratch"
    exit 1
  }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$scratch/log" | sed "s/^/  $t /"
  rm -rf "$scratch"
done
echo "sanitize: all clean"
