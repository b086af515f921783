"""A FastMCP server with rich Pydantic types: the CLI tests' real peer for schemas FastMCP writes.

Its tools take and return nested models (`$defs` + `$ref`), `Optional[...]` (`anyOf` with
`null`), enums, dates and date-times, bounded lists and numbers, free-form dicts, literals and
defaults — the shapes `mcpwire tokens` and `mcpwire schema` must render without losing facts.

Run: `python fastmcp_tasks.py` (stdio) or `python fastmcp_tasks.py --http PORT`
(Streamable HTTP at http://127.0.0.1:PORT/mcp; PORT 0 picks a free one, printed on stderr).
"""

from __future__ import annotations

import datetime as dt
import enum
import sys
from typing import Any, Literal, Optional

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import BaseModel, Field

# FastMCP inlines `$ref`s unless a model is recursive: `Subtask` is, so `create_task` and the
# outputs keep Pydantic's `$defs`, while `assign` and `search_tasks` show the inlined form.
mcp = FastMCP("tasks")


class Priority(str, enum.Enum):
    low = "low"
    normal = "normal"
    urgent = "urgent"


class Person(BaseModel):
    """Someone a task can be assigned to."""

    name: str = Field(min_length=1, description="Display name.")
    email: Optional[str] = Field(default=None, description="Contact address.")


class Subtask(BaseModel):
    title: str
    done: bool = False
    children: list[Subtask] = Field(default_factory=list, description="Nested steps (recursive).")


class Task(BaseModel):
    """A unit of work."""

    title: str = Field(min_length=1, max_length=200, description="Short summary.")
    priority: Priority = Priority.normal
    due: Optional[dt.datetime] = Field(default=None, description="Deadline (RFC 3339).")
    start_on: Optional[dt.date] = None
    tags: list[str] = Field(default_factory=list, min_length=0, max_length=10)
    assignee: Optional[Person] = None
    subtasks: list[Subtask] = Field(default_factory=list)
    estimate_hours: float = Field(default=1.0, ge=0, le=1000)
    metadata: Optional[dict[str, Any]] = Field(default=None, description="Free-form fields.")


class TaskRecord(BaseModel):
    id: int
    task: Task
    created: dt.datetime
    state: Literal["open", "done"] = "open"


_TASKS: dict[int, TaskRecord] = {}


@mcp.tool
def create_task(task: Task, notify: bool | None = None) -> TaskRecord:
    """Create a task and return its record."""
    rec = TaskRecord(id=len(_TASKS) + 1, task=task, created=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    _TASKS[rec.id] = rec
    return rec


@mcp.tool
def search_tasks(
    query: str = Field(description="Words to look for in titles."),
    priority: Optional[Priority] = None,
    due_before: Optional[dt.date] = None,
    labels: list[str] = Field(default_factory=list, min_length=1, description="All of these tags."),
    limit: int = Field(default=10, ge=1, le=100),
    options: dict[str, Any] = Field(default_factory=dict),
) -> list[TaskRecord]:
    """Find tasks by words, priority and due date."""
    return [r for r in _TASKS.values() if query.lower() in r.task.title.lower()][:limit]


@mcp.tool
def assign(task_id: int, people: list[Person] = Field(min_length=1, max_length=5)) -> str:
    """Assign a task to one or more people."""
    if task_id not in _TASKS:
        raise ToolError(f"no task {task_id}")
    return f"task {task_id} assigned to {', '.join(p.name for p in people)}"


if __name__ == "__main__":
    if "--http" in sys.argv:
        import uvicorn

        port_arg = sys.argv[sys.argv.index("--http") + 1]
        app = mcp.http_app(path="/mcp")
        config = uvicorn.Config(app, host="127.0.0.1", port=int(port_arg), log_level="warning")
        server = uvicorn.Server(config)

        async def main() -> None:
            import anyio

            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve)
                while not server.started:
                    await anyio.sleep(0.01)
                port = server.servers[0].sockets[0].getsockname()[1]
                print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)

        import anyio

        anyio.run(main)
    else:
        mcp.run(show_banner=False)
