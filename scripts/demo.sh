#!/usr/bin/env bash
# Sets up and runs infergate's main job with its embedded default: a demo stack of the built-in
# backend emulator (vLLM-flavoured, on :8000) with infergate in front on :30000, so old SGLang
# scripts, OpenAI, Ollama, TGI, llama.cpp and Anthropic clients all work against it. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BIN=${BUILD_DIR:-build}
"$BIN/emulator/infergate-emulator" --listen 127.0.0.1:8000 --dialect openai \
    --model demo-model --ttft-ms 50 --itl-ms 20 --quiet > /dev/null &
EMU=$!
trap 'kill $EMU 2>/dev/null || true' EXIT
cat <<'TXT'

infergate demo: emulator (vLLM dialect) on 127.0.0.1:8000, infergate on 0.0.0.0:30000. Try:
  curl -s localhost:30000/generate -d '{"text":"Hello","sampling_params":{"max_new_tokens":8}}'
  curl -sN localhost:30000/generate -d '{"text":"Hello","sampling_params":{"max_new_tokens":8},"stream":true}'
  curl -s localhost:30000/v1/chat/completions -d '{"model":"demo-model","messages":[{"role":"user","content":"Hi"}],"max_tokens":8}'
  curl -sN localhost:30000/api/chat -d '{"model":"demo-model","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":8}}'
  curl -sN localhost:30000/generate_stream -d '{"inputs":"Hello","parameters":{"max_new_tokens":8}}'
  curl -sN localhost:30000/v1/messages -H 'anthropic-version: 2023-06-01' -d '{"model":"demo-model","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Hi"}]}'

TXT
"$BIN/proxy/infergate" --upstream http://127.0.0.1:8000 --listen 0.0.0.0:30000
