//! A scripted Envelope tool process for mcpwire's fault and bounds tests.
//!
//! `envelope-test-peer MODE [ignored...]` connects to `$PROTOMCP_SOCKET` and offers one tool,
//! `echo` (`{"text": string}`). MODE decides how it misbehaves when `echo` is called:
//! `echo` (answers properly; the benchmark peer), `garbage` (a frame that is not an Envelope
//! before the answer), `oversize` (answers text `big` with a 2 MiB envelope), `no-handshake` (never
//! answers the tool list), `log-flood` (100 000 log messages before the answer), `exit`
//! (exits mid-call), `chunked` (the result as a chunked stream of about 300 KB), `raw-big` (a 2 MiB uncompressed raw result), `raw-bomb` (a zstd result
//! whose header understates its size), `slow-task` (declares task support, answers after
//! 100 ms), `async-task` (answers with `create_task` and reports through `task_status`:
//! three polls to complete; text `fail` fails, `hang` never ends, `weird` reports an unknown
//! state; `cancelled?` answers at once with the task ids it was asked to cancel),
//! `async-push` (like `async-task` but never answers `task_status`: it pushes its updates),
//! `hang` (never answers a call, keeps reading), `no-read` (stops reading at its first call),
//! `ask-flood` (answers each call after sending 20 000 sampling requests with 1 KiB prompts,
//! without reading in between).

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::net::UnixStream;

use mcpwire_process::pb::{self, Envelope, envelope::Msg};
use prost::Message;

fn read_env(r: &mut impl Read) -> std::io::Result<Envelope> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    r.read_exact(&mut body)?;
    Envelope::decode(&body[..]).map_err(std::io::Error::other)
}

fn write_env(w: &mut impl Write, msg: Msg, id: &str) -> std::io::Result<()> {
    let env = Envelope {
        msg: Some(msg),
        request_id: id.to_owned(),
        namespace: String::new(),
    };
    let body = env.encode_to_vec();
    w.write_all(&(body.len() as u32).to_be_bytes())?;
    w.write_all(&body)
}

/// Sends `data` as the `result_json` of request `id` in `stream_header` + `stream_chunk`s.
fn send_chunked(w: &mut impl Write, id: &str, data: &[u8], chunk: usize) -> std::io::Result<()> {
    let header = pb::StreamHeader {
        field_name: "result_json".into(),
        total_size: data.len() as u64,
        chunk_size: chunk as u32,
    };
    write_env(w, Msg::StreamHeader(header), id)?;
    let n = data.chunks(chunk).count();
    for (i, part) in data.chunks(chunk).enumerate() {
        let c = pb::StreamChunk {
            data: part.to_vec(),
            r#final: i + 1 == n,
        };
        write_env(w, Msg::StreamChunk(c), id)?;
    }
    Ok(())
}

fn text_result(text: &str) -> String {
    serde_json::json!([{"type": "text", "text": text}]).to_string()
}

fn main() -> std::io::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "echo".into());
    let path = std::env::var("PROTOMCP_SOCKET").map_err(std::io::Error::other)?;
    let stream = UnixStream::connect(path)?;
    let mut r = BufReader::new(stream.try_clone()?);
    let mut w = BufWriter::new(stream);
    let asynchronous = mode.starts_with("async-");
    // Process-side tasks: id → (text, status polls so far).
    let mut tasks: HashMap<String, (String, u32)> = HashMap::new();
    let mut cancelled: Vec<String> = Vec::new();
    let mut next_task = 0u32;
    loop {
        let env = read_env(&mut r)?;
        let id = env.request_id;
        match env.msg {
            Some(Msg::ListTools(_)) => {
                if mode == "no-handshake" {
                    // The misbehaviour under test (a peer that never answers), not a wait.
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
                let tool = pb::ToolDefinition {
                    name: "echo".into(),
                    description: "Echoes text".into(),
                    input_schema_json: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
                    task_support: mode == "slow-task" || asynchronous,
                    ..Default::default()
                };
                write_env(
                    &mut w,
                    Msg::ToolList(pb::ToolListResponse { tools: vec![tool] }),
                    &id,
                )?;
                let done = pb::ReloadResponse {
                    success: true,
                    error: String::new(),
                };
                write_env(&mut w, Msg::ReloadResponse(done), "")?;
            }
            Some(Msg::CallTool(c)) => {
                let text = serde_json::from_str::<serde_json::Value>(&c.arguments_json)
                    .ok()
                    .and_then(|v| v["text"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                if asynchronous && text != "cancelled?" {
                    next_task += 1;
                    let task_id = format!("t{next_task}");
                    let created = pb::CreateTaskResponse {
                        task_id: task_id.clone(),
                    };
                    write_env(&mut w, Msg::CreateTask(created), &id)?;
                    if mode == "async-push" {
                        let mut push = |state: &str, progress: i64, message: &str| {
                            let s = pb::TaskStatusResponse {
                                task_id: task_id.clone(),
                                state: state.into(),
                                progress,
                                total: 2,
                                message: message.into(),
                            };
                            write_env(&mut w, Msg::TaskStatusResponse(s), "")
                        };
                        push("running", 1, "halfway")?;
                        push("completed", 2, "done")?;
                    }
                    tasks.insert(task_id, (text, 0));
                    w.flush()?;
                    continue;
                }
                if text == "cancelled?" {
                    cancelled.sort();
                    let res = pb::CallToolResponse {
                        result_json: text_result(&cancelled.join(",")),
                        ..Default::default()
                    };
                    write_env(&mut w, Msg::CallResult(res), &id)?;
                    w.flush()?;
                    continue;
                }
                match mode.as_str() {
                    "hang" => {
                        w.flush()?;
                        continue;
                    }
                    // The misbehaviour under test (a peer that stops reading), not a wait.
                    "no-read" => std::thread::sleep(std::time::Duration::from_secs(3600)),
                    "ask-flood" => {
                        let prompt =
                            serde_json::json!([{"role": "user", "content": "p".repeat(1024)}]);
                        for i in 0..20_000 {
                            let ask = pb::SamplingRequest {
                                messages_json: prompt.to_string(),
                                max_tokens: 10,
                                ..Default::default()
                            };
                            write_env(&mut w, Msg::SamplingRequest(ask), &format!("ask{i}"))?;
                        }
                    }
                    "garbage" => {
                        w.write_all(&[0, 0, 0, 3, 0xff, 0xff, 0xff])?;
                    }
                    "oversize" if text == "big" => {
                        let res = pb::CallToolResponse {
                            result_json: text_result(&"o".repeat(2 << 20)),
                            ..Default::default()
                        };
                        write_env(&mut w, Msg::CallResult(res), &id)?;
                        w.flush()?;
                        continue;
                    }
                    "log-flood" => {
                        for i in 0..100_000 {
                            let log = pb::LogMessage {
                                level: "info".into(),
                                logger: String::new(),
                                data_json: format!("{{\"n\":{i}}}"),
                            };
                            write_env(&mut w, Msg::Log(log), "")?;
                        }
                    }
                    "exit" => std::process::exit(7),
                    // A deliberately slow tool (what makes the call a task), not a wait.
                    "slow-task" => std::thread::sleep(std::time::Duration::from_millis(100)),
                    "chunked" => {
                        let data = text_result(&format!("{text}{}", "c".repeat(300_000)));
                        send_chunked(&mut w, &id, data.as_bytes(), 65536)?;
                        w.flush()?;
                        continue;
                    }
                    "raw-big" | "raw-bomb" => {
                        let payload = text_result(&"z".repeat(2 << 20));
                        let (bytes, compression, uncompressed) = if mode == "raw-bomb" {
                            let z = zstd::bulk::compress(payload.as_bytes(), 3)?;
                            (z, "zstd", 1000)
                        } else {
                            (payload.into_bytes(), "", 0)
                        };
                        let header = pb::RawHeader {
                            request_id: id.clone(),
                            field_name: "result_json".into(),
                            size: bytes.len() as u64,
                            compression: compression.into(),
                            uncompressed_size: uncompressed,
                        };
                        write_env(&mut w, Msg::RawHeader(header), "")?;
                        w.write_all(&bytes)?;
                        w.flush()?;
                        continue;
                    }
                    _ => {}
                }
                let res = pb::CallToolResponse {
                    result_json: text_result(&text),
                    ..Default::default()
                };
                write_env(&mut w, Msg::CallResult(res), &id)?;
            }
            Some(Msg::TaskStatus(q)) if mode == "async-task" => {
                let (state, progress, message) = match tasks.get_mut(&q.task_id) {
                    Some((text, polls)) => {
                        *polls += 1;
                        match text.as_str() {
                            "fail" => ("failed", 0, "it broke".to_owned()),
                            "hang" => ("running", 0, "waiting".to_owned()),
                            "weird" => ("exploded", 0, String::new()),
                            _ if *polls < 3 => ("running", *polls, format!("step {polls}")),
                            _ => ("completed", 3, String::new()),
                        }
                    }
                    None => ("failed", 0, "unknown task".to_owned()),
                };
                let s = pb::TaskStatusResponse {
                    task_id: q.task_id,
                    state: state.into(),
                    progress: i64::from(progress),
                    total: 3,
                    message,
                };
                write_env(&mut w, Msg::TaskStatusResponse(s), &id)?;
            }
            Some(Msg::TaskResult(q)) => {
                let text = tasks.remove(&q.task_id).map(|t| t.0).unwrap_or_default();
                let res = pb::CallToolResponse {
                    result_json: text_result(&format!("task {}: {text}", q.task_id)),
                    ..Default::default()
                };
                write_env(&mut w, Msg::CallResult(res), &id)?;
            }
            Some(Msg::TaskCancel(q)) => {
                tasks.remove(&q.task_id);
                cancelled.push(q.task_id);
            }
            Some(Msg::ListResourcesRequest(_)) => {
                write_env(&mut w, Msg::ResourceListResponse(Default::default()), &id)?
            }
            Some(Msg::ListResourceTemplatesRequest(_)) => write_env(
                &mut w,
                Msg::ResourceTemplateListResponse(Default::default()),
                &id,
            )?,
            Some(Msg::ListPromptsRequest(_)) => {
                write_env(&mut w, Msg::PromptListResponse(Default::default()), &id)?
            }
            _ => {}
        }
        w.flush()?;
    }
}
