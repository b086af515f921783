#!/usr/bin/env bash
# CPU per call of an MCPB gateway with token authentication and of the stdio upstream behind
# it, in the same runs (issue 24's target: the gateway's ≤ 1.0× the upstream's): `mcpwire
# serve` listening on MCPB (token `bench`) in front of one shared stdio upstream
# (`mcpwire_echo`; SHARED=false: one per connection), driven by proto_loadgen over CONNS connections with K calls in flight on
# each. proto_loadgen reads the gateway's CPU (`server µs`) and its children's — the
# upstream's — (`kids µs`) from /proc. Also the upstream called directly over MCPB.
#
# The upstream is reached in a handshake era (ERA=auto: a shared link to an upstream that
# speaks 2026-07-28, as mcpwire_echo does, is stateless, which the relay does not carry).
#
# Cases: `relay` (the stack as configured), `general` (the same with `relay = false` on the
# backend: every call takes the general path). STACK=full adds
# a policy, per-identity and per-tool rate limits and the metrics listener.
#
#   bench/gateway_mcpb_cpu.sh [MCPWIRE_BINARY]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-target}/release"
bin="${1:-$target/mcpwire}"
loadgen="${LOADGEN:-$target/proto_loadgen}"
echo_bin="${ECHO_BIN:-$target/mcpwire_echo}"
n="${N:-100000}"
conns="${CONNS:-100}"
# A shared upstream takes at most 1,024 calls in flight (its connection's bound): with
# SHARED=true keep CONNS x K below it.
k="${K:-16}"
runs="${RUNS:-3}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MCPWIRE_LOG=error
[[ -n "${BUSY_POLL_US:-}" ]] && export MCPWIRE_BUSY_POLL_US=$BUSY_POLL_US
source bench/lib.sh

config() { # $1 = case (relay | general)
    local file="$out/$1.toml"
    cat > "$file" <<TOML
[[listen]]
url = "mcpb://127.0.0.1:0"
tokens = ["bench"]
max_connections = 4096

[backends.echo]
command = "$echo_bin"
shared = ${SHARED:-true}
era = "${ERA:-handshake}"
max_sessions = $((conns + 8))
TOML
    [[ "$1" == general ]] && echo 'relay = false' >> "$file"
    [[ "${STACK:-}" == full ]] && full_stack_toml >> "$file"
    echo "$file"
}

echo "== the upstream alone, over MCPB; then the gateway relaying, then on the general path"
echo "   ($conns connections x $k in flight, $n calls, $runs runs, load $(cut -d' ' -f1 /proc/loadavg), stack ${STACK:-token auth}, shared upstream ${SHARED:-true})"
"$loadgen" --wires mcpb --connections "$conns" --inflight "$k" -n "$n" --runs "$runs" \
    --server "$echo_bin" --mcpb-args "--mcpb 0" | tail -n +2
for case in relay general; do
    "$loadgen" --wires mcpb --connections "$conns" --inflight "$k" -n "$n" --runs "$runs" \
        --server "$bin serve --config $(config $case)" --mcpb-args "" | tail -n +3 \
        | sed "s/^/$case /"
done
