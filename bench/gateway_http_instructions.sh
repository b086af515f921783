#!/usr/bin/env bash
# Instructions per call of the HTTP gateway (issue 24), counted by valgrind's callgrind:
# `mcpwire serve` listening on Streamable HTTP in front of one long-running Streamable HTTP
# upstream (`mcpwire_echo --http`), driven by httpload (stateful sessions, CLIENTS clients,
# one request in flight each) twice — SHORT and LONG requests — so that the difference of
# the two totals over LONG − SHORT is the cost of one call, start-up excluded. User space
# only (system calls and wake-ups: bench/gateway_cpu.sh style task-clock for those), less
# the start-up clock calibration (see `total`). With
# DIRECT=1, the same for the upstream server called directly (the yardstick). Extra
# gateway flags go in GATEWAY_FLAGS (e.g. "--metrics-listen 127.0.0.1:0"); BACKENDS replaces
# the HTTP upstream (e.g. "--config stdio-upstream.toml"); CASE=relay|general runs the
# HTTP upstream from a configuration relaying or not (bench/lib.sh bench_gateway_toml);
# with UPSTREAMS=2 that configuration has two members, so the tool is called `echo_echo`;
# with STACK=full it adds API keys, a policy, rate limits and metrics (requests carry the
# key). CG_KEEP=PATH keeps each callgrind profile as PATH.REQUESTS. FLOOR=1 measures bench/src/bin/http_floor.rs too (a bare hyper pass-through: the
# least any hyper-based gateway costs).
#
#   bench/gateway_http_instructions.sh [MCPWIRE_BINARY...]
#
# Needs valgrind. Takes a few minutes per binary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-target}/release"
httpload="${HTTPLOAD:-$target/httpload}"
echo_bin="${ECHO_BIN:-$target/mcpwire_echo}"
short="${SHORT:-500}"
long="${LONG:-2500}"
clients="${CLIENTS:-8}"
mode="${MODE:-stateful}"
out=$(mktemp -d)
export MCPWIRE_BUSY_POLL_US=0 MCPWIRE_LOG=error
command -v valgrind >/dev/null || { echo "gateway_http_instructions: valgrind is required" >&2; exit 2; }

source bench/lib.sh
start_http_echo "$echo_bin"
trap 'kill $upstream_pid 2>/dev/null || true; rm -rf "$out"' EXIT

# Total instructions of one server process (its command has `{port}`) for $2 requests.
total() {
    local file="$out/cg.$2.$RANDOM"
    "$httpload" --runs 1 --clients "$clients" --modes "$mode" -n "$2" --tool "$tool" "${auth[@]}" \
        --server "s=valgrind --tool=callgrind --callgrind-out-file=$file $1" >/dev/null 2>&1
    # The server is stopped by a signal; callgrind writes its file on the way out.
    for _ in $(seq 100); do [[ -s "$file" ]] && break; sleep 0.1; done
    [[ -n "${CG_KEEP:-}" ]] && cp "$file" "$CG_KEEP.$2"
    # Less quanta's clock calibration (run once per process, for a varying number of
    # instructions — up to 2 k per call of noise in the difference otherwise).
    callgrind_annotate --inclusive=yes --auto=no "$file" | awk '
        /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
        /quanta::Calibration::calibrate/ && !/=>/ { gsub(",", "", $1); if ($1 + 0 > cal + 0) cal = $1 + 0 }
        END { print total - cal }'
}

per_call() {
    local a b
    a=$(total "$1" "$short")
    b=$(total "$1" "$long")
    echo $(((b - a) / (long - short)))
}

tool=echo
auth=()
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=("$target/mcpwire")
if [[ -n "${DIRECT:-}" ]]; then
    echo "direct ($echo_bin): $(per_call "$echo_bin --http {port}") instructions per call"
fi
if [[ -n "${FLOOR:-}" ]]; then
    floor="${HTTP_FLOOR:-$target/http_floor}"
    echo "floor ($floor): $(per_call "$floor --listen {port} --upstream 127.0.0.1:$upstream_port") instructions per call"
fi
[[ "${STACK:-}" == full ]] && auth=(--header "authorization: Bearer bench-key-0123456789abcdef")
for bin in "${bins[@]}"; do
    backends="${BACKENDS:---upstream echo=http://127.0.0.1:$upstream_port/mcp}"
    if [[ -n "${CASE:-}" ]]; then # relay | general (`relay = false`: never relayed)
        backends="--config $(bench_gateway_toml "url = \"http://127.0.0.1:$upstream_port/mcp\"" "$CASE" "$out/$CASE.toml")"
    fi
    [[ -n "${CASE:-}" && "${UPSTREAMS:-1}" == 2 ]] && tool=echo_echo
    gw="$bin serve $backends --listen http://127.0.0.1:{port}/mcp ${GATEWAY_FLAGS:-}"
    echo "$bin gateway ($mode, $clients clients): $(per_call "$gw") instructions per call"
done
