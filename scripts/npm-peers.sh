#!/usr/bin/env bash
# Installs the npm MCP servers the CLI tests run against (server-everything, -filesystem,
# -memory; exact versions pinned in tests/npm-peers/package-lock.json) into target/npm-peers.
# Skips the install when that lock file is already installed there.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=target/npm-peers
if [ -d "$DIR/node_modules/.bin" ] && cmp -s tests/npm-peers/package-lock.json "$DIR/lock.installed"; then
  exit 0
fi
echo "== installing npm test peers into $DIR"
rm -rf "$DIR"
mkdir -p "$DIR"
cp tests/npm-peers/package.json tests/npm-peers/package-lock.json "$DIR/"
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
cp tests/npm-peers/package-lock.json "$DIR/lock.installed"
