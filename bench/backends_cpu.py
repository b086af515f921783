#!/usr/bin/env python3
"""CPU per call of an OpenAPI and a gRPC tool call through `mcpwire serve` (issue 27),
against calling the same services directly. Not part of the test run.

Starts the FastAPI shop and the grpcio inventory server of tests/python/fixtures, then
`mcpwire serve` over stdio with both as backends, and drives it with plain JSON-RPC lines
(one call in flight, so the client costs nothing in the gateway's figures). CPU is read from
/proc/PID/stat before and after N calls: the gateway's per call, and each service's per call
through the gateway and when called directly (keep-alive HTTP; a grpcio stub).

    <venv>/bin/python bench/backends_cpu.py [MCPWIRE_BINARY] [N]

The venv needs fastapi, uvicorn, grpcio, grpcio-tools, grpcio-reflection
(tests/python/requirements.txt). Default binary: target/release/mcpwire, else
target/debug/mcpwire (then the gateway's figures are a debug build's).
"""

import http.client
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "python" / "fixtures"
TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid: int) -> float:
    """User + system CPU seconds of `pid` (all its threads)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(args, needle="listening on http://"):
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if needle in line:
            return proc, line.split("listening on ", 1)[1].strip()
    raise SystemExit(f"{args[1]} did not start")


class Gateway:
    def __init__(self, binary, config):
        self.proc = subprocess.Popen([binary, "serve", "--config", str(config)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1,
                                     env=dict(os.environ, MCPWIRE_LOG="error"))
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

    def request(self, method, params):
        self.next += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}) + "\n")
        while True:
            msg = json.loads(self.proc.stdout.readline())
            if msg.get("id") == self.next:
                return msg

    def call(self, name, args):
        r = self.request("tools/call", {"name": name, "arguments": args})
        assert "result" in r and not r["result"].get("isError"), r
        return r


def measure(label, n, pids, fn):
    before = {k: cpu(p) for k, p in pids.items()}
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    wall = time.perf_counter() - t0
    used = {k: (cpu(p) - before[k]) * 1e6 / n for k, p in pids.items()}
    parts = ", ".join(f"{k} {v:.0f} µs" for k, v in used.items())
    print(f"{label:<34} wall {wall * 1e6 / n:7.0f} µs/call; CPU per call: {parts}")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    if binary is None:
        release = ROOT / "target" / "release" / "mcpwire"
        binary = str(release if release.exists() else ROOT / "target" / "debug" / "mcpwire")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    print(f"binary {binary}, {n} calls each, load {os.getloadavg()[0]:.2f}")
    shop, shop_url = start([sys.executable, str(FIXTURES / "fastapi_shop.py"), "0"])
    inv, inv_url = start([sys.executable, str(FIXTURES / "grpc_inventory.py")])
    tmp = pathlib.Path(tempfile.mkdtemp())
    config = tmp / "mcpwire.toml"
    config.write_text(f'[[listen]]\nurl = "stdio"\n[backends.shop]\nopenapi = "{shop_url}/openapi.json"\n'
                      f'[backends.inv]\ngrpc = "{inv_url}"\n')
    try:
        gw = Gateway(binary, config)
        warm = max(50, n // 20)
        for _ in range(warm):
            gw.call("shop_get_item", {"item_id": 1})
            gw.call("inv_Inventory_GetItem", {"id": 1})
        pids = {"gateway": gw.proc.pid, "service": shop.pid}
        measure("OpenAPI tool call via gateway", n, pids, lambda: gw.call("shop_get_item", {"item_id": 1}))
        host, port = shop_url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port))

        def direct_http():
            conn.request("GET", "/items/1")
            r = conn.getresponse()
            r.read()
            assert r.status == 200

        for _ in range(warm):
            direct_http()
        measure("FastAPI called directly", n, {"service": shop.pid}, direct_http)

        pids = {"gateway": gw.proc.pid, "service": inv.pid}
        measure("gRPC tool call via gateway", n, pids, lambda: gw.call("inv_Inventory_GetItem", {"id": 1}))
        sys.path.insert(0, str(FIXTURES))
        import grpc
        # The server generated its stubs at start; generate ours the same way.
        from grpc_inventory import generate
        generate(None)
        import inventory_pb2 as pb
        import inventory_pb2_grpc as pb_grpc
        stub = pb_grpc.InventoryStub(grpc.insecure_channel(inv_url.removeprefix("http://")))
        for _ in range(warm):
            stub.GetItem(pb.GetItemRequest(id=1))
        measure("grpcio server called directly", n, {"service": inv.pid},
                lambda: stub.GetItem(pb.GetItemRequest(id=1)))
        gw.proc.stdin.close()
        gw.proc.wait(timeout=10)
    finally:
        for p in (shop, inv):
            p.terminate()
            p.wait(timeout=10)


if __name__ == "__main__":
    main()
