"""The official Python `mcp` client in front of a federation of three members (the conformance
fixture set `everything`, the `notes` example and `extra`, whose `echo`, `add` and
`test://static-text` collide with theirs), prefix mode `never`, served over Streamable HTTP by
crates/mcpwire-federation/tests/python_client.rs, which runs this script as

    python federation_client.py FEDERATION_URL VIEW_URL

and expects exit status 0 and "federation ok". The view serves everything of `notes` and the
tool `echo`."""

import sys

import anyio

import mcp.types as types
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from peers import (
    full_session,
    Notes,
    error_of,
    wait_until,
    SAMPLED,
    Recorder,
    auto_client_options,
    exercise_stateless_client,
    text_of,
)


async def legacy(url: str) -> None:
    rec, notes = Recorder(), Notes()
    async with streamable_http_client(url) as (read, write):
        async with full_session(read, write, rec, notes, timeout=10) as s:
            init = await s.initialize()
            assert init.server_info.name == "mcpwire-gateway", init.server_info
            assert "everything, notes, extra" in (init.server_info.description or "")
            for member in ("`everything`", "`notes`", "`extra`"):
                assert member in init.instructions, init.instructions
            assert "## everything\nThe conformance fixtures." in init.instructions
            assert init.capabilities.tools.list_changed
            assert init.capabilities.resources.subscribe

            # One catalog, in member order; the collisions moved to the later members.
            tools = [t.name for t in (await s.list_tools()).tools]
            assert len(tools) == len(set(tools)), tools
            for name in ("echo", "add", "test_sampling", "notes_add", "list", "search", "extra_echo"):
                assert name in tools, (name, tools)
            assert tools.index("echo") < tools.index("notes_add") < tools.index("extra_echo")
            assert tools[-1] == "extra_echo"

            r = await s.call_tool("echo", {"text": "hi"})
            assert text_of(r) == "hi"
            r = await s.call_tool("extra_echo", {"text": "hi"})
            assert text_of(r) == "extra:hi"
            r = await s.call_tool("add", {"a": 2, "b": 3.5})
            assert r.structured_content == {"sum": 5.5}
            r = await s.call_tool("notes_add", {"text": "gateway: one catalog", "tags": ["gw"]})
            assert not r.is_error, r
            r = await s.call_tool("search", {"query": "catalog"})
            assert "gateway" in text_of(r), text_of(r)
            err = await error_of(s.call_tool("no_such_tool", {}))
            assert "no_such_tool" in err.message

            # Progress, logs and server->client requests of a member reach this client.
            r = await s.call_tool("test_tool_with_progress", {}, progress_callback=rec.on_progress)
            assert len(rec.progress) >= 3
            await s.set_logging_level("debug")
            await s.call_tool("test_tool_with_logging", {})
            await wait_until(lambda: len(rec.logs) >= 3)
            r = await s.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
            assert SAMPLED in text_of(r)
            r = await s.call_tool("test_elicitation", {"message": "Please provide your information"})
            assert "accept" in text_of(r)
            r = await s.call_tool("test_input_required_result_list_roots", {})
            assert "2 root" in text_of(r)

            # Resources: the contested URI is exposed rewritten and reads from its owner.
            uris = [str(r.uri) for r in (await s.list_resources()).resources]
            assert "test://static-text" in uris and "mcpwire+extra:test://static-text" in uris, uris
            rr = await s.read_resource("test://static-text")
            assert rr.contents[0].text == "This is the content of the static text resource."
            rr = await s.read_resource("mcpwire+extra:test://static-text")
            assert rr.contents[0].text == "extra's static text"
            assert str(rr.contents[0].uri) == "mcpwire+extra:test://static-text"
            templates = [t.uri_template for t in (await s.list_resource_templates()).resource_templates]
            assert "notes://{id}" in templates, templates
            rr = await s.read_resource("notes://1")
            assert "gateway" in rr.contents[0].text, rr
            c = await s.complete(types.PromptReference(name="summarize"), {"name": "tag", "value": "g"})
            assert c.completion.values == ["gw"], c

            # Subscriptions and updates go through the owner, under the exposed URI.
            await s.subscribe_resource("test://watched-resource")
            await s.call_tool("test_trigger_resource_update", {})
            await wait_until(lambda: notes.methods("notifications/resources/updated"))
            updated = notes.methods("notifications/resources/updated")[0]
            assert str(updated.params.uri) == "test://watched-resource"
            await s.unsubscribe_resource("test://watched-resource")

            # Prompts and completions, routed by the prompt they refer to.
            prompts = [p.name for p in (await s.list_prompts()).prompts]
            assert "test_simple_prompt" in prompts and "summarize" in prompts and "greet" in prompts
            gp = await s.get_prompt("greet", {"who": "Ada"})
            assert gp.messages[0].content.text == "Hello, Ada"
            c = await s.complete(types.PromptReference(name="greet"), {"name": "who", "value": "A"})
            assert c.completion.values == ["Ada", "Alan"], c
            c = await s.complete(
                types.ResourceTemplateReference(uri="test://template/{id}/data"), {"name": "id", "value": ""}
            )
            assert c.completion.values == ["1", "2", "3"], c

            # A member's list change is re-listed and forwarded once.
            before = len(notes.methods("notifications/tools/list_changed"))
            await s.call_tool("test_trigger_tool_change", {})
            await wait_until(lambda: len(notes.methods("notifications/tools/list_changed")) > before)
            tools = [t.name for t in (await s.list_tools()).tools]
            assert "test_dynamic_tool" in tools
            r = await s.call_tool("test_dynamic_tool", {})
            assert "dynamically added" in text_of(r)
            await s.call_tool("echo", {"text": "flush"})
            assert len(notes.methods("notifications/tools/list_changed")) == before + 1


async def auto(url: str) -> None:
    """A 2026-07-28 client (`server/discover`, stateless requests): the fixture set's own
    checks pass through the federation unchanged (its names are unprefixed and first)."""
    rec = Recorder()
    async with Client(url, **auto_client_options(rec)) as client:
        await exercise_stateless_client(client, rec)
        r = await client.call_tool("extra_echo", {"text": "stateless"})
        assert text_of(r) == "extra:stateless"


async def view(url: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=10) as s:
            init = await s.initialize()
            assert init.server_info.name == "notes-view"
            assert "`notes`" in init.instructions and "`extra`" not in init.instructions
            tools = [t.name for t in (await s.list_tools()).tools]
            assert tools == ["echo", "notes_add", "list", "search"], tools
            r = await s.call_tool("echo", {"text": "in view"})
            assert text_of(r) == "in view"
            # Outside the view: the very answer a name that exists nowhere gets.
            hidden = await error_of(s.call_tool("extra_echo", {"text": "x"}))
            missing = await error_of(s.call_tool("nowhere_echo", {"text": "x"}))
            assert hidden.code == missing.code
            assert hidden.message.replace("extra_echo", "X") == missing.message.replace("nowhere_echo", "X")
            prompts = [p.name for p in (await s.list_prompts()).prompts]
            assert prompts == ["summarize"], prompts
            assert (await s.list_resources()).resources == []
            hidden = await error_of(s.read_resource("test://static-text"))
            missing = await error_of(s.read_resource("test://nowhere"))
            assert hidden.code == missing.code


async def main(url: str, view_url: str) -> None:
    await legacy(url)
    await auto(url)
    await view(view_url)
    print("federation ok")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
