"""Issue 27: a gRPC service as a gateway backend. A Python grpcio server with
grpcio-reflection (v1alpha only, so the gateway's fallback from v1 is exercised) is reached
through `mcpwire serve` by the official Python `mcp` client over HTTP and stdio: unary
methods with nested messages, an enum, a oneof, a map, well-known types and 64-bit integers
(as strings); a server-streaming method as progress plus the collected result; client- and
bidi-streaming methods left out; status codes as tool errors; the call timeout as the
deadline; bad arguments refused before any call; and the same service described by a
descriptor-set file instead of reflection."""

import pathlib
import subprocess
import sys
import threading

import pytest

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from test_gateway_serve import ENV, Served
from peers import text_of

pytestmark = pytest.mark.anyio

SERVER = pathlib.Path(__file__).resolve().parent / "fixtures" / "grpc_inventory.py"


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    """The gRPC server on a free port, and the descriptor set it was built from."""
    descriptors = tmp_path_factory.mktemp("grpc") / "inventory.binpb"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--descriptors", str(descriptors)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = None
    for line in proc.stderr:
        if "listening on http://" in line:
            url = line.split("listening on ", 1)[1].strip()
            break
    assert url, "the gRPC server did not say where it listens"
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    yield url, descriptors
    proc.terminate()
    proc.wait(timeout=10)


def backends(url: str, descriptors: pathlib.Path) -> str:
    return (
        f'[backends.inv]\ngrpc = "{url}"\n\n'
        f'[backends.file]\ngrpc = "{url}"\ndescriptors = "{descriptors}"\n'
        'services = ["shop.inventory.v1.Inventory"]\ncall_timeout_secs = 1\n'
        'headers = { "x-team" = "qa" }\n'
    )


async def check_inventory(s) -> None:
    tools = {t.name: t for t in (await s.list_tools()).tools}
    for prefix in ("inv", "file"):
        assert {f"{prefix}_Inventory_{m}" for m in ("GetItem", "AddItem", "ListItems", "Slow")} <= set(tools)
        assert not {f"{prefix}_Inventory_Restock", f"{prefix}_Inventory_Chat"} & set(tools)
    get = tools["inv_Inventory_GetItem"]
    assert "id" in get.input_schema["properties"], get.input_schema

    progress = []

    async def on_progress(p, total, message):
        progress.append((p, message))

    r = await s.call_tool("inv_Inventory_GetItem", {"id": 1})
    assert not r.is_error, r
    item = r.structured_content
    assert item["name"] == "hammer" and item["category"] == "TOOLS", item
    assert item["cents"] == "1299" and item["labels"] == {"aisle": "4"}, item
    assert item["added"] == "2026-01-01T00:00:00Z", item
    assert item["dimensions"] == {"width": 3.0, "height": 30.0}, item

    # 64-bit integers travel as strings, exactly.
    r = await s.call_tool("inv_Inventory_GetItem", {"id": "9007199254740993"})
    assert not r.is_error and r.structured_content["id"] == "9007199254740993", r

    # Status codes: tool errors with code and message.
    r = await s.call_tool("inv_Inventory_GetItem", {"id": 77})
    assert r.is_error and "NotFound" in text_of(r) and "no item 77" in text_of(r), r
    r = await s.call_tool("file_Inventory_AddItem", {"item": {}})
    assert r.is_error and "InvalidArgument" in text_of(r), r

    r = await s.call_tool(
        "file_Inventory_AddItem",
        {"item": {"name": "kite", "category": "TOYS", "free_reason": "gift",
                  "labels": {"colour": "red"}, "added": "2026-02-03T04:05:06Z", "tags": ["air"]}},
    )
    assert not r.is_error, r
    assert r.structured_content["free_reason"] == "gift" and int(r.structured_content["id"]) >= 4, r

    # Server streaming: a progress notification per message, all of them the result.
    r = await s.call_tool("inv_Inventory_ListItems", {"category": "TOYS"}, progress_callback=on_progress)
    assert not r.is_error, r
    names = [m["name"] for m in r.structured_content["messages"]]
    assert "yo-yo" in names and "kite" in names, names
    assert len(progress) == len(names), progress
    r = await s.call_tool("inv_Inventory_ListItems", {"limit": 1})
    assert len(r.structured_content["messages"]) == 1, r

    # The backend's credentials travel as metadata.
    r = await s.call_tool("file_Inventory_WhoAmI", {})
    assert r.structured_content["name"] == "qa", r

    # The call timeout is the deadline.
    r = await s.call_tool("file_Inventory_Slow", {"seconds": 3})
    assert r.is_error and "DeadlineExceeded" in text_of(r), r

    # Bad arguments never reach the server.
    for args in [{"id": "abc"}, {"id": 1, "nope": True}, {"id": [1]}]:
        r = await s.call_tool("inv_Inventory_GetItem", args)
        assert r.is_error and "Invalid arguments" in text_of(r), (args, r)


async def test_grpc_over_http(mcpwire_bin, tmp_path, inventory):
    url, descriptors = inventory
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n' + backends(url, descriptors))
    served = Served(mcpwire_bin, conf)
    try:
        async with streamable_http_client(served.url) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=60) as s:
                await s.initialize()
                await check_inventory(s)
    finally:
        served.close()


async def test_grpc_over_stdio(mcpwire_bin, tmp_path, inventory):
    url, descriptors = inventory
    conf = tmp_path / "mcpwire.toml"
    conf.write_text('[[listen]]\nurl = "stdio"\n\n' + backends(url, descriptors))
    params = StdioServerParameters(command=mcpwire_bin, args=["serve", "--config", str(conf)], env=ENV)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await check_inventory(s)
