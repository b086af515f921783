//! Streamable HTTP for the CLI's tests: testkit's raw client, blocking, and [`HttpServer`],
//! a client of an endpoint together with what serves it — the binary (the smoke tier), the
//! demo in-process, or someone else.

#![allow(dead_code, unused_imports)]

use std::ops::Deref;

use mcpwire_gateway::ServerOptions;
use mcpwire_server::http::HttpConfig;
pub use mcpwire_testkit::blocking::http::{ACCEPT_BOTH, Exchange, HttpClient};

use super::Demo;
use super::served::Served;

/// What serves the endpoint.
enum Server {
    Binary(Served),
    InProcess(Demo),
    Elsewhere,
}

/// A Streamable HTTP endpoint and what serves it; its client's methods (`send`, `post`,
/// `initialize`, …) and fields (`addr`, `path`) through `Deref`.
pub struct HttpServer {
    client: HttpClient,
    server: Server,
}

impl Deref for HttpServer {
    type Target = HttpClient;
    fn deref(&self) -> &HttpClient {
        &self.client
    }
}

impl HttpServer {
    /// `mcpwire demo --transport http --port 0` plus `extra` arguments (the binary).
    pub fn start(extra: &[&str]) -> HttpServer {
        HttpServer::binary(Served::spawn("http", extra, "warn", false))
    }

    /// Like [`HttpServer::start`], logging with filter `log`, kept for
    /// [`HttpServer::wait_for_log`].
    pub fn start_logging(extra: &[&str], log: &str) -> HttpServer {
        HttpServer::binary(Served::spawn("http", extra, log, true))
    }

    fn binary(served: Served) -> HttpServer {
        HttpServer {
            client: HttpClient::new(&served.addr),
            server: Server::Binary(served),
        }
    }

    /// The demo served in-process over HTTP, its server options edited by `options` and
    /// its listener's by `listener`.
    pub fn demo(
        options: impl FnOnce(&mut ServerOptions),
        listener: impl FnOnce(&mut HttpConfig),
    ) -> HttpServer {
        let demo = Demo::serve(mcpwire_testkit::serve::http_with(listener), options);
        HttpServer {
            client: demo.http(),
            server: Server::InProcess(demo),
        }
    }

    /// The endpoint at `host:port/path` (as printed after `listening on http://`), served
    /// by someone else.
    pub fn at(url: &str) -> HttpServer {
        HttpServer {
            client: HttpClient::new(url),
            server: Server::Elsewhere,
        }
    }

    /// Waits (at most 10 s) for a log line containing `needle` (a binary started logging).
    pub fn wait_for_log(&self, needle: &str) -> Option<String> {
        match &self.server {
            Server::Binary(served) => served.wait_for_log(needle),
            _ => panic!("only the binary's log is kept"),
        }
    }
}
