# Shared by the bench scripts (sourced): loopback ports and a long-running HTTP upstream.

# What the CPU benches share: the binaries of the release build (MCPWIRE_BINARY as $1,
# HTTPLOAD, ECHO_BIN), N calls from CLIENTS clients, a scratch directory in $out, quiet logs.
bench_settings() { # $1 = the mcpwire binary (default: the release build's)
    target="${CARGO_TARGET_DIR:-target}/release"
    bin="${1:-$target/mcpwire}"
    httpload="${HTTPLOAD:-$target/httpload}"
    echo_bin="${ECHO_BIN:-$target/mcpwire_echo}"
    n="${N:-20000}"
    clients="${CLIENTS:-50}"
    out=$(mktemp -d)
    export MCPWIRE_LOG=error
}

# Microseconds per call of $1 CPU seconds over $n calls.
us_per_call() { awk -v s="$1" -v n="$n" 'BEGIN { printf "%.1f", s * 1e6 / n }'; }

# A free loopback port.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The Streamable HTTP upstream's command on port $1: `mcpwire_echo --http` (the library's
# server with one tool), with UPSTREAM=demo `mcpwire demo --transport http` (the binary
# as deployed: the demo catalog, its listener on threads of its own), or with UPSTREAM=rmcp
# `rmcp_http_echo` (rmcp's Streamable HTTP server with the same `echo` tool), or with
# UPSTREAM=python the Python SDK's server (`bench/py_sdk_echo.py`, needs `pip install mcp`).
http_upstream_cmd() { # $1 = port
    if [[ "${UPSTREAM:-echo}" == demo ]]; then
        echo "$bin demo --transport http --port $1"
    elif [[ "${UPSTREAM:-echo}" == rmcp ]]; then
        echo "${RMCP_BIN:-$target/rmcp_http_echo} $1"
    elif [[ "${UPSTREAM:-echo}" == python ]]; then
        echo "python3 bench/py_sdk_echo.py $1"
    else
        echo "$echo_bin --http $1"
    fi
}

# Starts `ECHO_BINARY --http PORT` in the background (its pid in $upstream_pid, its port in
# $upstream_port) and waits until it accepts connections.
start_http_echo() { # $1 = the echo server binary (UPSTREAM=demo|rmcp: another server instead)
    upstream_port=$(free_port)
    if [[ "${UPSTREAM:-echo}" != echo ]]; then
        # shellcheck disable=SC2046 # the command's words
        MCPWIRE_LOG=error $(http_upstream_cmd "$upstream_port") > /dev/null 2>&1 &
    else
        MCPWIRE_LOG=error "$1" --http "$upstream_port" > /dev/null &
    fi
    upstream_pid=$!
    wait_for_port "$upstream_port" && return 0
    echo "the HTTP upstream on port $upstream_port did not start" >&2
    return 1
}

# Waits (up to 5 s) until something accepts connections on loopback port $1.
wait_for_port() { # $1 = port
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# User + system CPU seconds a running process has used (all its threads).
proc_cpu() { # $1 = pid
    local ticks
    ticks=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat")
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.4f\n", t / hz }'
}

# User and system CPU seconds a running process has used (all its threads), as "USER SYS":
# what its own code cost, and what the kernel spent on its behalf (system calls, sockets).
proc_cpu_split() { # $1 = pid
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.4f %.4f\n", $12 / hz, $13 / hz }' "/proc/$1/stat"
}

# User + system CPU seconds the running children of a process have used (its stdio
# upstreams), summed.
kids_cpu() { # $1 = pid
    local total=0 kid
    for kid in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        total=$(awk -v a="$total" -v b="$(proc_cpu "$kid" 2>/dev/null || echo 0)" 'BEGIN { print a + b }')
    done
    echo "$total"
}

# The TOML of a gateway's full stack for the CPU benches (STACK=full): a policy that
# denies nobody here (evaluated per caller all the same), per-identity and per-tool rate
# limits no run reaches, and the admin listener (metrics on).
full_stack_toml() {
    cat <<TOML

[policy]
default = "allow"
[[policy.rules]]
effect = "deny"
keys = ["nobody-*"]
tools = ["echo"]

[limits]
per_identity = "100000000/s"
per_tool = "100000000/s"

[admin]
listen = "127.0.0.1:$(free_port)"
TOML
}

# The TOML of the `[backends.echo]` a CPU bench runs through ($1: `command = "..."` or
# `url = "..."`), for case $2 (`relay`, or `general`: `relay = false`, every call on the
# general path), with STACK=full's API key and full_stack_toml, written to $3; prints $3.
bench_gateway_toml() { # $1 = the backend's target line, $2 = case, $3 = file
    cat > "$3" <<TOML
[backends.echo]
$1
shared = ${SHARED:-true}
era = "handshake"
max_sessions = $((${clients:-50} + 8))
TOML
    [[ "$2" == general ]] && echo 'relay = false' >> "$3"
    # HTTP_THREADS=N: the HTTP listener serves on N single-threaded runtimes of its own.
    [[ -n "${HTTP_THREADS:-}" ]] && printf '\n[server]\nhttp_threads = %s\n' "$HTTP_THREADS" >> "$3"
    # A deployed configuration's call timeout (kept by the relay since session 19).
    [[ -n "${CALL_TIMEOUT_SECS:-}" ]] && echo "call_timeout_secs = $CALL_TIMEOUT_SECS" >> "$3"
    if [[ "${UPSTREAMS:-1}" == 2 ]]; then # two members: every tool prefixed (`echo_echo`)
        cat >> "$3" <<TOML

[backends.other]
$1
shared = ${SHARED:-true}
era = "handshake"
max_sessions = $((${clients:-50} + 8))
TOML
    fi
    if [[ "${STACK:-}" == full ]]; then
        cat >> "$3" <<TOML

[[auth.api_keys]]
name = "bench"
key = "bench-key-0123456789abcdef"
TOML
        full_stack_toml >> "$3"
    fi
    echo "$3"
}
