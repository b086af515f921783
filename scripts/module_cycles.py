#!/usr/bin/env python3
"""Lists the module dependency cycles of a crate (default: crates/mcpwire-process).

An edge A -> B is any `crate::B` path in module A's files (a `use` or a qualified path),
and `super::B` from a child of A's parent; `mod.rs`/`<name>/*.rs` files count as their
module, and `#[cfg(test)]` children (`tests.rs`) as their parent. Prints the edges and
every strongly connected component with more than one module; exits 1 if there is one.

    python3 scripts/module_cycles.py [crates/NAME]
"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "crates/mcpwire-process") / "src"
mods = {}
for f in src.rglob("*.rs"):
    rel = f.relative_to(src).with_suffix("")
    parts = [p for p in rel.parts if p not in ("lib", "main", "mod")]
    if parts and parts[-1] == "tests" and len(parts) > 1:
        parts = parts[:-1]
    if parts and parts[0] == "bin":
        continue
    top = parts[0] if parts else "lib"
    mods.setdefault(top, []).append(f)

edges = {m: set() for m in mods}
for m, files in mods.items():
    for f in files:
        text = re.sub(r"//[^\n]*", "", f.read_text())
        targets = set(re.findall(r"\bcrate::(\w+)", text))
        # `use crate::{a, b::C}` groups.
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
            targets |= set(re.findall(r"(?:^|,)\s*(\w+)", group))
        if f.parent == src or f.name == "mod.rs":
            pass
        else:
            targets |= set(re.findall(r"\bsuper::(\w+)", text)) - {m}
        for t in targets:
            if t in mods and t != m and m != "lib":
                edges[m].add(t)

index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]


def strong(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            strong(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        sccs.append(comp)


for v in sorted(edges):
    if v not in index:
        strong(v)
for m in sorted(edges):
    print(f"{m:10} -> {', '.join(sorted(edges[m])) or '(leaf)'}")
cycles = [sorted(c) for c in sccs if len(c) > 1]
for c in cycles:
    print("cycle:", " <-> ".join(c))
print("no module cycles" if not cycles else f"{len(cycles)} cycle(s)")
sys.exit(1 if cycles else 0)
