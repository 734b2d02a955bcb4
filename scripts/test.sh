#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite: unit tests, integration tests
# against the emulator, and the real-client checks. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 "$@"
