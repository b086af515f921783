#!/usr/bin/env bash
# Runs every test tier: the Rust workspace tests, then the interop tests driven by real
# peers (the official Python `mcp` client). Installs the Python peers in target/venv itself.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import mcp, pytest" 2>/dev/null; then
  echo "== installing Python test peers into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
fi

echo "== cargo test"
cargo test --workspace

echo "== python interop tests (official mcp client)"
cargo build -p mcpwire
MCPWIRE_BIN="$PWD/target/debug/mcpwire" "$VENV/bin/python" -m pytest tests/python -q
