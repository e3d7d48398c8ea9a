#!/usr/bin/env bash
# The llama.cpp engine's tests (`--features local-llm`), which CI leaves
# out for time: llama.cpp is built from source (cmake, clang and
# libclang-dev, installed here when missing; about 15 minutes on two
# cores), then its tests and the cross-engine test run the default model
# (fetched into the cache when missing). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v clang >/dev/null || need+=(clang libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing ${need[*]} (llama.cpp's build tools)" >&2
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

model="$(cargo run --release --quiet -- model pull 1.5b | tail -1)"
HERMES_TEST_MODEL_PATH="$model" HERMES_REQUIRE_LOCAL_MODEL=1 \
  exec cargo test --release --features local-llm --test local_llm --test native_llm "$@"
