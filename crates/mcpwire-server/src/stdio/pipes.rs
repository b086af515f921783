//! The process's stdin/stdout as async streams: epoll-driven pipes when they are pipes
//! (no blocking thread hop per read or write), tokio's blocking-pool stdio otherwise.

use std::os::fd::AsFd;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// Boxed async reader of stdin.
pub type StdinReader = Pin<Box<dyn AsyncRead + Send>>;
/// Boxed async writer of stdout.
pub type StdoutWriter = Pin<Box<dyn AsyncWrite + Send>>;

/// Opens stdin and stdout for async use. Must run inside a tokio runtime.
pub fn stdio() -> (StdinReader, StdoutWriter) {
    let reader: StdinReader = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok())
    {
        Some(p) => Box::pin(p),
        None => Box::pin(tokio::io::stdin()),
    };
    let writer: StdoutWriter = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Sender::from_owned_fd(fd).ok())
    {
        Some(p) => Box::pin(p),
        None => Box::pin(tokio::io::stdout()),
    };
    (reader, writer)
}
