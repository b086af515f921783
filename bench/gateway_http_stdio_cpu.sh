#!/usr/bin/env bash
# CPU per call of the HTTP gateway and of the stdio upstream behind it, in the same run
# (issue 24; the deployment most gateways see: stdio servers behind one Streamable HTTP
# front door): `mcpwire serve` listening on HTTP in front of `mcpwire_echo` over stdio —
# one shared child (SHARED=true, the default) or one per downstream session — driven by
# httpload (CLIENTS stateful sessions, one request in flight each, N requests). The
# gateway's CPU and its children's (the upstreams') are read from /proc as it stops
# (bench/cpu_of.sh).
#
# Cases: `relay` (the stack as configured), `general` (the same with `relay = false` on the
# backend: every call takes the general path). STACK=full adds
# API keys, a policy, per-identity and per-tool rate limits and the metrics listener.
#
#   bench/gateway_http_stdio_cpu.sh [MCPWIRE_BINARY]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
bench_settings "${1:-}"
trap 'rm -rf "$out"' EXIT
[[ -n "${BUSY_POLL_US:-}" ]] && export MCPWIRE_BUSY_POLL_US=$BUSY_POLL_US

config() { bench_gateway_toml "command = \"$echo_bin\"" "$1" "$out/$1.toml"; }

headers=()
[[ "${STACK:-}" == full ]] && headers=(--header "authorization: Bearer bench-key-0123456789abcdef")
echo "== HTTP gateway in front of a stdio upstream ($clients clients, $n calls, stack ${STACK:-bare}, shared upstream ${SHARED:-true}, load $(cut -d' ' -f1 /proc/loadavg))"
for case in relay general; do
    "$httpload" --runs 1 --clients "$clients" --modes stateful -n "$n" "${headers[@]}" \
        --server "$case=bench/cpu_of.sh $out/$case $bin serve --config $(config "$case") --listen http://127.0.0.1:{port}/mcp" \
        | grep -E 'req/s|rps|stateful' || true
    echo "$case: CPU µs per call: gateway $(us_per_call "$(cat "$out/$case")"), stdio upstream $(us_per_call "$(cat "$out/$case.kids")")"
done
