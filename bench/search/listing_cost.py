#!/usr/bin/env python3
"""What `tools/list` costs in the gateway's `full` and `search` catalog modes, for the
harvested catalog (`bench/search/harvest.py` writes target/search-catalog.json).

Flattens the catalog as a federation of all its servers exposes it (every name prefixed
`{backend}_`, characters outside [a-zA-Z0-9_-] as `_`) into
target/search-catalog-tools.json, runs `mcpwire tokens` on it and prints the rows that
compare the modes: `jsonrpc` (the full listing), `search_meta` (the meta-tools alone) and
`search_disclosed` (the meta-tools and the largest tools a session's list can hold within
its bounds: the most it can cost), with each one's share of the full listing; then a
session that found 8, and one that found 32, tools of median size (after one search, and
typically at the bounds).

Usage: python3 bench/search/listing_cost.py [MCPWIRE_BIN]   (default target/debug/mcpwire)
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "target" / "search-catalog.json"
FLAT = ROOT / "target" / "search-catalog-tools.json"
ROWS = ["jsonrpc", "search_meta", "search_disclosed"]


def exposed(backend: str, name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", f"{backend}_{name}")[:64]


def tokens(binary: str, tools: list, path: Path) -> dict:
    """`mcpwire tokens`' rows for `tools`, by key."""
    path.write_text(json.dumps({"tools": tools}))
    out = subprocess.run([binary, "tokens", str(path), "--json"], check=True, capture_output=True).stdout
    return {r["key"]: r for r in json.loads(out)["rows"]}


def median_sized(tools: list, k: int) -> list:
    """The `k` tools around the median size (compact JSON bytes)."""
    ordered = sorted(tools, key=lambda t: len(json.dumps(t, separators=(",", ":"))))
    start = max(0, len(ordered) // 2 - k // 2)
    return ordered[start : start + k]


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "debug" / "mcpwire")
    servers = json.loads(CATALOG.read_text())
    tools = [
        dict(tool, name=exposed(server["backend"], tool["name"]))
        for server in servers
        for tool in server["tools"]
    ]
    rows = tokens(binary, tools, FLAT)
    full = rows["jsonrpc"]
    listings = [(f"`{key}`", rows[key]) for key in ROWS]
    for k in (8, 32):
        sample = tokens(binary, median_sized(tools, k), ROOT / "target" / f"search-catalog-median{k}.json")
        listings.append((f"a session that found {k} median-size tools", sample["search_disclosed"]))
    print(f"{len(tools)} tools from {len(servers)} servers")
    print("| listing | bytes | cl100k | share | o200k | share |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, r in listings:
        print(
            f"| {key} | {r['bytes']:,} | {r['cl100k']:,} | {100 * r['cl100k'] / full['cl100k']:.1f}% "
            f"| {r['o200k']:,} | {100 * r['o200k'] / full['o200k']:.1f}% |"
        )


if __name__ == "__main__":
    main()
