#!/usr/bin/env python3
"""Lists the module dependency cycles of a crate (default: every crate under crates/).

Two levels are checked, and a cycle at either fails:

- top-level modules: A -> B when a file of module A names anything that lives in module B;
- sibling files: within one folder, a.rs -> b.rs when a.rs names anything defined in b.rs
  (what `mod.rs`/`lib.rs` only re-exports counts as the file that defines it).

A path is resolved the way rustc would, far enough to know the file: `crate::a::b::Name`,
`super::x`, `self::x`, `use crate::{a, b::c}` groups and bare paths through an imported
module; a name a module re-exports (`pub use x::Name`, `pub(crate) use x::{A, B}`, renames
with `as`) is followed to where it is defined, so a cycle through `lib.rs` re-exports is
seen. `#[cfg(test)]` children named `tests.rs` count as their parent. Comments are ignored.

    python3 scripts/module_cycles.py [crates/NAME ...]

Prints the edges and every cycle; exits 1 if there is one.
"""
import pathlib
import re
import sys


def module_of(src, f):
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    if len(parts) > 1 and parts[-1] == "tests":
        parts = parts[:-1]
    return tuple(parts)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return strip_tests(text)


def strip_tests(text):
    """Drops `#[cfg(test)] mod x { ... }` blocks: test code may name anything."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
        if not m:
            return text
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[i:]


def split_group(body):
    """`a, b::{c, d}, e as f` -> ['a', 'b::c', 'b::d', 'e as f'] (one level of nesting)."""
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    flat = []
    for item in out:
        m = re.match(r"^([\w:]*?)::\{(.*)\}$", item, re.S)
        if m:
            flat += [f"{m.group(1)}::{x}" for x in split_group(m.group(2))]
        else:
            flat.append(item)
    return flat


def use_paths(text):
    """Every path of every `use` item, as (path, alias, is_pub)."""
    found = []
    for m in re.finditer(r"(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
        is_pub = bool(m.group(1))
        body = re.sub(r"\s+", "", m.group(2))
        if "{" in body:
            head, _, rest = body.partition("{")
            items = [head + x for x in split_group(rest.rstrip("}"))]
        else:
            items = [body]
        for item in items:
            path, _, alias = item.partition("as")
            if alias and not re.match(r"^\w+$", alias):
                path, alias = item, ""
            path = path.rstrip(":")
            found.append((path, alias or path.split("::")[-1], is_pub))
    return found


def check(crate):
    src = pathlib.Path(crate) / "src"
    if not src.is_dir():
        return []
    files = {}
    for f in sorted(src.rglob("*.rs")):
        rel = f.relative_to(src)
        if "bin" in rel.parts[:1] or rel.stem == "tests" or rel.stem.startswith("tests_"):
            continue
        files.setdefault(module_of(src, f), []).append(f)
    texts = {m: strip_comments("\n".join(f.read_text() for f in fs)) for m, fs in files.items()}
    # Re-exports per module: name -> absolute path it stands for.
    reexports = {m: {} for m in files}
    imports = {m: {} for m in files}

    def absolute(mod, path):
        segs = path.split("::")
        if segs[0] == "crate":
            return tuple(segs[1:])
        base = list(mod)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        if segs and (tuple(base) + (segs[0],)) in files:
            return tuple(base) + tuple(segs)
        if segs and segs[0] in imports.get(mod, {}):
            return imports[mod][segs[0]] + tuple(segs[1:])
        if path.startswith(("super", "self")):
            return tuple(base) + tuple(segs)
        return None

    for m, text in texts.items():
        for path, alias, is_pub in use_paths(text):
            target = absolute(m, path)
            if target is None:
                continue
            imports[m][alias] = target
            if is_pub:
                reexports[m][alias] = target

    def resolve(target, seen=()):
        """The module file a path lands in, following re-exports."""
        target = tuple(target)
        for cut in range(len(target), -1, -1):
            mod = target[:cut]
            if mod in files:
                rest = target[cut:]
                if rest and rest[0] in reexports.get(mod, {}) and (mod, rest[0]) not in seen:
                    return resolve(reexports[mod][rest[0]] + rest[1:], seen + ((mod, rest[0]),))
                return mod
        return None

    refs = {m: set() for m in files}
    for m, text in texts.items():
        for path, _, _ in use_paths(text):
            t = absolute(m, path)
            if t is not None:
                refs[m].add(resolve(t))
        for path in re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text):
            t = absolute(m, path)
            if t is not None:
                refs[m].add(resolve(t))
        for alias, target in imports[m].items():
            if re.search(rf"(?<![\w:]){re.escape(alias)}::\w", text):
                for path in re.findall(rf"(?<![\w:]){re.escape(alias)}((?:::\w+)+)", text):
                    refs[m].add(resolve(target + tuple(path.strip(":").split("::"))))
    for m in refs:
        refs[m].discard(None)

    cycles = []
    # Top-level modules.
    tops = {m[:1] for m in files if m}
    top_edges = {t: set() for t in tops}
    for m, targets in refs.items():
        if not m:
            continue
        for t in targets:
            if t and t[:1] != m[:1]:
                top_edges[m[:1]].add(t[:1])
    cycles += [(crate, "modules", c) for c in components(top_edges)]
    # Sibling files in each folder.
    folders = {}
    for m in files:
        if m:
            folders.setdefault(m[:-1], set()).add(m)
    for folder, members in folders.items():
        if not folder:
            continue  # the crate root's files are the top-level modules above
        edges = {x: set() for x in members}
        for x in members:
            for t in refs[x]:
                if t and len(t) > len(folder) and t[: len(folder)] == folder:
                    sib = t[: len(folder) + 1]
                    if sib in members and sib != x and not t[: len(x)] == x:
                        edges[x].add(sib)
        cycles += [(crate, "/".join(folder) or "src", c) for c in components(edges)]
    print(f"== {crate}")
    for t in sorted(top_edges):
        print(f"  {'::'.join(t):12} -> {', '.join(sorted('::'.join(e) for e in top_edges[t])) or '(leaf)'}")
    return cycles


def components(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in edges:
                continue
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
            if len(comp) > 1:
                out.append(sorted("::".join(c) for c in comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def main():
    crates = sys.argv[1:] or sorted(str(p) for p in pathlib.Path("crates").iterdir() if p.is_dir())
    cycles = []
    for crate in crates:
        cycles += check(crate)
    for crate, level, c in cycles:
        print(f"cycle in {crate} ({level}): {' <-> '.join(c)}")
    print("no module cycles" if not cycles else f"{len(cycles)} cycle(s)")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
