#!/usr/bin/env bash
# The house's boundaries, checked (docs/ARCHITECTURE.md, "Code map" and "Features"):
#
# 1. A tool author's server — the notes example, stdio + Streamable HTTP through the
#    `mcpwire` facade — compiles none of the gateway's dependencies.
# 2. It compiles no more crates than the same server written with rmcp (`--compare-rmcp`
#    counts rmcp's; that needs the registry, so it is not part of CI).
# 3. The server crate builds with each wire alone and with none (`cargo check`).
# 4. No crate holds more than a quarter of the source lines.
#
# Usage: scripts/house.sh [--compare-rmcp]
set -euo pipefail
cd "$(dirname "$0")/.."

crates_of() { # the packages `cargo tree` lists for a build (normal and build dependencies)
  cargo tree "$@" -e normal,build --prefix none 2>/dev/null \
    | sed 's/ (\*)//; s/ (proc-macro)//; s/ (\/.*)//' | awk '{print $1}' | sort -u
}

notes=$(crates_of -p mcpwire-example-notes)
echo "notes server (default features): $(echo "$notes" | wc -l) crates"
for forbidden in redis tonic jsonwebtoken governor protox rustls jsonschema; do
  if echo "$notes" | grep -qx "$forbidden"; then
    echo "!! the notes server compiles $forbidden:"
    cargo tree -p mcpwire-example-notes -e normal,build -i "$forbidden" | head -20
    exit 1
  fi
done
echo "notes server with argument validation: $(crates_of -p mcpwire-example-notes --features mcpwire/validation | wc -l) crates"

if [ "${1:-}" = "--compare-rmcp" ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  mkdir -p "$dir/src"
  echo 'fn main() {}' > "$dir/src/main.rs"
  cat > "$dir/Cargo.toml" <<'TOML'
[package]
name = "rmcp-notes"
version = "0.1.0"
edition = "2024"
[dependencies]
rmcp = { version = "3", features = ["server", "macros", "transport-io", "transport-streamable-http-server"] }
axum = { version = "0.8", default-features = false, features = ["http1", "tokio"] }
tokio = { version = "1.48", features = ["rt-multi-thread", "macros", "io-std"] }
serde = { version = "1", features = ["derive"] }
schemars = "1"
[workspace]
TOML
  (cd "$dir" && echo "rmcp's stdio + HTTP server: $(crates_of | wc -l) crates")
fi

for features in "" "http" "mcpb" "proto-mcp" "tls" "admin" "http,mcpwire-wire/proto-mcp"; do
  echo "mcpwire-server --no-default-features --features '$features'"
  cargo check -q -p mcpwire-server --no-default-features --features "$features"
done

total=$(find crates -path '*/src/*.rs' -print0 | xargs -0 cat | wc -l)
for crate in crates/*/; do
  lines=$(find "$crate" -path '*/src/*.rs' -print0 | xargs -0 cat 2>/dev/null | wc -l)
  if [ $((lines * 4)) -gt "$total" ]; then
    echo "!! $crate holds $lines of $total source lines (more than a quarter)"
    exit 1
  fi
done
echo "largest crate: $(for c in crates/*/; do echo "$(find "$c" -path '*/src/*.rs' -print0 | xargs -0 cat 2>/dev/null | wc -l) $c"; done | sort -n | tail -1) of $total source lines"
