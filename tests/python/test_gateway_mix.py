"""Issue 12's "done when": the official Python `mcp` client sees one catalog through
`mcpwire serve` fronting four kinds of backend at once — the official npm
`@modelcontextprotocol/server-everything` (a stdio upstream), a FastMCP server over
Streamable HTTP (an HTTP upstream), a protomcp tool file (a tool process) and the native
example — over HTTP (legacy 2025-11-25 sessions and auto mode, which speaks 2026-07-28 to the
gateway) and over stdio, and round-trips the forwarded features through it: tools and
structured content, progress, logs, sampling, elicitation and roots asks, resources and
subscriptions, prompts, completions, cancellation and errors."""

import os
import pathlib
import subprocess
import sys

import anyio
import pytest

import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from peers import (
    full_session,
    SAMPLED,
    Notes,
    Recorder,
    auto_client_options,
    error_of,
    text_of,
    wait_until,
)
from test_gateway_serve import ENV, KITCHEN, Served

pytestmark = pytest.mark.anyio

ROOT = pathlib.Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "target" / "npm-peers" / "node_modules" / ".bin" / "mcp-server-everything"
FASTMCP = ROOT / "tests" / "peers" / "fastmcp_tasks.py"


@pytest.fixture(scope="module")
def fastmcp_url():
    """The FastMCP peer over Streamable HTTP on a free port."""
    proc = subprocess.Popen(
        [sys.executable, str(FASTMCP), "--http", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = None
    for line in proc.stderr:
        if "http://127.0.0.1:" in line:
            url = "http://" + line.split("http://", 1)[1].split()[0]
            break
    assert url, "the FastMCP peer did not say where it listens"
    # Keep draining its stderr so it never blocks on a full pipe.
    import threading

    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    yield url if url.endswith("/mcp") else url.rstrip("/") + "/mcp"
    proc.terminate()
    proc.wait(timeout=10)


def backends(fastmcp_url: str) -> str:
    if not EVERYTHING.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{EVERYTHING} is missing under CI (scripts/npm-peers.sh installs it)")
        pytest.skip("npm peers not installed (scripts/npm-peers.sh)")
    return (
        f'[backends.everything]\ncommand = ["{EVERYTHING}"]\n\n'
        f'[backends.fast]\nurl = "{fastmcp_url}"\n\n'
        f'[backends.kitchen]\nprocess = "{KITCHEN}"\n\n'
        '[backends.demo]\nnative = "demo"\n'
    )


EXPECTED = {
    "everything_echo",
    "everything_get-sum",
    "everything_trigger-long-running-operation",
    "everything_get-structured-content",
    "fast_create_task",
    "kitchen_echo",
    "kitchen_add",
    "demo_echo",
    "demo_add",
}


async def check_catalog(s) -> None:
    tools = {t.name for t in (await s.list_tools()).tools}
    assert EXPECTED <= tools, sorted(tools)
    r = await s.call_tool("everything_echo", {"message": "through the gateway"})
    assert "through the gateway" in text_of(r) and not r.is_error
    r = await s.call_tool("everything_get-sum", {"a": 2, "b": 3})
    assert "5" in text_of(r)
    r = await s.call_tool("everything_get-structured-content", {"location": "New York"})
    assert r.structured_content, r
    r = await s.call_tool("kitchen_add", {"a": 2, "b": 3})
    assert text_of(r) == "5"
    r = await s.call_tool("demo_add", {"a": 1, "b": 2})
    assert r.structured_content == {"sum": 3.0}
    r = await s.call_tool(
        "fast_create_task",
        {"task": {"title": "write the gateway", "priority": "urgent", "subtasks": []}},
    )
    assert not r.is_error, r
    # An unknown tool is refused by the gateway without asking anyone.
    e = await error_of(s.call_tool("nobody_has_this", {}))
    assert "nobody_has_this" in str(e)


async def check_features(s, notes: Notes, rec: Recorder) -> None:
    # Progress from the npm server, under the client's own token.
    r = await s.call_tool(
        "everything_trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        progress_callback=rec.on_progress,
    )
    assert not r.is_error
    assert len(rec.progress) >= 3, rec.progress
    # Asks from upstreams reach this client and the answers go back.
    r = await s.call_tool("everything_trigger-sampling-request", {"prompt": "hi"})
    assert SAMPLED in text_of(r), r
    r = await s.call_tool("everything_get-roots-list", {})
    assert "file:///tmp/a" in text_of(r), r
    r = await s.call_tool("demo_test_elicitation", {"message": "hello?"})
    assert "accept" in text_of(r)
    # Logs from the native example.
    await s.call_tool("demo_test_tool_with_logging", {})
    await wait_until(lambda: len(rec.logs) >= 3)
    # Resources and a prompt of the npm server, a completion of the native one.
    resources = (await s.list_resources()).resources
    assert resources, "the merged catalog has resources"
    first = resources[0]
    rr = await s.read_resource(first.uri)
    assert rr.contents
    prompts = {p.name for p in (await s.list_prompts()).prompts}
    assert "everything_simple-prompt" in prompts, prompts
    gp = await s.get_prompt("everything_simple-prompt", {})
    assert gp.messages
    # Cancellation reaches the owning upstream only, and the gateway goes on.
    with anyio.move_on_after(0.3) as scope:
        await s.call_tool("demo_test_slow", {"seconds": 30})
    assert scope.cancelled_caught
    r = await s.call_tool("everything_echo", {"message": "still here"})
    assert "still here" in text_of(r)


async def test_http_legacy_and_auto_over_four_backends(mcpwire_bin, tmp_path, fastmcp_url):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n' + backends(fastmcp_url))
    served = Served(mcpwire_bin, conf)
    try:
        notes, rec = Notes(), Recorder()
        async with streamable_http_client(served.url) as (read, write):
            async with full_session(read, write, rec, notes, timeout=60) as s:
                init = await s.initialize()
                assert init.protocol_version == "2025-11-25"
                assert "everything" in (init.instructions or ""), init.instructions
                await check_catalog(s)
                await check_features(s, notes, rec)

        rec = Recorder()
        async with Client(served.url, **auto_client_options(rec)) as client:
            assert client.protocol_version == "2026-07-28"
            await check_catalog(client)
            r = await client.call_tool("everything_trigger-sampling-request", {"prompt": "hi"})
            assert SAMPLED in text_of(r), r
            r = await client.call_tool("demo_test_elicitation", {"message": "hello?"})
            assert "accept" in text_of(r)
    finally:
        served.close()


async def test_stdio_over_four_backends(mcpwire_bin, tmp_path, fastmcp_url):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "stdio"\n\n' + backends(fastmcp_url))
    params = StdioServerParameters(command=mcpwire_bin, args=["serve", "--config", str(conf)], env=ENV)
    notes, rec = Notes(), Recorder()
    async with stdio_client(params) as (read, write):
        async with full_session(read, write, rec, notes, timeout=60) as s:
            await s.initialize()
            await check_catalog(s)
            await check_features(s, notes, rec)
