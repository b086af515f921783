#!/usr/bin/env bash
# Runs every test tier: the Rust workspace tests, then the interop tests driven by real
# peers (the official Python `mcp` client). Installs the Python peers in target/venv and the
# npm MCP servers in target/npm-peers itself (the CLI tests run both as real servers).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/venv
if [ ! -x "$VENV/bin/python" ] || ! cmp -s tests/python/requirements.txt "$VENV/requirements.installed"; then
  echo "== installing Python test peers into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
  cp tests/python/requirements.txt "$VENV/requirements.installed"
fi

# Redis for the scale-out tests (crates/mcpwire-store, the gateway's replica tests): the
# distribution's package, started by each test on a loopback port of its own.
if ! command -v redis-server > /dev/null; then
  echo "== installing redis-server"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq redis-server > /dev/null; } \
    || echo "!! installing redis-server failed; the tests that need it will fail"
fi

# A failed install does not stop the run: under CI the tests that need these peers then fail
# and say so (locally they skip with a message).
./scripts/npm-peers.sh || echo "!! installing the npm test peers failed; the tests that need them will fail"

echo "== cargo test"
cargo test --workspace

echo "== python interop tests (official mcp client)"
cargo build -p mcpwire-cli
MCPWIRE_BIN="$PWD/target/debug/mcpwire" "$VENV/bin/python" -m pytest tests/python -q
