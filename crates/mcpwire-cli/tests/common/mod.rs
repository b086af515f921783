//! Shared by the CLI's tests. Two tiers:
//!
//! - the binary started as a server ([`proc`], [`served::Served`], [`listen`]): the smoke
//!   tier, for what only the binary has — flags, configuration files, exit codes, signals,
//!   logs, its stdin;
//! - `mcpwire demo`'s service served in-process ([`Demo`], [`StdioDemo`]), built as the
//!   binary builds it, for tests that only need a server to talk to.
//!
//! The clients are the testkit's (`mcpwire_testkit::blocking`, re-exported in [`http`] and
//! [`wires`]).

#![allow(dead_code, unused_imports)]

pub mod http;
pub mod served;
pub mod wires;

use std::ops::{Deref, DerefMut};
use std::process::{Command, Stdio};

use mcpwire_gateway::{
    BackendSource, BackendSpec, Gateway, GatewayConfig, ListenOptions, ListenerSpec, Natives,
    ServerOptions,
};
use mcpwire_server::{Service, Wire};
use mcpwire_testkit::blocking;
use mcpwire_testkit::serve::{Host, Served};
pub use mcpwire_testkit::spawn::{Listening, listen};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// The tool names of a `tools/list` response.
pub fn listed_names(response: &serde_json::Value) -> Vec<String> {
    response["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {response}"))
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// A directory of its own for one test's files (below the system's temporary directory,
/// named after the test and this process), removed when dropped.
pub struct TestDir(pub std::path::PathBuf);

impl TestDir {
    /// A fresh, empty directory for the test `test`.
    pub fn new(test: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!("mcpwire-test-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TestDir(dir)
    }

    /// Writes `name` (relative to the directory) and returns its path as text.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write a test file");
        path.to_string_lossy().into_owned()
    }

    /// Writes `mcpwire.toml` and returns its path.
    pub fn config(&self, text: &str) -> String {
        self.write("mcpwire.toml", text)
    }

    /// The path of `name` in the directory.
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `mcpwire ARGS` with its stdio piped to a client (logging at `warn`, stderr dropped).
pub fn proc(args: &[&str]) -> blocking::Stdio {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("MCPWIRE_LOG", "warn")
        .stderr(Stdio::null());
    blocking::Stdio::spawn(cmd)
}

/// [`proc`] with the default log filter, stderr going to the file `log`.
pub fn proc_logging(args: &[&str], log: &std::path::Path) -> blocking::Stdio {
    let mut cmd = Command::new(BIN);
    let file = std::fs::File::create(log).expect("log file");
    cmd.args(args)
        .env_remove("MCPWIRE_LOG")
        .stderr(Stdio::from(file));
    blocking::Stdio::spawn(cmd)
}

/// The service `mcpwire demo` serves, built as the binary builds it — the gateway over the
/// example server — with `edit` applied to its server options (what `--max-in-flight`,
/// `--max-message-bytes`, `--busy-poll-us` set).
pub async fn demo_service(edit: impl FnOnce(&mut ServerOptions)) -> Service {
    let mut config = GatewayConfig::new(Vec::new(), Vec::new());
    edit(&mut config.server);
    config.server.reload = false;
    let demo = BackendSource::Native {
        server: "demo".into(),
    };
    config.push_backend(BackendSpec::new("demo", demo), "demo");
    let stdio = ListenOptions {
        url: "stdio".into(),
        ..ListenOptions::default()
    };
    let listener = ListenerSpec::with_options(stdio).expect("a listener");
    config.push_listener(listener, "--transport");
    let natives = Natives::new().with("demo", mcpwire_example_everything::server);
    let gateway = Gateway::start(config, natives)
        .await
        .expect("the demo starts");
    gateway.service(0).expect("its service").clone()
}

/// `mcpwire demo`'s service served in-process on `wire`, on a runtime of its own (the
/// test drives it with blocking clients).
pub struct Demo {
    /// The listener.
    pub served: Served,
    host: Host,
}

impl Demo {
    /// Serves the demo on `wire`, its server options edited by `edit`.
    pub fn serve(wire: Wire, edit: impl FnOnce(&mut ServerOptions)) -> Demo {
        let host = Host::new();
        let service = host.block_on(demo_service(edit));
        Demo {
            served: host.serve(service, wire),
            host,
        }
    }

    /// The listener's `host:port`.
    pub fn addr(&self) -> String {
        self.served.host_port()
    }

    /// The listener's URL.
    pub fn url(&self) -> String {
        self.served.url()
    }

    /// A client of the HTTP listener.
    pub fn http(&self) -> http::HttpClient {
        self.served.http().into()
    }
}

/// `mcpwire demo`'s service on in-process stdio, and its client.
pub struct StdioDemo {
    client: blocking::Stdio,
    demo: Demo,
}

impl StdioDemo {
    /// The demo with default options.
    pub fn start() -> StdioDemo {
        StdioDemo::with(|_| {})
    }

    /// The demo with its server options edited by `edit`.
    pub fn with(edit: impl FnOnce(&mut ServerOptions)) -> StdioDemo {
        let mut demo = Demo::serve(mcpwire_testkit::serve::stdio(), edit);
        let client = blocking::Stdio::over(demo.served.take_pipe());
        StdioDemo { client, demo }
    }

    /// Closes the input and checks that the connection then ends cleanly by itself, every
    /// accepted call answered (its output read to the end first).
    pub fn finish(mut self) {
        self.client.close_input();
        self.client.rest();
        let Demo { served, host } = self.demo;
        host.block_on(served.ended())
            .expect("the connection ends cleanly");
    }
}

impl Deref for StdioDemo {
    type Target = blocking::Stdio;
    fn deref(&self) -> &blocking::Stdio {
        &self.client
    }
}

impl DerefMut for StdioDemo {
    fn deref_mut(&mut self) -> &mut blocking::Stdio {
        &mut self.client
    }
}

impl blocking::Peer for StdioDemo {
    fn send(&mut self, msg: serde_json::Value) {
        blocking::Peer::send(&mut self.client, msg);
    }
    fn recv(&mut self) -> serde_json::Value {
        blocking::Peer::recv(&mut self.client)
    }
}
