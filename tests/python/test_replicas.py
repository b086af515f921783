"""Two `mcpwire serve` replicas sharing one Redis (`[cluster]`, docs/design/scale-out.md),
with the official Python `mcp` client in front of them through an httpx transport that sends
every request to the next replica in turn (round robin, no affinity):

- legacy mode: a session opened on one replica continues on the other, request after
  request;
- auto mode: stateless 2026-07-28 requests, `input_required` round trips included (the
  retry lands on the other replica, which must accept the first one's `requestState`).

Redis is the distribution's `redis-server` on a free loopback port with no persistence;
without it the tests skip locally and fail under CI."""

import base64
import os
import shutil
import socket
import subprocess
import tempfile

import httpx2
import pytest

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from peers import Recorder, auto_client_options, text_of, wait_until_blocking
from test_gateway_serve import Served

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(7) == b"+PONG\r\n"
    except OSError:
        return False


@pytest.fixture(scope="module")
def redis_url():
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing under CI; the install step (scripts/test.sh) failed")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port, data = free_port(), tempfile.mkdtemp(prefix="mcpwire-redis-")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", data],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        if not wait_until_blocking(lambda: answers_ping(port), seconds=10):
            pytest.fail("redis-server did not answer PING within 10 s")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="module")
def replicas(mcpwire_bin, redis_url, tmp_path_factory):
    key = base64.b64encode(os.urandom(32)).decode()
    config = tmp_path_factory.mktemp("replicas") / "mcpwire.toml"
    config.write_text(
        '[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n'
        '[backends.demo]\nnative = "demo"\n\n'
        f'[cluster]\nstore = "{redis_url}"\nsession_keys = ["{key}"]\n'
    )
    served = [Served(mcpwire_bin, config) for _ in range(2)]
    try:
        yield [s.url for s in served]
    finally:
        for s in served:
            s.close()


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next replica (what a load balancer without affinity does)."""

    def __init__(self, urls):
        self.targets = [httpx2.URL(u) for u in urls]
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent = 0
        self.served = [0] * len(urls)

    async def handle_async_request(self, request):
        i = self.sent % len(self.targets)
        self.sent += 1
        self.served[i] += 1
        target = self.targets[i]
        request.url = request.url.copy_with(host=target.host, port=target.port)
        request.headers["host"] = f"{target.host}:{target.port}"
        return await self.inner.handle_async_request(request)

    async def aclose(self):
        await self.inner.aclose()


async def test_a_legacy_session_continues_on_every_replica(replicas):
    rr = RoundRobin(replicas)
    async with httpx2.AsyncClient(transport=rr, timeout=30) as http:
        async with streamable_http_client(replicas[0], http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=30) as s:
                init = await s.initialize()
                assert init.protocol_version == "2025-11-25"
                tools = (await s.list_tools()).tools
                assert any(t.name == "echo" for t in tools)
                for i in range(6):
                    r = await s.call_tool("echo", {"text": f"round {i}"})
                    assert text_of(r) == f"round {i}"
                r = await s.call_tool("add", {"a": 1, "b": 2})
                assert r.structured_content == {"sum": 3.0}
                rr_before = list(rr.served)
    # Every replica answered a share of the session's requests.
    assert min(rr_before) >= 4, rr_before


async def test_the_auto_client_round_trips_input_across_replicas(replicas):
    rr = RoundRobin(replicas)
    rec = Recorder()
    async with httpx2.AsyncClient(transport=rr, timeout=30) as http:
        transport = streamable_http_client(replicas[0], http_client=http)
        async with Client(transport, **auto_client_options(rec)) as client:
            assert client.protocol_version == "2026-07-28"
            r = await client.call_tool("echo", {"text": "stateless"})
            assert text_of(r) == "stateless"
            # Asks ride input_required round trips: the retry, with the first replica's
            # sealed requestState, lands on the other replica.
            r = await client.call_tool("test_elicitation", {"message": "hello?"})
            assert "accept" in text_of(r)
            r = await client.call_tool("test_input_required_result_multi_round", {})
            assert "Multi-round complete" in text_of(r)
    assert min(rr.served) >= 3, rr.served


class Recording(RoundRobin):
    """Round robin that remembers which replica each JSON-RPC message was POSTed to."""

    def __init__(self, urls):
        super().__init__(urls)
        self.posted = []  # (replica index, message)

    async def handle_async_request(self, request):
        if request.method == "POST":
            import json

            try:
                self.posted.append((self.sent % len(self.targets), json.loads(request.content)))
            except (ValueError, httpx2.RequestNotRead):
                pass
        return await super().handle_async_request(request)


async def test_asks_are_answered_through_another_replica(replicas):
    """Legacy sessions: a tool's elicitation / sampling / roots request goes out on the
    stream of the replica running the call; the client's answer is POSTed to the next
    replica, which relays it (docs/design/scale-out.md, "Asks across replicas")."""
    from peers import SAMPLED, full_session

    rr = Recording(replicas)
    rec = Recorder()

    class Notes:
        async def handler(self, message):
            pass

    async with httpx2.AsyncClient(transport=rr, timeout=30) as http:
        async with streamable_http_client(replicas[0], http_client=http) as (read, write):
            async with full_session(read, write, rec, Notes(), timeout=20) as s:
                await s.initialize()
                for _ in range(3):
                    r = await s.call_tool("test_elicitation", {"message": "hello?"})
                    assert "accept" in text_of(r), text_of(r)
                    r = await s.call_tool("test_sampling", {"prompt": "hi"})
                    assert SAMPLED in text_of(r), text_of(r)
    # One answer per call, in order (the calls run one after the other).
    call_replicas = [i for i, m in rr.posted if m.get("method") == "tools/call"]
    answers = [(i, m) for i, m in rr.posted if "result" in m and "method" not in m]
    assert len(answers) == len(call_replicas) == 6, rr.posted
    # Server ask ids name the replica's endpoint (unique across replicas).
    assert all(isinstance(m["id"], str) for _, m in answers), answers
    assert len({m["id"] for _, m in answers}) == 6, answers
    # The round robin sent answers to another replica than the call that asked them.
    moved = sum(1 for n, (i, _) in enumerate(answers) if call_replicas[n] != i)
    assert moved >= 3, (call_replicas, [i for i, _ in answers])
