"""Issue 23 items 6, 7 and 10, through `mcpwire serve` with the official Python client:

- MCP Apps: two FastMCP upstreams (tests/python/fixtures/fastmcp_app.py) both serve
  `ui://trialfast/widget.html`; the second's widget stays a `ui://` URI
  (`ui://mcpwire+two/trialfast/widget.html`), its tool's `_meta.ui.resourceUri`, its result's
  resource link and embedded resource point at it, and reading it gives the second's HTML;
- a task-required tool (server-everything's `simulate-research-query`, 2025-11-25 tasks):
  the gateway runs it as a task of the upstream's and answers the call with its result, so
  a client without tasks calls it like any tool; it is listed `taskSupport: "optional"`;
- a tool the upstream offers only to clients with sampling (server-everything's
  `trigger-sampling-request`), called by a client without it, is refused saying why,
  under the exposed name (not the upstream's "Tool trigger-sampling-request not found").

docs/design/gateway.md § MCP Apps and task-required tools."""

import pathlib
import sys

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from peers import Notes, Recorder, full_session, text_of
from test_gateway_everything import EVERYTHING, config, need
from test_gateway_serve import Served

pytestmark = pytest.mark.anyio

APP = pathlib.Path(__file__).resolve().parent / "fixtures" / "fastmcp_app.py"
WIDGET = "ui://trialfast/widget.html"
RENAMED = "ui://mcpwire+two/trialfast/widget.html"


def app(name: str) -> str:
    return f'[backends.{name}]\ncommand = ["{sys.executable}", "{APP}", "{name}"]\n\n'


def everything_and_demo(mcpwire_bin, tmp_path) -> Served:
    """A gateway over HTTP in front of server-everything (stdio) and the native demo."""
    need(EVERYTHING)
    everything = f'[backends.everything]\ncommand = ["{EVERYTHING}"]\n\n'
    return Served(mcpwire_bin, config(tmp_path, everything + '[backends.demo]\nnative = "demo"\n'))


async def test_a_contested_ui_uri_stays_ui_and_every_reference_follows(mcpwire_bin, tmp_path):
    served = Served(mcpwire_bin, config(tmp_path, app("one") + app("two")))
    try:
        async with streamable_http_client(served.url) as (read, write):
            rec, notes = Recorder(), Notes()
            async with full_session(read, write, rec, notes) as s:
                await s.initialize()
                uris = sorted(str(r.uri) for r in (await s.list_resources()).resources)
                assert uris == sorted([WIDGET, RENAMED])
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert tools["one_show"].meta["ui"]["resourceUri"] == WIDGET
                assert tools["two_show"].meta["ui"]["resourceUri"] == RENAMED
                for tool, uri, label in [("one_show", WIDGET, "one"), ("two_show", RENAMED, "two")]:
                    r = await s.call_tool(tool, {})
                    assert not r.is_error, r
                    link = next(c for c in r.content if c.type == "resource_link")
                    embedded = next(c for c in r.content if c.type == "resource")
                    assert str(link.uri) == uri
                    assert str(embedded.resource.uri) == uri
                    read_back = await s.read_resource(uri)
                    assert read_back.contents[0].text == f"<!doctype html><p>widget of {label}</p>"
                    assert str(read_back.contents[0].uri) == uri
    finally:
        served.close()


async def test_a_task_required_tool_is_called_through_the_gateway(mcpwire_bin, tmp_path):
    served = everything_and_demo(mcpwire_bin, tmp_path)
    try:
        async with streamable_http_client(served.url) as (read, write):
            rec, notes = Recorder(), Notes()
            async with full_session(read, write, rec, notes) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                tool = tools["everything_simulate-research-query"]
                assert tool.execution.task_support == "optional"
                r = await s.call_tool(
                    "everything_simulate-research-query", {"topic": "rust", "ambiguous": False}
                )
                assert not r.is_error, r
                assert "rust" in text_of(r).lower()
                # Asks of the task (its `input_required`) reach the client and are answered.
                r = await s.call_tool(
                    "everything_simulate-research-query", {"topic": "python", "ambiguous": True}
                )
                assert not r.is_error, r
                # The client's answer (no `interpretation`) reached the upstream's task.
                assert "User accepted without selection" in text_of(r), text_of(r)
    finally:
        served.close()


async def test_a_tool_the_clients_session_lacks_is_refused_saying_why(mcpwire_bin, tmp_path):
    served = everything_and_demo(mcpwire_bin, tmp_path)
    try:
        async with streamable_http_client(served.url) as (read, write):
            # No sampling, elicitation or roots callbacks: the client declares none.
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                assert "everything_trigger-sampling-request" in names
                r = await s.call_tool("everything_trigger-sampling-request", {"prompt": "hi"})
                assert r.is_error
                text = text_of(r)
                assert text.startswith("`everything_trigger-sampling-request` is not offered"), text
                assert "sampling" in text and "not found" not in text, text
                # Tools it does offer still work.
                r = await s.call_tool("everything_echo", {"message": "hi"})
                assert not r.is_error and "hi" in text_of(r), r
    finally:
        served.close()
