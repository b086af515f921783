"""Issue 23, through `mcpwire serve` in front of the official npm servers
(`@modelcontextprotocol/server-everything`, `-filesystem`) as stdio upstreams, driven by
the official Python client over the HTTP and stdio listeners:

- logs an upstream of one downstream session sends between calls reach that session, at
  its own log level (server-everything's `toggle-simulated-logging` logs every 5 s);
- roots reach server-filesystem: the `roots/list` it sends as a session starts is put to
  that session (not to a call that may end first), `notifications/roots/list_changed` from
  the client reaches it (it asks again), and the catalog session does not claim roots it
  cannot give (no "Failed to request initial roots").
"""

import os
import pathlib

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from peers import Notes, Recorder, full_session, wait_until
from test_gateway_serve import ENV, Served

pytestmark = pytest.mark.anyio

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = ROOT / "target" / "npm-peers" / "node_modules" / ".bin"
EVERYTHING = BIN / "mcp-server-everything"
FILESYSTEM = BIN / "mcp-server-filesystem"


def need(path: pathlib.Path) -> None:
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing under CI (scripts/npm-peers.sh installs it)")
        pytest.skip("npm peers not installed (scripts/npm-peers.sh)")


def config(tmp_path, backends: str) -> pathlib.Path:
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(f'[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n{backends}')
    return conf


def everything() -> str:
    need(EVERYTHING)
    return f'[backends.everything]\ncommand = ["{EVERYTHING}"]\n'


async def logs_between_calls(s: ClientSession, rec: Recorder) -> None:
    """Turns on server-everything's simulated logging (a log now, then one every 5 s at a
    random level) and waits for two more logs after the call ended."""
    await s.set_logging_level("debug")
    r = await s.call_tool("toggle-simulated-logging", {})
    assert not r.is_error, r
    def simulated():
        return [p for p in rec.logs if "level message" in str(p.data).lower().replace("-", " ")]

    after_call = len(simulated())
    await wait_until(lambda: len(simulated()) >= after_call + 2, seconds=20)
    await s.call_tool("toggle-simulated-logging", {})


async def test_logs_between_calls_over_http(mcpwire_bin, tmp_path):
    served = Served(mcpwire_bin, config(tmp_path, everything()))
    rec, notes = Recorder(), Notes()
    try:
        async with streamable_http_client(served.url) as (read, write):
            async with full_session(read, write, rec, notes, timeout=30) as s:
                await s.initialize()
                await logs_between_calls(s, rec)
    finally:
        served.close()


async def test_logs_between_calls_over_stdio(mcpwire_bin, tmp_path):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "stdio"\n\n' + everything())
    params = StdioServerParameters(
        command=mcpwire_bin, args=["serve", "--config", str(conf)], env=ENV
    )
    rec, notes = Recorder(), Notes()
    async with stdio_client(params) as (read, write):
        async with full_session(read, write, rec, notes, timeout=30) as s:
            await s.initialize()
            await logs_between_calls(s, rec)


class Roots:
    """The client's roots, changeable."""

    def __init__(self, *dirs: pathlib.Path):
        self.dirs = list(dirs)

    async def callback(self, ctx):
        return types.ListRootsResult(
            roots=[types.Root(uri=d.resolve().as_uri(), name=d.name) for d in self.dirs]
        )


async def allowed(s: ClientSession) -> str:
    r = await s.call_tool("list_allowed_directories", {})
    return r.content[0].text


async def roots_follow(s: ClientSession, roots: Roots, first, second) -> None:
    """The client's roots replace the server's directories; a change is seen too."""

    async def shows(d: pathlib.Path):
        return str(d.resolve()) in await allowed(s)

    await wait_until(lambda: shows(first), seconds=15)
    roots.dirs = [second]
    await s.send_roots_list_changed()
    await wait_until(lambda: shows(second), seconds=15)
    assert str(first.resolve()) not in await allowed(s)


def dirs(tmp_path):
    made = [tmp_path / n for n in ("cli-dir", "root-a", "root-b")]
    for d in made:
        d.mkdir()
    return made


def filesystem(cli_dir: pathlib.Path) -> str:
    need(FILESYSTEM)
    return f'[backends.fs]\ncommand = ["{FILESYSTEM}", "{cli_dir}"]\n'


async def test_roots_reach_the_filesystem_server_over_http(mcpwire_bin, tmp_path):
    cli_dir, a, b = dirs(tmp_path)
    served = Served(mcpwire_bin, config(tmp_path, filesystem(cli_dir)))
    try:
        for _ in range(3):  # every session, not one in several
            roots = Roots(a)
            async with streamable_http_client(served.url) as (read, write):
                async with ClientSession(
                    read, write, read_timeout_seconds=30, list_roots_callback=roots.callback
                ) as s:
                    await s.initialize()
                    await roots_follow(s, roots, a, b)
        assert not [l for l in served.lines if "Failed to request" in l], served.lines
    finally:
        served.close()


async def test_roots_reach_the_filesystem_server_over_stdio(mcpwire_bin, tmp_path):
    cli_dir, a, b = dirs(tmp_path)
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "stdio"\n\n' + filesystem(cli_dir))
    params = StdioServerParameters(
        command=mcpwire_bin, args=["serve", "--config", str(conf)], env=ENV
    )
    roots = Roots(a)
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, read_timeout_seconds=30, list_roots_callback=roots.callback
        ) as s:
            await s.initialize()
            await roots_follow(s, roots, a, b)
