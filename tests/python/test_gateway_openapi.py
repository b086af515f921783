"""Issue 27: an OpenAPI service as a gateway backend. A FastAPI application (serving its own
OpenAPI 3.1 document) is reached through `mcpwire serve` by the official Python `mcp`
client over HTTP and stdio: its operations listed as tools with input and output schemas,
called with path/query/header/body arguments (nested models, enums), list answers wrapped,
upstream errors as tool errors, bad arguments refused with -32602 before any request
leaves, a multipart operation left out, include/exclude by tag and operationId, and the
document re-read when its file changes (`tools/list_changed`)."""

import json
import pathlib
import subprocess
import sys
import threading
import urllib.request

import pytest

from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from peers import Notes, Recorder, full_session, text_of, wait_until
from test_gateway_serve import ENV, Served

pytestmark = pytest.mark.anyio

SHOP = pathlib.Path(__file__).resolve().parent / "fixtures" / "fastapi_shop.py"


@pytest.fixture(scope="module")
def shop_url():
    """The FastAPI shop on a free port."""
    proc = subprocess.Popen(
        [sys.executable, str(SHOP), "0"],
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
    assert url, "the FastAPI shop did not say where it listens"
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def requests_seen(shop_url: str) -> int:
    with urllib.request.urlopen(f"{shop_url}/stats", timeout=10) as r:
        return json.load(r)["requests"]


def backends(shop_url: str, doc: pathlib.Path) -> str:
    """`shop` reads the document from the service; `debug` from a file, with only the
    `debug` tag and without `stats`."""
    return (
        f'[backends.shop]\nopenapi = "{shop_url}/openapi.json"\n'
        'exclude_tags = ["debug"]\n\n'
        f'[backends.debug]\nopenapi = "{doc}"\nbase_url = "{shop_url}"\n'
        'tags = ["debug"]\nexclude_operations = ["stats"]\nheaders = { "X-Request-Id" = "from-config" }\n'
        'bearer_env = "SHOP_TOKEN"\n'
    )


def document(shop_url: str, tmp_path: pathlib.Path) -> pathlib.Path:
    with urllib.request.urlopen(f"{shop_url}/openapi.json", timeout=10) as r:
        doc = json.load(r)
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(doc))
    return path


async def check_shop(s, shop_url: str) -> None:
    tools = {t.name: t for t in (await s.list_tools()).tools}
    assert {"shop_list_items", "shop_get_item", "shop_create_item", "shop_names"} <= set(tools)
    assert {"debug_boom", "debug_echo_header"} <= set(tools), sorted(tools)
    # Excluded by tag / operationId; the multipart operation is left out.
    assert not {"shop_boom", "debug_stats", "debug_list_items", "debug_upload"} & set(tools)
    get_item = tools["shop_get_item"]
    assert get_item.input_schema["required"] == ["item_id"]
    assert get_item.output_schema["properties"]["name"]["type"] == "string"
    assert tools["shop_list_items"].description == "List the items"
    assert tools["shop_create_item"].annotations.read_only_hint is False

    r = await s.call_tool("shop_list_items", {"color": "blue", "limit": 5})
    assert not r.is_error, r
    assert r.structured_content["total"] == 1
    assert r.structured_content["items"][0]["name"] == "mug"

    r = await s.call_tool("shop_get_item", {"item_id": 2})
    assert r.structured_content["dimensions"] == {"width": 10.0, "height": 30.0}, r

    r = await s.call_tool(
        "shop_create_item",
        {"name": "pen", "price": 1.5, "color": "green", "tags": ["office"],
         "dimensions": {"width": 1, "height": 14}, "x-request-id": "abc"},
    )
    assert not r.is_error, r
    assert r.structured_content["color"] == "green" and r.structured_content["id"] >= 3

    # A URL-encoded form body.
    r = await s.call_tool("shop_login", {"user": "ann", "roles": ["a", "b"]})
    assert r.structured_content["user"] == "ann" and r.structured_content["roles"] == ["a", "b"], r
    assert r.structured_content["content_type"] == "application/x-www-form-urlencoded", r

    r = await s.call_tool("shop_names", {})
    assert "mug" in r.structured_content["result"], r

    # Upstream errors: tool errors with status and body.
    r = await s.call_tool("shop_get_item", {"item_id": 999})
    assert r.is_error and "404" in text_of(r) and "no item 999" in text_of(r), r
    r = await s.call_tool("debug_boom", {})
    assert r.is_error and "500" in text_of(r) and "on fire" in text_of(r), r

    # Credentials: the gateway's bearer token and configured headers go with requests.
    r = await s.call_tool("debug_echo_header", {})
    assert r.structured_content["x_request_id"] == "from-config", r
    assert r.structured_content["authorization"] == "Bearer sekrit", r

    # Bad arguments: refused by the gateway's check of the input schema (McpError
    # InvalidToolParams: -32602 where the dialect says so; an `isError` result under MCP
    # 2025-11-25, as for native tools), and no request reaches the service.
    before = requests_seen(shop_url)
    for name, args in [
        ("shop_get_item", {"item_id": "seven"}),
        ("shop_get_item", {}),
        ("shop_create_item", {"name": "pen"}),
        ("shop_create_item", {"name": "pen", "price": 1, "color": "purple"}),
        ("shop_list_items", {"limit": 5, "nonsense": True}),
    ]:
        r = await s.call_tool(name, args)
        assert r.is_error and "Invalid arguments" in text_of(r), (name, args, r)
    assert requests_seen(shop_url) == before


async def test_openapi_over_http(mcpwire_bin, tmp_path, shop_url):
    conf = tmp_path / "mcpwire.toml"
    doc = document(shop_url, tmp_path)
    conf.write_text('[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n' + backends(shop_url, doc))
    served = Served(mcpwire_bin, conf, env={"SHOP_TOKEN": "sekrit"})
    try:
        rec, notes = Recorder(), Notes()
        async with streamable_http_client(served.url) as (read, write):
            async with full_session(read, write, rec, notes, timeout=60) as s:
                await s.initialize()
                await check_shop(s, shop_url)
                # The file changes: the document is read again, the list changes.
                changes = len(notes.methods("notifications/tools/list_changed"))
                spec = json.loads(doc.read_text())
                del spec["paths"]["/boom"]
                doc.write_text(json.dumps(spec))
                await wait_until(
                    lambda: len(notes.methods("notifications/tools/list_changed")) > changes,
                    seconds=20,
                )

                async def boom_gone():
                    return "debug_boom" not in {t.name for t in (await s.list_tools()).tools}

                await wait_until(boom_gone, seconds=20)

        # A 2026-07-28 (stateless) client reaches the same tools.
        async with Client(served.url, mode="auto", read_timeout_seconds=60) as client:
            assert client.protocol_version == "2026-07-28"
            r = await client.call_tool("shop_get_item", {"item_id": 1})
            assert r.structured_content["name"] == "mug", r
            r = await client.call_tool("shop_get_item", {"item_id": "one"})
            assert r.is_error and "Invalid arguments" in text_of(r), r
    finally:
        served.close()


async def test_openapi_over_stdio(mcpwire_bin, tmp_path, shop_url):
    conf = tmp_path / "mcpwire.toml"
    doc = document(shop_url, tmp_path)
    conf.write_text('[[listen]]\nurl = "stdio"\n\n' + backends(shop_url, doc))
    params = StdioServerParameters(
        command=mcpwire_bin,
        args=["serve", "--config", str(conf)],
        env=dict(ENV, SHOP_TOKEN="sekrit"),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await check_shop(s, shop_url)


async def test_openapi_check_names_the_tools(mcpwire_bin, tmp_path, shop_url):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(backends(shop_url, document(shop_url, tmp_path)))
    out = subprocess.run(
        [mcpwire_bin, "serve", "--config", str(conf), "--check"],
        capture_output=True, text=True, timeout=60, env=dict(ENV, SHOP_TOKEN="sekrit"),
    )
    assert out.returncode == 0, out.stderr
    assert "shop_get_item" in out.stdout + out.stderr, out
