#!/usr/bin/env bash
# Builds the real llama.cpp server (llama-server) and the tiny deterministic model the
# real-engine tests run against (tests/integration/test_real_engine.py, docs/testing.md).
# Both land in the build tree and are cached: a second run for the same source, options and
# model script does nothing.
#
#   scripts/real_engine.sh            -> $BUILD_DIR/engine/llama-server, .../tiny-llama-chatml.gguf
#
# The source is taken, in this order, from:
#   $LLAMA_CPP_SRC                   a llama.cpp checkout or extracted tree (used in place), or a
#                                    tarball of one
#   $INFERGATE_ENGINES_DIR/$TARBALL  an engines folder given explicitly
#   <repo>/../shared/engines/$TARBALL, /work/shared/engines/$TARBALL
#   a clone of the pinned commit of github.com/ggml-org/llama.cpp
# When none works (no network in CI, no shared folder) it says so and exits 0: the rest of the
# suite runs and the real-engine tests report themselves skipped. Any other failure (the source
# is there but does not build, the model cannot be written) fails the script.
#
# llama.cpp's code is never part of this repository: it is read at build time only.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
COMMIT=c392e5094deaf2d1a7c18683214f007fad3fe42b
TARBALL=llama.cpp-${COMMIT:0:8}.tar.xz
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$REPO/$BUILD_DIR ;; esac
ENGINE_DIR=$BUILD_DIR/engine
SERVER=$ENGINE_DIR/llama-server
MODEL=$ENGINE_DIR/tiny-llama-chatml.gguf

say() { echo "real_engine: $*"; }

skip() {
    say "$*"
    say "the real-engine tests (ctest -R real_engine) will be SKIPPED; set LLAMA_CPP_SRC to a"
    say "llama.cpp tree at $COMMIT (or INFERGATE_ENGINES_DIR to a folder holding $TARBALL)"
    exit 0
}

# Portable instead of -march=native: AVX2/FMA/F16C (what ggml enables when GGML_NATIVE is off)
# run on any x86-64 machine of the last decade, so a cached build tree or ccache entry stays
# valid when it moves to another machine, and every machine computes the same floats. A CPU
# without them gets a native build instead (the stamp records which).
cmake_options() {
    local opts=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
                -DBUILD_SHARED_LIBS=OFF -DGGML_CCACHE=OFF)
    if [ "$(uname -m)" = x86_64 ]; then
        local flags
        flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
        if [[ " $flags " == *" avx2 "* && " $flags " == *" fma "* && " $flags " == *" f16c "* ]]
        then
            opts+=(-DGGML_NATIVE=OFF)
        else
            opts+=(-DGGML_NATIVE=ON)
        fi
    else
        opts+=(-DGGML_NATIVE=ON)
    fi
    if command -v ccache >/dev/null 2>&1; then
        opts+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    if command -v ninja >/dev/null 2>&1; then
        opts+=(-G Ninja)
    fi
    printf '%s\n' "${opts[@]}"
}

# Finds the source; sets SRC (a directory) and SOURCE_ID (what the cached build was made from).
find_source() {
    if [ -n "${LLAMA_CPP_SRC:-}" ]; then
        if [ -d "$LLAMA_CPP_SRC" ]; then
            [ -f "$LLAMA_CPP_SRC/examples/server/server.cpp" ] ||
                { say "LLAMA_CPP_SRC=$LLAMA_CPP_SRC has no examples/server/server.cpp"; exit 1; }
            SRC=$(cd "$LLAMA_CPP_SRC" && pwd)
            # A tree may change under us: let ninja decide what to rebuild.
            SOURCE_ID="dir:$SRC"
            return
        fi
        if [ -f "$LLAMA_CPP_SRC" ]; then
            extract "$LLAMA_CPP_SRC"
            return
        fi
        say "LLAMA_CPP_SRC=$LLAMA_CPP_SRC is neither a directory nor a file"
        exit 1
    fi
    local candidates=()
    [ -n "${INFERGATE_ENGINES_DIR:-}" ] && candidates+=("$INFERGATE_ENGINES_DIR/$TARBALL")
    candidates+=("$REPO/../shared/engines/$TARBALL" "/work/shared/engines/$TARBALL")
    local c
    for c in "${candidates[@]}"; do
        if [ -f "$c" ]; then
            extract "$(realpath "$c")"
            return
        fi
    done
    clone || skip "no llama.cpp source: LLAMA_CPP_SRC is unset, $TARBALL is in none of" \
                  "${candidates[*]}, and cloning github.com/ggml-org/llama.cpp failed (no network?)"
}

# Extracts a tarball into the build tree once per tarball content. The shared one has the tree
# at its root; an archive with one top folder (GitHub's) works too.
extract() {
    local tarball=$1 sum
    sum=$(sha256sum "$tarball" | cut -d' ' -f1)
    SRC=$ENGINE_DIR/src
    SOURCE_ID="tar:$sum"
    if [ "$(cat "$ENGINE_DIR/src.stamp" 2>/dev/null)" != "$SOURCE_ID" ]; then
        say "extracting $tarball"
        rm -rf "$SRC" "$ENGINE_DIR/src.stamp"
        mkdir -p "$SRC"
        tar -xf "$tarball" -C "$SRC"
        echo "$SOURCE_ID" >"$ENGINE_DIR/src.stamp"
    fi
    if [ ! -f "$SRC/examples/server/server.cpp" ]; then
        local inner=("$SRC"/*/examples/server/server.cpp)
        [ -f "${inner[0]}" ] || { say "$tarball holds no examples/server/server.cpp"; exit 1; }
        SRC=${inner[0]%/examples/server/server.cpp}
    fi
}

clone() {
    command -v git >/dev/null 2>&1 || return 1
    SRC=$ENGINE_DIR/src
    SOURCE_ID="git:$COMMIT"
    if [ "$(cat "$ENGINE_DIR/src.stamp" 2>/dev/null)" = "$SOURCE_ID" ] &&
       [ -f "$SRC/examples/server/server.cpp" ]; then
        return 0
    fi
    say "cloning github.com/ggml-org/llama.cpp at $COMMIT"
    rm -rf "$SRC" "$ENGINE_DIR/src.stamp"
    mkdir -p "$SRC"
    # GitHub serves a single commit by id: no full history needed.
    if git -C "$SRC" init -q &&
       GIT_TERMINAL_PROMPT=0 timeout 600 git -C "$SRC" fetch -q --depth 1 \
           https://github.com/ggml-org/llama.cpp "$COMMIT" &&
       git -C "$SRC" checkout -q FETCH_HEAD; then
        echo "$SOURCE_ID" >"$ENGINE_DIR/src.stamp"
        return 0
    fi
    rm -rf "$SRC"
    return 1
}

build_server() {
    local opts stamp
    mapfile -t opts < <(cmake_options)
    # The recipe is part of the stamp: a change to this script rebuilds (ninja and ccache make
    # that quick).
    stamp="$SOURCE_ID ${opts[*]} $(sha256sum "$REPO/scripts/real_engine.sh" | cut -d' ' -f1)"
    if [[ "$SOURCE_ID" != dir:* ]] && [ -x "$SERVER" ] &&
       [ "$(cat "$ENGINE_DIR/llama-server.stamp" 2>/dev/null)" = "$stamp" ]; then
        say "llama-server is up to date ($SERVER)"
        return
    fi
    say "building llama-server from $SRC (a few minutes on 2 cores)"
    # llama.cpp stamps its version from `git rev-parse` in its tree; an extracted tree inside
    # this checkout would be stamped with infergate's commit. Git looks no higher than SRC.
    export GIT_CEILING_DIRECTORIES
    GIT_CEILING_DIRECTORIES=$(dirname "$SRC")
    cmake -S "$SRC" -B "$ENGINE_DIR/build" "${opts[@]}" >"$ENGINE_DIR/configure.log" 2>&1 ||
        { tail -40 "$ENGINE_DIR/configure.log"; say "configuring llama.cpp failed"; exit 1; }
    # Its compiler warnings are llama.cpp's, not ours: kept in build.log, shown on failure.
    nice cmake --build "$ENGINE_DIR/build" --target llama-server -j "${JOBS:-$(nproc)}" \
        >"$ENGINE_DIR/build.log" 2>&1 ||
        { tail -60 "$ENGINE_DIR/build.log"; say "building llama-server failed"; exit 1; }
    cp "$ENGINE_DIR/build/bin/llama-server" "$SERVER.tmp"
    mv "$SERVER.tmp" "$SERVER"
    echo "$stamp" >"$ENGINE_DIR/llama-server.stamp"
    say "built $SERVER"
}

# Debian's interpreter: python3-numpy, -sentencepiece and -yaml live in its dist-packages,
# which another python3 on PATH (pyenv) does not search.
model_python() {
    if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi
}

make_model() {
    local py stamp
    py=$(model_python)
    stamp="$SOURCE_ID $(sha256sum "$REPO/scripts/make_tiny_model.py" | cut -d' ' -f1)"
    if [[ "$SOURCE_ID" != dir:* ]] && [ -f "$MODEL" ] &&
       [ "$(cat "$ENGINE_DIR/model.stamp" 2>/dev/null)" = "$stamp" ]; then
        say "the tiny model is up to date ($MODEL)"
        return
    fi
    PYTHONPATH="$SRC/gguf-py${PYTHONPATH:+:$PYTHONPATH}" "$py" "$REPO/scripts/make_tiny_model.py" \
        --vocab "$SRC/models/ggml-vocab-llama-spm.gguf" --out "$MODEL"
    echo "$stamp" >"$ENGINE_DIR/model.stamp"
}

mkdir -p "$ENGINE_DIR"
find_source
build_server
make_model
