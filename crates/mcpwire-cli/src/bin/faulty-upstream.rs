//! A stdio MCP server that misbehaves on request, for the gateway's fault tests. It is
//! written on bare JSON lines (no mcpwire session or driver code, only the error table's
//! codes) so its faults are its own.
//!
//! Tools: `echo {text}` answers; `crash` exits with status 1 without answering; `hang` never
//! answers (a `notifications/cancelled` for it is ignored); `flood {count}` sends `count`
//! `notifications/message` log lines (and progress when the call has a token) before it
//! answers; `pid` answers with this process's id (to tell children apart).
//!
//! `--silent-initialize` never answers `initialize` (a server that hangs at start-up);
//! `--exit-after-initialize` exits right after answering it (a server that dies at once).

use std::io::{BufRead, Write};

use mcpwire_model::McpError;
use serde_json::{Value, json};

fn tools() -> Value {
    let object = |props: Value| json!({"type": "object", "properties": props});
    json!([
        {"name": "echo", "description": "Answers with its text.",
         "inputSchema": object(json!({"text": {"type": "string"}}))},
        {"name": "crash", "description": "Exits without answering.", "inputSchema": object(json!({}))},
        {"name": "hang", "description": "Never answers.", "inputSchema": object(json!({}))},
        {"name": "flood", "description": "Sends `count` log notifications, then answers.",
         "inputSchema": object(json!({"count": {"type": "integer"}}))},
        {"name": "pid", "description": "This process's id.", "inputSchema": object(json!({}))},
    ])
}

fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": false})
}

fn error(id: Value, err: McpError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": err.to_wire_unnegotiated()})
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let silent_initialize = args.iter().any(|a| a == "--silent-initialize");
    let exit_after_initialize = args.iter().any(|a| a == "--exit-after-initialize");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut send = |msg: Value| {
        let mut line = msg.to_string();
        line.push('\n');
        // A closed stdout means the gateway is gone: nothing left to do.
        if out
            .write_all(line.as_bytes())
            .and_then(|_| out.flush())
            .is_err()
        {
            std::process::exit(0);
        }
    };
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id").cloned(), msg["method"].as_str()) else {
            continue; // notifications and answers
        };
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        match method {
            "initialize" if silent_initialize => {}
            "initialize" => {
                let version = msg["params"]["protocolVersion"]
                    .as_str()
                    .unwrap_or("2025-06-18")
                    .to_owned();
                send(answer(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}, "logging": {}},
                    "serverInfo": {"name": "faulty-upstream", "version": "1"}
                })));
                if exit_after_initialize {
                    std::process::exit(1);
                }
            }
            "ping" => send(answer(json!({}))),
            "tools/list" => send(answer(json!({"tools": tools()}))),
            "logging/setLevel" => send(answer(json!({}))),
            "tools/call" => {
                let params = &msg["params"];
                match params["name"].as_str().unwrap_or_default() {
                    "echo" => {
                        let text = params["arguments"]["text"].as_str().unwrap_or_default();
                        send(answer(text_result(text)));
                    }
                    "crash" => std::process::exit(1),
                    "hang" => {}
                    "flood" => {
                        let count = params["arguments"]["count"].as_u64().unwrap_or(1000);
                        let token = params["_meta"]["progressToken"].clone();
                        for i in 0..count {
                            send(json!({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": format!("flood {i}")}}));
                            if !token.is_null() {
                                send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": token, "progress": i + 1, "total": count}}));
                            }
                        }
                        send(answer(text_result(format!("flooded {count}"))));
                    }
                    "pid" => send(answer(text_result(std::process::id().to_string()))),
                    other => send(error(
                        id,
                        McpError::InvalidParams(format!("unknown tool `{other}`")),
                    )),
                }
            }
            other => send(error(id, McpError::MethodNotFound(other.to_owned()))),
        }
    }
}
