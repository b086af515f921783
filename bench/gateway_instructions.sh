#!/usr/bin/env bash
# Instructions per call of the gateway (issue 12), counted by valgrind's callgrind: unlike CPU
# time, the count barely moves with the machine's load, so two builds can be compared on a
# busy machine. User space only (system calls and wake-ups are not counted: see
# bench/gateway_cpu.sh for CPU time). loadgen drives `mcpwire serve` (one stdio upstream,
# `mcpwire demo`) at 16 in flight, twice — with SHORT and LONG measured calls — and the
# difference of the two totals over LONG − SHORT calls is the cost of one call, start-up
# excluded. With DIRECT=1, the same for `mcpwire demo` served directly (the yardstick).
#
#   bench/gateway_instructions.sh [MCPWIRE_BINARY...]
#
# Needs valgrind. Takes a few minutes per binary (the gateway runs ~50× slower under it).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
loadgen="${LOADGEN:-${CARGO_TARGET_DIR:-target}/release/loadgen}"
short="${SHORT:-1000}"
long="${LONG:-5000}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MCPWIRE_BUSY_POLL_US=0 MCPWIRE_LOG=error
command -v valgrind >/dev/null || { echo "gateway_instructions: valgrind is required" >&2; exit 2; }

# Total instructions of one server process driven for $2 measured calls.
total() { # $1 = server command (its program is run under callgrind), $2 = calls
    local file="$out/cg.$2.$RANDOM"
    "$loadgen" --runs 1 --inflight 16 --warmup 500 -n "$2" --timeout-secs 900 \
        --server "s=valgrind --tool=callgrind --callgrind-out-file=$file $1" >/dev/null 2>&1
    callgrind_annotate "$file" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}

per_call() { # $1 = server command
    local a b
    a=$(total "$1" "$short")
    b=$(total "$1" "$long")
    echo $(((b - a) / (long - short)))
}

bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=("${CARGO_TARGET_DIR:-target}/release/mcpwire")
for bin in "${bins[@]}"; do
    if [[ -n "${DIRECT:-}" ]]; then
        echo "$bin direct: $(per_call "$bin demo") instructions per call"
    fi
    echo "$bin gateway: $(per_call "$bin serve --listen stdio --upstream 'echo=$bin demo'") instructions per call"
done
