#!/usr/bin/env bash
# CPU per call of the HTTP gateway and of the Streamable HTTP upstream behind it, in the
# same run (issue 24's first target): `mcpwire serve` listening on HTTP in front of one
# long-running `mcpwire_echo --http`, driven by httpload (CLIENTS stateful sessions, one
# request in flight each, N requests). The upstream's CPU is read from /proc before and
# after each run, the gateway's through bench/cpu_of.sh; the upstream is also called
# directly first (its own CPU per call with nobody in front).
#
# Cases: `floor` (bench/src/bin/http_floor.rs: a bare hyper pass-through on the same runtime,
# hyper connections and allocator — what any hyper-based gateway costs at the least, no MCP),
# `relay` (the stack as configured: calls relayed as raw frames, each POSTed as it
# comes), `general` (the same with `relay = false` on the backend: every call takes the
# general path). STACK=full adds API keys, a policy,
# per-identity and per-tool rate limits and the metrics listener. SHARED=false gives each
# downstream session an upstream session of its own. UPSTREAMS=2 configures a second member
# (the same upstream), so every tool is exposed prefixed and called as `echo_echo`.
# HTTP_THREADS=N serves the gateway's listener on N threads of its own (`[server] http_threads`;
# default: one per worker; 1: on the workers). UPSTREAM=demo puts `mcpwire demo --transport
# http` behind it instead of `mcpwire_echo --http` (the issue's own baseline); UPSTREAM=rmcp,
# `rmcp_http_echo` (rmcp's server, the same tool).
#
#   bench/gateway_http_http_cpu.sh [MCPWIRE_BINARY]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
bench_settings "${1:-}"
[[ -n "${BUSY_POLL_US:-}" ]] && export MCPWIRE_BUSY_POLL_US=$BUSY_POLL_US

start_http_echo "$echo_bin"
upstream=$upstream_pid
trap 'kill $upstream 2>/dev/null || true; rm -rf "$out"' EXIT

config() { bench_gateway_toml "url = \"http://127.0.0.1:$upstream_port/mcp\"" "$1" "$out/$1.toml"; }

headers=()
[[ "${UPSTREAMS:-1}" == 2 ]] && headers+=(--tool echo_echo)
[[ "${STACK:-}" == full ]] && headers=(--header "authorization: Bearer bench-key-0123456789abcdef")
echo "== HTTP gateway in front of an HTTP upstream ($clients clients, $n calls, stack ${STACK:-bare}, shared upstream ${SHARED:-true}, ${UPSTREAMS:-1} upstream(s), load $(cut -d' ' -f1 /proc/loadavg))"
"$httpload" --runs 1 --clients "$clients" --modes stateful -n "$n" \
    --server "direct=bench/cpu_of.sh $out/direct $(http_upstream_cmd '{port}')" | grep -E 'req/s|rps|stateful' || true
read -r user sys < "$out/direct.split"
echo "direct: CPU µs per call: the server alone $(us_per_call "$(cat "$out/direct")") (user $(us_per_call "$user"), system $(us_per_call "$sys"))"
floor="${HTTP_FLOOR:-$target/http_floor}"
for case in floor relay general; do
    before=$(proc_cpu "$upstream")
    if [[ "$case" == floor ]]; then
        [[ -x "$floor" && "${UPSTREAMS:-1}" == 1 ]] || continue
        server="$floor --listen {port} --upstream 127.0.0.1:$upstream_port"
        args=()
    else
        server="$bin serve --config $(config "$case") --listen http://127.0.0.1:{port}/mcp"
        args=("${headers[@]}")
    fi
    "$httpload" --runs 1 --clients "$clients" --modes stateful -n "$n" "${args[@]}" \
        --server "$case=bench/cpu_of.sh $out/$case $server" \
        | grep -E 'req/s|rps|stateful' || true
    after=$(proc_cpu "$upstream")
    up=$(awk -v a="$after" -v b="$before" 'BEGIN { print a - b }')
    read -r user sys < "$out/$case.split"
    echo "$case: CPU µs per call: $([[ $case == floor ]] && echo pass-through || echo gateway) $(us_per_call "$(cat "$out/$case")") (user $(us_per_call "$user"), system $(us_per_call "$sys")), HTTP upstream $(us_per_call "$up")"
done
