"""A protomcp 0.3.1 tool file with middleware and tool-list changes made from inside tool
handlers (the SDK's two-reader race, quirk Q1, which mcpwire must survive)."""

import json

from protomcp import ToolResult, middleware, tool, tool_manager
import protomcp.runner


@middleware("guard", priority=10)
def guard(phase, tool_name, args_json, result_json, is_error):
    if phase == "before" and tool_name == "echo":
        args = json.loads(args_json or "{}")
        if args.get("text") == "forbidden":
            return {"reject": True, "reject_reason": "echo of 'forbidden' refused by guard"}
        if args.get("text", "").startswith("!"):
            args["text"] = args["text"][1:].upper()
            return {"arguments_json": json.dumps(args)}
    if phase == "after" and tool_name == "echo" and not is_error:
        result = json.loads(result_json)
        result["content"].append({"type": "text", "text": " [checked]"})
        return {"result_json": json.dumps(result)}
    return {}


@tool("Echoes text back")
def echo(text: str) -> str:
    return text


@tool("Hides echo from inside a tool handler")
def hide_echo() -> str:
    tool_manager.disable(["echo"])
    return "hidden"


@tool("Shows echo again from inside a tool handler")
def show_echo() -> str:
    tool_manager.enable(["echo"])
    return "shown"


@tool("Switches to a block list from inside a tool handler, with a batch")
def block_all_but_switches() -> ToolResult:
    tool_manager.batch(block=["echo"])
    return ToolResult(result="blocked")


if __name__ == "__main__":
    protomcp.runner.run()
