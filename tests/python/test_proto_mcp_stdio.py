"""proto-mcp over stdio, driven by a client generated from the project's .proto."""

import json
import struct

import pytest

from proto_peer import StdioPeer, frame, init_request, message_classes, pack, pb


@pytest.fixture()
def peer(mcpwire_bin):
    p = StdioPeer(mcpwire_bin, "--max-message-bytes", "65536")
    yield p
    p.close()


def initialized(peer):
    m = peer.request(1, initialize_request=init_request())
    assert m.WhichOneof("payload") == "initialize_response", m
    return m.initialize_response


def tools_by_name(peer, id_=2):
    m = peer.request(id_, list_tools_request=pb.ListToolsRequest(include_schemas=True))
    return {t.name: t for t in m.list_tools_response.tools}


def call(peer, id_, name, args_msg):
    m = peer.request(id_, call_tool_request=pb.CallToolRequest(name=name, arguments=pack(args_msg)))
    assert m.WhichOneof("payload") == "call_tool_response", m
    return m.call_tool_response


def test_initialize_negotiates_and_a_major_mismatch_is_33002(peer):
    m = peer.request(7, initialize_request=init_request("2.0.0"))
    assert m.error_response.code == -33002
    assert list(m.error_response.data.fields["supported"].list_value.values)[0].string_value == "1.0.0"
    # The same stream may retry with a compatible version.
    r = peer.request(8, initialize_request=init_request("1.3.0")).initialize_response
    assert r.protocol_version == "1.0.0"
    assert r.metadata["name"]
    assert r.capabilities.HasField("tools")


def test_requests_before_initialize_are_refused(peer):
    m = peer.request(3, list_tools_request=pb.ListToolsRequest())
    assert m.error_response.code == -32003


def test_list_with_inline_schemas_and_calls_with_any_arguments(peer):
    initialized(peer)
    tools = tools_by_name(peer)
    add = tools["add"]
    assert add.WhichOneof("schema_source") == "inline_schema"
    cls = message_classes(add.inline_schema)
    Input = cls(add.metadata["input_type"])
    Output = cls(add.metadata["output_type"])
    res = call(peer, 3, "add", Input(a=2, b=3.5))
    assert res.WhichOneof("result") == "success", res
    data = res.success.content[0].data
    assert data.type_url.endswith(add.metadata["output_type"])
    out = Output()
    assert data.Unpack(out)
    assert out.sum == 5.5
    # A text tool answers text.
    echo = tools["echo"]
    EchoIn = message_classes(echo.inline_schema)(echo.metadata["input_type"])
    res = call(peer, 4, "echo", EchoIn(text="héllo"))
    assert "héllo" in res.success.content[0].text


def test_schema_violations_wrong_types_and_unknown_tools(peer):
    initialized(peer)
    tools = tools_by_name(peer)
    echo_cls = message_classes(tools["echo"].inline_schema)
    add_cls = message_classes(tools["add"].inline_schema)
    EchoIn = echo_cls(tools["echo"].metadata["input_type"])
    AddIn = add_cls(tools["add"].metadata["input_type"])
    # Required `text` missing: the JSON Schema validator refuses it.
    res = call(peer, 3, "echo", EchoIn())
    assert res.error.code == -33001, res
    assert res.error.data["tool"] == "echo"
    # Another tool's input message.
    res = call(peer, 4, "echo", AddIn(a=1, b=2))
    assert res.error.code == -33001
    # A type nobody declared: a validation failure too (-33000 is for schemas the server
    # cannot resolve, and echo's input resolved fine).
    bogus = pb.CallToolRequest(name="echo")
    bogus.arguments.type_url = "type.googleapis.com/acme.Nope"
    bogus.arguments.value = b"\x08\x01"
    m = peer.request(5, call_tool_request=bogus)
    assert m.call_tool_response.error.code == -33001
    # Bytes that are not the message.
    bad = pb.CallToolRequest(name="echo")
    bad.arguments.type_url = "type.googleapis.com/" + tools["echo"].metadata["input_type"]
    bad.arguments.value = b"\x0a\xff\xff"
    m = peer.request(6, call_tool_request=bad)
    assert m.call_tool_response.error.code == -33001
    # Unknown tool.
    m = peer.request(7, call_tool_request=pb.CallToolRequest(name="no_such_tool"))
    assert m.call_tool_response.error.code == -32602
    # A failing tool is a result with is_error.
    m = peer.request(8, call_tool_request=pb.CallToolRequest(name="test_error_handling"))
    assert m.call_tool_response.success.is_error


def test_malformed_and_oversize_frames_leave_the_stream_usable(peer):
    initialized(peer)
    # id 42 readable, then a length-delimited field that runs past the frame.
    body = bytes([0x08, 42, 0x12, 100, 1, 2])
    peer.write(struct.pack(">I", len(body)) + body)
    m = peer.recv()
    assert (m.id, m.error_response.code) == (42, -32700)
    # A frame over the 64 KiB limit, streamed in pieces: skipped, answered, stream in sync.
    peer.write(struct.pack(">I", 200_000))
    for _ in range(20):
        peer.write(b"\x00" * 10_000)
    m = peer.recv()
    assert (m.id, m.error_response.code) == (0, -32600)
    # An empty payload.
    peer.send(9)
    assert peer.recv().error_response.code == -32600
    r = peer.request(10, list_resources_request=pb.ListResourcesRequest())
    assert len(r.list_resources_response.resources) > 0


def test_pipelined_ids_are_echoed(peer):
    initialized(peer)
    tools = tools_by_name(peer)
    slow = tools["test_slow"]
    Slow = message_classes(slow.inline_schema)(slow.metadata["input_type"])
    Add = message_classes(tools["add"].inline_schema)(tools["add"].metadata["input_type"])
    peer.send(1000, call_tool_request=pb.CallToolRequest(name="test_slow", arguments=pack(Slow(seconds=0.3))))
    ids = list(range(2000, 2040)) + [2**63 + 5]
    for i in ids:
        peer.send(i, call_tool_request=pb.CallToolRequest(name="add", arguments=pack(Add(a=i % 7, b=1))))
    got = {}
    for _ in range(len(ids) + 1):
        m = peer.recv()
        got[m.id] = m
    assert set(got) == set(ids) | {1000}
    assert got[2**63 + 5].call_tool_response.HasField("success")
    # A duplicate of an id still in flight is refused without disturbing the first.
    peer.send(3000, call_tool_request=pb.CallToolRequest(name="test_slow", arguments=pack(Slow(seconds=0.3))))
    peer.send(3000, list_tools_request=pb.ListToolsRequest())
    first = peer.recv()
    assert (first.id, first.error_response.code) == (3000, -32600)
    assert peer.recv().call_tool_response.HasField("success")


def test_resources_list_and_read(peer):
    initialized(peer)
    res = peer.request(2, list_resources_request=pb.ListResourcesRequest()).list_resources_response
    uris = [r.uri for r in res.resources]
    assert "test://static-text" in uris
    r = peer.request(3, read_resource_request=pb.ReadResourceRequest(uri="test://static-text"))
    assert r.read_resource_response.contents[0].text
    r = peer.request(4, read_resource_request=pb.ReadResourceRequest(uri="test://static-binary"))
    assert r.read_resource_response.contents[0].blob
    r = peer.request(5, read_resource_request=pb.ReadResourceRequest(uri="test://nope"))
    assert r.error_response.code == -32002


def test_one_stdio_listener_detects_either_protocol(mcpwire_bin):
    """The same command serves JSON-RPC or proto-mcp, decided by the first byte."""
    json_peer = StdioPeer(mcpwire_bin)
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}
        json_peer.write(json.dumps(init).encode() + b"\n")
        assert json.loads(json_peer.read_line())["result"]["protocolVersion"] == "2025-11-25"
    finally:
        json_peer.close()
    proto_peer = StdioPeer(mcpwire_bin)
    try:
        r = proto_peer.request(1, initialize_request=init_request())
        assert r.initialize_response.protocol_version == "1.0.0"
        # Once a stream is proto-mcp, a JSON line is read as a frame: its first four bytes
        # announce a ~2 GB frame, refused as oversize (and skipped as it would stream in).
        proto_peer.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        m = proto_peer.recv()
        assert (m.id, m.error_response.code) == (0, -32600)
    finally:
        proto_peer.close()


def test_a_flood_is_answered_in_full(mcpwire_bin):
    """2000 calls written at once with 8 allowed in flight: every one is answered, either
    with its result or with the in-flight limit's −32600, and the stream stays usable."""
    p = StdioPeer(mcpwire_bin, "--max-in-flight", "8")
    try:
        initialized(p)
        tools = tools_by_name(p)
        Add = message_classes(tools["add"].inline_schema)(tools["add"].metadata["input_type"])
        args = pack(Add(a=1, b=2))
        p.write(b"".join(
            frame(pb.MCPMessage(id=10_000 + i, call_tool_request=pb.CallToolRequest(name="add", arguments=args)))
            for i in range(2000)))
        seen = set()
        for _ in range(2000):
            m = p.recv()
            r = m.call_tool_response
            assert r.HasField("success") or r.error.code == -32600, m
            seen.add(m.id)
        assert seen == set(range(10_000, 12_000))
        assert p.request(5, list_resources_request=pb.ListResourcesRequest()).HasField("list_resources_response")
    finally:
        p.close()
