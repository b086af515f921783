"""`mcpwire serve` presenting its own credentials to protected upstreams (never the client's):
the upstream is `mcpwire demo --transport http` with authentication on, the client the
official Python `mcp` client, which sends the gateway no credentials at all.

- A static bearer token from a file, against an upstream taking API keys; a wrong one keeps
  the backend out (its tools are not served).
- The OAuth client-credentials grant against a real authorization server (npm
  `oauth2-mock-server`, `tests/peers/oauth_as.mjs`), whose tokens the upstream verifies with
  the server's JWKS (issuer, audience bound to the upstream's canonical URI, scope): with the
  token endpoint configured (the token is obtained before the first request), and without
  it (the upstream's `401` leads to its protected-resource metadata, then the authorization
  server's metadata, as in the MCP authorization spec)."""

import socket

import pytest

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import spawn_http_demo
from peers import text_of
from test_gateway_serve import Served
from test_http_oauth_flow import LIB, ROOT, peer_missing, spawn

pytestmark = pytest.mark.anyio

SCOPE = "mcp:tools"


def write_config(tmp_path, backend: str):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        '[server]\nprefix = "never"\n\n[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n'
        f"[backends.up]\n{backend}"
    )
    return conf


async def tools_through(url: str) -> list[str]:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            if "add" in tools:
                r = await s.call_tool("add", {"a": 2, "b": 3})
                assert not r.is_error, r
                assert text_of(r) == "{\"sum\":5.0}"
            return tools


async def test_a_bearer_token_from_a_file(mcpwire_bin, tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("gateway=s3cret-upstream-key\n")
    upstream, up_url = spawn_http_demo(mcpwire_bin, ["--api-key-file", str(keys)])
    try:
        (tmp_path / "token").write_text("s3cret-upstream-key\n")
        conf = write_config(tmp_path, f'url = "{up_url}"\nbearer_file = "token"\n')
        served = Served(mcpwire_bin, conf)
        try:
            assert "add" in await tools_through(served.url)
        finally:
            served.close()
        # The wrong token: the upstream refuses it and the (fail-open) backend stays out.
        (tmp_path / "token").write_text("not-the-key\n")
        served = Served(mcpwire_bin, conf)
        try:
            served.wait_for("authentication failed")
            assert "add" not in await tools_through(served.url)
        finally:
            served.close()
    finally:
        upstream.terminate()
        upstream.wait(timeout=5)


@pytest.fixture()
def protected_upstream(mcpwire_bin):
    """A real authorization server and an upstream accepting its tokens; (issuer, url)."""
    missing = peer_missing()
    if missing:
        import os

        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    as_proc, issuer = spawn(["node", str(ROOT / "tests" / "peers" / "oauth_as.mjs"), str(LIB)],
                            {"PATH": __import__("os").environ.get("PATH", "")}, "AS ")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    resource = f"http://127.0.0.1:{port}/mcp"
    up_proc, url = spawn(
        [mcpwire_bin, "demo", "--transport", "http", "--port", str(port),
         "--jwks-url", f"{issuer}/jwks", "--issuer", issuer, "--resource", resource,
         "--authorization-server", issuer, "--scope", SCOPE],
        {"MCPWIRE_LOG": "warn"}, "listening on")
    try:
        yield issuer, url
    finally:
        for p in (up_proc, as_proc):
            p.terminate()
            p.wait(timeout=5)


@pytest.mark.parametrize("discover", [False, True], ids=["token-endpoint", "discovered"])
async def test_client_credentials_from_a_real_authorization_server(
    mcpwire_bin, tmp_path, protected_upstream, discover
):
    issuer, up_url = protected_upstream
    (tmp_path / "secret").write_text("gateway-secret\n")
    endpoint = "" if discover else f'token_endpoint = "{issuer}/token"\n'
    conf = write_config(
        tmp_path,
        f'url = "{up_url}"\n\n[backends.up.oauth]\ngrant = "client_credentials"\n'
        f'client_id = "mcpwire-gateway"\nclient_secret_file = "secret"\n'
        f'scope = "{SCOPE}"\nresource = "{up_url}"\n{endpoint}',
    )
    served = Served(mcpwire_bin, conf)
    try:
        assert "add" in await tools_through(served.url)
    finally:
        served.close()


async def test_a_token_for_another_resource_is_refused(mcpwire_bin, tmp_path, protected_upstream):
    """Tokens are audience-bound: asked for another resource, the upstream refuses them
    (401 again after a fresh token: the backend stays out, no loop)."""
    issuer, up_url = protected_upstream
    (tmp_path / "secret").write_text("gateway-secret\n")
    conf = write_config(
        tmp_path,
        f'url = "{up_url}"\n\n[backends.up.oauth]\ngrant = "client_credentials"\n'
        f'client_id = "mcpwire-gateway"\nclient_secret_file = "secret"\n'
        f'scope = "{SCOPE}"\nresource = "https://elsewhere.example/mcp"\n'
        f'token_endpoint = "{issuer}/token"\n',
    )
    served = Served(mcpwire_bin, conf)
    try:
        line = served.wait_for("backend `up`")
        assert "audience is not this server" in line, line
        assert "add" not in await tools_through(served.url)
    finally:
        served.close()
