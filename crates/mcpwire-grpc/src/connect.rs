//! A tonic channel to `http(s)://host:port` over the project's own TLS client settings
//! (the same `ca`, `client_cert`, `client_key` as every other client of the gateway).

use std::pin::Pin;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use mcpwire_server::tls::{self, ClientTls};
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::transport::{Channel, Endpoint, Uri};

use crate::GrpcError;

/// A byte stream to a server, plain or TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

type Connected =
    Pin<Box<dyn std::future::Future<Output = Result<TokioIo<Box<dyn Io>>, std::io::Error>> + Send>>;

/// A channel to `url` (connected lazily: the first call connects, a broken connection
/// is made again).
pub fn channel(
    url: &str,
    tls: &ClientTls,
    connect_timeout: Duration,
) -> Result<Channel, GrpcError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| GrpcError::Connect(format!("`{url}`: {e}")))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => {
            return Err(GrpcError::Connect(format!(
                "`{url}` is not an http(s):// URL"
            )));
        }
    };
    if uri.host().is_none() {
        return Err(GrpcError::Connect(format!("`{url}` has no host")));
    }
    let endpoint = Endpoint::from(uri)
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true);
    let tls = tls.clone();
    let connector = tower::service_fn(move |uri: Uri| -> Connected {
        let tls = tls.clone();
        Box::pin(async move {
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            let _ = tcp.set_nodelay(true);
            let io: Box<dyn Io> = if https {
                let s = tls::connect_with(&host, tcp, &tls, &[b"h2"])
                    .await
                    .map_err(std::io::Error::other)?;
                Box::new(s)
            } else {
                Box::new(tcp)
            };
            Ok(TokioIo::new(io))
        })
    });
    Ok(endpoint.connect_with_connector_lazy(connector))
}
