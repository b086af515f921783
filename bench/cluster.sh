#!/usr/bin/env bash
# Issue 14's benchmark: what the shared store costs. The same `mcpwire serve` (native demo
# catalog, its `echo` tool) with no `[cluster]`, with `[cluster] store = "memory"` (sealed
# session ids, in-process state) and with `[cluster] store = "redis://…"`, driven by httpload
# in one run; then the Redis commands that 2026-07-28 stateless requests issued (the issue
# wants none beyond rate limits), and RSS with 10,000 idle sessions on the Redis replica.
#
#   bench/cluster.sh                      # 50 clients, 20,000 requests × 3 runs
#   bench/cluster.sh -n 20000 --runs 5 --interleave   # extra arguments go to httpload
#
# Needs `redis-server` and `redis-cli` (scripts/test.sh installs them). Run it on an otherwise
# idle machine: clients, replicas and Redis share the CPUs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# BENCH_BIN_DIR: take `mcpwire` and `httpload` from there instead of building them.
if [[ -n "${BENCH_BIN_DIR:-}" ]]; then
    target="$BENCH_BIN_DIR"
else
    target="${CARGO_TARGET_DIR:-target}/release"
    cargo build --release -p mcpwire-cli -p mcpwire-bench
fi
target=$(cd "$target" && pwd)
bin="$target/mcpwire"

work=$(mktemp -d)
redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize no --logfile "$work/redis.log" &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.05
done

# One config per flavour; `@PORT@` becomes httpload's port when the server starts.
conf() { # name, cluster section
    cat > "$work/$1.toml" <<CONF
[[listen]]
url = "http://127.0.0.1:@PORT@/mcp"
max_sessions = 10100
$2
[backends.demo]
native = "demo"
CONF
}
conf plain ""
conf memory $'[cluster]\nstore = "memory"'
conf redis "[cluster]
store = \"redis://127.0.0.1:$redis_port\""
export MCPWIRE_SESSION_KEYS
MCPWIRE_SESSION_KEYS=$(python3 -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())')
export MCPWIRE_LOG=error
server() { # name
    echo "$1=sh -c 'sed s/@PORT@/{port}/ $work/$1.toml > $work/$1-{port}.toml && exec $bin serve --config $work/$1-{port}.toml'"
}

commands() { redis-cli -p "$redis_port" info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'; }

for mode in stateful stateless; do
    echo "== $mode, HTTP: no cluster vs store = memory vs store = redis"
    before=$(commands)
    "$target/httpload" --server "$(server plain)" --server "$(server memory)" \
        --server "$(server redis)" --modes "$mode" --clients 50 "$@"
    after=$(commands)
    echo "   Redis commands during the $mode runs: $((after - before))"
done

echo "== RSS with 10,000 idle sessions, store = redis"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s/@PORT@/$port/" "$work/redis.toml" > "$work/idle.toml"
python3 bench/idle_sessions.py "${IDLE_SESSIONS:-10000}" "$bin" --config "$work/idle.toml"
echo "== RSS with 10,000 idle sessions, no cluster"
sed "s/@PORT@/$port/" "$work/plain.toml" > "$work/idle.toml"
python3 bench/idle_sessions.py "${IDLE_SESSIONS:-10000}" "$bin" --config "$work/idle.toml"
