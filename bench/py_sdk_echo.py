"""The Python MCP SDK's Streamable HTTP server (`mcp` 2.x `MCPServer`) with one `echo` tool,
on 127.0.0.1:PORT: a real SDK upstream for the gateway benches (`UPSTREAM=python`). It
answers every POST on an event stream, as the SDKs do by default.

    python3 bench/py_sdk_echo.py PORT      (needs `pip install mcp`)
"""

import sys

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("py-echo", log_level="WARNING")


@server.tool()
def echo(text: str = "") -> str:
    """Echo the text."""
    return text


anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=int(sys.argv[1])))
