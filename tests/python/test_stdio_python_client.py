"""The official Python `mcp` client drives `mcpwire demo` over stdio, in legacy
(`ClientSession` + initialize) and auto (`Client`, probing `server/discover`) modes."""

import json

import anyio
import pytest

import mcp.types as types
from mcp import Client, ClientSession
from mcp.client.stdio import stdio_client

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

async def test_legacy_session_full_surface(demo):
    rec = Recorder()
    async with stdio_client(demo) as (read, write):
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
            names = {t.name for t in tools}
            assert {"echo", "add", "test_simple_text", "test_sampling", "test_elicitation"} <= names
            add = next(t for t in tools if t.name == "add")
            assert add.output_schema is not None and add.annotations.read_only_hint is True

            r = await s.call_tool("echo", {"text": "hello"})
            assert text_of(r) == "hello" and not r.is_error
            r = await s.call_tool("add", {"a": 2, "b": 3.5})
            assert r.structured_content == {"sum": 5.5}

            # Input validation errors are tool errors, not protocol errors.
            r = await s.call_tool("add", {"a": "x"})
            assert r.is_error
            r = await s.call_tool("test_error_handling", {})
            assert r.is_error and "intentionally" in text_of(r)

            # Resources, templates, subscribe.
            res = (await s.list_resources()).resources
            assert any(str(x.uri) == "test://static-text" for x in res)
            rr = await s.read_resource("test://static-text")
            assert rr.contents[0].text == "This is the content of the static text resource."
            rr = await s.read_resource("test://static-binary")
            assert rr.contents[0].blob
            tpl = (await s.list_resource_templates()).resource_templates
            assert tpl[0].uri_template == "test://template/{id}/data"
            rr = await s.read_resource("test://template/123/data")
            assert "123" in rr.contents[0].text
            await s.subscribe_resource("test://watched-resource")
            await s.unsubscribe_resource("test://watched-resource")

            # Prompts and completion.
            prompts = (await s.list_prompts()).prompts
            assert {"test_simple_prompt", "test_prompt_with_arguments"} <= {p.name for p in prompts}
            gp = await s.get_prompt("test_prompt_with_arguments", {"arg1": "v1", "arg2": "v2"})
            assert "v1" in json.dumps(gp.model_dump(mode="json"))
            c = await s.complete(types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"), {"name": "arg1", "value": "test"})
            assert isinstance(c.completion.values, list)

            # Progress and logging.
            r = await s.call_tool("test_tool_with_progress", {}, progress_callback=rec.on_progress)
            assert len(rec.progress) >= 3
            assert [p[0] for p in rec.progress] == sorted(p[0] for p in rec.progress)
            await s.set_logging_level("debug")
            await s.call_tool("test_tool_with_logging", {})
            await wait_until(lambda: len(rec.logs) >= 3)

            # Server -> client requests.
            r = await s.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
            assert SAMPLED in text_of(r)
            r = await s.call_tool("test_elicitation", {"message": "Please provide your information"})
            assert "accept" in text_of(r)
            r = await s.call_tool("test_input_required_result_list_roots", {})
            assert "2 root" in text_of(r)

            # Cancellation: the slow call is abandoned and the server keeps serving.
            with anyio.move_on_after(0.3) as scope:
                await s.call_tool("test_slow", {"seconds": 30})
            assert scope.cancelled_caught
            r = await s.call_tool("echo", {"text": "after cancel"})
            assert text_of(r) == "after cancel"


async def test_auto_client_uses_stateless_2026(demo):
    rec = Recorder()
    async with Client(demo, **auto_client_options(rec)) as client:
        await exercise_stateless_client(client, rec)


async def test_legacy_client_mode(demo):
    async with Client(demo, mode="legacy", read_timeout_seconds=10) as client:
        assert client.protocol_version == "2025-11-25"
        r = await client.call_tool("echo", {"text": "legacy"})
        assert text_of(r) == "legacy"
