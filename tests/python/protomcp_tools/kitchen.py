"""A protomcp 0.3.1 tool file exercising every feature mcpwire hosts (run by the interop tests
through `mcpwire run` / `mcpwire dev`). Written against the PyPI SDK, unchanged by mcpwire."""

import os
import time

from protomcp import (
    PromptArg,
    PromptMessage,
    ResourceContent,
    ToolContext,
    ToolResult,
    completion,
    prompt,
    resource,
    resource_template,
    tool,
    tool_manager,
)
import protomcp.runner


@tool("Adds two integers", read_only=True, title="Add")
def add(a: int, b: int) -> str:
    return str(a + b)


@tool("Echoes text back")
def echo(text: str) -> str:
    return text


@tool("Returns a text of n bytes, deterministic (for byte-exact large results)")
def blob(n: int) -> str:
    pattern = "0123456789abcdefghijklmnopqrstuvwxyz"
    return (pattern * (n // len(pattern) + 1))[:n]


@tool("Fails with a structured error")
def fail(reason: str) -> ToolResult:
    return ToolResult(
        result=f"failed: {reason}",
        is_error=True,
        error_code="E_FAIL",
        message=reason,
        suggestion="try again later",
        retryable=True,
    )


@tool("Raises an exception")
def explode() -> str:
    raise RuntimeError("kaboom")


@tool("Returns structured content")
def weather(city: str) -> ToolResult:
    return ToolResult(result=f"sunny in {city}", structured_content={"city": city, "temp": 21})


@tool("Reports progress steps times", task_support=True)
def slow_count(steps: int, ctx: ToolContext) -> str:
    for i in range(1, steps + 1):
        ctx.report_progress(i, steps, f"step {i}")
        time.sleep(0.01)  # the work of a step: a slow tool is what is tested, not a wait
    return f"counted {steps}"


@tool("Waits until cancelled (or 30 s)")
def wait_for_cancel(ctx: ToolContext) -> str:
    start_mark = os.environ.get("KITCHEN_START_MARK")
    if start_mark:
        with open(start_mark, "w") as f:
            f.write("started")
    deadline = time.time() + 30
    while time.time() < deadline:
        if ctx.is_cancelled():
            with open(os.environ.get("KITCHEN_CANCEL_MARK", "/dev/null"), "w") as f:
                f.write("cancelled")
            return "cancelled"
        time.sleep(0.01)  # the tool's own poll of its cancellation flag (the SDK has no wait)
    return "not cancelled"


@tool("Logs at several levels")
def chatty() -> str:
    protomcp.runner.log.debug("debug line")
    protomcp.runner.log.info("info line")
    protomcp.runner.log.warning("warning line", data={"k": 1})
    return "logged"


@tool("Asks the client's model")
def ask_model(question: str, ctx: ToolContext) -> str:
    r = ctx.sample([{"role": "user", "content": question}], max_tokens=50, timeout=10)
    if "error" in r and r.get("error"):
        return "sampling error: " + r["error"]
    return f"model said: {r['content']} ({r['model']})"


@tool("Unlocks the admin tool")
def unlock() -> ToolResult:
    return ToolResult(result="unlocked", enable_tools=["admin"])


@tool("Locks the admin tool")
def lock() -> ToolResult:
    return ToolResult(result="locked", disable_tools=["admin"])


@tool("Admin only", hidden=True)
def admin() -> str:
    return "admin ok"


@tool("Exits the process mid-call")
def crash() -> str:
    os._exit(3)


@tool("Reports which process answers")
def whoami() -> str:
    return f"pid {os.getpid()} version " + os.environ.get("KITCHEN_VERSION", "1")


@tool("Tells the host the menu changed (SDK 0.3.1 has no public API for this message)")
def touch_menu() -> str:
    from protomcp import manager, protomcp_pb2 as pb

    changed = pb.ResourceChangedNotification(uri="kitchen://menu")
    manager._get_transport().send(pb.Envelope(resource_changed=changed))
    return "touched"


@resource("kitchen://menu", "Today's menu", mime_type="text/plain")
def menu(uri: str) -> str:
    return "soup, bread"


@resource_template("kitchen://dish/{name}", "A dish by name")
def dish(uri: str) -> ResourceContent:
    name = uri.rsplit("/", 1)[-1]
    return ResourceContent(uri=uri, text=f"recipe for {name}", mime_type="text/plain")


@resource("kitchen://switch", "Toggles the allow list when read")
def switch(uri: str) -> str:
    active = tool_manager.set_allowed(["add", "echo"])
    return "allowed: " + ",".join(active)


@resource("kitchen://reset", "Returns to open mode when read")
def reset(uri: str) -> str:
    active = tool_manager.set_allowed([])
    return "open: " + ",".join(active)


@prompt("Greets someone", arguments=[PromptArg(name="who", description="Whom to greet", required=True)])
def greet(who: str) -> PromptMessage:
    return PromptMessage(role="user", content=f"Hello, {who}!")


@completion("ref/prompt", "greet", "who")
def complete_who(value: str) -> list[str]:
    return [n for n in ["alice", "albert", "bob"] if n.startswith(value)]


if __name__ == "__main__":
    protomcp.runner.run()
