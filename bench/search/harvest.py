#!/usr/bin/env python3
"""Harvest real tool definitions from public MCP servers for the search evaluation.

Installs pinned npm and PyPI MCP servers under target/search-servers/ (never committed),
starts each one over stdio with no credentials (dummy keys where a server insists on one),
lists its tools with the `mcp` client and writes target/search-catalog.json:

    [{"backend": "gitlab", "package": "...", "instructions": "...", "tools": [ {...}, ... ]}, ...]

Other projects' text stays out of the repository: only this script and the requests are ours.

Usage: python3 bench/search/harvest.py            (from the repository root)
Needs: node/npm and python3 (>= 3.10) on PATH; the npm and PyPI registries.
"""

import asyncio
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "target" / "search-servers"
NPM_DIR = WORK / "npm"
VENV_DIR = WORK / "venv"
HOME = WORK / "home"  # servers that write settings write them here, not in the real home
OUT = ROOT / "target" / "search-catalog.json"

# (backend name, npm package@version, extra args, extra env)
NPM_SERVERS = [
    ("everything", "@modelcontextprotocol/server-everything@2026.8.31", [], {}),
    ("filesystem", "@modelcontextprotocol/server-filesystem@2026.8.31", ["{work}"], {}),
    ("memory", "@modelcontextprotocol/server-memory@2026.8.31", [], {}),
    ("github", "@modelcontextprotocol/server-github@2025.4.8", [], {"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    ("gitlab", "@modelcontextprotocol/server-gitlab@2025.4.25", [], {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    ("slack", "@modelcontextprotocol/server-slack@2025.4.25", [], {"SLACK_BOT_TOKEN": "dummy", "SLACK_TEAM_ID": "T0"}),
    ("puppeteer", "@modelcontextprotocol/server-puppeteer@2025.5.12", [], {}),
    ("brave-search", "@modelcontextprotocol/server-brave-search@0.6.2", [], {"BRAVE_API_KEY": "dummy"}),
    ("google-maps", "@modelcontextprotocol/server-google-maps@0.6.2", [], {"GOOGLE_MAPS_API_KEY": "dummy"}),
    ("postgres", "@modelcontextprotocol/server-postgres@0.6.2", ["postgresql://127.0.0.1:1/none"], {}),
    ("sequential-thinking", "@modelcontextprotocol/server-sequential-thinking@2026.8.31", [], {}),
    ("aws-kb", "@modelcontextprotocol/server-aws-kb-retrieval@0.6.2", [], {"AWS_REGION": "us-east-1"}),
    ("everart", "@modelcontextprotocol/server-everart@0.6.2", [], {"EVERART_API_KEY": "dummy"}),
    ("playwright", "@playwright/mcp@0.0.83", [], {}),
    ("notion", "@notionhq/notion-mcp-server@2.5.2", [], {"NOTION_TOKEN": "dummy"}),
    ("context7", "@upstash/context7-mcp@4.1.1", [], {}),
    ("chrome-devtools", "chrome-devtools-mcp@1.11.0", [], {}),
    ("mongodb", "mongodb-mcp-server@3.0.4", [], {}),
    ("desktop-commander", "@wonderwhy-er/desktop-commander@0.2.52", [], {}),
    ("kubernetes", "mcp-server-kubernetes@4.1.7", [], {}),
    ("firecrawl", "firecrawl-mcp@3.26.0", [], {"FIRECRAWL_API_KEY": "dummy"}),
    ("tavily", "tavily-mcp@0.2.22", [], {"TAVILY_API_KEY": "dummy"}),
]

# Not here: server-redis and supabase connect to their service before listing tools.

# (backend name, PyPI package==version, console script, extra args, extra env)
PYPI_SERVERS = [
    ("git", "mcp-server-git==2026.10.19", "mcp-server-git", [], {}),
    ("fetch", "mcp-server-fetch==2026.10.24", "mcp-server-fetch", [], {}),
    ("time", "mcp-server-time==2026.10.19", "mcp-server-time", ["--local-timezone", "UTC"], {}),
]

# Servers written for the 1.x Python SDK, in a venv of their own.
LEGACY_VENV_DIR = WORK / "venv-mcp1"
LEGACY_PYPI_SERVERS = [
    ("sqlite", "mcp-server-sqlite==2025.4.25", "mcp-server-sqlite", ["--db-path", "{work}/bench.db"], {}),
    ("sentry", "mcp-server-sentry==2025.1.14", "mcp-server-sentry", ["--auth-token", "dummy"], {}),
]


def run(cmd, **kw):
    print("+", " ".join(map(str, cmd)), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


def install():
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    HOME.mkdir(parents=True, exist_ok=True)
    if not (NPM_DIR / "package.json").exists():
        (NPM_DIR / "package.json").write_text('{"name": "search-harvest", "private": true}\n')
    env = dict(os.environ, PUPPETEER_SKIP_DOWNLOAD="1", PUPPETEER_SKIP_CHROMIUM_DOWNLOAD="1",
               PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
    packages = [pkg for _, pkg, _, _ in NPM_SERVERS]
    run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", str(NPM_DIR), *packages],
        env=env)
    if not (VENV_DIR / "bin" / "python").exists():
        venv.create(VENV_DIR, with_pip=True)
    pip = [str(VENV_DIR / "bin" / "python"), "-m", "pip", "install", "-q"]
    run([*pip, "mcp==2.3.0", *[pkg for _, pkg, _, _, _ in PYPI_SERVERS]])
    if not (LEGACY_VENV_DIR / "bin" / "python").exists():
        venv.create(LEGACY_VENV_DIR, with_pip=True)
    pip = [str(LEGACY_VENV_DIR / "bin" / "python"), "-m", "pip", "install", "-q"]
    run([*pip, "mcp==1.9.4", "pydantic==2.11.7", *[pkg for _, pkg, _, _, _ in LEGACY_PYPI_SERVERS]])


def npm_bin(package):
    """The entry script of an installed npm package (its package.json `bin`)."""
    name = package.rsplit("@", 1)[0]
    meta = json.loads((NPM_DIR / "node_modules" / name / "package.json").read_text())
    bins = meta.get("bin")
    if isinstance(bins, str):
        entry = bins
    else:
        entry = next(iter(bins.values()))
    return NPM_DIR / "node_modules" / name / entry


def commands():
    work = str(WORK)
    for backend, pkg, args, env in NPM_SERVERS:
        yield backend, pkg, "node", [str(npm_bin(pkg)), *[a.format(work=work) for a in args]], env
    for backend, pkg, script, args, env in PYPI_SERVERS:
        yield backend, pkg, str(VENV_DIR / "bin" / script), [a.format(work=work) for a in args], env
    for backend, pkg, script, args, env in LEGACY_PYPI_SERVERS:
        yield backend, pkg, str(LEGACY_VENV_DIR / "bin" / script), [a.format(work=work) for a in args], env


CLIENT = r'''
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

async def main():
    spec = json.loads(sys.argv[1])
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=spec["env"])
    async with stdio_client(params, errlog=open(spec["errlog"], "w")) as (r, w):
        async with ClientSession(r, w) as s:
            init = await s.initialize()
            tools, cursor = [], None
            while True:
                page = await s.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            print(json.dumps({"instructions": init.instructions or "", "tools": tools}))

asyncio.run(main())
'''


def list_tools(backend, command, args, env):
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TERM")}
    spec = {"command": command, "args": args, "env": {**base, "HOME": str(HOME), **env},
            "errlog": str(WORK / f"{backend}.stderr")}
    out = subprocess.run([str(VENV_DIR / "bin" / "python"), "-c", CLIENT, json.dumps(spec)],
                         capture_output=True, text=True, timeout=90)
    if out.returncode != 0:
        lines = [l for l in out.stderr.splitlines() if "Error" in l or "error" in l]
        raise RuntimeError(lines[-1].strip(" |") if lines else "failed")
    return json.loads(out.stdout)


def main():
    if "--no-install" not in sys.argv:
        install()
    catalog, total = [], 0
    for backend, pkg, command, args, env in commands():
        try:
            listed = list_tools(backend, command, args, env)
        except Exception as e:  # one server failing must not lose the others
            print(f"{backend:20} FAILED: {e}", file=sys.stderr)
            continue
        n = len(listed["tools"])
        total += n
        print(f"{backend:20} {n:4} tools  ({pkg})", file=sys.stderr)
        catalog.append({"backend": backend, "package": pkg, **listed})
    OUT.write_text(json.dumps(catalog, indent=1))
    print(f"{total} tools from {len(catalog)} servers -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
