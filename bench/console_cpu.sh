#!/usr/bin/env bash
# Issue 26: what the console costs calls when nobody has it open. The same gateway (a
# configuration file: one Streamable HTTP upstream, `mcpwire_echo --http`, behind `[auth]`
# and the admin listener) without the console and with it configured (`[admin]
# console_keys`) but no page open, driven by httpload (stateful, CLIENTS clients, N calls
# each run), the two alternating ROUNDS times. Prints the gateway's CPU µs per call of each
# run and the medians.
#
#   bench/console_cpu.sh [MCPWIRE_BINARY]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
bench_settings "${1:-}"
rounds="${ROUNDS:-5}"
export MCPWIRE_BUSY_POLL_US="${BUSY_POLL_US:-0}"

start_http_echo "$echo_bin"
trap 'kill $upstream_pid 2>/dev/null || true; rm -rf "$out"' EXIT

config() { # $1 = extra [admin] lines
    cat <<TOML
[admin]
listen = "127.0.0.1:0"
$1

[auth]
[[auth.api_keys]]
name = "ops"
key = "bench-admin-key"

[[auth.api_keys]]
name = "load"
key = "bench-load-key"

[backends.echo]
url = "http://127.0.0.1:$upstream_port/mcp"
TOML
}
config "" > "$out/off.toml"
config 'console_keys = ["ops"]' > "$out/console.toml"

for r in $(seq "$rounds"); do
    for v in off console; do
        "$httpload" --runs 1 --clients "$clients" --modes stateful -n "$n" \
            --header "Authorization: Bearer bench-load-key" \
            --server "$v=bench/cpu_of.sh $out/$v.cpu $bin serve --config $out/$v.toml --listen http://127.0.0.1:{port}/mcp" \
            > "$out/$v.log"
        us=$(awk -v s="$(cat "$out/$v.cpu")" -v n="$n" 'BEGIN { printf "%.1f", s * 1e6 / n }')
        echo "$us" >> "$out/$v.all"
        echo "round $r $v: $us µs/call ($(grep -Eo '[0-9.]+ req/s' "$out/$v.log" | head -1))"
    done
done
median() { sort -n "$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "median gateway CPU µs per call ($clients clients, $n calls, $rounds rounds, load $(cut -d' ' -f1 /proc/loadavg)):" \
    "console off $(median "$out/off.all"), console configured and closed $(median "$out/console.all")"
