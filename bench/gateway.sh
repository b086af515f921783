#!/usr/bin/env bash
# The gateway's cost (issue 12): the same `echo` tool called directly and through
# `mcpwire serve`, in one run.
#
#   1. stdio: loadgen against `mcpwire_echo` (direct) and against `mcpwire serve --upstream
#      echo=mcpwire_echo --listen stdio` (one stdio upstream, one child per downstream
#      session), K in flight (default 1,16); the p50 difference is what the gateway adds.
#   2. HTTP: httpload against `mcpwire_echo --http` (direct) and against `mcpwire serve`
#      listening on HTTP in front of one long-running `mcpwire_echo --http` upstream.
#   3. start-up: time from spawning `mcpwire serve` with 10 stdio upstreams to the merged
#      catalog (gateway_startup).
#
# Extra arguments go to loadgen (stdio part), e.g. bench/gateway.sh -n 20000 --runs 5.
# Run it on an otherwise idle machine: clients, gateway and upstreams share the CPUs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-target}/release"

cargo build --release -p mcpwire-cli -p mcpwire-bench

echo "== stdio: direct vs through the gateway"
"$target/loadgen" \
    --server "direct=$target/mcpwire_echo" \
    --server "gateway=$target/mcpwire serve --upstream echo=$target/mcpwire_echo --listen stdio" \
    "$@"

echo "== Streamable HTTP: direct vs through the gateway (HTTP upstream)"
source bench/lib.sh
start_http_echo "$target/mcpwire_echo"
trap 'kill $upstream_pid 2>/dev/null || true' EXIT
"$target/httpload" \
    --server "direct=$target/mcpwire_echo --http {port}" \
    --server "gateway=$target/mcpwire serve --upstream echo=http://127.0.0.1:$upstream_port/mcp --listen http://127.0.0.1:{port}/mcp" \
    --clients "${GATEWAY_HTTP_CLIENTS:-1,50}"

echo "== start-up: 10 stdio upstreams to one merged catalog"
"$target/gateway_startup" --gateway "$target/mcpwire" --upstream "$target/mcpwire_echo" -N 10
"$target/gateway_startup" --gateway "$target/mcpwire" --upstream "$target/mcpwire_echo" -N 1
