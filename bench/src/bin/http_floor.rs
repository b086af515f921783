//! The floor of any hyper-based HTTP gateway on this machine (issue 24): the least a process
//! between a Streamable HTTP client and a Streamable HTTP server can do per call with the
//! stack the gateway uses (tokio's multi-thread runtime, hyper's HTTP/1.1 server and client
//! connections, mimalloc). Each request is read whole, sent on a kept upstream connection
//! with its method, path, headers and body unchanged (`Host` aside), and the upstream's
//! answer read whole and returned as it came: no MCP, no sessions, ids untouched (the
//! upstream's session ids pass through, so stateful clients work).
//!
//! Not a gateway: no limits, no errors worth the name, no streams (a GET is answered 405).
//!
//! With `--echo` instead of `--upstream` it is the floor of a hyper-based HTTP *server*
//! (`bench/http_vs_rmcp_wrk.sh`, FLOOR=1): each `POST`'s body is read whole and sent back as
//! the answer (`application/json`), so a JSON-RPC request comes back carrying its own id and
//! text — no JSON read, no MCP; what the same runtime, HTTP/1.1 server and sockets cost.
//!
//!   httpload --server "floor=http_floor --listen {port} --upstream 127.0.0.1:PORT"
//!   http_floor --listen PORT --echo

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HOST, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "The floor of a hyper-based HTTP pass-through (bench yardstick)")]
struct Args {
    /// The loopback port to listen on.
    #[arg(long)]
    listen: u16,
    /// The upstream's `host:port`.
    #[arg(long, required_unless_present = "echo", conflicts_with = "echo")]
    upstream: Option<SocketAddr>,
    /// No upstream: answer each `POST` with its own body.
    #[arg(long)]
    echo: bool,
    /// Worker threads (the gateway's default on this machine: one per core).
    #[arg(long)]
    workers: Option<usize>,
}

/// The upstream: where it is and its idle connections (unbounded: a yardstick, not a
/// gateway — at most as many as there were requests at once).
struct Upstream {
    addr: SocketAddr,
    host: HeaderValue,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl Upstream {
    async fn sender(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let kept = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            std::iter::from_fn(|| idle.pop()).find(|s| s.is_ready())
        };
        if let Some(s) = kept {
            return Ok(s);
        }
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        Ok(sender)
    }

    fn put(&self, sender: SendRequest<Full<Bytes>>) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sender);
    }

    async fn forward(&self, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, String> {
        let (mut parts, body) = req.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        parts.headers.insert(HOST, self.host.clone());
        let mut sender = self.sender().await?;
        let answer = sender
            .send_request(Request::from_parts(parts, Full::new(body)))
            .await
            .map_err(|e| e.to_string())?;
        let (parts, body) = answer.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        self.put(sender);
        Ok(Response::from_parts(parts, Full::new(body)))
    }
}

/// A `POST`'s own body as its answer.
async fn echo(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, String> {
    let body = req.into_body().collect().await.map_err(|e| e.to_string())?;
    let mut answer = Response::new(Full::new(body.to_bytes()));
    answer.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(answer)
}

async fn serve(
    up: Option<Arc<Upstream>>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() == hyper::Method::GET {
        let mut no = Response::new(Full::new(Bytes::new()));
        *no.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        return Ok(no);
    }
    let answered = match up {
        Some(up) => up.forward(req).await,
        None => echo(req).await,
    };
    Ok(answered.unwrap_or_else(|e| {
        let mut bad = Response::new(Full::new(Bytes::from(e)));
        *bad.status_mut() = StatusCode::BAD_GATEWAY;
        bad
    }))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.workers {
        rt.worker_threads(n);
    }
    rt.enable_all().build()?.block_on(async move {
        let up = match args.upstream {
            Some(addr) => Some(Arc::new(Upstream {
                addr,
                host: HeaderValue::from_str(&addr.to_string())?,
                idle: Mutex::new(Vec::new()),
            })),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.listen)).await?;
        println!("listening on {}", listener.local_addr()?);
        loop {
            let (tcp, _) = listener.accept().await?;
            let _ = tcp.set_nodelay(true);
            let up = up.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| serve(up.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    })
}
