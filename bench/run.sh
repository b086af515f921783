#!/usr/bin/env bash
# End-to-end stdio benchmark: mcpwire vs rmcp, one `echo` tool each.
#
# Builds the release binaries, then runs loadgen with mcpwire (`mcpwire_echo`: the same single
# tool as rmcp's) as the baseline, rmcp (`rmcp_echo`, rmcp's stdio_pipes() transport), and
# the same tool written with `#[tool]` (`mcpwire_echo --macro`), and `mcpwire demo` (the full
# example catalog, same echo tool), and prints the table:
# calls/s, p50/p99 latency (µs), peak RSS, plus baseline/other ratios per in-flight level K.
#
# Extra arguments go to loadgen, e.g.:
#   bench/run.sh --inflight 1,16,64 -n 100000 --runs 5
#   bench/run.sh --json > results.json
#   bench/run.sh --server-stderr /tmp/servers.log
# Run it on an otherwise idle machine: client and servers share the CPUs. On VMs, K=1 latency is
# dominated by waking idle vCPUs, so it varies with whatever else keeps the CPUs busy.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-target}/release"

cargo build --release -p mcpwire-cli -p mcpwire-bench

exec "$target/loadgen" \
    --server "mcpwire=$target/mcpwire_echo" \
    --server "mcpwire-macro=$target/mcpwire_echo --macro" \
    --server "rmcp=$target/rmcp_echo" \
    --server "mcpwire-demo=$target/mcpwire demo" \
    "$@"
