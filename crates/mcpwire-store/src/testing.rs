//! A throwaway `redis-server` for tests (feature `testing`): a free loopback port, a temp
//! directory, no persistence, stopped (and the directory removed) on drop. Can be stopped
//! and started again on the same port, to test outages.
//!
//! When `redis-server` is not installed, [`RedisServer::start`] returns `None` after
//! printing why — unless `CI` is set, where a missing server is a failed install step and
//! panics.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running (or stopped) test Redis.
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts one, or `None` (with a message) when `redis-server` is not installed here.
    /// Panics when it is missing under CI, or does not come up.
    pub fn start() -> Option<RedisServer> {
        let installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
                panic!(
                    "redis-server is missing under CI; the install step (scripts/test.sh) failed"
                );
            }
            eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
            return None;
        }
        for _ in 0..3 {
            let port = free_port();
            let dir =
                std::env::temp_dir().join(format!("mcpwire-redis-{}-{port}", std::process::id()));
            let mut server = RedisServer {
                port,
                dir,
                child: None,
            };
            if server.start_again().is_ok() {
                return Some(server);
            }
        }
        panic!("redis-server did not start on a free port in three tries");
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The loopback address it listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Kills the server (SIGKILL: nothing is saved, as after a crash).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: nothing was persisted), waiting
    /// until it answers `PING` (at most 10 s).
    pub fn start_again(&mut self) -> std::io::Result<()> {
        self.stop();
        std::fs::create_dir_all(&self.dir)?;
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .args(["--maxmemory", "64mb", "--loglevel", "warning"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if ping(self.addr()) {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(std::io::Error::other(format!(
                    "redis-server exited: {status}"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        Err(std::io::Error::other(
            "redis-server did not answer PING within 10 s",
        ))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// Whether a server at `addr` answers `PING` with `+PONG`.
fn ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}
