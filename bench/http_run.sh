#!/usr/bin/env bash
# End-to-end Streamable HTTP benchmark: mcpwire vs rmcp's StreamableHttpService, one `echo`
# tool each, 1 and 50 clients, stateful (2025-11-25 sessions) and stateless (2026-07-28).
#
# Builds the release binaries, then runs httpload with mcpwire first (the baseline of the
# ratio columns). Extra arguments go to httpload, e.g.:
#   bench/http_run.sh --clients 1,50 -n 50000 --runs 5
# Run it on an otherwise idle machine: clients and servers share the CPUs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-target}/release"

cargo build --release -p mcpwire-bench

exec "$target/httpload" \
    --server "mcpwire=$target/mcpwire_echo --http {port}" \
    --server "rmcp=$target/rmcp_http_echo {port}" \
    "$@"
