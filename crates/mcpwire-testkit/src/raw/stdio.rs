//! The stdio wire's client: JSON-RPC lines (or any bytes) written to a server's input,
//! lines (or bytes) read from its output — over an in-process server's pipe
//! ([`crate::serve::Served::stdio`]) or a child process's stdin/stdout ([`Stdio::spawn`]).

use std::process::ExitStatus;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use super::{Peer, RECV_WITHIN};

type Reader = BufReader<Box<dyn AsyncRead + Send + Unpin>>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A stdio connection: the server's input and output.
pub struct Stdio {
    reader: Reader,
    writer: Option<Writer>,
    child: Option<tokio::process::Child>,
}

impl std::fmt::Debug for Stdio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stdio")
            .field("open", &self.writer.is_some())
            .field("child", &self.child)
            .finish_non_exhaustive()
    }
}

impl Stdio {
    /// Writes to `writer` (the server's input), reads `reader` (its output).
    pub fn new(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Stdio {
        Stdio {
            reader: BufReader::new(Box::new(reader)),
            writer: Some(Box::new(writer)),
            child: None,
        }
    }

    /// Over one end of a bidirectional pipe whose other end a server serves.
    pub fn over(pipe: tokio::io::DuplexStream) -> Stdio {
        let (r, w) = tokio::io::split(pipe);
        Stdio::new(r, w)
    }

    /// Spawns `command` with its stdin and stdout piped to this client (stderr as the
    /// command says); the child is killed when this is dropped.
    pub fn spawn(command: std::process::Command) -> Stdio {
        let mut command = tokio::process::Command::from(command);
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn the stdio server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut s = Stdio::new(stdout, stdin);
        s.child = Some(child);
        s
    }

    /// The child process, when this client spawned one.
    pub fn child(&mut self) -> Option<&mut tokio::process::Child> {
        self.child.as_mut()
    }

    /// Writes `bytes` as they are.
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        let w = self.writer.as_mut().expect("the input is open");
        w.write_all(bytes).await.expect("write");
        w.flush().await.expect("flush");
    }

    /// Writes `msg` as one line.
    pub async fn send_line(&mut self, msg: &Value) {
        let mut b = serde_json::to_vec(msg).expect("JSON");
        b.push(b'\n');
        self.write_raw(&b).await;
    }

    /// The next output line (without its newline); `None` once the output ended. Panics
    /// after [`RECV_WITHIN`].
    pub async fn recv_line(&mut self) -> Option<String> {
        let mut line = String::new();
        let n = tokio::time::timeout(RECV_WITHIN, self.reader.read_line(&mut line))
            .await
            .unwrap_or_else(|_| panic!("no output line within {RECV_WITHIN:?}"))
            .expect("read");
        if n == 0 {
            return None;
        }
        if line.ends_with('\n') {
            line.pop();
        }
        Some(line)
    }

    /// The next `n` output bytes (a binary protocol's frames, proto-mcp's); panics after
    /// [`RECV_WITHIN`] or at the end of the output.
    pub async fn read_exact(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0; n];
        tokio::time::timeout(RECV_WITHIN, self.reader.read_exact(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("no {n} output bytes within {RECV_WITHIN:?}"))
            .expect("read");
        buf
    }

    /// The next output line, parsed (panics at the end of the output or on a line that
    /// is not JSON).
    pub async fn recv_json(&mut self) -> Value {
        let line = self.recv_line().await.expect("an output line");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("an output line is not JSON ({e}): {line}"))
    }

    /// Closes the server's input (its end of file).
    pub async fn close_input(&mut self) {
        if let Some(mut w) = self.writer.take() {
            let _ = w.shutdown().await;
        }
    }

    /// Reads the output to its end: every remaining line.
    pub async fn rest(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(l) = self.recv_line().await {
            lines.push(l);
        }
        lines
    }

    /// Closes the input and waits (at most [`RECV_WITHIN`]) for the child to exit; its
    /// status. Panics when this client spawned no child.
    pub async fn finish(mut self) -> ExitStatus {
        self.close_input().await;
        let mut child = self.child.take().expect("a child");
        match tokio::time::timeout(RECV_WITHIN, child.wait()).await {
            Ok(status) => status.expect("wait"),
            Err(_) => {
                let _ = child.kill().await;
                panic!("the child did not exit within {RECV_WITHIN:?} of its input closing");
            }
        }
    }
}

impl Peer for Stdio {
    fn send(&mut self, msg: Value) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.send_line(&msg).await })
    }
    fn recv(&mut self) -> BoxFuture<'_, Value> {
        Box::pin(self.recv_json())
    }
}
