"""`fastmcp.Client` (the FastMCP client, on top of the official `mcp` SDK) drives
`mcpwire demo --transport http` over Streamable HTTP, in its default auto mode (stateless
2026-07-28 after `server/discover`) and in legacy mode (a stateful 2025-11-25 session)."""

import pytest
from fastmcp import Client

# The fixture that starts `mcpwire demo --transport http` and yields its URL.

pytestmark = pytest.mark.anyio


def text_of(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


@pytest.mark.parametrize(
    ("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
)
async def test_fastmcp_client_over_http(http_url, mode, version):
    async with Client(http_url, mode=mode, timeout=10) as client:
        assert client.protocol_version == version
        assert client.server_info.name == "mcpwire-everything"

        tools = await client.list_tools()
        assert {"echo", "add"} <= {t.name for t in tools}

        r = await client.call_tool("echo", {"text": "hello fastmcp"})
        assert text_of(r) == "hello fastmcp" and not r.is_error
        r = await client.call_tool("add", {"a": 2, "b": 3.5})
        assert r.structured_content == {"sum": 5.5}

        contents = await client.read_resource("test://static-text")
        assert contents[0].text == "This is the content of the static text resource."

        gp = await client.get_prompt("test_prompt_with_arguments", {"arg1": "v1", "arg2": "v2"})
        assert gp.messages
        assert "v1" in gp.messages[0].content.text
