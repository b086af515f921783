#!/usr/bin/env bash
# What authentication + policy + metrics cost on Streamable HTTP (issue 13's budget: at 50
# clients, at most 10% fewer requests/s than with all of them off).
#
# Three `mcpwire serve` gateways over the built-in demo catalog, in the same run,
# interleaved run by run (`httpload --interleave`), all sent the same requests (an RS256
# bearer token on every POST):
#   off      no [auth], no [policy], no [admin] (the token is ignored)
#   metrics  [admin] only: the Prometheus recorder installed, every call counted and timed
#   on       [auth] (JWT from a JWKS file: RS256 checked with iss, aud, exp, nbf and the
#            required scope), a six-rule [policy], and [admin]
# Extra arguments go to httpload, e.g.:
#   bench/overhead.sh --clients 50 -n 20000 --runs 5 --modes stateful,stateless
# BASELINE=DIR (a directory holding another build's `mcpwire`, e.g. main's) adds the same
# three configurations of that binary to the same interleaved run: `base-off`,
# `base-metrics`, `base-on`.
#
# Besides httpload's requests/s, prints the CPU each gateway process used per call (its
# utime + stime from /proc, sampled every 0.1 s while it runs): steadier than throughput on
# a shared machine, since it does not count the time the process waited for a core.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="$(pwd)/${CARGO_TARGET_DIR:-target}/release"

# NO_BUILD=1: use the release binaries already built.
if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -p mcpwire-bench -p mcpwire-cli --bins
fi

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
resource="https://mcp.bench.invalid/mcp"
token="$("$target/jwt_fixture" "$dir" "$resource")"

common='[[listen]]
url = "http://127.0.0.1:PORT/mcp"

[backends.demo]
native = "demo"
'
admin='
[admin]
listen = "127.0.0.1:0"
'
auth="
[auth]
resource = \"$resource\"
scopes = [\"mcp\"]

[auth.jwt]
jwks_file = \"jwks.json\"
issuers = [\"https://auth.bench.invalid\"]

[policy]
default = \"deny\"

[[policy.rules]]
effect = \"deny\"
tools = [\"*delete*\", \"*drop*\"]

[[policy.rules]]
effect = \"allow\"
subjects = [\"admin-*\"]

[[policy.rules]]
effect = \"allow\"
claims = { team = \"payments\" }
tools = [\"pay_*\"]

[[policy.rules]]
effect = \"allow\"
scopes = [\"mcp\"]
tools = [\"echo\", \"add\", \"long*\"]

[[policy.rules]]
effect = \"allow\"
keys = [\"ci*\"]

[[policy.rules]]
effect = \"deny\"
anonymous = true
"
printf '%s' "$common" > "$dir/off.toml"
printf '%s%s' "$common" "$admin" > "$dir/metrics.toml"
printf '%s%s%s' "$common" "$admin" "$auth" > "$dir/on.toml"

# Each server gets its port from httpload ({port}) written into its own copy of the file.
# `server NAME [LABEL [BIN_DIR]]`: the configuration NAME served by BIN_DIR's `mcpwire`.
server() {
    local name="$1" label="${2:-$1}" bin="${3:-$target}"
    printf '%s=bash -c "sed s/PORT/{port}/ %s/%s.toml > %s/%s-{port}.toml && exec %s/mcpwire serve --config %s/%s-{port}.toml"' \
        "$label" "$dir" "$name" "$dir" "$label" "$bin" "$dir" "$label"
}
baseline=()
if [ -n "${BASELINE:-}" ]; then
    for name in off metrics on; do
        baseline+=(--server "$(server "$name" "base-$name" "$(cd "$BASELINE" && pwd)")")
    done
fi

# The CPU ticks of every gateway of this run, by label: `$dir/cpu/LABEL.PID` holds the
# latest utime + stime of that process (a process per label and mode).
mkdir "$dir/cpu"
sample_cpu() {
    local p stat rest n=0
    local -a f argv
    local -A label=()
    while :; do
        if ((n++ % 10 == 0)); then # look for new gateways every second
            for p in /proc/[0-9]*; do
                [ -n "${label[${p#/proc/}]:-}" ] && continue
                mapfile -d '' -t argv < "$p/cmdline" 2>/dev/null || continue
                if [[ ${argv[0]:-} == */mcpwire && ${argv[3]:-} == "$dir/"* ]]; then
                    p=${p#/proc/}
                    label[$p]=${argv[3]#"$dir/"}
                    label[$p]=${label[$p]%-*}
                fi
            done
        fi
        for p in "${!label[@]}"; do
            if ! { read -r stat < "/proc/$p/stat"; } 2>/dev/null; then
                unset "label[$p]" # it ended: its last sample stays
                continue
            fi
            rest=${stat##*) }
            read -ra f <<< "$rest"
            # After the command's name: utime and stime are fields 12 and 13 (0-based 11, 12).
            echo $((f[11] + f[12])) > "$dir/cpu/${label[$p]}.$p"
        done
        sleep 0.1
    done
}
sample_cpu &
sampler=$!
trap 'kill "$sampler" 2>/dev/null; rm -rf "$dir"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$target/httpload" --interleave \
    --header "authorization: Bearer $token" \
    --server "$(server off)" \
    --server "$(server metrics)" \
    --server "$(server on)" \
    "${baseline[@]}" \
    "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true

# Calls per gateway process: per run, every client's warm-up (a tenth of its share, at
# least 5) and its share (httpload's `run_once`); sessions' initialize not counted.
clients=50 requests=20000 runs=3
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --clients) clients="${args[i + 1]}" ;;
        -n | --requests) requests="${args[i + 1]}" ;;
        --runs) runs="${args[i + 1]}" ;;
    esac
done
per=$(((requests + clients - 1) / clients))
warm=$((per / 10 > 5 ? per / 10 : 5))
calls=$((runs * clients * (per + warm)))
ticks=$(getconf CLK_TCK)
echo "CPU µs per call of each gateway process ($calls calls each; by start, so mode by mode):"
for f in $(ls "$dir/cpu" | sort -t. -k2 -n); do
    printf '  %-14s pid %-8s %8.1f\n' "${f%.*}" "${f##*.}" \
        "$(awk -v t="$(cat "$dir/cpu/$f")" -v hz="$ticks" -v n="$calls" 'BEGIN { print t / hz * 1e6 / n }')"
done
