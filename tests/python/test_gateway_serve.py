"""The official Python `mcp` client sees one merged catalog through `mcpwire serve`: the
built-in example (native) and a protomcp 0.3.1 tool file (a tool process) behind one
gateway, over stdio (quick flags) and over Streamable HTTP (a configuration file), in
legacy and auto (stateless 2026-07-28) modes — and a backend added by editing the file
while a client stays connected."""

import os
import pathlib
import subprocess
import sys
import threading

import anyio
import pytest

import mcp.types as types
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from peers import text_of

pytestmark = pytest.mark.anyio

KITCHEN = pathlib.Path(__file__).resolve().parent / "protomcp_tools" / "kitchen.py"

ENV = {"MCPWIRE_LOG": "warn", "PROTOMCP_PYTHON": sys.executable, "PATH": os.environ.get("PATH", "")}

MERGED_TOOLS = {"demo_echo", "demo_add", "demo_test_sampling", "kitchen_echo", "kitchen_add", "kitchen_blob"}


async def check_merged(s: ClientSession):
    """The merged catalog: both backends' tools, prompts, resources, each reaching its owner."""
    tools = {t.name for t in (await s.list_tools()).tools}
    assert MERGED_TOOLS <= tools, tools
    assert not {"echo", "add"} & tools, "two backends: every name carries its prefix"

    r = await s.call_tool("kitchen_add", {"a": 2, "b": 3})
    assert text_of(r) == "5" and not r.is_error
    r = await s.call_tool("demo_add", {"a": 2, "b": 3.5})
    assert r.structured_content == {"sum": 5.5}
    r = await s.call_tool("kitchen_echo", {"text": "from the tool file"})
    assert text_of(r) == "from the tool file"
    r = await s.call_tool("demo_echo", {"text": "from the native server"})
    assert text_of(r) == "from the native server"

    prompts = {p.name for p in (await s.list_prompts()).prompts}
    assert {"kitchen_greet", "demo_test_simple_prompt"} <= prompts, prompts
    p = await s.get_prompt("kitchen_greet", {"who": "gateway"})
    assert "Hello, gateway!" in p.messages[0].content.text

    uris = {str(r.uri) for r in (await s.list_resources()).resources}
    assert {"kitchen://menu", "test://static-text"} <= uris, uris
    menu = await s.read_resource("kitchen://menu")
    assert menu.contents[0].text == "soup, bread"
    static = await s.read_resource("test://static-text")
    assert static.contents[0].text


async def test_stdio_gateway_from_quick_flags(mcpwire_bin):
    params = StdioServerParameters(
        command=mcpwire_bin,
        args=["serve", "--demo", "--process", f"kitchen={KITCHEN}"],
        env=ENV,
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as s:
            init = await s.initialize()
            assert init.server_info.name == "mcpwire"
            assert "demo" in (init.instructions or "") and "kitchen" in (init.instructions or "")
            await check_merged(s)


class Served:
    """`mcpwire serve --config FILE` listening on HTTP; its stderr lines kept."""

    def __init__(self, mcpwire_bin, config: pathlib.Path, env: dict | None = None):
        self.proc = subprocess.Popen(
            [mcpwire_bin, "serve", "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(ENV, **(env or {})),
            text=True,
        )
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = self.wait_for("mcpwire: listening on http://").split()[-1]

    def _drain(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_for(self, needle: str, after: int = 0, seconds: float = 60.0) -> str:
        """The first stderr line from index `after` containing `needle`."""
        with self.cond:
            ok = self.cond.wait_for(
                lambda: any(needle in line for line in self.lines[after:]), timeout=seconds
            )
            assert ok, f"no stderr line with {needle!r}: {self.lines}"
            return next(line for line in self.lines[after:] if needle in line)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def config_text(backends: str) -> str:
    return f'[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n{backends}'


DEMO = '[backends.demo]\nnative = "demo"\n'
TOOLS = f'[backends.kitchen]\nprocess = "{KITCHEN}"\n'


async def test_http_gateway_from_a_file_legacy_and_auto(mcpwire_bin, tmp_path):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(config_text(DEMO + TOOLS))
    served = Served(mcpwire_bin, conf)
    try:
        async with streamable_http_client(served.url) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=60) as s:
                init = await s.initialize()
                assert init.protocol_version == "2025-11-25"
                await check_merged(s)

        async with Client(served.url, mode="auto", read_timeout_seconds=60) as client:
            assert client.protocol_version == "2026-07-28"
            tools = {t.name for t in (await client.list_tools()).tools}
            assert MERGED_TOOLS <= tools
            r = await client.call_tool("kitchen_echo", {"text": "stateless"})
            assert text_of(r) == "stateless"
            r = await client.call_tool("demo_add", {"a": 1, "b": 2})
            assert r.structured_content == {"sum": 3.0}
    finally:
        served.close()


async def test_a_backend_added_while_a_session_stays(mcpwire_bin, tmp_path):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(config_text(DEMO))
    served = Served(mcpwire_bin, conf)
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    try:
        async with streamable_http_client(served.url) as (read, write):
            async with ClientSession(
                read, write, read_timeout_seconds=60, message_handler=on_message
            ) as s:
                await s.initialize()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert "echo" in tools and "kitchen_echo" not in tools

                seen = len(served.lines)
                conf.write_text(config_text(DEMO + TOOLS))
                assert served.wait_for("mcpwire: reloaded", after=seen).endswith("added kitchen")
                with anyio.fail_after(30):
                    await changed.wait()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert MERGED_TOOLS <= tools, tools
                r = await s.call_tool("kitchen_echo", {"text": "added while connected"})
                assert text_of(r) == "added while connected"
    finally:
        served.close()


async def test_a_reload_leaves_calls_in_flight_on_other_backends_alone(mcpwire_bin, tmp_path):
    """Removing one backend while a call runs on another (an upstream with a child per
    session): the call finishes with its result, the session and its child stay, and the
    removed backend's tools go with one list change."""
    upstream = f'[backends.up]\ncommand = ["{mcpwire_bin}", "demo"]\n'
    conf = tmp_path / "mcpwire.toml"
    head = '[server]\nprefix = "always"\n\n'
    conf.write_text(head + config_text(upstream + TOOLS))
    served = Served(mcpwire_bin, conf)
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    try:
        async with streamable_http_client(served.url) as (read, write):
            async with ClientSession(
                read, write, read_timeout_seconds=60, message_handler=on_message
            ) as s:
                await s.initialize()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert {"up_test_slow", "kitchen_echo"} <= tools, tools
                r = await s.call_tool("up_echo", {"text": "before"})
                assert text_of(r) == "before"

                result, started = {}, anyio.Event()

                async def on_progress(progress, total, message):
                    started.set()

                async def slow():
                    # Reports progress as it starts, then works 2 s.
                    args = {"seconds": 2}
                    result["r"] = await s.call_tool("up_slow_compute", args, progress_callback=on_progress)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow)
                    # The reload comes once the call runs on the upstream.
                    with anyio.fail_after(15):
                        await started.wait()
                    seen = len(served.lines)
                    conf.write_text(head + config_text(upstream))
                    line = served.wait_for("mcpwire: reloaded", after=seen)
                    assert "removed kitchen" in line, line
                    assert "r" not in result, "the call was still running at the reload"
                    with anyio.fail_after(30):
                        await changed.wait()
                r = result["r"]
                assert not r.is_error, r
                tools = {t.name for t in (await s.list_tools()).tools}
                assert "up_test_slow" in tools and "kitchen_echo" not in tools, tools
                r = await s.call_tool("up_echo", {"text": "after"})
                assert text_of(r) == "after"
    finally:
        served.close()
