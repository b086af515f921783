"""A proto-mcp client built only from the project's .proto, for the interop tests.

Stubs are generated at import time with grpcio-tools (PyPI) into a temporary directory, so the
tests check the .proto mcpwire is built from, not a copy. Tool argument classes are built from
the `inline_schema` FileDescriptorSet a server lists, as a real proto-mcp client would.
"""

import os
import select
import struct
import subprocess
import sys
import tempfile
import time

import grpc_tools
from grpc_tools import protoc
from google.protobuf import (any_pb2, descriptor_pb2, descriptor_pool, message_factory,
                             struct_pb2, wrappers_pb2)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROTO_DIR = os.path.join(ROOT, "crates", "mcpwire-wire", "proto")

_OUT = tempfile.mkdtemp(prefix="mcpwire-proto-stubs-")
_rc = protoc.main([
    "grpc_tools.protoc",
    f"-I{PROTO_DIR}",
    f"-I{os.path.join(os.path.dirname(grpc_tools.__file__), '_proto')}",
    f"--python_out={_OUT}",
    f"--grpc_python_out={_OUT}",
    "buf/mcp/v1/mcp.proto",
])
assert _rc == 0, f"protoc failed ({_rc})"
sys.path.insert(0, _OUT)

from buf.mcp.v1 import mcp_pb2 as pb  # noqa: E402
from buf.mcp.v1 import mcp_pb2_grpc as pb_grpc  # noqa: E402

_ = (struct_pb2, wrappers_pb2)  # registered in the default pool for message_classes()


def message_classes(fds):
    """name -> message class, for the messages of a FileDescriptorSet (well-known imports
    resolved from protobuf's own copies)."""
    pool = descriptor_pool.DescriptorPool()
    have = set()

    def add_google(name):
        if name in have:
            return
        src = descriptor_pool.Default().FindFileByName(name)
        for dep in src.dependencies:
            add_google(dep.name)
        fdp = descriptor_pb2.FileDescriptorProto()
        src.CopyToProto(fdp)
        pool.Add(fdp)
        have.add(name)

    for f in fds.file:
        for dep in f.dependency:
            if dep.startswith("google/protobuf/"):
                add_google(dep)
    for f in fds.file:
        pool.Add(f)
    return lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def pack(msg):
    a = any_pb2.Any()
    a.Pack(msg)
    return a


def init_request(version="1.0.0"):
    return pb.InitializeRequest(
        protocol_version=version,
        capabilities=pb.ClientCapabilities(encodings=["protobuf"]),
        metadata={"name": "proto-peer", "version": "1"},
    )


def frame(msg):
    body = msg.SerializeToString()
    return struct.pack(">I", len(body)) + body


class StdioPeer:
    """`mcpwire demo` over stdio, spoken to in [u32 BE length][MCPMessage] frames."""

    def __init__(self, binary, *args):
        self.proc = subprocess.Popen(
            [binary, "demo", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"MCPWIRE_LOG": "warn"},
        )
        self.buf = b""

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, id_, **payload):
        self.write(frame(pb.MCPMessage(id=id_, **payload)))

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        assert left > 0, "timed out waiting for mcpwire"
        r, _, _ = select.select([self.proc.stdout], [], [], left)
        if r:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            assert chunk, "mcpwire closed stdout"
            self.buf += chunk

    def _read(self, n, deadline):
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        (n,) = struct.unpack(">I", self._read(4, deadline))
        m = pb.MCPMessage()
        m.ParseFromString(self._read(n, deadline))
        return m

    def read_line(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            self._fill(deadline)
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def request(self, id_, **payload):
        self.send(id_, **payload)
        m = self.recv()
        assert m.id == id_, m
        return m

    def close(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Served:
    """`mcpwire demo --transport <ws|grpc> --port 0`, stopped on exit; `.address` is what it
    printed (ws://host:port/path or grpc://host:port)."""

    def __init__(self, binary, transport, *args):
        import threading

        self.proc = subprocess.Popen(
            [binary, "demo", "--transport", transport, "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={"MCPWIRE_LOG": "warn"},
            text=True,
        )
        line = self.proc.stderr.readline()
        assert "listening on" in line, line
        self.address = line.split()[-1]
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=10)
