"""The official Python `mcp` client drives `examples/notes` (a server written with mcpwire's
macros) over stdio and over Streamable HTTP served from the library (`ServeConfig`)."""

import os
import socket
import subprocess
import threading

import pytest

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from conftest import ROOT

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session")
def notes_bin() -> str:
    path = os.environ.get("MCPWIRE_NOTES_BIN", str(ROOT / "target" / "debug" / "notes"))
    if not os.path.exists(path):
        pytest.fail(f"notes binary not found at {path}; run `cargo build -p mcpwire-example-notes` first")
    return path


async def exercise(s: ClientSession):
    init = await s.initialize()
    assert init.server_info.name == "notes"

    tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) == {"add", "list", "search"}
    assert tools["add"].description == "Adds a note and returns it with its id."
    assert tools["add"].input_schema["properties"]["text"]["description"] == "What the note says."
    assert tools["search"].annotations.read_only_hint is True
    assert tools["list"].output_schema["properties"]["notes"]["description"] == "The notes, oldest first."

    r = await s.call_tool("add", {"text": "Buy milk", "tags": ["shopping"]})
    assert r.structured_content == {"id": 1, "text": "Buy milk", "tags": ["shopping"]}
    await s.call_tool("add", {"text": "Call Ada", "tags": ["people"]})
    r = await s.call_tool("search", {"query": "milk"})
    assert [n["id"] for n in r.structured_content["notes"]] == [1]
    r = await s.call_tool("add", {"tags": ["no text"]})
    assert r.is_error

    prompts = (await s.list_prompts()).prompts
    assert prompts[0].name == "summarize" and prompts[0].arguments[0].required
    gp = await s.get_prompt("summarize", {"tag": "people"})
    assert "- Call Ada" in gp.messages[0].content.text
    c = await s.complete(types.PromptReference(type="ref/prompt", name="summarize"), {"name": "tag", "value": "sh"})
    assert c.completion.values == ["shopping"]

    templates = (await s.list_resource_templates()).resource_templates
    assert templates[0].uri_template == "notes://{id}"
    rr = await s.read_resource("notes://2")
    assert rr.contents[0].text == "Call Ada"


async def test_notes_over_stdio(notes_bin):
    params = StdioServerParameters(command=notes_bin, args=[], env={"MCPWIRE_LOG": "warn"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=10) as s:
            await exercise(s)


async def test_notes_over_http_served_from_the_library(notes_bin):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [notes_bin, "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "listening on http://" in line, line
        threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=10) as s:
                await exercise(s)
    finally:
        proc.terminate()
        proc.wait(timeout=5)
