#!/usr/bin/env bash
# The Streamable HTTP listener against rmcp, driven by wrk (a C load driver: an independent
# client that costs a few µs of CPU per request where httpload costs 23–35, so on two
# cores the servers, not the driver, decide requests/s). `mcpwire_echo --http`, optionally
# a second build (BASE_ECHO=path), `mcpwire demo --transport http` (DEMO=1), the floor of
# any hyper server here (FLOOR=1: `http_floor --echo` sends each body back, no JSON read) and
# `rmcp_http_echo`, each alone in turn, ROUNDS times alternated: CLIENTS connections
# (default 50) for SECS seconds (default 10) on WRK_THREADS driver threads (default 2),
# MODE stateless (2026-07-28) or stateful (2025-11-25: CLIENTS sessions opened first,
# requests take them round-robin). Per server and round: requests/s, p50/p99, failed
# answers (every answer is checked for the echoed text), and the server's CPU per call
# (user + system from /proc over the run's requests). Needs `wrk` (apt-get install wrk).
#
#   bench/http_vs_rmcp_wrk.sh [stateless|stateful]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v wrk > /dev/null || { echo "http_vs_rmcp_wrk: wrk is required (apt-get install wrk)" >&2; exit 2; }
source bench/lib.sh
bench_settings ""
mode="${1:-stateless}"
secs="${SECS:-10}"
rounds="${ROUNDS:-2}"
threads="${WRK_THREADS:-2}"
names=(new)
declare -A cmd=([new]="$echo_bin --http {port}")
[[ -n "${BASE_ECHO:-}" ]] && names+=(base) && cmd[base]="$BASE_ECHO --http {port}"
[[ -n "${DEMO:-}" ]] && names+=(demo) && cmd[demo]="$bin demo --transport http --port {port}"
[[ -n "${FLOOR:-}" ]] && names+=(floor) && cmd[floor]="$target/http_floor --listen {port} --echo"
names+=(rmcp)
cmd[rmcp]="$target/rmcp_http_echo {port}"

run_one() { # $1 = name
    local port pid sessions=() before after line
    port=$(free_port)
    # shellcheck disable=SC2086 # the command's words
    ${cmd[$1]//\{port\}/$port} > /dev/null 2>&1 &
    pid=$!
    wait_for_port "$port" || { echo "$1 did not start on port $port" >&2; return 1; }
    if [[ "$mode" == stateful && "$1" == floor ]]; then
        sessions=(floor-has-no-sessions) # the same request, with a session id it ignores
    elif [[ "$mode" == stateful ]]; then
        mapfile -t sessions < <(python3 bench/wrk/sessions.py "$port" "$clients")
    fi
    # Warm-up, then the measured run.
    wrk -t "$threads" -c "$clients" -d 1 -s bench/wrk/mcp_echo.lua \
        "http://127.0.0.1:$port/mcp" -- "${sessions[@]}" > /dev/null
    before=$(proc_cpu "$pid")
    line=$(wrk -t "$threads" -c "$clients" -d "$secs" -s bench/wrk/mcp_echo.lua \
        "http://127.0.0.1:$port/mcp" -- "${sessions[@]}" | grep '^completed')
    after=$(proc_cpu "$pid")
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    # completed N failed F p50_us A p99_us B
    awk -v name="$1" -v b="$before" -v a="$after" -v s="$secs" -v line="$line" 'BEGIN {
        split(line, f, " ")
        printf "%-5s %9.0f req/s  p50 %6d µs  p99 %6d µs  failed %d  CPU %6.1f µs/call\n",
            name, f[2] / s, f[6], f[8], f[4], (a - b) * 1e6 / f[2] }'
}

echo "mode $mode, $clients connections, ${secs}s, wrk threads $threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
    for name in "${names[@]}"; do
        run_one "$name"
    done
done
rm -rf "$out"
