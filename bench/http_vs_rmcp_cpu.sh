#!/usr/bin/env bash
# The Streamable HTTP listener against rmcp with CPU per call (issue 24's fourth target):
# `mcpwire_echo --http`, optionally a second build of it (BASE_ECHO=path: an A/B), and
# `rmcp_http_echo`, driven by httpload in one run (CLIENTS clients, N requests, MODE
# stateful or stateless); each server's CPU from /proc via bench/cpu_of.sh. DEMO=1 adds
# `mcpwire demo --transport http` (the binary as shipped: its listener on threads of its
# own, one per core).
#
#   bench/http_vs_rmcp_cpu.sh [stateful|stateless]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
bench_settings ""
mode="${1:-stateful}"
servers=(--server "new=bench/cpu_of.sh $out/new $echo_bin --http {port}")
[[ -n "${BASE_ECHO:-}" ]] && servers+=(--server "base=bench/cpu_of.sh $out/base $BASE_ECHO --http {port}")
[[ -n "${DEMO:-}" ]] && servers+=(--server "demo=bench/cpu_of.sh $out/demo $bin demo --transport http --port {port}")
servers+=(--server "rmcp=bench/cpu_of.sh $out/rmcp $target/rmcp_http_echo {port}")
"$httpload" --runs 1 --clients "$clients" --modes "$mode" -n "$n" "${servers[@]}" | grep -E "server|$mode"
for s in new base demo rmcp; do
    [[ -f "$out/$s" ]] && echo "$s: CPU µs per call $(us_per_call "$(cat "$out/$s")")"
done
rm -rf "$out"
