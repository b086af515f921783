"""Tool files written for the PyPI `protomcp` 0.3.1 SDK, unchanged, served by `mcpwire run` /
`mcpwire dev` and driven by the official Python `mcp` client."""

import os
import pathlib
import shutil
import sys
import tempfile

import anyio
import pytest

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from peers import (
    SAMPLED,
    Recorder,
    list_roots_cb,
    process_alive,
    sampling_cb,
    text_of,
    wait_until,
)

pytestmark = pytest.mark.anyio

TOOLS = pathlib.Path(__file__).resolve().parent / "protomcp_tools"
PATTERN = "0123456789abcdefghijklmnopqrstuvwxyz"


def expected_blob(n: int) -> str:
    return (PATTERN * (n // len(PATTERN) + 1))[:n]


def params(mcpwire_bin, file, *extra, mode="run", env=None) -> StdioServerParameters:
    e = {"MCPWIRE_LOG": "warn", "PROTOMCP_PYTHON": sys.executable, "PATH": os.environ.get("PATH", "")}
    e.update(env or {})
    return StdioServerParameters(command=mcpwire_bin, args=[mode, str(file), *extra], env=e)


class Notes:
    """Collects server notifications."""

    def __init__(self):
        self.seen = []

    async def handler(self, message):
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.seen.append(method)

    def count(self, method: str) -> int:
        return self.seen.count(method)


async def test_protomcp_kitchen_full_surface(mcpwire_bin, tmp_path):
    rec, notes = Recorder(), Notes()
    mark = tmp_path / "cancelled"
    p = params(mcpwire_bin, TOOLS / "kitchen.py", env={"KITCHEN_CANCEL_MARK": str(mark)})
    async with stdio_client(p) as (read, write):
        async with ClientSession(
            read,
            write,
            read_timeout_seconds=60,
            sampling_callback=sampling_cb,
            logging_callback=rec.logging,
            message_handler=notes.handler,
        ) as s:
            init = await s.initialize()
            assert init.server_info.name == "kitchen"
            assert init.capabilities.tools.list_changed

            # Schemas from type hints; hidden tools are not listed; hints and titles.
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert "admin" not in tools and {"add", "echo", "blob", "ask_model"} <= set(tools)
            add = tools["add"]
            assert add.input_schema["properties"]["a"]["type"] == "integer"
            assert set(add.input_schema["required"]) == {"a", "b"}
            assert add.annotations.read_only_hint is True and add.title == "Add"
            assert "ctx" not in tools["slow_count"].input_schema["properties"]
            # task_support=True: the router's tasks layer may run it as an MCP task.
            assert tools["slow_count"].execution.task_support == "optional"
            assert tools["add"].execution is None

            # Calls, validation, errors.
            r = await s.call_tool("add", {"a": 2, "b": 40})
            assert text_of(r) == "42" and not r.is_error
            r = await s.call_tool("add", {"a": "x", "b": 1})
            assert r.is_error  # validated by mcpwire against the SDK's schema
            r = await s.call_tool("fail", {"reason": "disk full"})
            assert r.is_error and "failed: disk full" in text_of(r) and "try again later" in text_of(r)
            err = r.meta["io.mcpwire/toolError"]
            assert err == {"code": "E_FAIL", "message": "disk full", "suggestion": "try again later", "retryable": True}
            r = await s.call_tool("explode", {})
            assert r.is_error and "kaboom" in text_of(r)
            r = await s.call_tool("weather", {"city": "Oslo"})
            assert r.structured_content == {"city": "Oslo", "temp": 21}
            with pytest.raises(MCPError, match="Unknown tool"):
                await s.call_tool("nope", {})

            # Large results travel raw (zstd) and arrive byte-exact.
            for n in (300 * 1024, 5 * 1024 * 1024):
                r = await s.call_tool("blob", {"n": n})
                assert not r.is_error
                assert text_of(r) == expected_blob(n)

            # Progress reaches the caller before the result.
            r = await s.call_tool("slow_count", {"steps": 3}, progress_callback=rec.on_progress)
            assert text_of(r) == "counted 3"
            assert [x[0] for x in rec.progress] == [1, 2, 3] and rec.progress[-1][1] == 3
            assert rec.progress[0][2] == "step 1"

            # Logging honours logging/setLevel.
            await s.set_logging_level("debug")
            await s.call_tool("chatty", {})
            await wait_until(lambda: len(rec.logs) >= 3)
            levels = [l.level for l in rec.logs]
            assert levels == ["debug", "info", "warning"]
            assert rec.logs[2].data == {"k": 1}
            await s.set_logging_level("warning")
            rec.logs.clear()
            await s.call_tool("chatty", {})
            # Logs arrive in order (debug, info, warning): once the warning is here, anything
            # below the level that was let through is here too.
            await wait_until(lambda: any(l.level == "warning" for l in rec.logs))
            assert [l.level for l in rec.logs] == ["warning"]

            # Sampling asked by the process goes to the calling client.
            r = await s.call_tool("ask_model", {"question": "hi"})
            assert SAMPLED in text_of(r) and "test-model" in text_of(r)

            # Dynamic tool lists: enable/disable from results, allow list from a handler.
            r = await s.call_tool("unlock", {})
            assert text_of(r) == "unlocked"
            names = {t.name for t in (await s.list_tools()).tools}
            assert "admin" in names
            assert text_of(await s.call_tool("admin", {})) == "admin ok"
            await wait_until(lambda: notes.count("notifications/tools/list_changed") >= 1)
            await s.call_tool("lock", {})
            assert "admin" not in {t.name for t in (await s.list_tools()).tools}
            with pytest.raises(MCPError, match="Unknown tool"):
                await s.call_tool("admin", {})
            rr = await s.read_resource("kitchen://switch")
            assert rr.contents[0].text == "allowed: add,echo"
            assert {t.name for t in (await s.list_tools()).tools} == {"add", "echo"}
            rr = await s.read_resource("kitchen://reset")
            assert "whoami" in {t.name for t in (await s.list_tools()).tools}

            # Resources, templates, prompts, completion.
            res = {str(x.uri): x for x in (await s.list_resources()).resources}
            assert res["kitchen://menu"].mime_type == "text/plain"
            rr = await s.read_resource("kitchen://menu")
            assert rr.contents[0].text == "soup, bread"
            await s.subscribe_resource("kitchen://menu")
            assert text_of(await s.call_tool("touch_menu", {})) == "touched"
            await wait_until(lambda: notes.count("notifications/resources/updated") == 1)
            tpl = (await s.list_resource_templates()).resource_templates
            assert tpl[0].uri_template == "kitchen://dish/{name}"
            rr = await s.read_resource("kitchen://dish/soup")
            assert rr.contents[0].text == "recipe for soup"
            prompts = {x.name: x for x in (await s.list_prompts()).prompts}
            assert prompts["greet"].arguments[0].required is True
            gp = await s.get_prompt("greet", {"who": "Ada"})
            assert gp.messages[0].content.text == "Hello, Ada!"
            c = await s.complete(types.PromptReference(type="ref/prompt", name="greet"), {"name": "who", "value": "al"})
            assert c.completion.values == ["alice", "albert"]

            # Cancellation reaches the process (its ctx.is_cancelled() turns true).
            with anyio.move_on_after(0.5) as scope:
                await s.call_tool("wait_for_cancel", {})
            assert scope.cancelled_caught
            await wait_until(lambda: mark.exists(), seconds=10)
            assert text_of(await s.call_tool("echo", {"text": "still here"})) == "still here"


async def test_protomcp_crash_answers_and_restarts(mcpwire_bin):
    async with stdio_client(params(mcpwire_bin, TOOLS / "kitchen.py")) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30) as s:
            await s.initialize()
            before = text_of(await s.call_tool("whoami", {}))
            r = await s.call_tool("crash", {})
            assert r.is_error and "exited" in text_of(r)
            after = text_of(await s.call_tool("whoami", {}))  # waits for the restarted process
            assert after.startswith("pid ") and after != before


async def test_protomcp_dev_hot_reload(mcpwire_bin, tmp_path):
    tool = tmp_path / "tool.py"
    shutil.copy(TOOLS / "kitchen.py", tool)
    notes = Notes()
    async with stdio_client(params(mcpwire_bin, tool, mode="dev")) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30, message_handler=notes.handler) as s:
            await s.initialize()
            first = text_of(await s.call_tool("whoami", {}))
            slow, steps = {}, Recorder()

            async def slow_call():
                r = await s.call_tool("slow_count", {"steps": 300}, progress_callback=steps.on_progress)
                slow["r"] = text_of(r)

            tg = anyio.create_task_group()
            await tg.__aenter__()
            tg.start_soon(slow_call)
            # The edit comes once the call runs in the old process (its first step reported).
            await wait_until(lambda: steps.progress)
            # An editor's rename-save: write a temporary file, rename it over the tool file.
            src = tool.read_text().replace(
                "if __name__ ==",
                '@tool("Added by an edit")\ndef fresh() -> str:\n    return "fresh"\n\n\nif __name__ ==',
            )
            fd, tmp = tempfile.mkstemp(dir=tmp_path, suffix=".swp")
            with os.fdopen(fd, "w") as f:
                f.write(src)
            os.replace(tmp, tool)

            async def has_fresh():
                return "fresh" in {t.name for t in (await s.list_tools()).tools}

            await wait_until(has_fresh, seconds=20)
            assert text_of(await s.call_tool("fresh", {})) == "fresh"
            # The call that was running in the old process finishes there.
            await tg.__aexit__(None, None, None)
            assert slow["r"] == "counted 300"
            assert notes.count("notifications/tools/list_changed") >= 1
            assert text_of(await s.call_tool("whoami", {})) != first


async def test_protomcp_file_that_cannot_start(mcpwire_bin, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import protomcp.runner\nraise SystemExit('broken on purpose')\n")
    env = {"MCPWIRE_LOG": "warn", "PROTOMCP_PYTHON": sys.executable}
    proc = await anyio.run_process([mcpwire_bin, "run", str(bad)], env=env, check=False)
    assert proc.returncode != 0
    assert b"broken on purpose" in proc.stderr


async def test_protomcp_middleware_and_tool_lists_from_handlers(mcpwire_bin):
    async with stdio_client(params(mcpwire_bin, TOOLS / "guarded.py")) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30) as s:
            await s.initialize()
            # Middleware before/after: rewrite arguments, reject, decorate results.
            r = await s.call_tool("echo", {"text": "hi"})
            assert text_of(r) == "hi [checked]"
            r = await s.call_tool("echo", {"text": "!loud"})
            assert text_of(r) == "LOUD [checked]"
            r = await s.call_tool("echo", {"text": "forbidden"})
            assert r.is_error and "refused by guard" in text_of(r)

            # tool_manager from inside tool handlers, repeatedly: the stream must stay intact.
            for _ in range(5):
                assert text_of(await s.call_tool("hide_echo", {})) == "hidden"
                assert "echo" not in {t.name for t in (await s.list_tools()).tools}
                assert text_of(await s.call_tool("show_echo", {})) == "shown"
                assert "echo" in {t.name for t in (await s.list_tools()).tools}
                assert text_of(await s.call_tool("echo", {"text": "ok"})) == "ok [checked]"
            assert text_of(await s.call_tool("block_all_but_switches", {})) == "blocked"
            names = {t.name for t in (await s.list_tools()).tools}
            assert "echo" not in names and "show_echo" in names


async def test_protomcp_call_timeout_cancels_the_tool(mcpwire_bin, tmp_path):
    mark = tmp_path / "cancelled"
    p = params(mcpwire_bin, TOOLS / "kitchen.py", "--call-timeout", "1", env={"KITCHEN_CANCEL_MARK": str(mark)})
    async with stdio_client(p) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30) as s:
            await s.initialize()
            with pytest.raises(MCPError):
                await s.call_tool("wait_for_cancel", {})
            await wait_until(lambda: mark.exists(), seconds=10)
            assert text_of(await s.call_tool("echo", {"text": "next"})) == "next"


async def test_protomcp_child_dies_with_mcpwire(mcpwire_bin):
    pid = None
    async with stdio_client(params(mcpwire_bin, TOOLS / "kitchen.py")) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30) as s:
            await s.initialize()
            pid = int(text_of(await s.call_tool("whoami", {})).split()[1])
            assert process_alive(pid)
    # The client closed mcpwire's stdin: mcpwire exits and takes the tool process with it.
    await wait_until(lambda: not process_alive(pid), seconds=10)


async def test_protomcp_over_http(mcpwire_bin):
    import subprocess
    import threading

    from mcp.client.streamable_http import streamable_http_client

    env = {"MCPWIRE_LOG": "warn", "PROTOMCP_PYTHON": sys.executable, "PATH": os.environ.get("PATH", "")}
    proc = subprocess.Popen(
        [mcpwire_bin, "run", str(TOOLS / "kitchen.py"), "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "listening on" in line, line
        url = line.split()[-1]
        threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=30, sampling_callback=sampling_cb) as s:
                await s.initialize()
                assert text_of(await s.call_tool("add", {"a": 1, "b": 2})) == "3"
                r = await s.call_tool("ask_model", {"question": "hi"})
                assert SAMPLED in text_of(r)
                r = await s.call_tool("blob", {"n": 300 * 1024})
                assert text_of(r) == expected_blob(300 * 1024)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_protomcp_stateless_client_sampling_rides_input_required(mcpwire_bin):
    from mcp import Client

    from peers import auto_client_options

    rec = Recorder()
    async with Client(params(mcpwire_bin, TOOLS / "kitchen.py"), **auto_client_options(rec)) as client:
        assert client.protocol_version == "2026-07-28"
        assert text_of(await client.call_tool("add", {"a": 5, "b": 6})) == "11"
        r = await client.call_tool("ask_model", {"question": "hi"})
        assert SAMPLED in text_of(r), text_of(r)
        r = await client.call_tool("slow_count", {"steps": 2}, progress_callback=rec.on_progress)
        assert text_of(r) == "counted 2" and len(rec.progress) == 2
        assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"


async def test_envelope_process_task_ask_rides_input_required(mcpwire_bin):
    """A process task's ask, for a stateless client, ends the call with `input_required`
    (the task is cancelled); the retried call's new task gets the client's answer."""
    from mcp import Client

    from peers import auto_client_options

    rec = Recorder()
    async with Client(params(mcpwire_bin, TOOLS / "envelope_tasks.py"), **auto_client_options(rec)) as client:
        assert client.protocol_version == "2026-07-28"
        assert text_of(await client.call_tool("ask_job", {})) == "sampled: " + SAMPLED
        assert text_of(await client.call_tool("cancelled_tasks", {})) == "job-1"


def test_our_proto_matches_the_sdk_descriptor():
    """Every message, field number, type and cardinality of our own envelope.proto equals the
    SDK's compiled descriptor (`protomcp_pb2`)."""
    import re

    import protomcp.protomcp_pb2 as sdk
    from google.protobuf.descriptor import FieldDescriptor as F

    scalar = {
        F.TYPE_STRING: "string", F.TYPE_BOOL: "bool", F.TYPE_INT64: "int64", F.TYPE_INT32: "int32",
        F.TYPE_UINT64: "uint64", F.TYPE_UINT32: "uint32", F.TYPE_BYTES: "bytes",
    }
    src = (TOOLS.parents[2] / "crates/mcpwire-process/proto/envelope.proto").read_text()
    ours = {}
    for m in re.finditer(r"message (\w+) \{", src):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            i += 1
        body = src[m.end():i]
        ours[m.group(1)] = {
            int(f.group(4)): (bool(f.group(1)), f.group(2))
            for f in re.finditer(r"(repeated )?(\w+) (\w+) = (\d+);", body)
        }
    theirs = {
        name: {f.number: (f.is_repeated, scalar.get(f.type) or f.message_type.name) for f in md.fields}
        for name, md in sdk.DESCRIPTOR.message_types_by_name.items()
    }
    assert len(theirs) == 55
    assert ours == theirs


async def test_envelope_process_tasks_progress_and_cancel(mcpwire_bin):
    """Frames 19-23: a process that answers calls with `create_task` is followed to its
    result (progress reaches the client) and a client cancel becomes `task_cancel`."""
    rec = Recorder()
    async with stdio_client(params(mcpwire_bin, TOOLS / "envelope_tasks.py")) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30, sampling_callback=sampling_cb) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert names == {"long_job", "stuck_job", "ask_job", "cancelled_tasks"}
            # An ask made while only the task runs reaches the client that called it.
            assert text_of(await s.call_tool("ask_job", {})) == "sampled: " + SAMPLED
            r = await s.call_tool("long_job", {"steps": 4}, progress_callback=rec.on_progress)
            assert text_of(r) == "finished 4 steps"
            assert rec.progress and rec.progress[-1] == (4, 4, "step 4 of 4")
            assert [p for p, _, _ in rec.progress] == sorted(p for p, _, _ in rec.progress)

            with anyio.move_on_after(0.5) as scope:
                await s.call_tool("stuck_job", {})
            assert scope.cancelled_caught

            async def cancel_arrived():
                return text_of(await s.call_tool("cancelled_tasks", {})) == "job-3"

            await wait_until(cancel_arrived, seconds=10)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_node_tool_process_runs_with_node(mcpwire_bin):
    """A `.mjs` tool file is run with `node`: a dependency-free JavaScript Envelope peer."""
    rec = Recorder()
    async with stdio_client(params(mcpwire_bin, TOOLS / "node_tools.mjs")) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30, list_roots_callback=list_roots_cb) as s:
            init = await s.initialize()
            assert init.server_info.name == "node_tools"
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert tools["divide"].input_schema["required"] == ["a", "b"]
            r = await s.call_tool("shout", {"text": "hi there"}, progress_callback=rec.on_progress)
            assert text_of(r) == "HI THERE"
            assert rec.progress == [(1, 2, "step 1"), (2, 2, "step 2")]
            assert text_of(await s.call_tool("divide", {"a": 9, "b": 3})) == "3"
            err = await s.call_tool("divide", {"a": 1, "b": 0})
            assert err.is_error and "cannot divide by zero" in text_of(err)
            assert "pass a non-zero b" in text_of(err)
            # ListRootsRequest from the process reaches the calling client.
            assert text_of(await s.call_tool("roots", {})) == "file:///tmp/a file:///tmp/b"
