"""The official Python `mcp` client against `mcpwire demo --transport http` with
authentication on: with a bearer token (an API key, or an HS256 JWT signed here) it calls
tools; without one it gets 401 with a `WWW-Authenticate` challenge whose
`resource_metadata` the client's own RFC 9728 helpers follow to the protected resource
metadata naming the authorization server."""

import base64
import hashlib
import hmac
import json
import time

import httpx2
import pytest

from mcp import ClientSession
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_protected_resource_response,
)
from mcp.client.streamable_http import streamable_http_client

from conftest import spawn_http_demo
from peers import text_of

pytestmark = pytest.mark.anyio

API_KEY = "python-key-0123456789abcdef"
SECRET = "a-python-hs256-secret-of-32-bytes-at-least"
AS = "https://as.test"
SCOPE = "mcp:tools"


@pytest.fixture()
def auth_url(mcpwire_bin, tmp_path):
    """`mcpwire demo` over HTTP requiring an API key or an HS256 JWT with scope mcp:tools."""
    keys = tmp_path / "keys.txt"
    keys.write_text(f"py={API_KEY}\n")
    proc, url = spawn_http_demo(
        mcpwire_bin,
        ["--api-key-file", str(keys), "--jwt-secret-env", "MCPWIRE_PY_SECRET",
         "--issuer", AS, "--audience", "mcpwire-python-test",
         "--authorization-server", AS, "--scope", SCOPE],
        {"MCPWIRE_PY_SECRET": SECRET},
    )
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256(claims: dict) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    sig = hmac.new(SECRET.encode(), f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{b64url(sig)}"


def jwt(**edits) -> str:
    now = int(time.time())
    claims = {"iss": AS, "aud": "mcpwire-python-test", "sub": "py", "scope": SCOPE,
              "iat": now, "exp": now + 300}
    claims.update(edits)
    return hs256(claims)


async def call_echo(url: str, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=10) as s:
                await s.initialize()
                tools = (await s.list_tools()).tools
                assert "echo" in {t.name for t in tools}
                r = await s.call_tool("echo", {"text": "authenticated"})
                assert not r.is_error
                return text_of(r)


async def test_tools_with_an_api_key(auth_url):
    assert await call_echo(auth_url, API_KEY) == "authenticated"


async def test_tools_with_a_jwt(auth_url):
    assert await call_echo(auth_url, jwt()) == "authenticated"


async def test_without_a_token_401_points_to_the_resource_metadata(auth_url):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "py", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        r = await http.post(auth_url, json=init, headers=headers)
        assert r.status_code == 401
        metadata_url = extract_resource_metadata_from_www_auth(r)
        assert metadata_url is not None
        assert extract_scope_from_www_auth(r) == SCOPE
        urls = build_protected_resource_metadata_discovery_urls(metadata_url, auth_url)
        assert urls[0] == metadata_url
        # Every URL the client would try answers the same document.
        for url in urls:
            meta = await handle_protected_resource_response(await http.get(url))
            assert meta is not None, url
            assert str(meta.resource).rstrip("/") == auth_url.rstrip("/")
            assert [str(a).rstrip("/") for a in meta.authorization_servers] == [AS]
            assert meta.scopes_supported == [SCOPE]

        # Tokens that must not pass: expired, for another audience, wrong issuer; and a
        # valid one without the scope is a step-up (403 insufficient_scope).
        for bad in (jwt(exp=int(time.time()) - 600), jwt(aud="someone-else"), jwt(iss="https://evil")):
            r = await http.post(auth_url, json=init,
                                headers={**headers, "Authorization": f"Bearer {bad}"})
            assert r.status_code == 401
            assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
        r = await http.post(auth_url, json=init,
                            headers={**headers, "Authorization": f"Bearer {jwt(scope='other')}"})
        assert r.status_code == 403
        assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
        assert extract_scope_from_www_auth(r) == SCOPE


async def test_the_client_without_a_token_fails_to_connect(auth_url):
    with pytest.raises(BaseException) as caught:
        async with httpx2.AsyncClient(timeout=10) as http:
            async with streamable_http_client(auth_url, http_client=http) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=5) as s:
                    await s.initialize()
    # The client surfaces the 401's JSON-RPC body: the refusal names what is missing.
    assert "authentication failed: no credential" in repr(caught.value)
