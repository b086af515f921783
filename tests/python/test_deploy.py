"""The topology of `deploy/` as the tests run it (docs/deploy.md): the distribution's
HAProxy (`deploy/haproxy.cfg`: round robin, no affinity) in front of three `mcpwire serve`
replicas (`deploy/mcpwire.toml`) sharing the distribution's `redis-server`, all on loopback
ports. Checks, through the balancer only:

- the official Python `mcp` client, legacy and auto, works while its requests land on every
  replica (each replica's `/metrics`: tool calls and sessions resumed there), an elicitation
  answered on another replica than the one that asked included;
- a session id presented with another identity's key is refused (404);
- `kill -9` of one replica while clients are calling: the session goes on on the others,
  and every request is answered or refused with a retryable status (counted).

Without `haproxy` or `redis-server` the tests skip locally and fail under CI
(scripts/test.sh installs both)."""

import base64
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

import anyio
import httpx2
import pytest

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from peers import SAMPLED, Recorder, auto_client_options, full_session, text_of
from test_gateway_serve import Served
from test_replicas import free_port, redis_url  # noqa: F401 (a fixture)

pytestmark = pytest.mark.anyio

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy"
ALICE = "alice-3f1c0a9e7b2d4c6a8e0f"
BOB = "bob-9d8c7b6a5f4e3d2c1b0a9"


class Replica:
    """One `mcpwire serve` from deploy/mcpwire.toml on fixed loopback ports."""

    def __init__(self, mcpwire_bin, redis, keys_file, session_key, workdir: pathlib.Path, n: int):
        self.port, self.admin_port = free_port(), free_port()
        text = (DEPLOY / "mcpwire.toml").read_text()
        for k, v in {
            "@LISTEN@": f"127.0.0.1:{self.port}",
            "@ADMIN@": f"127.0.0.1:{self.admin_port}",
            "@REDIS@": redis,
            "@KEYS@": str(keys_file),
            "@PUBLIC_HOST@": "127.0.0.1",
        }.items():
            text = text.replace(k, v)
        conf = workdir / f"replica{n}.toml"
        conf.write_text(text)
        # The session key from the environment, as a Kubernetes Secret would give it.
        self.served = Served(mcpwire_bin, conf, env={"MCPWIRE_SESSION_KEYS": session_key})

    def metric(self, name: str) -> float:
        """The sum of every series of counter `name` on this replica."""
        text = httpx2.get(f"http://127.0.0.1:{self.admin_port}/metrics", timeout=5).text
        total = 0.0
        for line in text.splitlines():
            m = re.match(rf"^{re.escape(name)}(\{{[^}}]*\}})?\s+(\S+)$", line)
            if m:
                total += float(m.group(2))
        return total

    def series(self, name: str, label: str) -> float:
        text = httpx2.get(f"http://127.0.0.1:{self.admin_port}/metrics", timeout=5).text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") and label in line
        )


@pytest.fixture(scope="module")
def topology(mcpwire_bin, redis_url, tmp_path_factory):  # noqa: F811
    haproxy = shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None
    )
    if haproxy is None:
        if os.environ.get("CI"):
            pytest.fail("haproxy is missing under CI; the install step (scripts/test.sh) failed")
        pytest.skip("haproxy is not installed (apt-get install haproxy)")
    work = tmp_path_factory.mktemp("deploy")
    keys = work / "keys.txt"
    keys.write_text(f"alice={ALICE}\nbob={BOB}\n")
    session_key = base64.b64encode(os.urandom(32)).decode()
    replicas = [Replica(mcpwire_bin, redis_url, keys, session_key, work, n) for n in (1, 2, 3)]
    lb_port = free_port()
    env = dict(os.environ, LB_BIND=f"127.0.0.1:{lb_port}")
    for n, r in enumerate(replicas, 1):
        env[f"MCPWIRE_{n}"] = f"127.0.0.1:{r.port}"
        env[f"MCPWIRE_ADMIN_{n}_PORT"] = str(r.admin_port)
    lb_log = open(work / "haproxy.log", "w")
    lb = subprocess.Popen(
        [haproxy, "-db", "-f", str(DEPLOY / "haproxy.cfg")],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=lb_log,
    )
    url = f"http://127.0.0.1:{lb_port}/mcp"
    try:
        # Up once the balancer answers three times in a row (every replica checked healthy).
        ok = 0
        for _ in range(200):
            try:
                r = httpx2.get(url, timeout=2, headers={"authorization": f"Bearer {ALICE}"})
                ok = ok + 1 if r.status_code < 500 else 0
            except httpx2.HTTPError:
                ok = 0
            if ok >= 3:
                break
            time.sleep(0.05)
        else:
            pytest.fail("haproxy did not come up in front of the replicas within 10 s")
        yield url, replicas
    finally:
        print("haproxy log:", work / "haproxy.log")
        lb.kill()
        lb.wait(timeout=10)
        for r in replicas:
            if r.served.proc.poll() is None:
                r.served.close()


def client(key: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=30, headers={"authorization": f"Bearer {key}"})


class Notes:
    async def handler(self, message):
        pass


async def test_the_python_client_through_haproxy_lands_on_every_replica(topology):
    url, replicas = topology
    calls = [r.metric("mcpwire_tool_calls_total") for r in replicas]
    resumed = [r.series("mcpwire_cluster_sessions_total", 'event="resumed"') for r in replicas]
    async with client(ALICE) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with full_session(read, write, Recorder(), Notes(), timeout=20) as s:
                await s.initialize()
                for i in range(9):
                    r = await s.call_tool("echo", {"text": f"legacy {i}"})
                    assert text_of(r) == f"legacy {i}"
                # An ask answered wherever the balancer sends the answer.
                for _ in range(3):
                    r = await s.call_tool("test_elicitation", {"message": "ok?"})
                    assert "accept" in text_of(r), text_of(r)
                    r = await s.call_tool("test_sampling", {"prompt": "hi"})
                    assert SAMPLED in text_of(r), text_of(r)
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, **auto_client_options(Recorder())) as c:
            assert c.protocol_version == "2026-07-28"
            for i in range(9):
                r = await c.call_tool("echo", {"text": f"auto {i}"})
                assert text_of(r) == f"auto {i}"
            r = await c.call_tool("test_elicitation", {"message": "hello?"})
            assert "accept" in text_of(r)
    calls = [r.metric("mcpwire_tool_calls_total") - c for r, c in zip(replicas, calls)]
    resumed = [
        r.series("mcpwire_cluster_sessions_total", 'event="resumed"') - c
        for r, c in zip(replicas, resumed)
    ]
    assert sum(calls) >= 25, calls
    # Round robin: every replica ran a share of the calls, and the legacy session was
    # continued (rebuilt from its sealed id) on the replicas that did not start it.
    assert min(calls) >= 4, calls
    assert sum(1 for n in resumed if n > 0) >= 2, resumed


async def test_a_session_id_with_another_identitys_key_is_refused(topology):
    url, _ = topology
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with client(ALICE) as alice, client(BOB) as bob:
        r = await alice.post(url, json=init, headers=headers)
        assert r.status_code == 200, r.text
        sid = r.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        h = dict(headers, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
        # Three tries: each lands on another replica; none lets Bob in, each lets Alice.
        for _ in range(3):
            assert (await bob.post(url, json=call, headers=h)).status_code == 404
            assert (await alice.post(url, json=call, headers=h)).status_code == 200


RETRYABLE = {502, 503, 504}


async def test_kill_9_of_a_replica_mid_session(topology):
    url, replicas = topology
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    counts = {"sent": 0, "answered": 0, "refused": 0, "dropped": [], "other": []}
    async with client(ALICE) as http:
        r = await http.post(url, json=init, headers=headers)
        assert r.status_code == 200, r.text
        sid = r.headers["mcp-session-id"]
        h = dict(headers, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
        victim = replicas[1]

        async def worker(w: int):
            for i in range(40):
                counts["sent"] += 1
                call = {"jsonrpc": "2.0", "id": w * 1000 + i, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": f"{w}-{i}"}}}
                try:
                    r = await http.post(url, json=call, headers=h)
                except httpx2.RemoteProtocolError as e:
                    # The balancer closed the connection without a response (see below).
                    counts["dropped"].append((w, i, repr(e)))
                    continue
                if r.status_code == 200 and f'"{w}-{i}"' in r.text:
                    counts["answered"] += 1
                elif r.status_code in RETRYABLE:
                    counts["refused"] += 1
                else:
                    counts["other"].append((r.status_code, r.text[:200]))
                if w == 0 and i == 10:
                    victim.served.proc.send_signal(signal.SIGKILL)

        async with anyio.create_task_group() as tg:
            for w in range(4):
                tg.start_soon(worker, w)
        assert victim.served.proc.wait(timeout=10) == -signal.SIGKILL
        # After the kill the session still answers (on the two replicas left).
        call = {"jsonrpc": "2.0", "id": 9999, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "after"}}}
        for _ in range(4):
            r = await http.post(url, json=call, headers=h)
            assert r.status_code == 200 and '"after"' in r.text, (r.status_code, r.text)
    print("kill -9 counts:", counts)
    # No request got anything but its answer or a retryable refusal...
    assert counts["other"] == [], counts
    dropped = len(counts["dropped"])
    assert counts["answered"] + counts["refused"] + dropped == counts["sent"] == 160, counts
    assert counts["answered"] >= 150, counts
    # ...except, at most, the few in flight when the replica died (one per worker): HAProxy
    # sometimes closes such a request's client connection without a response (0-1 in 160
    # in our runs) instead of answering 502 — the client cannot tell whether it ran. Known,
    # recorded in docs/deploy.md.
    assert dropped <= 4, counts
