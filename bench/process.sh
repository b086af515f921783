#!/usr/bin/env bash
# Tool-process host overhead: mcpwire's native echo vs the same echo in a tool process (the
# Envelope protocol) hosted by `mcpwire run` (the tiny Rust peer `envelope_echo`, and the
# protomcp Python SDK's echo tool from tests/python/protomcp_tools/kitchen.py), same loadgen
# run. The p50 difference between `native` and `process` is the host's overhead per call.
#
# Extra arguments go to loadgen, e.g.: bench/process.sh -n 20000 --runs 3 --inflight 1,16
# The Python case needs target/venv with protomcp (scripts/test.sh installs it).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-target}/release"
py="${PROTOMCP_PYTHON:-$PWD/target/venv/bin/python}"

cargo build --release -p mcpwire-cli -p mcpwire-bench

# `process` blocks in read() like every SDK; `process-spin` polls its socket for 100 µs first,
# so its p50 minus native's is the host's own overhead (without the peer's wake-up).
servers=(
    --server "native=$target/mcpwire_echo"
    --server "process=$target/mcpwire run $target/envelope_echo"
    --server "process-spin=$target/mcpwire run --runtime '$target/envelope_echo --spin-us=100' $target/envelope_echo"
)
if [ -x "$py" ] && "$py" -c 'import protomcp' 2>/dev/null; then
    servers+=(--server "python-sdk=$target/mcpwire run --runtime $py tests/python/protomcp_tools/kitchen.py")
fi
exec "$target/loadgen" "${servers[@]}" "$@"
