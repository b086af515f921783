"""Rate limits as the official Python `mcp` client meets them (`docs/design/limits.md`):
over stdio a refused call is an `MCPError` (-32600, `data.limit`, `data.retryAfter`) and the
session goes on; over Streamable HTTP the refused request is answered 429 with `Retry-After`
and the JSON-RPC error, which the client reads as the call's `MCPError`; the session goes on."""

import httpx2
import pytest

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conftest import spawn_http_demo
from peers import text_of

pytestmark = pytest.mark.anyio


async def test_stdio_refused_call_is_an_mcp_error_and_the_session_goes_on(mcpwire_bin):
    params = StdioServerParameters(
        command=mcpwire_bin, args=["demo", "--rate-per-tool", "2/h"], env={"MCPWIRE_LOG": "warn"}
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            for _ in range(2):
                assert text_of(await s.call_tool("echo", {"text": "hi"})) == "hi"
            with pytest.raises(MCPError) as refused:
                await s.call_tool("echo", {"text": "hi"})
            error = refused.value.error
            assert error.code == -32600
            assert error.data["limit"] == "tool"
            assert error.data["retryAfter"] >= 1
            # Another tool has its own rate: the session is still served.
            assert "3" in text_of(await s.call_tool("add", {"a": 1, "b": 2}))


@pytest.fixture()
def limited_url(mcpwire_bin):
    proc, url = spawn_http_demo(mcpwire_bin, ["--rate-per-ip", "4/h"])
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=5)


async def test_http_refused_request_is_429_with_retry_after(limited_url):
    statuses = []

    async def record(response):
        statuses.append((response.status_code, response.headers.get("retry-after")))

    async with httpx2.AsyncClient(timeout=10, event_hooks={"response": [record]}) as http:
        async with streamable_http_client(limited_url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=10) as s:
                await s.initialize()
                refused, served = None, 0
                for _ in range(6):
                    try:
                        await s.call_tool("echo", {"text": "hi"})
                        served += 1
                    except MCPError as e:
                        refused = e
                        break
                assert refused is not None, statuses
                # The client reads the 429's JSON-RPC body as the call's error.
                assert refused.error.code == -32600
                assert refused.error.data["limit"] == "ip"
                # initialize and ping are not counted; the client's own `tools/list` (it
                # fetches output schemas before its first call) and three calls are the four
                # requests of the rate.
                assert served == 3
                assert await s.send_ping() is not None
    rejected = [s for s in statuses if s[0] == 429]
    assert rejected, statuses
    assert int(rejected[0][1]) >= 1
