"""The topology of `deploy/` as the tests run it (docs/deploy.md): the distribution's
HAProxy (`deploy/haproxy.cfg`: round robin, no affinity) in front of three `mcpwire serve`
replicas (`deploy/mcpwire.toml`) sharing the distribution's `redis-server`, all on loopback
ports. Checks, through the balancer only:

- the official Python `mcp` client, legacy and auto, works while its requests land on every
  replica (each replica's `/metrics`: tool calls and sessions resumed there), an elicitation
  answered on another replica than the one that asked included;
- a session id presented with another identity's key is refused (404), and so is a tampered
  one; a rolling key rotation (docs/deploy.md: learn the new key, seal with it, retire the
  old one) serves the sessions sealed before it until the old key is retired;
- `kill -9` of one replica while clients are calling: the session goes on on the others,
  every request is answered or refused with a retryable error (counted: none dropped), an
  SSE stream interrupted by the kill resumes with `Last-Event-ID` on another replica (what
  was logged, then an error saying the request was lost), and tasks created before the
  kill end `completed` or `failed`;
- Redis restarted mid-run: requests needing it are refused 503 + `Retry-After` while it
  is down, and served again once it is back, with no replica restarted.

Without `haproxy` or `redis-server` the tests skip locally and fail under CI
(scripts/test.sh installs both)."""

import base64
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time

import anyio
import httpx2
import pytest

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from peers import SAMPLED, Recorder, auto_client_options, full_session, text_of, wait_until_blocking
from test_gateway_serve import Served
from test_replicas import answers_ping, free_port

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
        self.mcpwire_bin, self.conf = mcpwire_bin, conf
        # The session key from the environment, as a Kubernetes Secret would give it.
        self.served = Served(mcpwire_bin, conf, env={"MCPWIRE_SESSION_KEYS": session_key})

    def restart(self, session_keys: str):
        """Stopped (SIGTERM) and started again on the same ports with these keys (newest
        first): one step of a rolling update."""
        self.served.close()
        self.served = Served(self.mcpwire_bin, self.conf,
                             env={"MCPWIRE_SESSION_KEYS": session_keys})

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


# The session key the replicas run with now (the rotation test changes it).
TOPOLOGY_KEY = [""]


class Redis:
    """The distribution's `redis-server` on a fixed loopback port, no persistence; can be
    stopped and started again on the same port (an outage)."""

    def __init__(self, exe: str):
        self.exe, self.port = exe, free_port()
        self.dir = tempfile.mkdtemp(prefix="mcpwire-redis-")
        self.proc = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        self.proc = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        if not wait_until_blocking(lambda: answers_ping(self.port), seconds=10):
            pytest.fail("redis-server did not answer PING within 10 s")

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def redis():
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing under CI; the install step (scripts/test.sh) failed")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = Redis(exe)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def topology(mcpwire_bin, redis, tmp_path_factory):
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
    TOPOLOGY_KEY[0] = session_key
    replicas = [Replica(mcpwire_bin, redis.url, keys, session_key, work, n) for n in (1, 2, 3)]
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


async def test_tampered_ids_and_a_rolling_key_rotation(topology):
    url, replicas = topology
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    def in_session(sid):
        return dict(headers, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})

    async with client(ALICE) as alice:
        async def works(sid, tries=3):
            # Consecutive requests: round robin puts them on different replicas.
            for _ in range(tries):
                r = await alice.post(url, json=call, headers=in_session(sid))
                assert r.status_code == 200, (r.status_code, r.text)

        r = await alice.post(url, json=init, headers=headers)
        assert r.status_code == 200, r.text
        old = r.headers["mcp-session-id"]
        await works(old)
        # One character changed in the middle (the sealed part): refused everywhere.
        i = len(old) // 2
        tampered = old[:i] + ("A" if old[i] != "A" else "B") + old[i + 1:]
        for _ in range(3):
            r = await alice.post(url, json=call, headers=in_session(tampered))
            assert r.status_code == 404, (r.status_code, r.text)

        # Rolling rotation (docs/deploy.md), three rolls; the old session is served all along.
        # 1: every replica learns the new key, still sealing with the old one — so a
        #    session sealed anywhere opens everywhere, whatever the roll's progress.
        new_key = base64.b64encode(os.urandom(32)).decode()
        old_key = TOPOLOGY_KEY[0]
        for replica in replicas:
            replica.restart(f"{old_key},{new_key}")
            await works(old)
        # 2: every replica seals with the new key; sessions opened mid-roll (sealed with
        #    either key) are served by every replica.
        for replica in replicas:
            replica.restart(f"{new_key},{old_key}")
            await works(old)
            r = await alice.post(url, json=init, headers=headers)
            assert r.status_code == 200, r.text
            await works(r.headers["mcp-session-id"])
        r = await alice.post(url, json=init, headers=headers)
        assert r.status_code == 200, r.text
        new = r.headers["mcp-session-id"]
        # 3: the old key retired everywhere: sessions sealed with it end (404: the client
        #    starts a new one), sessions sealed with the new key go on.
        for replica in replicas:
            replica.restart(new_key)
            await works(new)
        for _ in range(3):
            r = await alice.post(url, json=call, headers=in_session(old))
            assert r.status_code == 404, (r.status_code, r.text)
        TOPOLOGY_KEY[0] = new_key


RETRYABLE = {502, 503, 504}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def refused_clearly(r) -> bool:
    """A retryable refusal as the issue asks: 502/503/504 with `Retry-After` and a
    JSON-RPC error (mcpwire's own, or HAProxy's from deploy/errors/)."""
    if r.status_code not in RETRYABLE or "retry-after" not in r.headers:
        return False
    try:
        return isinstance(r.json()["error"]["message"], str)
    except (ValueError, KeyError, TypeError):
        return False


def stateless(method: str, params: dict, id: int, name: str | None = None):
    """A 2026-07-28 request to the balancer: its body and headers."""
    params = dict(params, _meta={"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": TASKS})
    h = dict(HEADERS, **{"mcp-protocol-version": "2026-07-28", "mcp-method": method})
    if name:
        h["mcp-name"] = name
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}, h


class Sse:
    """An SSE response read event by event: (id, data as JSON or None)."""

    def __init__(self, response):
        self.lines = response.aiter_lines()

    async def next(self):
        id, data = None, None
        async for line in self.lines:
            if line.startswith("id: "):
                id = line[4:]
            elif line.startswith("data: ") and line[6:]:
                data = __import__("json").loads(line[6:])
            elif line == "" and (id or data):
                return id, data
        return None


async def test_kill_9_of_a_replica_mid_session(topology):
    url, replicas = topology
    counts = {"sent": 0, "answered": 0, "refused": 0, "dropped": [], "other": []}
    victim = replicas[1]
    async with client(ALICE) as http:
        r = await http.post(url, json=INIT, headers=HEADERS)
        assert r.status_code == 200, r.text
        sid = r.headers["mcp-session-id"]
        h = dict(HEADERS, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})

        # Before the kill: three long calls, one per replica (consecutive requests, round
        # robin), each an SSE stream (a progress event first), read up to that event...
        # (long enough to be running still when the replica dies, even on a loaded machine)
        streams = []
        for n in range(3):
            call = {"jsonrpc": "2.0", "id": 500 + n, "method": "tools/call",
                    "params": {"name": "slow_compute", "arguments": {"seconds": 6},
                               "_meta": {"progressToken": n}}}
            response = await http.send(http.build_request("POST", url, json=call, headers=h),
                                       stream=True)
            assert response.status_code == 200, response.status_code
            sse = Sse(response)
            priming, _ = await sse.next()
            _, progress = await sse.next()
            assert progress["method"] == "notifications/progress", progress
            streams.append((500 + n, priming, sse, response))
        # ...and six tasks (2026-07-28, the tasks extension: the call becomes a task).
        tasks = []
        for n in range(6):
            body, th = stateless("tools/call", {"name": "slow_compute", "arguments": {"seconds": 5}},
                                 600 + n, "slow_compute")
            r = await http.post(url, json=body, headers=th)
            assert r.status_code == 200 and r.json()["result"]["resultType"] == "task", r.text
            tasks.append(r.json()["result"]["taskId"])

        async def worker(w: int):
            for i in range(40):
                counts["sent"] += 1
                call = {"jsonrpc": "2.0", "id": w * 1000 + i, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": f"{w}-{i}"}}}
                try:
                    r = await http.post(url, json=call, headers=h)
                except httpx2.TransportError as e:
                    counts["dropped"].append((w, i, repr(e)))
                    continue
                if r.status_code == 200 and f'"{w}-{i}"' in r.text:
                    counts["answered"] += 1
                elif refused_clearly(r):
                    counts["refused"] += 1
                else:
                    counts["other"].append((r.status_code, dict(r.headers), r.text[:200]))
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

        # The streams: those on the two replicas left end with their answer; the one on
        # the killed replica breaks, and resumes with `Last-Event-ID` on another replica:
        # the progress event again (it was logged), then an error for the request.
        interrupted = 0
        for id, priming, sse, response in streams:
            try:
                while (event := await sse.next()) is not None:
                    _, data = event
                    if data and data.get("id") == id:
                        assert data["result"]["content"][0]["text"].startswith("computed"), data
                        break
                else:
                    raise httpx2.RemoteProtocolError("ended without an answer")
                continue
            except httpx2.TransportError:
                pass
            finally:
                await response.aclose()
            interrupted += 1
            resumed = dict(h, **{"last-event-id": priming})
            async with http.stream("GET", url, headers=resumed) as again:
                assert again.status_code == 200, again.status_code
                sse = Sse(again)
                first_id, progress = await sse.next()
                assert first_id == priming[:-1] + "1", (first_id, priming)
                assert progress["method"] == "notifications/progress", progress
                _, lost = await sse.next()
                assert lost["id"] == id and "stopped" in lost["error"]["message"], lost
                assert await sse.next() is None, "the resumed stream ends with the error"
        assert interrupted == 1, "one stream ran on the killed replica"

        # Tasks created before the kill all end, `completed` or `failed` (those the killed
        # replica ran: within the executor timeout, 3 s): none stays `working`.
        ends = {}
        deadline = time.monotonic() + 30
        while len(ends) < len(tasks) and time.monotonic() < deadline:
            for n, task in enumerate(tasks):
                if task in ends:
                    continue
                body, th = stateless("tasks/get", {"taskId": task}, 700 + n, task)
                r = await http.post(url, json=body, headers=th)
                if r.status_code != 200:
                    assert refused_clearly(r), (r.status_code, r.text)
                    continue
                status = r.json()["result"]["status"]
                if status in ("completed", "failed"):
                    ends[task] = status
            await anyio.sleep(0.25)
        assert len(ends) == len(tasks), ("tasks still running after 30 s", ends)
        assert "failed" in ends.values() and "completed" in ends.values(), ends

    print("kill -9 counts:", counts)
    # Every request was answered or refused with a retryable JSON-RPC error: HAProxy
    # closes client connections after each response (option httpclose), so a request
    # whose replica died is answered 502 from deploy/errors/502.http, never dropped.
    assert counts["other"] == [] and counts["dropped"] == [], counts
    assert counts["answered"] + counts["refused"] == counts["sent"] == 160, counts
    assert counts["answered"] >= 150, counts


async def test_redis_restarted_mid_run(topology, redis):
    url, replicas = topology
    async with client(ALICE) as http:
        r = await http.post(url, json=INIT, headers=HEADERS)
        assert r.status_code == 200, r.text
        redis.stop()
        # While it is down: what needs it (a new session, rebuilding one elsewhere) is
        # refused 503 + Retry-After, with a JSON-RPC error; nothing hangs.
        for _ in range(4):
            r = await http.post(url, json=INIT, headers=HEADERS)
            assert r.status_code == 503 and refused_clearly(r), (r.status_code, r.text)
        redis.start()
        # Back: served again with no replica restarted (bounded: 10 s).
        served = False
        for _ in range(100):
            r = await http.post(url, json=INIT, headers=HEADERS)
            if r.status_code == 200:
                served = True
                break
            assert refused_clearly(r), (r.status_code, r.text)
            await anyio.sleep(0.1)
        assert served, "sessions start again once Redis is back"
        sid = r.headers["mcp-session-id"]
        h = dict(HEADERS, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
        # The new session moves between the replicas left, through the restarted store.
        for i in range(4):
            call = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": f"back {i}"}}}
            r = await http.post(url, json=call, headers=h)
            assert r.status_code == 200 and f'"back {i}"' in r.text, (r.status_code, r.text)
    assert all(r.served.proc.poll() is None for r in (replicas[0], replicas[2]))
