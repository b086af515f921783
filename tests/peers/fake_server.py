"""A misbehaving MCP server for the CLI's failure tests (standard library only).

    fake_server.py                     a plain (minimal) MCP server over stdio
    fake_server.py stdio-banner        prints a banner on stdout, then answers like a server
    fake_server.py stdio-exit CODE     reads the first message, exits with status CODE
    fake_server.py stdio-silent        reads messages, never answers
    fake_server.py stdio-faulty        a server whose tools misbehave (for the gateway's fault
                                       tests): `echo {text}` answers; `crash` exits with status
                                       1 without answering; `hang` never answers (its
                                       cancellation is ignored); `flood {count}` sends `count`
                                       log notifications (and progress, given a token) before
                                       answering; `pid` answers with the process id
    fake_server.py http-status CODE    HTTP server answering every request with CODE
    fake_server.py http-silent         HTTP server that reads requests and never answers
    fake_server.py http-redirect-loop  HTTP server redirecting every request to itself

The HTTP modes listen on 127.0.0.1 (a free port) and print `listening on http://…/mcp` as
their first stdout line; they stop when stdin closes.
"""

import http.server
import json
import sys
import threading
import time


def serve_stdio(mode, arg):
    if mode == "stdio-banner":
        print("Fake server 1.0 starting (this line breaks the protocol)", flush=True)
    for line in sys.stdin:
        msg = json.loads(line)
        if mode == "stdio-exit":
            sys.exit(int(arg))
        if mode == "stdio-silent" or "id" not in msg:
            continue
        result = {}
        if msg.get("method") == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"},
            }
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)


FAULTY_TOOLS = [
    {"name": name, "description": text, "inputSchema": {"type": "object", "properties": props}}
    for name, text, props in [
        ("echo", "Answers with its text.", {"text": {"type": "string"}}),
        ("crash", "Exits without answering.", {}),
        ("hang", "Never answers.", {}),
        ("flood", "Sends `count` log notifications, then answers.", {"count": {"type": "integer"}}),
        ("pid", "This process's id.", {}),
    ]
]


def serve_faulty():
    import os

    def send(msg):
        print(json.dumps(msg), flush=True)

    def text(t):
        return {"content": [{"type": "text", "text": t}], "isError": False}

    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        result = None
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "faulty", "version": "1"},
            }
        elif method in ("ping", "logging/setLevel"):
            result = {}
        elif method == "tools/list":
            result = {"tools": FAULTY_TOOLS}
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "crash":
                sys.exit(1)
            if name == "hang":
                continue
            if name == "echo":
                result = text(str(args.get("text", "")))
            elif name == "pid":
                result = text(str(os.getpid()))
            elif name == "flood":
                count = int(args.get("count", 1000))
                token = (params.get("_meta") or {}).get("progressToken")
                for i in range(count):
                    send({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": f"flood {i}"}})
                    if token is not None:
                        send({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": token, "progress": i + 1, "total": count}})
                result = text(f"flooded {count}")
        if result is None:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": f"{method} {params.get('name', '')}: not found"}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": result})


def serve_http(mode, arg):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self):
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            if mode == "http-silent":
                time.sleep(3600)  # the misbehaviour under test: a server that never answers
            if mode == "http-redirect-loop":
                self.send_response(307)
                self.send_header("location", self.path)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            body = f"fake status {arg}".encode()
            self.send_response(int(arg))
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET = do_DELETE = answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    arg = sys.argv[2] if len(sys.argv) > 2 else None
    if mode == "stdio-faulty":
        serve_faulty()
    else:
        (serve_http if mode.startswith("http") else serve_stdio)(mode, arg)
