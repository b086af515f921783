"""What every Python-client interop test shares: the client's callbacks, a recorder for
notifications, and the checks run against a client that negotiated 2026-07-28."""

import time

import anyio

import mcp.types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.client.session import ClientRequestContext

SAMPLED = "This is a test response from the client"


async def sampling_cb(ctx: ClientRequestContext, p: types.CreateMessageRequestParams):
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=SAMPLED), model="test-model"
    )


async def elicitation_cb(ctx: ClientRequestContext, p: types.ElicitRequestParams):
    return types.ElicitResult(action="accept", content={"name": "Ada", "response": "yes"})


async def list_roots_cb(ctx: ClientRequestContext):
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/a", name="a"), types.Root(uri="file:///tmp/b")])


def text_of(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


class Recorder:
    def __init__(self):
        self.logs = []
        self.progress = []

    async def logging(self, p: types.LoggingMessageNotificationParams):
        self.logs.append(p)

    async def on_progress(self, progress, total, message):
        self.progress.append((progress, total, message))


def full_session(read, write, rec: "Recorder", notes: "Notes", timeout: float = 30) -> ClientSession:
    """A legacy `ClientSession` offering sampling, elicitation and roots, recording logs in
    `rec` and every notification in `notes`."""
    return ClientSession(
        read,
        write,
        read_timeout_seconds=timeout,
        sampling_callback=sampling_cb,
        elicitation_callback=elicitation_cb,
        list_roots_callback=list_roots_cb,
        logging_callback=rec.logging,
        message_handler=notes.handler,
    )


def auto_client_options(rec: "Recorder") -> dict:
    """`Client(...)` keyword arguments enabling every client feature and debug logs."""
    return dict(
        mode="auto",
        read_timeout_seconds=10,
        cache=None,
        sampling_callback=sampling_cb,
        elicitation_callback=elicitation_cb,
        list_roots_callback=list_roots_cb,
        logging_callback=rec.logging,
        log_level="debug",
    )


async def exercise_stateless_client(client, rec: "Recorder") -> None:
    """Tools, input_required round trips, progress, logs, resources, prompts, cancellation."""
    assert client.protocol_version == "2026-07-28"
    tools = (await client.list_tools()).tools
    assert any(t.name == "echo" for t in tools)
    r = await client.call_tool("echo", {"text": "stateless"})
    assert text_of(r) == "stateless"
    r = await client.call_tool("add", {"a": 1, "b": 2})
    assert r.structured_content == {"sum": 3.0}

    # Sampling, elicitation and roots ride the input_required round trips.
    r = await client.call_tool("test_sampling", {"prompt": "hi"})
    assert SAMPLED in text_of(r)
    r = await client.call_tool("test_elicitation", {"message": "hello?"})
    assert "accept" in text_of(r)
    r = await client.call_tool("test_input_required_result_multi_round", {})
    assert "Multi-round complete" in text_of(r)
    r = await client.call_tool("test_input_required_result_list_roots", {})
    assert "2 root" in text_of(r)

    r = await client.call_tool("test_tool_with_progress", {}, progress_callback=rec.on_progress)
    assert len(rec.progress) >= 3
    await client.call_tool("test_tool_with_logging", {})
    await wait_until(lambda: len(rec.logs) >= 3)

    rr = await client.read_resource("test://template/7/data")
    assert "7" in rr.contents[0].text
    gp = await client.get_prompt("test_simple_prompt", {})
    assert gp.messages

    with anyio.move_on_after(0.3) as scope:
        await client.call_tool("test_slow", {"seconds": 30})
    assert scope.cancelled_caught
    r = await client.call_tool("echo", {"text": "still here"})
    assert text_of(r) == "still here"


class Notes:
    """Collects server notifications."""

    def __init__(self):
        self.seen = []

    async def handler(self, message):
        if isinstance(getattr(message, "method", None), str):
            self.seen.append(message)

    def methods(self, method: str) -> list:
        return [m for m in self.seen if m.method == method]


POLL = 0.02
"""How often `wait_until` and `wait_until_blocking` poll (seconds)."""


async def wait_until(pred, seconds=15.0):
    """Polls `pred` (sync or async) every `POLL` until it is true; fails after `seconds`.
    What a test waits for, instead of a fixed sleep."""
    with anyio.fail_after(seconds):
        while True:
            v = pred()
            if hasattr(v, "__await__"):
                v = await v
            if v:
                return
            await anyio.sleep(POLL)


def wait_until_blocking(pred, seconds=10.0) -> bool:
    """Polls `pred` every `POLL` until it is true (True) or `seconds` passed (False): for
    fixtures outside an event loop."""
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)
    return True


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs: not when it is gone, a zombie (it has ended, its parent
    has not reaped it) or dead. The process may end while its `/proc` entry is read: the
    open or the read then fails, and it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


async def error_of(coro) -> MCPError:
    try:
        await coro
    except MCPError as e:
        return e
    raise AssertionError("expected an error")
