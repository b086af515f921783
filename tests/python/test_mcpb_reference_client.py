"""A client written for mcp-bridge's gateway, against `mcpwire demo --transport mcpb`.

It follows the reference code's behaviour, not mcpwire's: the frame layout and version offer
of `services/router/internal/gateway/tcp_client.go` (performHandshake), the authentication
of `services/gateway/internal/server/tcp_handler.go` (the first request is
`initialize {"token": …}`, answered `{sessionId, expiresAt}`, and every request after it is
served directly, with no MCP-level `initialize`), and the message shapes the reference
speaks: plain JSON-RPC, the auth wrapper under "message" (`pkg/wire/auth_message.go`) or
"request" (the protocol document's prose), and the router's envelope
`{id, timestamp, source, target_namespace, auth_token, mcp_payload}` whose answers it reads
as `{"mcp_payload": …}`. Requests are pipelined and answers matched by id, in any order.
"""

import json
import socket
import struct
import subprocess
import threading
import time

import pytest

TOKEN = "reference-token"
MAGIC = 0x4D435042
REQUEST, RESPONSE, CONTROL, HEALTH, ERROR, VERSION, VERSION_ACK = 1, 2, 3, 4, 5, 6, 7
SHAPES = ["plain", "message", "request", "envelope"]


class ReferenceClient:
    """A blocking MCPB client in the reference's image: 12-byte big-endian headers, JSON
    payloads, one connection."""

    def __init__(self, addr: str, shape: str, token: str = TOKEN):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.buf = b""
        self.shape = shape
        self.token = token

    def close(self):
        self.sock.close()

    def write_frame(self, kind: int, payload: bytes):
        self.sock.sendall(struct.pack(">IHHI", MAGIC, 1, kind, len(payload)) + payload)

    def read_frame(self):
        while True:
            if len(self.buf) >= 12:
                magic, version, kind, length = struct.unpack(">IHHI", self.buf[:12])
                assert magic == MAGIC, hex(magic)
                assert version == 1, version
                if len(self.buf) >= 12 + length:
                    payload = self.buf[12 : 12 + length]
                    self.buf = self.buf[12 + length :]
                    return kind, payload
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def negotiate(self):
        offer = {"min_version": 1, "max_version": 1, "preferred_version": 1, "supported_versions": [1]}
        self.write_frame(VERSION, json.dumps(offer).encode())
        kind, payload = self.read_frame()
        assert kind == VERSION_ACK, (kind, payload)
        assert json.loads(payload)["agreed_version"] == 1

    def wrap(self, msg: dict) -> dict:
        if self.shape == "plain":
            return msg
        if self.shape in ("message", "request"):
            return {"auth_token": self.token, self.shape: msg}
        namespace = "system" if msg["method"] in ("initialize", "tools/list", "tools/call", "ping") else "default"
        return {
            "id": msg.get("id"),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": "local-router",
            "target_namespace": namespace,
            "auth_token": self.token,
            "mcp_payload": msg,
        }

    def send(self, msg: dict):
        self.write_frame(REQUEST, json.dumps(self.wrap(msg)).encode())

    def receive(self) -> dict:
        """The next MCP answer (a Response frame), unwrapped as the reference reads it."""
        frame = self.read_frame()
        assert frame is not None, "connection closed"
        kind, payload = frame
        assert kind == RESPONSE, (kind, payload)
        v = json.loads(payload)
        if self.shape == "envelope":
            assert set(v) == {"mcp_payload"}, v
            return v["mcp_payload"]
        assert v.get("jsonrpc") == "2.0", v
        return v

    def call(self, id, method: str, params: dict) -> dict:
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        answer = self.receive()
        assert answer["id"] == id, answer
        return answer


@pytest.fixture(params=[False, True], ids=["token-once", "per-message-auth"])
def mcpb_addr(request, mcpwire_bin):
    args = [mcpwire_bin, "demo", "--transport", "mcpb", "--port", "0", "--mcpb-token", TOKEN]
    if request.param:
        args.append("--mcpb-per-message-auth")
    proc = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={"MCPWIRE_LOG": "warn"}, text=True,
    )
    line = proc.stderr.readline()
    while line and "listening on mcpb://" not in line:  # warnings may come first
        line = proc.stderr.readline()
    assert "listening on mcpb://" in line, line
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
    try:
        yield line.strip().rsplit("mcpb://", 1)[1], request.param
    finally:
        proc.terminate()
        proc.wait(timeout=40)


@pytest.mark.parametrize("shape", SHAPES)
def test_reference_gateway_client_flow(mcpb_addr, shape):
    addr, per_message = mcpb_addr
    if per_message and shape == "plain":
        pytest.skip("per-message authentication needs a wrapper")
    c = ReferenceClient(addr, shape)
    try:
        c.negotiate()
        auth = c.call("init-1", "initialize", {"token": TOKEN})
        assert len(auth["result"]["sessionId"]) == 32, auth
        assert auth["result"]["expiresAt"].endswith("Z"), auth

        tools = c.call("list-1", "tools/list", {})["result"]["tools"]
        assert "echo" in {t["name"] for t in tools}

        # Pipelined calls: all sent before any answer is read, answers matched by id.
        n = 32
        for i in range(n):
            c.send({"jsonrpc": "2.0", "id": f"call-{i}", "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": f"text {i}"}}})
        answers = {}
        for _ in range(n):
            a = c.receive()
            answers[a["id"]] = a
        assert set(answers) == {f"call-{i}" for i in range(n)}
        for i in range(n):
            assert answers[f"call-{i}"]["result"]["content"][0]["text"] == f"text {i}", answers[f"call-{i}"]

        # The router's keepalive: a health check with "{}" gets a health check back.
        c.write_frame(HEALTH, b"{}")
        kind, payload = c.read_frame()
        assert kind == HEALTH and json.loads(payload)["healthy"] is True, (kind, payload)
    finally:
        c.close()


def test_a_wrong_token_is_refused_and_the_connection_closed(mcpb_addr):
    addr, _ = mcpb_addr
    c = ReferenceClient(addr, "plain")
    try:
        c.negotiate()
        refused = c.call("init-1", "initialize", {"token": "not-the-token"})
        assert "error" in refused, refused
        assert c.read_frame() is None
    finally:
        c.close()


def test_the_router_envelope_authenticates_a_standard_initialize(mcpb_addr):
    """The reference router never sends params.token: its envelope's auth_token carries it,
    on an MCP initialize from the local client."""
    addr, _ = mcpb_addr
    c = ReferenceClient(addr, "envelope")
    try:
        c.negotiate()
        init = c.call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "router-client", "version": "1"}})
        assert init["result"]["protocolVersion"] == "2025-06-18", init
        assert len(init["result"]["sessionId"]) == 32, init
        c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        answer = c.call(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert answer["result"]["structuredContent"] == {"sum": 5}, answer
    finally:
        c.close()
