"""The official Python `mcp` client's OAuth support completes the MCP authorization flow
against `mcpwire demo --transport http` and a real authorization server started by the test
(npm `oauth2-mock-server`, `tests/peers/oauth_as.mjs`): 401 → protected resource metadata
(RFC 9728) → authorization server metadata → authorization code with PKCE and the RFC 8707
`resource` → a JWT that mcpwire verifies with the server's JWKS URL (issuer, audience bound
to mcpwire's canonical URI, scope) → tools called."""

import os
import pathlib
import shutil
import socket
import subprocess
import threading
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest

from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from peers import text_of

pytestmark = pytest.mark.anyio

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIB = ROOT / "target" / "npm-peers" / "node_modules" / "oauth2-mock-server" / "dist" / "index.mjs"
SCOPE = "mcp:tools"
REDIRECT = "http://127.0.0.1:9/callback"


def peer_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not LIB.exists():
        return "oauth2-mock-server is not installed (scripts/npm-peers.sh)"
    return None


def spawn(args, env, marker):
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    stream = proc.stdout if marker == "AS " else proc.stderr
    line = stream.readline()
    assert marker in line, line
    for s in (proc.stdout, proc.stderr):
        threading.Thread(target=s.read, daemon=True).start()
    return proc, line.split()[-1]


@pytest.fixture()
def oauth_servers(mcpwire_bin):
    missing = peer_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    env = {"PATH": os.environ.get("PATH", "")}
    as_proc, issuer = spawn(["node", str(ROOT / "tests" / "peers" / "oauth_as.mjs"), str(LIB)],
                            env, "AS ")
    # mcpwire's canonical URI must be known before it starts (tokens are bound to it).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    resource = f"http://127.0.0.1:{port}/mcp"
    mcp_proc, url = spawn(
        [mcpwire_bin, "demo", "--transport", "http", "--port", str(port),
         "--jwks-url", f"{issuer}/jwks", "--issuer", issuer, "--resource", resource,
         "--authorization-server", issuer, "--scope", SCOPE],
        {"MCPWIRE_LOG": "warn"}, "listening on")
    try:
        yield issuer, url
    finally:
        for p in (mcp_proc, as_proc):
            p.terminate()
            p.wait(timeout=5)


class Storage:
    """A client registered with the authorization server beforehand (it has no dynamic
    registration); tokens kept in memory."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id="mcpwire-python-test", redirect_uris=[REDIRECT],
            token_endpoint_auth_method="none", grant_types=["authorization_code"],
            response_types=["code"])

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


async def test_the_oauth_flow_then_tools(oauth_servers):
    issuer, url = oauth_servers
    seen = {}

    async def redirect_handler(authorization_url: str) -> None:
        # The "user agent": the server answers the authorization request with a redirect
        # carrying the code, which is read here instead of being followed.
        seen["authorize"] = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as ua:
            r = await ua.get(authorization_url)
        assert r.status_code in (301, 302, 303, 307, 308), r.text
        seen["callback"] = parse_qs(urlparse(r.headers["location"]).query)

    async def callback_handler() -> AuthorizationCodeResult:
        q = seen["callback"]
        return AuthorizationCodeResult(code=q["code"][0], state=q.get("state", [None])[0])

    storage = Storage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="mcpwire test"),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=10) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=10) as s:
                await s.initialize()
                r = await s.call_tool("echo", {"text": "through OAuth"})
                assert text_of(r) == "through OAuth" and not r.is_error

    # The flow asked for what the challenge named, for mcpwire's canonical URI, with PKCE.
    q = parse_qs(urlparse(seen["authorize"]).query)
    assert q["resource"] == [url]
    assert q["scope"] == [SCOPE]
    assert q["code_challenge_method"] == ["S256"]
    assert storage.tokens is not None and storage.tokens.access_token


def test_mcpwire_list_with_oauth_in_a_browser(mcpwire_bin, oauth_servers):
    """`mcpwire list URL --oauth`: mcpwire's own client runs the MCP authorization flow,
    prints the authorization URL, and takes the browser's redirect on a loopback port. The
    "browser" here opens the URL and follows the authorization server's redirect."""
    import httpx2

    issuer, url = oauth_servers
    proc = subprocess.Popen(
        [mcpwire_bin, "list", url, "--oauth", "--oauth-client-id", "mcpwire-cli-test",
         "--timeout", "20"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"MCPWIRE_LOG": "warn", "PATH": os.environ.get("PATH", "")},
    )
    try:
        authorize = None
        for line in proc.stderr:
            if line.startswith("  http"):
                authorize = line.strip()
                break
        assert authorize and authorize.startswith(f"{issuer}/authorize?"), authorize
        query = parse_qs(urlparse(authorize).query)
        assert query["code_challenge_method"] == ["S256"]
        assert query["resource"] == [url]
        assert query["scope"] == [SCOPE]
        with httpx2.Client(follow_redirects=False, timeout=10) as browser:
            r = browser.get(authorize)
            assert r.status_code in (301, 302, 303, 307, 308), r.text
            back = browser.get(r.headers["location"])
            assert back.status_code == 200, back.text
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "echo" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
