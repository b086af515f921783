"""The official Python `mcp` client drives `mcpwire demo --transport http` over Streamable
HTTP, in legacy (`ClientSession` + initialize, a stateful session) and auto (`Client`,
probing `server/discover`, then stateless 2026-07-28 POSTs) modes."""


import anyio
import pytest

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from peers import (
    SAMPLED,
    Recorder,
    auto_client_options,
    elicitation_cb,
    exercise_stateless_client,
    list_roots_cb,
    sampling_cb,
    text_of,
    wait_until,
)

pytestmark = pytest.mark.anyio


async def test_legacy_session_over_http(http_url):
    rec = Recorder()
    async with streamable_http_client(http_url) as (read, write):
        async with ClientSession(
            read,
            write,
            read_timeout_seconds=10,
            sampling_callback=sampling_cb,
            elicitation_callback=elicitation_cb,
            list_roots_callback=list_roots_cb,
            logging_callback=rec.logging,
        ) as s:
            init = await s.initialize()
            assert init.protocol_version == "2025-11-25"
            assert init.server_info.name == "mcpwire-everything"

            tools = (await s.list_tools()).tools
            assert {"echo", "add", "test_sampling"} <= {t.name for t in tools}
            r = await s.call_tool("echo", {"text": "hello"})
            assert text_of(r) == "hello" and not r.is_error
            r = await s.call_tool("add", {"a": 2, "b": 3.5})
            assert r.structured_content == {"sum": 5.5}
            r = await s.call_tool("test_error_handling", {})
            assert r.is_error

            rr = await s.read_resource("test://static-text")
            assert rr.contents[0].text == "This is the content of the static text resource."
            await s.subscribe_resource("test://watched-resource")
            await s.unsubscribe_resource("test://watched-resource")
            gp = await s.get_prompt("test_prompt_with_arguments", {"arg1": "v1", "arg2": "v2"})
            assert gp.messages

            # Progress arrives on the tool call's SSE stream, before its result.
            r = await s.call_tool("test_tool_with_progress", {}, progress_callback=rec.on_progress)
            assert len(rec.progress) >= 3
            assert [p[0] for p in rec.progress] == sorted(p[0] for p in rec.progress)

            await s.set_logging_level("debug")
            await s.call_tool("test_tool_with_logging", {})
            await wait_until(lambda: len(rec.logs) >= 3)

            # Server -> client requests ride the call's stream; answers come back as POSTs.
            r = await s.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
            assert SAMPLED in text_of(r)
            r = await s.call_tool("test_elicitation", {"message": "Please provide your information"})
            assert "accept" in text_of(r)
            r = await s.call_tool("test_input_required_result_list_roots", {})
            assert "2 root" in text_of(r)

            # SSE polling: the server closes this call's stream mid-call; the client resumes
            # it with GET + Last-Event-ID and gets the result there.
            r = await s.call_tool("test_reconnection", {})
            assert text_of(r) == "Reconnection test completed"

            # Concurrent calls on one session, each on its own POST.
            async with anyio.create_task_group() as tg:
                results = {}

                async def call(i):
                    results[i] = text_of(await s.call_tool("echo", {"text": f"c{i}"}))

                for i in range(8):
                    tg.start_soon(call, i)
            assert results == {i: f"c{i}" for i in range(8)}

            # Cancellation: notifications/cancelled is POSTed; the session goes on.
            with anyio.move_on_after(0.3) as scope:
                await s.call_tool("test_slow", {"seconds": 30})
            assert scope.cancelled_caught
            r = await s.call_tool("echo", {"text": "after cancel"})
            assert text_of(r) == "after cancel"


async def test_auto_client_uses_stateless_2026_over_http(http_url):
    rec = Recorder()
    async with Client(http_url, **auto_client_options(rec)) as client:
        await exercise_stateless_client(client, rec)


async def test_legacy_client_mode_over_http(http_url):
    async with Client(http_url, mode="legacy", read_timeout_seconds=10) as client:
        assert client.protocol_version == "2025-11-25"
        r = await client.call_tool("echo", {"text": "legacy"})
        assert text_of(r) == "legacy"
        r = await client.call_tool("add", {"a": 1, "b": 2})
        assert r.structured_content == {"sum": 3.0}
