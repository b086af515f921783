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

import pytest

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import spawn_http_demo
from peers import text_of
from test_gateway_serve import Served
from test_gateway_upstream import gateway_config as write_config
from test_http_oauth_flow import SCOPE, oauth_servers  # noqa: F401 (a fixture: the AS, a protected upstream)

pytestmark = pytest.mark.anyio


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


@pytest.mark.parametrize("discover", [False, True], ids=["token-endpoint", "discovered"])
async def test_client_credentials_from_a_real_authorization_server(
    mcpwire_bin, tmp_path, oauth_servers, discover
):
    issuer, up_url = oauth_servers
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


async def test_a_token_for_another_resource_is_refused(mcpwire_bin, tmp_path, oauth_servers):
    """Tokens are audience-bound: asked for another resource, the upstream refuses them
    (401 again after a fresh token: the backend stays out, no loop)."""
    issuer, up_url = oauth_servers
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


async def test_authorization_code_tokens_are_kept_per_caller(mcpwire_bin, tmp_path, oauth_servers):
    """The authorization code through the gateway: callers authenticate to the gateway with
    API keys, and the gateway obtains an upstream token for each of them (consent by
    following the authorization server's redirect: oauth2-mock-server approves at once).
    One authorization for the gateway's own session, one per caller; a caller's second
    session reuses their token."""
    import subprocess
    import threading

    issuer, up_url = oauth_servers
    (tmp_path / "keys.txt").write_text("alice=alice-key\nbob=bob-key\n")
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        '[server]\nprefix = "never"\n\n[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n'
        '[auth]\napi_key_files = ["keys.txt"]\n\n'
        f'[backends.up]\nurl = "{up_url}"\n\n[backends.up.oauth]\ngrant = "authorization_code"\n'
        'client_id = "mcpwire-gateway"\nredirect_uri = "http://127.0.0.1:9/callback"\n'
        'consent = "follow_redirect"\n'
    )
    proc = subprocess.Popen(
        [mcpwire_bin, "serve", "--config", str(conf)], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={"MCPWIRE_LOG": "info,mcpwire::client=info", "PATH": __import__("os").environ.get("PATH", "")},
    )
    lines = []
    ready = threading.Event()

    def drain():
        for line in proc.stderr:
            lines.append(line)
            if "mcpwire: listening on" in line:
                ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert ready.wait(60), lines
        url = next(l for l in lines if "mcpwire: listening on" in l).split()[-1]
        authorizations = lambda: sum("authorizing with the upstream" in l for l in lines)
        assert authorizations() == 1, lines  # the gateway's own session (the catalog)

        async def add_as(key: str) -> None:
            import httpx2

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
                async with streamable_http_client(url, http_client=http) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=10) as s:
                        await s.initialize()
                        r = await s.call_tool("add", {"a": 2, "b": 3})
                        assert not r.is_error, r

        await add_as("alice-key")
        assert authorizations() == 2, lines
        await add_as("bob-key")
        assert authorizations() == 3, lines
        await add_as("alice-key")  # a new session of alice's: her token, no new consent
        assert authorizations() == 3, lines
    finally:
        proc.terminate()
        proc.wait(timeout=10)
