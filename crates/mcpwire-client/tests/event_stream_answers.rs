//! A server that answers every POST on an event stream — a priming event, the answer,
//! then the stream's end, each written apart, as rmcp and the SDKs' servers do — keeps
//! the client on one connection: the client reads each stream to its end after the
//! answer instead of dropping it (which closed the connection at every call).

use std::time::Duration;

use mcpwire_client::{Client, ClientOptions, EraChoice, Target};
use serde_json::json;

/// An HTTP/1.1 MCP server (keep-alive, no GET stream) whose `connections` tool answers
/// how many connections it has accepted; it prints its port.
const EVENT_STREAM_SERVER: &str = r#"
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

accepted = 0

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        global accepted
        accepted += 1
        super().setup()

    def log_message(self, *args):
        pass

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in msg:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"],
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": "streams", "version": "1"}}
        elif msg["method"] == "tools/call":
            result = {"content": [{"type": "text", "text": str(accepted)}]}
        else:
            result = {}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("mcp-session-id", "s1")
        self.end_headers()
        self.chunk(b"id: 0\nretry: 3000\ndata: \n\n")
        answer = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        self.chunk(b"id: 1\ndata: " + json.dumps(answer).encode() + b"\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_on_event_streams_keep_one_connection() {
    use tokio::io::AsyncBufReadExt;
    let mut server = tokio::process::Command::new("python3")
        .args(["-c", EVENT_STREAM_SERVER])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3");
    let stdout = server.stdout.take().expect("stdout");
    let mut port = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio::io::BufReader::new(stdout).read_line(&mut port),
    )
    .await
    .expect("the server started")
    .expect("its port");
    let target = Target::Url(format!("http://127.0.0.1:{}/mcp", port.trim()));
    let mut opts = ClientOptions::with_handshake_timeout(Duration::from_secs(20));
    opts.era = EraChoice::Handshake;
    let (client, _events) = Client::connect(&target, &opts).await.expect("connect");
    let mut seen = String::new();
    for _ in 0..10 {
        let result = tokio::time::timeout(
            Duration::from_secs(20),
            client.call_tool("connections", json!({}), false),
        )
        .await
        .expect("bounded")
        .expect("answered");
        seen = result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
    }
    let connections: usize = seen.parse().expect("a count");
    // Dropped at their answers, every stream took a connection of its own (11). Read to
    // their ends, they share one — or a few, when a call starts before the last stream's
    // end was read (by a task of its own) on a loaded machine.
    assert!(
        connections <= 4,
        "{connections} connections for a handshake and 10 calls"
    );
}
