"""Holds N idle stateful Streamable HTTP sessions open and reports the server's RSS before and
after. Usage: python3 bench/idle_sessions.py [N] [BINARY] [--config FILE]

Without `--config` it runs `BINARY demo --transport http`; with it, `BINARY serve --config FILE`
(the first `url = "http://…"` in FILE is where it connects; bench/cluster.sh uses this for a
replica with `[cluster] store = "redis://…"`)."""
import http.client, json, re, socket, subprocess, sys, time
args = sys.argv[1:]
config = None
if "--config" in args:
    i = args.index("--config")
    config = args[i + 1]
    del args[i:i + 2]
N = int(args[0]) if args else 10000
BIN = args[1] if len(args) > 1 else "target/release/mcpwire"
if config is None:
    srv = subprocess.Popen([BIN, "demo", "--transport", "http", "--port", "0",
                            "--max-sessions", str(N + 10)], stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    m = re.search(r"http://([^/]+)(/\S*)", line)
else:
    m = re.search(r'url\s*=\s*"http://([^/"]+)(/[^"]*)"', open(config).read())
    srv = subprocess.Popen([BIN, "serve", "--config", config], stderr=subprocess.DEVNULL)
host, path = m.group(1), m.group(2)
h, p = host.rsplit(":", 1)
for _ in range(200):
    try:
        socket.create_connection((h, int(p)), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)
conn = http.client.HTTPConnection(h, int(p))
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "idle", "version": "1"}}})
hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Host": host}
def status(pid):
    return {k: v for k, v in (l.split(":", 1) for l in open(f"/proc/{pid}/status")) if k in ("VmRSS", "VmHWM")}
base = status(srv.pid)
t = time.time()
ids = []
for i in range(N):
    conn.request("POST", path, body, hdrs)
    r = conn.getresponse(); r.read()
    assert r.status == 200, r.status
    sid = r.getheader("mcp-session-id")
    conn.request("POST", path, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                 dict(hdrs, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}))
    r = conn.getresponse(); r.read()
    ids.append(sid)
el = time.time() - t
time.sleep(1)
after = status(srv.pid)
print(f"sessions={N} created in {el:.1f}s; before {base}; after {after}")
srv.kill()
