#!/usr/bin/env bash
# CPU per call of the HTTP gateway and of the upstream behind it, in the same run (issue 24):
# `mcpwire serve` listening on Streamable HTTP in front of one Streamable HTTP upstream
# (`mcpwire_echo --http`), driven by httpload (stateful sessions by default, CLIENTS clients
# with one request in flight each, N requests). The upstream's CPU is read from /proc
# before and after the run; the gateway's through bench/cpu_of.sh. Also the upstream called
# directly (its own CPU per call when nobody is in front of it). Extra gateway flags in
# GATEWAY_FLAGS (e.g. an API key, --metrics-listen).
#
#   bench/gateway_http_cpu.sh [MCPWIRE_BINARY]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
bench_settings "${1:-}"
mode="${MODE:-stateful}"
# Busy polling (on by default) spins while waiting: CPU per call with it on counts the spin.
[[ -n "${BUSY_POLL_US:-}" ]] && export MCPWIRE_BUSY_POLL_US=$BUSY_POLL_US

start_http_echo "$echo_bin"
upstream=$upstream_pid
port=$upstream_port
trap 'kill $upstream 2>/dev/null || true; rm -rf "$out"' EXIT

echo "== direct: the upstream server alone"
"$httpload" --runs 1 --clients "$clients" --modes "$mode" -n "$n" \
    --server "direct=bench/cpu_of.sh $out/direct $echo_bin --http {port}" | grep -E 'req/s|rps|stateful|stateless' || true
echo "== through the gateway"
before=$(proc_cpu "$upstream")
"$httpload" --runs 1 --clients "$clients" --modes "$mode" -n "$n" \
    --server "gateway=bench/cpu_of.sh $out/gateway $bin serve --upstream echo=http://127.0.0.1:$port/mcp --listen http://127.0.0.1:{port}/mcp ${GATEWAY_FLAGS:-}" \
    | grep -E 'req/s|rps|stateful|stateless' || true
after=$(proc_cpu "$upstream")
up=$(awk -v a="$after" -v b="$before" 'BEGIN { print a - b }')
echo "CPU µs per call ($mode, $clients clients, $n calls, load $(cut -d' ' -f1 /proc/loadavg)):" \
    "direct server $(us_per_call "$(cat "$out/direct")"), upstream behind the gateway $(us_per_call "$up")," \
    "gateway $(us_per_call "$(cat "$out/gateway")")"
