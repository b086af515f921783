"""Issue 25, the `search` catalog mode through `mcpwire serve` (`[server] catalog =
"search"`) in front of the native demo and the official npm `server-memory` (a stdio
upstream), driven by the official Python `mcp` client over Streamable HTTP:

- `tools/list` shows the two meta-tools only;
- `search_tools` finds the tools for a request written as a user would ask;
- `call_tool` calls one with everything a direct call has (progress here);
- the tools found join that session's `tools/list`, announced with `list_changed`, and are
  callable by name; another session's list is unchanged;
- a stateless (2026-07-28) client has no session: it searches and calls, and its list stays
  the meta-tools;
- over stdio too, legacy and 2026-07-28: a tool that elicits and one that reports progress
  found with `search_tools` and called with `call_tool`;
- a caller whose `[policy]` hides a tool can neither find it nor call it (by `call_tool` or
  by name), while a caller allowed it finds and calls it;
- the admin listener's `/metrics` counts the searches and their durations (lexical here:
  no model).
"""

import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.shared.exceptions import MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from peers import Notes, Recorder, auto_client_options, full_session, text_of, wait_until
from test_gateway_everything import BIN, need
from test_gateway_serve import Served

pytestmark = pytest.mark.anyio

MEMORY = BIN / "mcp-server-memory"
META = ["search_tools", "call_tool"]


def config(tmp_path) -> str:
    need(MEMORY)
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        '[server]\ncatalog = "search"\n\n'
        '[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n'
        '[backends.demo]\nnative = "demo"\n\n'
        f'[backends.memory]\ncommand = ["{MEMORY}"]\n'
    )
    return conf


async def search(s: ClientSession, query: str, limit: int = 5) -> list[str]:
    r = await s.call_tool("search_tools", {"query": query, "limit": limit})
    assert not r.is_error, r
    tools = r.structured_content["tools"]
    for t in tools:
        assert t["name"] in text_of(r), "the text names every tool found"
        assert t["inputSchema"]["type"] == "object", t
    return [t["name"] for t in tools]


async def test_search_mode_through_the_gateway(mcpwire_bin, tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        admin = sock.getsockname()[1]
    conf = config(tmp_path)
    conf.write_text(conf.read_text() + f'\n[admin]\nlisten = "127.0.0.1:{admin}"\n')
    served = Served(mcpwire_bin, conf)
    notes = Notes()
    try:
        async with streamable_http_client(served.url) as (read, write):
            async with ClientSession(
                read, write, read_timeout_seconds=60, message_handler=notes.handler
            ) as s:
                init = await s.initialize()
                assert "search_tools" in (init.instructions or "")
                assert [t.name for t in (await s.list_tools()).tools] == META

                found = await search(s, "remember that Alice works at Acme")
                assert {"memory_create_entities", "memory_add_observations"} & set(found[:3]), found
                await wait_until(lambda: notes.methods("notifications/tools/list_changed"))
                listed = [t.name for t in (await s.list_tools()).tools]
                assert listed[:2] == META and set(found) <= set(listed[2:]), listed

                progress = []

                async def on_progress(p, total, message):
                    progress.append(p)

                progressive = await search(s, "a tool that reports its progress")
                assert progressive[0] == "demo_test_tool_with_progress", progressive
                r = await s.call_tool(
                    "call_tool",
                    {"name": "demo_test_tool_with_progress", "arguments": {}},
                    progress_callback=on_progress,
                )
                assert not r.is_error, r
                assert progress == [0, 50, 100], progress

                # A disclosed tool is called by its name, as any listed tool.
                r = await s.call_tool(
                    "memory_create_entities",
                    {"entities": [{"name": "Alice", "entityType": "person", "observations": ["works at Acme"]}]},
                )
                assert not r.is_error, r
                r = await s.call_tool("call_tool", {"name": "memory_read_graph", "arguments": {}})
                assert "Acme" in text_of(r), r
                # Errors come back as a direct call's would.
                r = await s.call_tool("call_tool", {"name": "demo_add", "arguments": {"a": "x"}})
                assert r.is_error, r

                # Another session still sees the meta-tools only.
                async with streamable_http_client(served.url) as (read2, write2):
                    async with ClientSession(read2, write2, read_timeout_seconds=60) as other:
                        await other.initialize()
                        assert [t.name for t in (await other.list_tools()).tools] == META

        async with Client(served.url, mode="auto", read_timeout_seconds=60) as client:
            assert client.protocol_version == "2026-07-28"
            r = await client.call_tool("search_tools", {"query": "add two numbers"})
            assert "demo_add" in [t["name"] for t in r.structured_content["tools"]], r
            r = await client.call_tool("call_tool", {"name": "demo_add", "arguments": {"a": 2, "b": 3}})
            assert r.structured_content == {"sum": 5.0}, r
            assert [t.name for t in (await client.list_tools()).tools] == META

        metrics = httpx2.get(f"http://127.0.0.1:{admin}/metrics", timeout=5).text
        assert 'mcpwire_searches_total{ranking="lexical"} 3' in metrics, metrics
        bounds = [
            float(line.split('le="')[1].split('"')[0])
            for line in metrics.splitlines()
            if line.startswith('mcpwire_search_duration_seconds_bucket{ranking="lexical"')
        ]
        assert bounds and min(bounds) < 0.0001, metrics  # the search buckets, from 10 µs
        assert "# HELP mcpwire_searches_total" in metrics, metrics
    finally:
        served.close()


async def test_the_catalog_flag_over_stdio_with_one_backend(mcpwire_bin):
    """`--catalog search` serves even a single backend through the meta-tools (names stay
    unprefixed: one member)."""
    params = StdioServerParameters(
        command=mcpwire_bin, args=["serve", "--demo", "--catalog", "search"], env={"MCPWIRE_LOG": "warn"}
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as s:
            await s.initialize()
            assert [t.name for t in (await s.list_tools()).tools] == META
            found = await search(s, "echo some text back", limit=3)
            assert found[0] == "echo", found
            r = await s.call_tool("echo", {"text": "by name"})
            assert text_of(r) == "by name"


ELICITS = "demo_test_elicitation"
ALICE_KEY = "alice-key-0123456789abcdef"
PROGRESS = "demo_test_tool_with_progress"


def stdio_config(tmp_path) -> str:
    """Search mode, the demo and memory over stdio; nobody anonymous sees `demo_echo`
    (stdio is the anonymous caller); the API key `alice` does, over HTTP."""
    need(MEMORY)
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        '[server]\ncatalog = "search"\n\n'
        '[[listen]]\nurl = "stdio"\n\n'
        '[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n'
        f'[auth]\n[[auth.api_keys]]\nname = "alice"\nkey = "{ALICE_KEY}"\n\n'
        '[policy]\ndefault = "allow"\n\n'
        '[[policy.rules]]\neffect = "deny"\nanonymous = true\ntools = ["demo_echo"]\n\n'
        '[backends.demo]\nnative = "demo"\n\n'
        f'[backends.memory]\ncommand = ["{MEMORY}"]\n'
    )
    return conf


async def test_search_and_call_over_stdio_legacy(mcpwire_bin, tmp_path):
    """A legacy session over stdio: a tool that elicits and one that reports progress, found
    and called through the meta-tools (the ask and the progress reach this client)."""
    params = StdioServerParameters(
        command=mcpwire_bin, args=["serve", "--config", str(stdio_config(tmp_path))],
        env={"MCPWIRE_LOG": "warn"},
    )
    rec, notes = Recorder(), Notes()
    async with stdio_client(params) as (read, write):
        async with full_session(read, write, rec, notes, timeout=60) as s:
            await s.initialize()
            assert [t.name for t in (await s.list_tools()).tools] == META
            found = await search(s, "ask the user to answer a question", limit=5)
            assert ELICITS in found, found
            r = await s.call_tool("call_tool", {"name": ELICITS, "arguments": {"message": "Ready?"}})
            assert not r.is_error, r
            assert '"response":"yes"' in text_of(r), text_of(r)
            assert PROGRESS in await search(s, "a long operation that reports its progress")
            r = await s.call_tool(
                "call_tool", {"name": PROGRESS, "arguments": {}}, progress_callback=rec.on_progress
            )
            assert not r.is_error, r
            assert [p for p, _, _ in rec.progress] == [0, 50, 100], rec.progress


async def test_search_and_call_over_stdio_2026(mcpwire_bin, tmp_path):
    """The 2026-07-28 client over stdio (stateless): the ask arrives as `input_required`
    rounds the client answers, through `call_tool` as through a direct call."""
    params = StdioServerParameters(
        command=mcpwire_bin, args=["serve", "--config", str(stdio_config(tmp_path))],
        env={"MCPWIRE_LOG": "warn"},
    )
    rec = Recorder()
    async with Client(params, **dict(auto_client_options(rec), read_timeout_seconds=60)) as client:
        assert client.protocol_version == "2026-07-28"
        r = await client.call_tool("search_tools", {"query": "ask the user to answer a question"})
        assert ELICITS in [t["name"] for t in r.structured_content["tools"]], r
        r = await client.call_tool("call_tool", {"name": ELICITS, "arguments": {"message": "Ready?"}})
        assert '"response":"yes"' in text_of(r), text_of(r)
        r = await client.call_tool(
            "call_tool", {"name": PROGRESS, "arguments": {}}, progress_callback=rec.on_progress
        )
        assert not r.is_error, r
        assert [p for p, _, _ in rec.progress] == [0, 50, 100], rec.progress
        # One stdio connection is one session: what it found joins its list.
        assert [t.name for t in (await client.list_tools()).tools][:2] == META


async def test_a_tool_the_policy_hides_can_be_neither_found_nor_called(mcpwire_bin, tmp_path):
    conf = stdio_config(tmp_path)
    params = StdioServerParameters(
        command=mcpwire_bin, args=["serve", "--config", str(conf)], env={"MCPWIRE_LOG": "warn"},
    )
    hidden = "demo_echo"
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as s:
            await s.initialize()
            for query in ["echo some text back", hidden, "echo"]:
                found = await search(s, query, limit=50)
                assert hidden not in found, (query, found)
            # Refused as an unknown tool would be, through call_tool and by name.
            for name, arguments in [
                ("call_tool", {"name": hidden, "arguments": {"text": "x"}}),
                (hidden, {"text": "x"}),
            ]:
                with pytest.raises(MCPError) as refused:
                    await s.call_tool(name, arguments)
                assert hidden in str(refused.value), refused.value

    # Over HTTP (the same file less the stdio listener), the API key `alice` is allowed it.
    http_only = tmp_path / "http.toml"
    http_only.write_text(conf.read_text().replace('[[listen]]\nurl = "stdio"\n\n', ""))
    served = Served(mcpwire_bin, http_only)
    try:
        headers = {"Authorization": f"Bearer {ALICE_KEY}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(served.url, http_client=http) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=60) as s:
                    await s.initialize()
                    found = await search(s, "echo some text back", limit=5)
                    assert found[0] == hidden, found
                    r = await s.call_tool("call_tool", {"name": hidden, "arguments": {"text": "hi"}})
                    assert text_of(r) == "hi", r
    finally:
        served.close()
