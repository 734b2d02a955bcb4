#!/usr/bin/env bash
# The sanitizer run; scripts/test.sh (CI) calls it after the main suite (docs/testing.md):
#  1. infergate and the unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer
#     (the debug-asan preset: -O0, which compiles three to four times faster than -O1 under
#     ASan), then the unit tests and the integration suite (tests/integration, the ASan
#     infergate in front of the main build's emulator) under them: any report fails the run;
#  2. every libFuzzer target (fuzz/, clang) for FUZZ_SECONDS each (default 20) from its seed
#     corpus; a crash, a leak or a sanitizer report fails the run.
# Under ASan the latency-histogram checks of test_prometheus are skipped (INFERGATE_SANITIZED:
# the sanitizer's slowdown is not the product's timing). Left to the main suite: the emulator's own checks (they test the emulator, built without
# sanitizers here), the real-engine suite, the Node clients and the hostile battery (the same
# proxy paths; under ASan minutes more, not findings).
#   scripts/sanitize.sh                  both parts (needs the main build: scripts/setup.sh)
#   SKIP_FUZZ=1 scripts/sanitize.sh      the sanitized suites only
#   SKIP_SANITIZED_SUITE=1 ...           the fuzz targets only
set -euo pipefail
cd "$(dirname "$0")/.."

MAIN_DIR=${BUILD_DIR:-build}
ASAN_DIR=${ASAN_BUILD_DIR:-build-asan}
FUZZ_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
JOBS=${JOBS:-$(nproc)}

# halt_on_error: the first report ends the process, so a test sees it as a failure; UBSan the
# same (its default is to print and go on).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

if [ -z "${SKIP_SANITIZED_SUITE:-}" ]; then
  emulator=$(absolute "$MAIN_DIR/emulator/infergate-emulator")
  if [ ! -x "$emulator" ]; then
    echo "sanitize: $emulator is missing: build the main tree first (scripts/setup.sh)" >&2
    exit 1
  fi
  echo "sanitize: building $ASAN_DIR (ASan + UBSan, -O0): infergate and the unit tests"
  # The debug-asan preset's settings, in a directory of one's choice (CMAKE_CXX_FLAGS_DEBUG
  # given so that a cache from an older -O1 configuration does not linger).
  cmake -S . -B "$ASAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DINFERGATE_SANITIZE=ON \
        -DCMAKE_CXX_FLAGS_DEBUG=-g >/dev/null
  cmake --build "$ASAN_DIR" -j "$JOBS" --target infergate translators_tests config_tests proxy_tests
  for t in translators_tests config_tests proxy_tests; do
    echo "sanitize: $t"
    "$ASAN_DIR/tests/$t"
  done
  echo "sanitize: the integration suite against the ASan infergate"
  started=$SECONDS
  INFERGATE_BIN=$(absolute "$ASAN_DIR/proxy/infergate") INFERGATE_EMULATOR_BIN=$emulator \
    INFERGATE_REAL_ENGINE_SEPARATE=1 INFERGATE_SANITIZED=1 \
    python3 -m unittest discover -s tests/integration -p "test_*.py"
  echo "sanitize: integration suite clean in $((SECONDS - started)) s"
fi

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
