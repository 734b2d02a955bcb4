#!/usr/bin/env bash
# Installs every Debian 12 package infergate needs to build and test, then builds it.
# Safe to run again: apt and the build are incremental.
#   scripts/setup.sh            install + build (RelWithDebInfo) into ./build
#   SKIP_APT=1 scripts/setup.sh build only
#   SKIP_REAL_ENGINE=1 ...      without the real llama.cpp engine (scripts/real_engine.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git
  # libraries (never vendored, never downloaded at build time)
  libboost1.81-dev rapidjson-dev prometheus-cpp-dev libyaml-cpp-dev doctest-dev libssl-dev
  # tests: integration harness, real clients, real Prometheus
  python3 python3-aiohttp curl ca-certificates openssl prometheus
  # tests/browser: a real headless browser calling infergate from another origin (CORS)
  chromium
  # tests/deploy/check_manifests.py: the Kubernetes manifests (python3-yaml is below)
  yamllint
  # the real-engine tests' model, written with llama.cpp's gguf-py (scripts/make_tiny_model.py)
  python3-numpy python3-sentencepiece python3-yaml
  # the fuzz targets (scripts/sanitize.sh): libFuzzer ships with clang's runtime
  clang libclang-rt-14-dev
  # benchmarks and baselines
  nginx-light haproxy wrk nghttp2-client valgrind
)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -z "${SKIP_APT:-}" ]; then
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ! command -v node >/dev/null 2>&1; then missing+=(nodejs npm); fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
# 2 cores are the norm here; more jobs only thrash memory on the Asio/Beast unit.
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"

# The real llama.cpp server and its tiny model for the real-engine tests, built once into
# $BUILD_DIR/engine (a few minutes the first time); without llama.cpp's source it says so and the
# tests are skipped.
if [ -z "${SKIP_REAL_ENGINE:-}" ]; then
  BUILD_DIR="$BUILD_DIR" scripts/real_engine.sh
fi

# The real client libraries the tests drive (pinned in tests/clients/package-lock.json).
if [ -f tests/clients/package-lock.json ] && [ -z "${SKIP_NPM:-}" ]; then
  (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "setup: built $BUILD_DIR/proxy/infergate and $BUILD_DIR/emulator/infergate-emulator"
