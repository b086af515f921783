"""Opens COUNT 2025-11-25 sessions on a Streamable HTTP endpoint (initialize, then
notifications/initialized) and prints their Mcp-Session-Id values, one per line, for
bench/wrk/mcp_echo.lua. Each session is opened on a connection of its own, all kept open
until every session is: a server that keeps a session on the thread of the connection that
opened it (mcpwire's listener threads) spreads them as it would spread COUNT clients.
Standard library only.

    python3 bench/wrk/sessions.py PORT COUNT
"""
import http.client
import json
import sys


def post(conn, body, session=None):
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2025-11-25",
    }
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", json.dumps(body), headers)
    resp = conn.getresponse()
    resp.read()
    if resp.status // 100 != 2:
        raise SystemExit(f"{body.get('method')}: HTTP {resp.status}")
    return resp.getheader("Mcp-Session-Id")


def main():
    port, count = int(sys.argv[1]), int(sys.argv[2])
    conns = []
    for _ in range(count):
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conns.append(conn)
        sid = post(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "wrk", "version": "1"}}})
        if not sid:
            raise SystemExit("initialize: no Mcp-Session-Id")
        post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        print(sid)
    for conn in conns:
        conn.close()


if __name__ == "__main__":
    main()
