"""The official Python `mcp` client through `mcpwire serve` fronting an upstream MCP server
(`mcpwire demo`) as a stdio child and over Streamable HTTP, served over Streamable HTTP
with no prefix: tools, structured content, progress, logs, sampling/elicitation/roots asks,
resources and their updates, prompts, completions, cancellation and errors with their
codes all round-trip, in legacy (2025-11-25) and auto (2026-07-28) modes, with the
upstream spoken to in either era."""

import os
import pathlib
import subprocess
import sys

import anyio
import pytest

import mcp.types as types
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from peers import (
    full_session,
    Notes,
    error_of,
    wait_until,
    SAMPLED,
    Recorder,
    auto_client_options,
    exercise_stateless_client,
    process_alive,
    text_of,
)
from test_gateway_serve import Served

pytestmark = pytest.mark.anyio


def gateway_config(tmp_path, backend: str):
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        '[server]\nprefix = "never"\n\n[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n'
        f"[backends.up]\n{backend}"
    )
    return conf


def stdio_backend(mcpwire_bin, era="auto") -> str:
    return f'command = ["{mcpwire_bin}", "demo"]\nera = "{era}"\n'


async def direct_error(mcpwire_bin, coro_of):
    """The error `mcpwire demo` itself answers, for comparison."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=mcpwire_bin, args=["demo"], env={"MCPWIRE_LOG": "warn"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30) as s:
            await s.initialize()
            return await error_of(coro_of(s))


async def legacy(url: str, mcpwire_bin: str, per_session: bool) -> None:
    """A 2025-11-25 session: its upstream session is its own and, the upstream speaking
    both eras, a handshake-era one whatever the backend's `era` says for the shared session
    (so subscriptions work as they do directly). `per_session`: this session's upstream is
    a child of its own, whose catalog changes are not the catalog's (that is the shared
    session's)."""
    rec, notes = Recorder(), Notes()
    async with streamable_http_client(url) as (read, write):
        async with full_session(read, write, rec, notes, timeout=30) as s:
            init = await s.initialize()
            assert init.protocol_version == "2025-11-25"
            assert "`up`" in (init.instructions or ""), init.instructions

            tools = {t.name for t in (await s.list_tools()).tools}
            assert {"echo", "add", "test_sampling", "test_slow"} <= tools, (tools, init)
            r = await s.call_tool("echo", {"text": "through the gateway"})
            assert text_of(r) == "through the gateway"
            r = await s.call_tool("add", {"a": 2, "b": 3.5})
            assert r.structured_content == {"sum": 5.5}
            r = await s.call_tool("test_error_handling", {})
            assert r.is_error

            # Errors keep the upstream's code and message.
            err = await error_of(s.call_tool("no_such_tool", {}))
            direct = await direct_error(mcpwire_bin, lambda d: d.call_tool("no_such_tool", {}))
            assert (err.code, err.message) == (direct.code, direct.message), (err, direct)
            err = await error_of(s.get_prompt("no_such_prompt", {}))
            direct = await direct_error(mcpwire_bin, lambda d: d.get_prompt("no_such_prompt", {}))
            assert err.code == direct.code, (err, direct)

            # Progress under the downstream's token; logs at the level this session set.
            r = await s.call_tool("test_tool_with_progress", {}, progress_callback=rec.on_progress)
            assert [p for p, _, _ in rec.progress][:3] == [0, 50, 100], rec.progress
            await s.set_logging_level("info")
            await s.call_tool("test_tool_with_logging", {})
            await wait_until(lambda: len(rec.logs) >= 3)

            # The upstream's asks reach this client, whichever era the upstream speaks.
            r = await s.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
            assert SAMPLED in text_of(r)
            r = await s.call_tool("test_elicitation", {"message": "Please provide your information"})
            assert "accept" in text_of(r)
            r = await s.call_tool("test_input_required_result_list_roots", {})
            assert "2 root" in text_of(r), text_of(r)
            r = await s.call_tool("test_input_required_result_multi_round", {})
            assert "Multi-round complete" in text_of(r), text_of(r)

            # Resources.
            uris = {str(r.uri) for r in (await s.list_resources()).resources}
            assert "test://static-text" in uris, uris
            rr = await s.read_resource("test://static-text")
            assert rr.contents[0].text == "This is the content of the static text resource."
            rr = await s.read_resource("test://template/7/data")
            assert "7" in rr.contents[0].text

            # Prompts and completions.
            prompts = {p.name for p in (await s.list_prompts()).prompts}
            assert "test_simple_prompt" in prompts, prompts
            gp = await s.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            assert gp.messages
            c = await s.complete(
                types.ResourceTemplateReference(uri="test://template/{id}/data"), {"name": "id", "value": ""}
            )
            assert c.completion.values == ["1", "2", "3"], c

            # Cancellation ends the call here and upstream; the session goes on.
            with anyio.move_on_after(0.5) as scope:
                await s.call_tool("test_slow", {"seconds": 30})
            assert scope.cancelled_caught
            r = await s.call_tool("echo", {"text": "still here"})
            assert text_of(r) == "still here"

            # Subscriptions and their updates.
            await s.subscribe_resource("test://watched-resource")
            await s.call_tool("test_trigger_resource_update", {})
            await wait_until(lambda: notes.methods("notifications/resources/updated"))
            updated = notes.methods("notifications/resources/updated")[0]
            assert str(updated.params.uri) == "test://watched-resource"
            await s.unsubscribe_resource("test://watched-resource")

            # A list change upstream reaches this client.
            if per_session:
                return
            before = len(notes.methods("notifications/tools/list_changed"))
            await s.call_tool("test_trigger_tool_change", {})
            await wait_until(lambda: len(notes.methods("notifications/tools/list_changed")) > before)


async def auto(url: str) -> None:
    rec = Recorder()
    async with Client(url, **auto_client_options(rec)) as client:
        await exercise_stateless_client(client, rec)


@pytest.mark.parametrize("era", ["auto", "handshake"])
async def test_stdio_upstream(mcpwire_bin, tmp_path, era):
    served = Served(mcpwire_bin, gateway_config(tmp_path, stdio_backend(mcpwire_bin, era)))
    try:
        await legacy(served.url, mcpwire_bin, per_session=True)
        await auto(served.url)
    finally:
        served.close()


@pytest.mark.parametrize("era", ["auto", "handshake"])
async def test_http_upstream(mcpwire_bin, tmp_path, http_url, era):
    served = Served(mcpwire_bin, gateway_config(tmp_path, f'url = "{http_url}"\nera = "{era}"\n'))
    try:
        await legacy(served.url, mcpwire_bin, per_session=False)
        await auto(served.url)
    finally:
        served.close()


async def test_quick_flag_upstream_served_as_itself(mcpwire_bin):
    """`mcpwire serve --upstream NAME=COMMAND`: one backend, served as the upstream itself."""
    proc = subprocess.Popen(
        [mcpwire_bin, "serve", "--upstream", f"up={mcpwire_bin} demo", "--listen", "http://127.0.0.1:0/mcp"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "listening on" in line, line
        url = line.split()[-1]
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=30) as s:
                init = await s.initialize()
                r = await s.call_tool("add", {"a": 1, "b": 2})
                assert r.structured_content == {"sum": 3.0}
                assert init.server_info.name != "mcpwire-gateway"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


FAKE = pathlib.Path(__file__).resolve().parents[1] / "peers" / "fake_server.py"


def faulty_backend(extra: str = "") -> str:
    return f'command = ["{sys.executable}", "{FAKE}", "stdio-faulty"]\n{extra}'


async def pid_of(s) -> int:
    return int(text_of(await s.call_tool("pid", {})))


async def test_a_child_per_downstream_session(mcpwire_bin, tmp_path):
    """Stdio upstreams get one child per downstream session, stopped when it ends; the
    stateless requests share one; `max_sessions` bounds the children."""
    served = Served(mcpwire_bin, gateway_config(tmp_path, faulty_backend("max_sessions = 2\n")))
    try:
        async with streamable_http_client(served.url) as (ra, wa), streamable_http_client(served.url) as (rb, wb):
            async with ClientSession(ra, wa, read_timeout_seconds=30) as a, ClientSession(
                rb, wb, read_timeout_seconds=30
            ) as b:
                await a.initialize()
                await b.initialize()
                pid_a, pid_b = await pid_of(a), await pid_of(b)
                assert pid_a != pid_b, "two sessions, two children"
                assert await pid_of(a) == pid_a, "a session keeps its child"
                async with Client(served.url, mode="auto", read_timeout_seconds=30) as stateless:
                    shared = int(text_of(await stateless.call_tool("pid", {})))
                    assert shared not in (pid_a, pid_b)

                # A third session is refused while two have children.
                async with streamable_http_client(served.url) as (rc, wc):
                    async with ClientSession(rc, wc, read_timeout_seconds=30) as c:
                        await c.initialize()
                        err = await error_of(c.call_tool("pid", {}))
                        assert "max_sessions" in err.message, err
                assert process_alive(pid_a) and process_alive(pid_b)
        # Both sessions ended (the client deleted them): their children stop.
        await wait_until(lambda: not process_alive(pid_a) and not process_alive(pid_b))
        assert process_alive(shared), "the shared child serves on"

        # Room again: a new session gets a new child.
        async with streamable_http_client(served.url) as (rd, wd):
            async with ClientSession(rd, wd, read_timeout_seconds=30) as d:
                await d.initialize()
                assert await pid_of(d) not in (pid_a, pid_b, shared)
    finally:
        served.close()


async def test_shared_stdio_upstream(mcpwire_bin, tmp_path):
    """`shared = true`: every downstream session talks to the one child."""
    served = Served(mcpwire_bin, gateway_config(tmp_path, faulty_backend("shared = true\n")))
    try:
        async with streamable_http_client(served.url) as (ra, wa), streamable_http_client(served.url) as (rb, wb):
            async with ClientSession(ra, wa, read_timeout_seconds=30) as a, ClientSession(
                rb, wb, read_timeout_seconds=30
            ) as b:
                await a.initialize()
                await b.initialize()
                assert await pid_of(a) == await pid_of(b)
                r = await b.call_tool("echo", {"text": "b"})
                assert text_of(r) == "b"
    finally:
        served.close()


async def faulty_session(url: str):
    """A legacy session through the gateway (an async context manager)."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def session():
        async with streamable_http_client(url) as (r, w):
            async with ClientSession(r, w, read_timeout_seconds=30) as s:
                await s.initialize()
                yield s

    return session()


@pytest.mark.parametrize("shared", ["true", "false"])
async def test_a_child_that_crashes_mid_call(mcpwire_bin, tmp_path, shared):
    """The call in flight gets a clear error; the next call works (a new child: right away
    for a session's own child, after the shared one is started again)."""
    served = Served(mcpwire_bin, gateway_config(tmp_path, faulty_backend(f"shared = {shared}\n")))
    try:
        async with await faulty_session(served.url) as s:
            before = await pid_of(s)
            err = await error_of(s.call_tool("crash", {}))
            assert err.code == -32603 and "closed" in err.message.lower(), err
            r = await s.call_tool("echo", {"text": "after the crash"})
            assert text_of(r) == "after the crash"
            assert await pid_of(s) != before
    finally:
        served.close()


async def test_a_hanging_upstream_times_out(mcpwire_bin, tmp_path):
    served = Served(mcpwire_bin, gateway_config(tmp_path, faulty_backend("call_timeout_secs = 1\n")))
    try:
        async with await faulty_session(served.url) as s:
            err = await error_of(s.call_tool("hang", {}))
            assert err.code == -32001 and "timed out" in err.message.lower(), err
            r = await s.call_tool("echo", {"text": "still served"})
            assert text_of(r) == "still served"
    finally:
        served.close()


async def test_a_flooding_upstream(mcpwire_bin, tmp_path):
    """Five thousand logs and progress updates around one call: the call is answered and the
    session stays usable (what a slow client cannot take is dropped, not queued)."""
    served = Served(mcpwire_bin, gateway_config(tmp_path, faulty_backend()))
    try:
        async with await faulty_session(served.url) as s:
            seen = []

            async def on_progress(progress, total, message):
                seen.append(progress)

            r = await s.call_tool("flood", {"count": 5000}, progress_callback=on_progress)
            assert text_of(r) == "flooded 5000"
            assert seen and seen == sorted(seen), "progress in order"
            r = await s.call_tool("echo", {"text": "after the flood"})
            assert text_of(r) == "after the flood"
    finally:
        served.close()


def check_report(mcpwire_bin, conf) -> subprocess.CompletedProcess:
    return subprocess.run(
        [mcpwire_bin, "serve", "--config", str(conf), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"MCPWIRE_LOG": "error", "PATH": os.environ.get("PATH", "")},
    )


def test_an_upstream_that_never_answers_initialize(mcpwire_bin, tmp_path):
    """Fail open (the default): served without it, `--check` says why. Fail closed: the
    gateway does not start, naming it."""
    silent = f'command = ["{sys.executable}", "{FAKE}", "stdio-silent"]\nhandshake_timeout_secs = 1\n'
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(
        '[[listen]]\nurl = "http://127.0.0.1:0/mcp"\n\n[backends.demo]\nnative = "demo"\n\n'
        f"[backends.silent]\n{silent}"
    )
    out = check_report(mcpwire_bin, conf)
    assert out.returncode != 0, out
    line = next(l for l in out.stdout.splitlines() if l.strip().startswith("silent"))
    assert "NOT STARTED" in line and "initialize" in line, out.stdout
    assert "demo_echo" in out.stdout or "echo" in out.stdout

    conf.write_text(conf.read_text() + 'fail = "closed"\n')
    out = check_report(mcpwire_bin, conf)
    assert out.returncode != 0
    assert "silent" in out.stderr and "initialize" in out.stderr, out.stderr


async def test_stdio_listener_relays_plain_calls_to_a_stdio_upstream(mcpwire_bin):
    """`mcpwire serve --listen stdio --upstream up=COMMAND` with the official client over
    stdio: plain `tools/call`s after the first go through the relay (raw frames to the
    session's own child, docs/design/gateway.md § The relay). Results, tool errors, logs,
    the upstream's sampling, elicitation and roots requests during a call, concurrent calls
    and cancellation all work as through the general path."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=mcpwire_bin,
        args=["serve", "--upstream", f"up={mcpwire_bin} demo", "--listen", "stdio"],
        env={**os.environ, "MCPWIRE_LOG": "warn"},
    )
    rec, notes = Recorder(), Notes()
    async with stdio_client(params) as (read, write):
        async with full_session(read, write, rec, notes) as s:
            await s.initialize()
            await relayed_conversation(s, rec)


async def relayed_conversation(s: ClientSession, rec: "Recorder") -> None:
    """What `test_stdio_listener_relays_plain_calls_to_a_stdio_upstream` checks, on an open
    session: results, tool errors, the upstream's sampling and elicitation requests and logs
    during a call, 32 concurrent calls, and a cancellation."""
    for i in range(5):
        r = await s.call_tool("echo", {"text": f"é \"{i}\""})
        assert text_of(r) == f"é \"{i}\""
    r = await s.call_tool("add", {"a": 1, "b": 2})
    assert r.structured_content == {"sum": 3.0}
    r = await s.call_tool("test_error_handling", {})
    assert r.is_error
    r = await s.call_tool("test_sampling", {"prompt": "hi"})
    assert SAMPLED in text_of(r)
    r = await s.call_tool("test_elicitation", {"message": "hello?"})
    assert "accept" in text_of(r)
    await s.call_tool("test_tool_with_logging", {})
    assert len(rec.logs) == 3, rec.logs

    results = {}

    async def echo(i):
        results[i] = text_of(await s.call_tool("echo", {"text": str(i)}))

    async with anyio.create_task_group() as tg:
        for i in range(32):
            tg.start_soon(echo, i)
    assert results == {i: str(i) for i in range(32)}

    with anyio.move_on_after(0.3) as scope:
        await s.call_tool("test_slow", {"seconds": 30})
    assert scope.cancelled_caught
    r = await s.call_tool("echo", {"text": "still here"})
    assert text_of(r) == "still here"


@pytest.mark.parametrize("upstream", ["stdio", "http"])
async def test_http_listener_relays_plain_calls_in_its_post_handler(
    mcpwire_bin, tmp_path, http_url, upstream
):
    """`mcpwire serve` listening on Streamable HTTP, with the official client: a session's
    plain calls are relayed by the POST handler itself (the seam, docs/design/gateway.md §
    The seam) — to a stdio child or a Streamable HTTP upstream. Calls that log or ask the
    client are handed to the session on the way; all of it works as through the general
    path. (That the seam carried them is counted in `crates/mcpwire-cli/tests/relay_seam.rs`
    and `relay_http.rs`, in process.)"""
    backend = (
        f'command = ["{mcpwire_bin}", "demo"]\nera = "handshake"\n'
        if upstream == "stdio"
        else f'url = "{http_url}"\nera = "handshake"\n'
    )
    conf = gateway_config(tmp_path, backend)
    served = Served(mcpwire_bin, conf)
    try:
        rec, notes = Recorder(), Notes()
        async with streamable_http_client(served.url) as (read, write):
            async with full_session(read, write, rec, notes, timeout=30) as s:
                await s.initialize()
                await relayed_conversation(s, rec)
    finally:
        served.close()


def backend_sessions(admin_port: int, name: str):
    import json
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/readyz", timeout=5) as r:
        body = json.loads(r.read())
    return next(b for b in body["backends"] if b["name"] == name).get("sessions")


async def test_a_session_that_never_ends_does_not_keep_its_child(mcpwire_bin, tmp_path):
    """Issue 23: a client that drops its HTTP session without `DELETE` (the TypeScript SDK's
    `close()`, the Inspector CLI) left its child for the listener's 30-minute session
    timeout. A session's child unused for `session_idle_secs` is stopped (the session's next
    call gets a new one); one in use is kept; `/readyz` and `/metrics` count them."""
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        admin = sock.getsockname()[1]
    conf = gateway_config(tmp_path, faulty_backend("session_idle_secs = 2\n"))
    conf.write_text(conf.read_text() + f'\n[admin]\nlisten = "127.0.0.1:{admin}"\n')
    served = Served(mcpwire_bin, conf)
    try:
        async with streamable_http_client(served.url, terminate_on_close=False) as (r, w):
            async with ClientSession(r, w, read_timeout_seconds=30) as s:
                await s.initialize()
                pid = await pid_of(s)
                assert backend_sessions(admin, "up") == 1
                metrics = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5).read().decode()
                assert 'mcpwire_backend_sessions{backend="up"} 1' in metrics, metrics
                # In use: kept past the idle time.
                for _ in range(8):
                    assert await pid_of(s) == pid
                    await anyio.sleep(0.4)
                # Unused (the client went away without ending its session): stopped.
                await wait_until(lambda: not process_alive(pid), seconds=15)
                assert backend_sessions(admin, "up") == 0
                # The same session's next call gets a new child.
                assert await pid_of(s) not in (pid,)
    finally:
        served.close()
