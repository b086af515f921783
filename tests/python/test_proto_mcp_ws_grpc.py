"""proto-mcp over WebSocket (binary messages; text messages are JSON-RPC) and gRPC
(`buf.mcp.v1.MCPService`), driven by clients generated from the project's .proto."""

import json

import grpc
import pytest
from websockets.sync.client import connect

from proto_peer import Served, init_request, message_classes, pack, pb, pb_grpc


@pytest.fixture(scope="module")
def ws_url(mcpwire_bin):
    with Served(mcpwire_bin, "ws", "--max-message-bytes", "65536") as s:
        yield s.address


@pytest.fixture(scope="module")
def grpc_stub(mcpwire_bin):
    with Served(mcpwire_bin, "grpc", "--max-message-bytes", "65536") as s:
        channel = grpc.insecure_channel(s.address.removeprefix("grpc://"))
        yield pb_grpc.MCPServiceStub(channel)
        channel.close()


class WsPeer:
    def __init__(self, ws):
        self.ws = ws

    def request(self, id_, **payload):
        self.ws.send(pb.MCPMessage(id=id_, **payload).SerializeToString())
        return self.recv()

    def recv(self):
        data = self.ws.recv(timeout=10)
        assert isinstance(data, bytes), data
        m = pb.MCPMessage()
        m.ParseFromString(data)
        return m


def test_ws_binary_proto_mcp(ws_url):
    with connect(ws_url, max_size=None) as ws:
        p = WsPeer(ws)
        assert p.request(1, initialize_request=init_request("3.0.0")).error_response.code == -33002
        assert p.request(2, initialize_request=init_request()).initialize_response.protocol_version == "1.0.0"
        tools = {t.name: t for t in p.request(
            3, list_tools_request=pb.ListToolsRequest(include_schemas=True)).list_tools_response.tools}
        add = tools["add"]
        cls = message_classes(add.inline_schema)
        args = pack(cls(add.metadata["input_type"])(a=40, b=2))
        res = p.request(4, call_tool_request=pb.CallToolRequest(name="add", arguments=args)).call_tool_response
        out = cls(add.metadata["output_type"])()
        assert res.success.content[0].data.Unpack(out) and out.sum == 42
        echo = tools["echo"]
        bad = pack(message_classes(echo.inline_schema)(echo.metadata["input_type"])())
        res = p.request(5, call_tool_request=pb.CallToolRequest(name="echo", arguments=bad))
        assert res.call_tool_response.error.code == -33001
        assert p.request(6, call_tool_request=pb.CallToolRequest(name="nope")).call_tool_response.error.code == -32602
        # Malformed and oversize messages are answered; the connection stays usable.
        ws.send(bytes([0x08, 9, 0x12, 50]))
        m = p.recv()
        assert (m.id, m.error_response.code) == (9, -32700)
        ws.send(b"\x00" * 70_000)
        assert p.recv().error_response.code == -32600
        # A text message on a proto-mcp connection is refused.
        ws.send('{"jsonrpc":"2.0","id":1,"method":"ping"}')
        assert p.recv().error_response.code == -32600
        # Pipelined ids.
        for i in range(100, 120):
            ws.send(pb.MCPMessage(id=i, list_resources_request=pb.ListResourcesRequest()).SerializeToString())
        assert {p.recv().id for _ in range(20)} == set(range(100, 120))


def test_ws_text_json_rpc(ws_url):
    with connect(ws_url) as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}))
        assert json.loads(ws.recv(timeout=10))["result"]["protocolVersion"] == "2025-11-25"
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}))
        assert json.loads(ws.recv(timeout=10))["result"]["structuredContent"] == {"sum": 3.0}
        ws.send(b"\x00\x01")
        assert json.loads(ws.recv(timeout=10))["error"]["code"] == -32600


def mcp_error(e: grpc.RpcError):
    details = dict(e.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert details is not None, e
    err = pb.ErrorResponse()
    err.ParseFromString(details)
    return err


def test_grpc_unary_rpcs(grpc_stub):
    s = grpc_stub
    r = s.Initialize(init_request(), timeout=10)
    assert r.protocol_version == "1.0.0"
    with pytest.raises(grpc.RpcError) as e:
        s.Initialize(init_request("2.1.0"), timeout=10)
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert mcp_error(e.value).code == -33002
    tools = {t.name: t for t in s.ListTools(pb.ListToolsRequest(include_schemas=True), timeout=10).tools}
    add = tools["add"]
    cls = message_classes(add.inline_schema)
    res = s.CallTool(pb.CallToolRequest(
        name="add", arguments=pack(cls(add.metadata["input_type"])(a=1.5, b=1.5))), timeout=10)
    out = cls(add.metadata["output_type"])()
    assert res.success.content[0].data.Unpack(out) and out.sum == 3.0
    echo = tools["echo"]
    bad = pack(message_classes(echo.inline_schema)(echo.metadata["input_type"])())
    with pytest.raises(grpc.RpcError) as e:
        s.CallTool(pb.CallToolRequest(name="echo", arguments=bad), timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert mcp_error(e.value).code == -33001
    with pytest.raises(grpc.RpcError) as e:
        s.CallTool(pb.CallToolRequest(name="nope"), timeout=10)
    assert mcp_error(e.value).code == -32602
    assert s.CallTool(pb.CallToolRequest(name="test_error_handling"), timeout=10).success.is_error
    uris = [x.uri for x in s.ListResources(pb.ListResourcesRequest(), timeout=10).resources]
    assert "test://static-text" in uris
    assert s.ReadResource(pb.ReadResourceRequest(uri="test://static-text"), timeout=10).contents[0].text
    with pytest.raises(grpc.RpcError) as e:
        s.ReadResource(pb.ReadResourceRequest(uri="test://nope"), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert mcp_error(e.value).code == -32002


def test_grpc_deadline_is_minus_33003(grpc_stub):
    """A call outliving the client's deadline ends DEADLINE_EXCEEDED with the MCP code in the
    details (the server answers just before the deadline), and the call is dropped."""
    s = grpc_stub
    tools = {t.name: t for t in s.ListTools(pb.ListToolsRequest(include_schemas=True), timeout=10).tools}
    slow = tools["test_slow"]
    args = pack(message_classes(slow.inline_schema)(slow.metadata["input_type"])(seconds=30))
    with pytest.raises(grpc.RpcError) as e:
        s.CallTool(pb.CallToolRequest(name="test_slow", arguments=args), timeout=1.0)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert mcp_error(e.value).code == -33003
    quick = pack(message_classes(slow.inline_schema)(slow.metadata["input_type"])(seconds=0))
    assert s.CallTool(pb.CallToolRequest(name="test_slow", arguments=quick), timeout=10).success


def test_grpc_many_calls_in_flight(grpc_stub):
    futures = [grpc_stub.ListResources.future(pb.ListResourcesRequest(), timeout=10) for _ in range(50)]
    assert all(len(f.result().resources) > 0 for f in futures)


def test_grpc_oversize_message_is_refused(grpc_stub):
    big = pb.CallToolRequest(name="echo")
    big.arguments.type_url = "type.googleapis.com/x"
    big.arguments.value = b"\x00" * 100_000
    with pytest.raises(grpc.RpcError) as e:
        grpc_stub.CallTool(big, timeout=10)
    assert e.value.code() == grpc.StatusCode.OUT_OF_RANGE  # tonic's answer to an oversize message
    assert grpc_stub.ListResources(pb.ListResourcesRequest(), timeout=10).resources
