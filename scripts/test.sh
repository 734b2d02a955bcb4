#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite: unit tests, integration tests
# against the emulator, the real engine, the real-client checks and the hostile battery; then
# the sanitizer run (scripts/sanitize.sh: the unit and integration suites under ASan + UBSan,
# and every fuzz target for FUZZ_SECONDS). CI runs exactly this.
#   scripts/test.sh                 everything
#   SKIP_SANITIZE=1 scripts/test.sh the main suite only (a quick local run)
#   scripts/test.sh -R integration  arguments go to ctest (the sanitizer run is then skipped)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 900 "$@")
if [ -z "${SKIP_SANITIZE:-}" ] && [ $# -eq 0 ]; then
  scripts/sanitize.sh
fi
