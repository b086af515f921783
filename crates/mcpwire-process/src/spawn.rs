//! Starting a tool process: the runtime for its file, the socket it connects to, its
//! process group, and its output.

use std::collections::VecDeque;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use mcpwire_wire::TextLines;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncRead;
use tokio::net::{UnixListener, UnixStream};
use tokio::process::{Child, Command};
use tokio_util::codec::FramedRead;

/// Longest line of the child's stdout/stderr kept (longer ones are cut).
const MAX_LINE: usize = 8 * 1024;
/// Lines of the child's stderr kept for crash reports (all of it is also logged).
const STDERR_TAIL: usize = 64;

/// Why a process could not be started or connected.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The runtime could not be started.
    #[error("starting {program}: {source}")]
    Exec {
        /// What was run.
        program: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The socket could not be set up.
    #[error("tool process socket {path}: {source}")]
    Socket {
        /// The socket path.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The process exited before connecting.
    #[error("tool process exited ({status}) before connecting{tail}")]
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// The end of its stderr, formatted.
        tail: String,
    },
    /// The process did not connect in time.
    #[error("tool process did not connect within {0:?}")]
    Timeout(Duration),
    /// `--runtime` could not be parsed.
    #[error("invalid runtime {0:?}")]
    Runtime(String),
}

/// How to run a tool file.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The tool file.
    pub file: PathBuf,
    /// A runtime command line overriding the choice by extension (`--runtime`).
    pub runtime: Option<String>,
}

/// The program and arguments that run `launch.file`: by `--runtime`, else by extension
/// (`.py` → `$PROTOMCP_PYTHON`, else `uv run python` when `uv` is on PATH and a
/// `pyproject.toml` is above the file, else `python3`; `.ts` → `npx tsx`; `.js` →
/// `$PROTOMCP_NODE` or `node`; anything else is executed directly).
pub fn command_line(launch: &Launch) -> Result<Vec<String>, SpawnError> {
    let file = launch.file.to_string_lossy().into_owned();
    let mut argv: Vec<String> = if let Some(rt) = &launch.runtime {
        shlex::split(rt)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| SpawnError::Runtime(rt.clone()))?
    } else {
        match launch.file.extension().and_then(|e| e.to_str()) {
            Some("py") => match std::env::var("PROTOMCP_PYTHON") {
                Ok(py) if !py.is_empty() => vec![py],
                _ if on_path("uv") && pyproject_above(&launch.file) => {
                    vec!["uv".into(), "run".into(), "python".into()]
                }
                _ => vec!["python3".into()],
            },
            Some("ts") => vec!["npx".into(), "tsx".into()],
            Some("js") | Some("mjs") => match std::env::var("PROTOMCP_NODE") {
                Ok(n) if !n.is_empty() => vec![n],
                _ => vec!["node".into()],
            },
            _ => vec![],
        }
    };
    argv.push(file);
    Ok(argv)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

fn pyproject_above(file: &Path) -> bool {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    abs.ancestors()
        .skip(1)
        .any(|d| d.join("pyproject.toml").is_file())
}

/// The directory for sockets: `$XDG_RUNTIME_DIR/mcpwire`, else `<tmp>/mcpwire-<uid>`, mode 0700.
fn socket_dir() -> std::io::Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("mcpwire"),
        _ => std::env::temp_dir().join(format!("mcpwire-{}", nix::unistd::getuid())),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    Ok(dir)
}

/// A running tool process (and its process group).
pub struct ChildProc {
    child: Child,
    pgid: Option<Pid>,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl ChildProc {
    /// The end of the process's stderr, one line each.
    pub fn stderr_tail(&self) -> String {
        format_tail(&self.tail)
    }

    /// Waits for the process to exit.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Ends the process group: SIGTERM, then SIGKILL after `grace`.
    pub async fn shutdown(mut self, grace: Duration) {
        self.signal(Signal::SIGTERM);
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.signal(Signal::SIGKILL);
            let _ = self.child.wait().await;
        }
        // Grandchildren that ignored SIGTERM.
        self.signal(Signal::SIGKILL);
        self.pgid = None;
    }

    fn signal(&self, sig: Signal) {
        if let Some(pg) = self.pgid {
            let _ = killpg(pg, sig);
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

fn format_tail(tail: &Mutex<VecDeque<String>>) -> String {
    let t = tail.lock().unwrap_or_else(|p| p.into_inner());
    if t.is_empty() {
        String::new()
    } else {
        let lines: Vec<&str> = t.iter().map(String::as_str).collect();
        format!("; its stderr ended with:\n{}", lines.join("\n"))
    }
}

/// Reads `r` to its end, handing each line to `each` ([`TextLines`]: long lines cut,
/// invalid UTF-8 replaced); reading never stops early (a blocked pipe would block the child).
async fn pump_lines<R: AsyncRead + Unpin>(r: R, mut each: impl FnMut(String)) {
    let mut lines = FramedRead::new(r, TextLines::new(MAX_LINE));
    while let Some(Ok(line)) = lines.next().await {
        each(line.text);
    }
}

/// Starts the process with `PROTOMCP_SOCKET` set and waits (bounded by `timeout`, and by the
/// process exiting) for it to connect.
pub async fn spawn(
    launch: &Launch,
    name: &str,
    tag: &str,
    timeout: Duration,
) -> Result<(ChildProc, UnixStream), SpawnError> {
    let dir = socket_dir().map_err(|source| SpawnError::Socket {
        path: PathBuf::from("socket dir"),
        source,
    })?;
    static SOCKETS: AtomicU64 = AtomicU64::new(0);
    let n = SOCKETS.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{}-{n}-{tag}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|source| SpawnError::Socket {
        path: path.clone(),
        source,
    })?;
    let argv = command_line(launch)?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env("PROTOMCP_SOCKET", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| SpawnError::Exec {
        program: argv.join(" "),
        source,
    })?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(out) = child.stdout.take() {
        // Our stdout may be the MCP wire: the tool's stdout goes to the log.
        let name = name.to_owned();
        tokio::spawn(async move {
            pump_lines(out, |line| child_line(&name, "stdout", &line)).await;
        });
    }
    if let Some(err) = child.stderr.take() {
        let tail = tail.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            pump_lines(err, |line| {
                // The tool author's prints and tracebacks, each line under the backend's name.
                child_line(&name, "stderr", &line);
                let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            })
            .await;
        });
    }
    let mut proc_ = ChildProc { child, pgid, tail };
    let result = tokio::select! {
        accepted = listener.accept() => accepted
            .map(|(s, _)| s)
            .map_err(|source| SpawnError::Socket { path: path.clone(), source }),
        status = proc_.child.wait() => {
            // Let the stderr reader catch up so the report shows why.
            tokio::time::sleep(Duration::from_millis(50)).await;
            match status {
                Ok(status) => Err(SpawnError::Exited { status, tail: proc_.stderr_tail() }),
                Err(source) => Err(SpawnError::Exec { program: argv.join(" "), source }),
            }
        }
        _ = tokio::time::sleep(timeout) => Err(SpawnError::Timeout(timeout)),
    };
    let _ = std::fs::remove_file(&path);
    result.map(|s| (proc_, s))
}

/// A line the child wrote on `stream`, logged under its backend's name.
fn child_line(backend: &str, stream: &'static str, line: &str) {
    tracing::info!(target: "mcpwire::child", backend, stream, "{backend}: {line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_truncated_and_reading_goes_on() {
        let mut input = vec![b'x'; MAX_LINE * 3];
        input.extend_from_slice(b"\nsecond\nlast");
        let mut got = Vec::new();
        pump_lines(&input[..], |l| got.push(l)).await;
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].len(), MAX_LINE);
        assert_eq!(got[1], "second");
        assert_eq!(got[2], "last");
    }

    #[test]
    fn runtime_by_extension_and_override() {
        let l = |f: &str, rt: Option<&str>| Launch {
            file: PathBuf::from(f),
            runtime: rt.map(str::to_owned),
        };
        assert_eq!(
            command_line(&l("/x/tool.ts", None)).expect("ok"),
            ["npx", "tsx", "/x/tool.ts"]
        );
        assert_eq!(command_line(&l("/x/tool", None)).expect("ok"), ["/x/tool"]);
        assert_eq!(
            command_line(&l("/x/t.py", Some("python3 -X dev"))).expect("ok"),
            ["python3", "-X", "dev", "/x/t.py"]
        );
        assert!(command_line(&l("/x/t.py", Some("'unterminated"))).is_err());
    }
}
