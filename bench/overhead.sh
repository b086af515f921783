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
server() {
    local name="$1"
    printf '%s=bash -c "sed s/PORT/{port}/ %s/%s.toml > %s/%s-{port}.toml && exec %s/mcpwire serve --config %s/%s-{port}.toml"' \
        "$name" "$dir" "$name" "$dir" "$name" "$target" "$dir" "$name"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$target/httpload" --interleave \
    --header "authorization: Bearer $token" \
    --server "$(server off)" \
    --server "$(server metrics)" \
    --server "$(server on)" \
    "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
