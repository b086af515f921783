#!/usr/bin/env bash
# CPU per call of each process of the gateway benchmark (issue 12): loadgen drives
# `mcpwire serve` (one stdio upstream) and, in the same run, the upstream called directly;
# `perf stat -e task-clock` wraps the direct server and the gateway (not its upstream: the
# gateway kills its children before a wrapper could report; the upstream does what the direct
# server does). CPU per call is steadier than throughput on a shared machine, but not immune
# to load: compare builds in the same run. Busy polling is off everywhere
# (MCPWIRE_BUSY_POLL_US=0), so spinning is not counted.
#
#   bench/gateway_cpu.sh [MCPWIRE_BINARY] [CALLS]
#
# With RELAY=path/to/relay_floor, also the floor of any stdio gateway: `relay_floor` in front
# of the same server, passing lines untouched (`relay`) and rewriting ids (`relay-ids`).
#
# Prints µs of CPU per call of the direct server and of the gateway (its own process).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin="${1:-${CARGO_TARGET_DIR:-target}/release/mcpwire}"
calls="${2:-100000}"
warmup=2000
loadgen="${LOADGEN:-${CARGO_TARGET_DIR:-target}/release/loadgen}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MCPWIRE_BUSY_POLL_US=0 MCPWIRE_LOG=error

# `--no-inherit` for the gateway: its upstream children are not counted.
stat() { echo "perf stat -x, --append -o $out/$1 -e task-clock ${2:-} --"; }
servers=(--server "direct=$(stat direct) $bin demo"
    --server "gateway=$(stat gateway --no-inherit) $bin serve --listen stdio --upstream 'echo=$bin demo' ${GATEWAY_FLAGS:-}")
if [[ -n "${RELAY:-}" ]]; then
    servers+=(--server "relay=$(stat relay --no-inherit) $RELAY -- $bin demo"
        --server "relay-ids=$(stat relay-ids --no-inherit) $RELAY --rewrite -- $bin demo")
fi
"$loadgen" --runs 1 --inflight 16 --warmup "$warmup" -n "$calls" "${servers[@]}" \
    | grep -E '^\| (direct|gateway)|^server|calls/s' || true

per_call() {
    awk -F, -v n=$((calls + warmup)) '/task-clock/ { ms += $1 } END { printf "%.2f", ms * 1000 / n }' "$out/$1"
}
echo "CPU µs per call (K=16, $((calls + warmup)) calls, load $(cut -d' ' -f1 /proc/loadavg)):" \
    "direct $(per_call direct), gateway $(per_call gateway)" \
    ${RELAY:+"relay $(per_call relay), relay-ids $(per_call relay-ids)"}
