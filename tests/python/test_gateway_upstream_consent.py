"""Users' consent to an upstream's OAuth, asked through `mcpwire serve` (`consent =
"elicit"`, the default of the authorization-code grant): the upstream is `mcpwire demo
--transport http` verifying tokens of a real authorization server (npm `oauth2-mock-server`,
`tests/peers/oauth_as.mjs`, which approves without a login page), the users the official
Python `mcp` client authenticating to the gateway with API keys. A user whose call needs an
upstream token they have not granted yet is sent to the authorization URL — by URL-mode
elicitation when their client declared it (the call then finishes), else by the −32042
`URLElicitationRequired` error (they authorize, then retry). Their "browser" here is an HTTP
client following the authorization server's redirect to the gateway's `/oauth/callback`."""

import asyncio
import socket

import httpx2
import pytest

from mcp import ClientSession, MCPError, types
from mcp.client.streamable_http import streamable_http_client

from peers import text_of
from test_gateway_serve import Served
from test_http_oauth_flow import oauth_servers  # noqa: F401 (a fixture: the AS, a protected upstream)

pytestmark = pytest.mark.anyio

URL_ELICITATION_REQUIRED = -32042


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gateway(mcpwire_bin, tmp_path, up_url) -> Served:
    """The gateway on a fixed port (the redirect URI is on it), callers by API key."""
    (tmp_path / "keys.txt").write_text("alice=alice-key\nbob=bob-key\ncarol=carol-key\n")
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        f'[server]\nprefix = "never"\n\n[[listen]]\nurl = "http://127.0.0.1:{free_port()}/mcp"\n\n'
        '[auth]\napi_key_files = ["keys.txt"]\n\n'
        f'[backends.up]\nurl = "{up_url}"\n\n[backends.up.oauth]\ngrant = "authorization_code"\n'
        'client_id = "mcpwire-gateway"\n'
    )
    return Served(mcpwire_bin, conf, env={"MCPWIRE_LOG": "info"})


async def browse(url: str) -> httpx2.Response:
    """The user's browser: opens the authorization URL, follows the redirects to the end."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=10) as browser:
        return await browser.get(url)


class User:
    """One caller of the gateway (an API key), with or without URL elicitation."""

    def __init__(self, url: str, key: str, elicit: bool, answer: str = "accept"):
        self.url, self.key, self.elicit, self.answer = url, key, elicit, answer
        self.asked: list[types.ElicitRequestURLParams] = []
        self.landed: list[httpx2.Response] = []
        self.visits: list[asyncio.Task] = []

    async def on_elicit(self, _ctx, params):
        assert params.mode == "url", params
        self.asked.append(params)
        if self.answer != "accept":
            return types.ElicitResult(action=self.answer)
        # The user goes to the URL in their browser; the client answers at once.
        self.visits.append(asyncio.ensure_future(self._visit(params.url)))
        return types.ElicitResult(action="accept")

    async def _visit(self, url):
        self.landed.append(await browse(url))

    async def add(self) -> MCPError | None:
        """Calls `add` in a new session: `None` when it worked, else the error."""
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.key}"}, timeout=30) as http:
            async with streamable_http_client(self.url, http_client=http) as (read, write):
                callback = self.on_elicit if self.elicit else None
                async with ClientSession(read, write, read_timeout_seconds=30,
                                         elicitation_callback=callback) as s:
                    await s.initialize()
                    try:
                        r = await s.call_tool("add", {"a": 2, "b": 3})
                    except MCPError as e:
                        return e
                    assert not r.is_error, r
                    assert text_of(r) == "{\"sum\":5.0}"
                    return None


async def test_users_authorize_the_upstream_through_the_gateway(mcpwire_bin, tmp_path, oauth_servers):
    _issuer, up_url = oauth_servers
    served = gateway(mcpwire_bin, tmp_path, up_url)
    try:
        # A client with URL elicitation: the call waits while the user authorizes.
        bob = User(served.url, "bob-key", elicit=True)
        assert await bob.add() is None
        assert len(bob.asked) == 1, bob.asked
        await asyncio.gather(*bob.visits)
        page = bob.landed[0]
        assert page.status_code == 200 and "Authorization received" in page.text, page.text
        assert "/oauth/callback?" in str(page.url), page.url
        # Bob's next session has his token: nobody is asked again.
        assert await bob.add() is None
        assert len(bob.asked) == 1, bob.asked

        # A client without URL elicitation: −32042 with the URL; authorize, then retry.
        alice = User(served.url, "alice-key", elicit=False)
        refused = await alice.add()
        assert refused is not None and refused.code == URL_ELICITATION_REQUIRED, refused
        (elicitation,) = refused.data["elicitations"]
        assert elicitation["mode"] == "url" and elicitation["elicitationId"], elicitation
        assert elicitation["url"] != bob.asked[0].url  # her own authorization, not bob's
        landed = await browse(elicitation["url"])
        assert landed.status_code == 200, landed.text
        assert await alice.add() is None

        # The redirect endpoint takes each state once; unknown ones get a clear 400 page.
        replay = await browse(str(landed.url))
        assert replay.status_code == 400 and "unknown" in replay.text, replay.text
        forged = await browse(str(landed.url).split("?")[0] + "?code=x&state=forged")
        assert forged.status_code == 400, forged.text
        assert "code=" not in "\n".join(served.lines)  # no code (or token) in the logs

        # One authorization for the gateway's own session, one per user.
        authorizations = sum("authorizing with the upstream" in l for l in served.lines)
        assert authorizations == 3, served.lines

        # A user who declines: the call fails saying so, and nothing stays pending (asked
        # again, they are asked anew).
        carol = User(served.url, "carol-key", elicit=True, answer="decline")
        declined = await carol.add()
        assert declined is not None and "declined" in declined.message, declined
        carol.answer = "accept"
        assert await carol.add() is None
        await asyncio.gather(*carol.visits)
        assert len(carol.asked) == 2 and carol.asked[0].url != carol.asked[1].url, carol.asked
    finally:
        served.close()
