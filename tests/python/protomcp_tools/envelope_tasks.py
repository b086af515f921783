"""A tool process that speaks the protomcp Envelope protocol by hand (only the SDK's
generated `protomcp_pb2` is used) and answers calls with process-side async tasks:
`create_task`, then `task_status` answers and unsolicited pushes, `task_result`, and
`task_cancel` (envelope frames 19-23), which SDK 0.3.1's runner never sends.

Tools: `long_job(steps)` runs `steps` x 50 ms in a thread, reporting each step;
`stuck_job()` never finishes; `ask_job()` asks the client to sample while it runs as a task
and finishes with the answer; `cancelled_tasks()` lists the task ids the host cancelled.
"""

import json
import os
import socket
import struct
import threading

from protomcp import protomcp_pb2 as pb

TOOLS = [
    ("long_job", {"type": "object", "properties": {"steps": {"type": "integer"}}, "required": ["steps"]}),
    ("stuck_job", {"type": "object", "properties": {}}),
    ("ask_job", {"type": "object", "properties": {}}),
    ("cancelled_tasks", {"type": "object", "properties": {}}),
]

# The host also lists resources, templates and prompts after the handshake: there are none.
EMPTY_LISTS = {
    "list_resources_request": "resource_list_response",
    "list_resource_templates_request": "resource_template_list_response",
    "list_prompts_request": "prompt_list_response",
}

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(os.environ["PROTOMCP_SOCKET"])
send_lock = threading.Lock()
state_lock = threading.Lock()
tasks = {}  # task id -> {"state", "progress", "total", "message", "text"}
cancelled = []
answers = {}  # sampling request id -> (Event, [SamplingResponse])


def send(env: "pb.Envelope") -> None:
    body = env.SerializeToString()
    with send_lock:
        sock.sendall(struct.pack(">I", len(body)) + body)


def recv_exact(n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise SystemExit(0)
        buf += part
    return buf


def status(task_id: str, request_id: str = "") -> "pb.Envelope":
    with state_lock:
        t = dict(tasks.get(task_id) or {"state": "failed", "message": "unknown task"})
    env = pb.Envelope(request_id=request_id)
    s = env.task_status_response
    s.task_id, s.state = task_id, t["state"]
    s.progress, s.total, s.message = t.get("progress", 0), t.get("total", 0), t.get("message", "")
    return env


def run_job(task_id: str, steps: int) -> None:
    for i in range(1, steps + 1):
        threading.Event().wait(0.05)
        with state_lock:
            t = tasks[task_id]
            if t["state"] == "cancelled":
                return
            t["progress"], t["message"] = i, f"step {i} of {steps}"
            if i == steps:
                t["state"], t["text"] = "completed", f"finished {steps} steps"
        send(status(task_id))  # pushed, with no request id


def ask_job(task_id: str) -> None:
    waiter = (threading.Event(), [])
    with state_lock:
        answers["ask-" + task_id] = waiter
    env = pb.Envelope(request_id="ask-" + task_id)
    env.sampling_request.messages_json = json.dumps(
        [{"role": "user", "content": {"type": "text", "text": "summarize"}}]
    )
    env.sampling_request.max_tokens = 50
    send(env)
    waiter[0].wait(20)
    answer = waiter[1][0] if waiter[1] else None
    text = json.loads(answer.content_json)["text"] if answer and not answer.error else f"no answer: {answer}"
    with state_lock:
        tasks[task_id].update(state="completed", text="sampled: " + text)
    send(status(task_id))


def text_result(text: str) -> str:
    return json.dumps([{"type": "text", "text": text}])


def on_call(req_id: str, call) -> None:
    if call.name == "cancelled_tasks":
        env = pb.Envelope(request_id=req_id)
        with state_lock:
            env.call_result.result_json = text_result(",".join(cancelled))
        send(env)
        return
    args = json.loads(call.arguments_json or "{}")
    with state_lock:
        task_id = f"job-{len(tasks) + 1}"
        steps = int(args.get("steps", 0))
        tasks[task_id] = {"state": "running", "progress": 0, "total": steps, "message": "queued"}
    env = pb.Envelope(request_id=req_id)
    env.create_task.task_id = task_id
    send(env)
    if call.name == "long_job":
        threading.Thread(target=run_job, args=(task_id, steps), daemon=True).start()
    elif call.name == "ask_job":
        threading.Thread(target=ask_job, args=(task_id,), daemon=True).start()


def main() -> None:
    while True:
        (n,) = struct.unpack(">I", recv_exact(4))
        env = pb.Envelope()
        env.ParseFromString(recv_exact(n))
        kind = env.WhichOneof("msg")
        if kind == "list_tools":
            reply = pb.Envelope(request_id=env.request_id)
            for name, schema in TOOLS:
                t = reply.tool_list.tools.add()
                t.name, t.description = name, f"{name} (runs as a process task)"
                t.input_schema_json, t.task_support = json.dumps(schema), name != "cancelled_tasks"
            send(reply)
            done = pb.Envelope()
            done.reload_response.success = True
            send(done)
        elif kind in EMPTY_LISTS:
            reply = pb.Envelope(request_id=env.request_id)
            getattr(reply, EMPTY_LISTS[kind]).SetInParent()
            send(reply)
        elif kind == "call_tool":
            on_call(env.request_id, env.call_tool)
        elif kind == "task_status":
            send(status(env.task_status.task_id, env.request_id))
        elif kind == "task_result":
            reply = pb.Envelope(request_id=env.request_id)
            with state_lock:
                reply.call_result.result_json = text_result(tasks[env.task_result.task_id]["text"])
            send(reply)
        elif kind == "sampling_response":
            with state_lock:
                waiter = answers.pop(env.request_id, None)
            if waiter:
                waiter[1].append(env.sampling_response)
                waiter[0].set()
        elif kind == "task_cancel":
            with state_lock:
                tasks[env.task_cancel.task_id]["state"] = "cancelled"
                cancelled.append(env.task_cancel.task_id)


main()
