"""Issue 23: a 2026-07-28 client's `subscriptions/listen` through `mcpwire serve` gets the
upstream's `notifications/tools/list_changed` and `notifications/resources/updated`, over
the HTTP and stdio listeners, from an upstream spoken to in either era (`mcpwire demo` as
a stdio child: `era = "auto"` reaches it in 2026-07-28, `era = "handshake"` in
2025-11-25). The official Python `mcp` client in auto mode drives it; the tools
`test_trigger_tool_change` and `test_trigger_resource_update` make the upstream announce.

How: the upstream's shared session keeps its own `subscriptions/listen` open in the
2026-07-28 era (handshake sessions hear list changes anyway), and the resources the
gateway's listeners watch are subscribed there once each (docs/design/gateway.md)."""

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from peers import wait_until
from test_gateway_serve import ENV, Served

pytestmark = pytest.mark.anyio

WATCHED = "test://watched-resource"


def backend(mcpwire_bin, era: str) -> str:
    return f'[backends.up]\ncommand = ["{mcpwire_bin}", "demo"]\nera = "{era}"\n'


async def listen_through(target) -> None:
    async with Client(target, mode="auto", read_timeout_seconds=30) as c:
        assert c.protocol_version == "2026-07-28"
        got = []
        async with c.listen(tools_list_changed=True, resource_subscriptions=[WATCHED]) as sub:
            assert sub.honored.tools_list_changed, sub.honored
            assert sub.honored.resource_subscriptions == [WATCHED], sub.honored

            async def read():
                async for n in sub:
                    got.append(type(n).__name__)

            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                names = {t.name for t in (await c.list_tools()).tools}
                tool_change = next(n for n in names if n.endswith("test_trigger_tool_change"))
                update = next(n for n in names if n.endswith("test_trigger_resource_update"))

                # The upstream may take a moment to start listening: trigger until heard.
                async def heard(kind: str, tool: str):
                    if kind not in got:
                        await c.call_tool(tool, {})
                        await anyio.sleep(0.2)
                    return kind in got

                await wait_until(lambda: heard("ToolsListChanged", tool_change), seconds=20)
                await wait_until(lambda: heard("ResourceUpdated", update), seconds=20)
                tg.cancel_scope.cancel()


@pytest.mark.parametrize("era", ["auto", "handshake"])
async def test_listen_over_http(mcpwire_bin, tmp_path, era):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n' + backend(mcpwire_bin, era))
    served = Served(mcpwire_bin, conf)
    try:
        await listen_through(served.url)
    finally:
        served.close()


@pytest.mark.parametrize("era", ["auto", "handshake"])
async def test_listen_over_stdio(mcpwire_bin, tmp_path, era):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "stdio"\n\n' + backend(mcpwire_bin, era))
    params = StdioServerParameters(
        command=mcpwire_bin, args=["serve", "--config", str(conf)], env=ENV
    )
    await listen_through(params)
