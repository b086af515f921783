"""Upstreams that go away and come back, through `mcpwire serve`, with a real FastMCP
server over Streamable HTTP (tests/python/fixtures/fastmcp_tools.py) and the official
Python client:

- an HTTP upstream killed is noticed (`/readyz`) within the documented time (a ping every
  5 s, 5 s to answer), and when it comes back with a changed tool list the catalog follows
  with `tools/list_changed`, the new tool callable, no reload;
- a backend that is down when the gateway starts stays a member (names do not change when
  it comes back: conditional prefixes count configured backends), is shown down in
  `/readyz`, and joins by itself once it answers — with `fail = "open"` the others are
  served meanwhile, with `fail = "closed"` `/readyz` answers 503 until it is up.

docs/design/gateway.md § Backends that are down."""

import json
import pathlib
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from peers import Notes, Recorder, full_session, text_of, wait_until, wait_until_blocking
from test_gateway_serve import Served

pytestmark = pytest.mark.anyio

FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "fastmcp_tools.py"

# Documented detection time of a killed HTTP upstream (ping interval + ping timeout), with
# room for a loaded CI machine.
NOTICED_WITHIN = 10 + 15
# The longest backoff between tries of a backend that is down (10 s), plus room.
BACK_WITHIN = 10 + 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Upstream:
    """The FastMCP fixture on `port`, serving `tools`."""

    def __init__(self, port: int, *tools: str):
        self.port = port
        self.proc = subprocess.Popen(
            [sys.executable, str(FIXTURE), str(port), *tools],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_until_blocking(self.listening, seconds=30), "the FastMCP fixture did not start"

    def listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


def readyz(admin_port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/readyz", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def backend_up(admin_port: int, name: str) -> bool | None:
    """Whether `/readyz` shows backend `name` up (`None`: not listed)."""
    _, body = readyz(admin_port)
    for b in body["backends"]:
        if b["name"] == name:
            return b["up"]
    return None


def gateway(mcpwire_bin, tmp_path, port: int, fail: str = "open") -> tuple[Served, int]:
    admin = free_port()
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        f'[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n[admin]\nlisten = "127.0.0.1:{admin}"\n\n'
        '[backends.demo]\nnative = "demo"\n\n'
        f'[backends.up]\nurl = "http://127.0.0.1:{port}/mcp"\nfail = "{fail}"\n'
    )
    return Served(mcpwire_bin, conf), admin


async def tool_names(s: ClientSession) -> set[str]:
    return {t.name for t in (await s.list_tools()).tools}


async def test_an_http_upstream_killed_and_restarted_changed(mcpwire_bin, tmp_path):
    port = free_port()
    upstream = Upstream(port, "alpha")
    served, admin = gateway(mcpwire_bin, tmp_path, port)
    rec, notes = Recorder(), Notes()
    try:
        async with streamable_http_client(served.url) as (read, write):
            async with full_session(read, write, rec, notes, timeout=30) as s:
                await s.initialize()
                assert "up_alpha" in await tool_names(s)
                assert backend_up(admin, "up") is True

                upstream.kill()
                await wait_until(lambda: backend_up(admin, "up") is False, seconds=NOTICED_WITHIN)
                _, body = readyz(admin)
                down = next(b for b in body["backends"] if b["name"] == "up")
                assert down.get("reason"), body

                changes = len(notes.methods("notifications/tools/list_changed"))
                upstream = Upstream(port, "alpha", "beta")
                await wait_until(lambda: backend_up(admin, "up") is True, seconds=BACK_WITHIN)

                async def beta_listed():
                    return "up_beta" in await tool_names(s)

                await wait_until(beta_listed, seconds=15)
                await wait_until(
                    lambda: len(notes.methods("notifications/tools/list_changed")) > changes,
                    seconds=15,
                )
                r = await s.call_tool("up_beta", {"text": "back"})
                assert text_of(r) == "beta: back", r
                # The demo's names never changed (two backends configured all along).
                assert "demo_echo" in await tool_names(s)
    finally:
        upstream.kill()
        served.close()


@pytest.mark.parametrize("fail", ["open", "closed"])
async def test_a_backend_down_at_start_joins_when_it_comes_up(mcpwire_bin, tmp_path, fail):
    port = free_port()
    served, admin = gateway(mcpwire_bin, tmp_path, port, fail=fail)
    upstream = None
    try:
        status, body = readyz(admin)
        assert backend_up(admin, "up") is False, body
        assert status == (503 if fail == "closed" else 200), body
        async with streamable_http_client(served.url) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=30) as s:
                await s.initialize()
                if fail == "open":
                    # Prefixed from the start: the conditional prefix counts `up` too.
                    names = await tool_names(s)
                    assert "demo_echo" in names and not any(n.startswith("up_") for n in names)

                upstream = Upstream(port, "alpha")

                async def alpha_listed():
                    try:
                        return "up_alpha" in await tool_names(s)
                    except Exception:
                        return False  # fail = "closed": lists refused until it is up

                await wait_until(alpha_listed, seconds=BACK_WITHIN)
                assert "demo_echo" in await tool_names(s)
                r = await s.call_tool("up_alpha", {"text": "late"})
                assert text_of(r) == "alpha: late"
        assert readyz(admin)[0] == 200
        assert backend_up(admin, "up") is True
    finally:
        if upstream:
            upstream.kill()
        served.close()
