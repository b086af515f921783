//! The smallest Envelope tool process: one `echo` tool, answered as fast as a blocking
//! unix-socket loop can. `mcpwire run` hosts it in `bench/process.sh` to measure the tool-process
//! host's own overhead against mcpwire's native echo.

use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::net::UnixStream;

use mcpwire_process::pb::{self, Envelope, envelope::Msg};
use prost::Message;

fn main() -> std::io::Result<()> {
    let path = std::env::var("PROTOMCP_SOCKET").map_err(std::io::Error::other)?;
    let stream = UnixStream::connect(path)?;
    // `--spin-us=N` (or ENVELOPE_ECHO_SPIN_US=N): poll the socket this long before blocking (as
    // mcpwire's stdio driver does), to separate the peer's own wake-up latency from the host's
    // overhead.
    let spin = std::env::args()
        .find_map(|a| a.strip_prefix("--spin-us=").map(str::to_owned))
        .or_else(|| std::env::var("ENVELOPE_ECHO_SPIN_US").ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map(std::time::Duration::from_micros);
    let reader = SpinReader {
        stream: stream.try_clone()?,
        spin,
    };
    let mut r = BufReader::with_capacity(64 * 1024, reader);
    let mut w = BufWriter::with_capacity(64 * 1024, stream);
    let mut body = Vec::new();
    loop {
        let mut len = [0u8; 4];
        r.read_exact(&mut len)?;
        body.resize(u32::from_be_bytes(len) as usize, 0);
        r.read_exact(&mut body)?;
        let env = Envelope::decode(&body[..]).map_err(std::io::Error::other)?;
        let id = env.request_id;
        let reply = match env.msg {
            Some(Msg::ListTools(_)) => {
                let tool = pb::ToolDefinition {
                    name: "echo".into(),
                    description: "Echo the input text".into(),
                    input_schema_json: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
                    ..Default::default()
                };
                send(
                    &mut w,
                    Msg::ToolList(pb::ToolListResponse { tools: vec![tool] }),
                    &id,
                )?;
                let done = pb::ReloadResponse {
                    success: true,
                    error: String::new(),
                };
                Some((Msg::ReloadResponse(done), String::new()))
            }
            Some(Msg::CallTool(c)) => {
                let text = serde_json::from_str::<serde_json::Value>(&c.arguments_json)
                    .ok()
                    .and_then(|v| v["text"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                let result_json = serde_json::json!([{"type": "text", "text": text}]).to_string();
                let res = pb::CallToolResponse {
                    result_json,
                    ..Default::default()
                };
                Some((Msg::CallResult(res), id))
            }
            Some(Msg::ListResourcesRequest(_)) => {
                Some((Msg::ResourceListResponse(Default::default()), id))
            }
            Some(Msg::ListResourceTemplatesRequest(_)) => {
                Some((Msg::ResourceTemplateListResponse(Default::default()), id))
            }
            Some(Msg::ListPromptsRequest(_)) => {
                Some((Msg::PromptListResponse(Default::default()), id))
            }
            _ => None,
        };
        if let Some((msg, id)) = reply {
            send(&mut w, msg, &id)?;
        }
        // Flush only when no further request is already buffered: pipelined calls batch.
        if r.buffer().is_empty() {
            w.flush()?;
        }
    }
}

/// A socket reader that optionally polls for a while before blocking.
struct SpinReader {
    stream: UnixStream,
    spin: Option<std::time::Duration>,
}

impl Read for SpinReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(spin) = self.spin else {
            return self.stream.read(buf);
        };
        self.stream.set_nonblocking(true)?;
        let start = std::time::Instant::now();
        let got = loop {
            match self.stream.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && start.elapsed() < spin => {
                    std::hint::spin_loop();
                }
                other => break other,
            }
        };
        self.stream.set_nonblocking(false)?;
        match got {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.stream.read(buf),
            other => other,
        }
    }
}

fn send(w: &mut impl Write, msg: Msg, id: &str) -> std::io::Result<()> {
    let env = Envelope {
        msg: Some(msg),
        request_id: id.to_owned(),
        namespace: String::new(),
    };
    let body = env.encode_to_vec();
    w.write_all(&(body.len() as u32).to_be_bytes())?;
    w.write_all(&body)
}
