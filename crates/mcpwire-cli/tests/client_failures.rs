//! `mcpwire list|call` against servers that fail: every case ends with `error: …` naming
//! the program, URL or line involved, no backtrace, and the exit status of its blame
//! (2 usage, 3 connection, 4 server/tool). Durations are printed, never asserted.

mod peers;

use peers::{UrlServer, bin, fake_server, run, run_env};

#[test]
fn missing_program_is_named_once() {
    let r = run(&["list", "no-such-mcp-server --flag"]);
    r.fails(3, &["cannot start `no-such-mcp-server`", "No such file"]);
    assert_eq!(r.stderr.matches("No such file").count(), 1, "{}", r.stderr);
}

#[test]
fn an_address_without_scheme_is_not_run_as_a_command() {
    run(&["list", "127.0.0.1:8000/mcp"]).fails(
        2,
        &[
            "`127.0.0.1:8000/mcp`",
            "without its scheme",
            "http://127.0.0.1:8000/mcp",
        ],
    );
    run(&["list", "localhost:9"]).fails(2, &["http://localhost:9"]);
    run(&["list", "ws://127.0.0.1:8000/mcp"]).fails(2, &["ws:// URLs are not supported"]);
}

#[test]
fn a_banner_on_stdout_is_shown_with_its_line_number() {
    run(&["list", &fake_server("stdio-banner")]).fails(
        3,
        &[
            "fake_server.py stdio-banner` wrote a line that is not JSON-RPC",
            "(line 1)",
            "Fake server 1.0 starting",
        ],
    );
}

#[test]
fn a_server_that_exits_is_reported_with_its_status() {
    run(&["list", &fake_server("stdio-exit 3")]).fails(
        3,
        &["stdio-exit 3` exited with status 3 before answering `initialize`"],
    );
}

/// The handshake timeout ends the wait at its configured time with what was awaited.
#[test]
fn a_silent_server_times_out() {
    let r = run(&["list", "--timeout", "1", "sleep 200"]);
    r.fails(
        3,
        &[
            "no answer to `initialize` from `sleep 200` within 1 s",
            "--timeout",
        ],
    );
    run(&["list", "--timeout", "0.5", &fake_server("stdio-silent")]).fails(3, &["within 500 ms"]);
    let http = UrlServer::fake(&["http-silent"]);
    run(&["list", "--timeout", "1", &http.url]).fails(
        3,
        &[&format!(
            "no answer to `initialize` from {} within 1 s",
            http.url
        )],
    );
}

#[test]
fn http_statuses_are_reported_as_what_they_are() {
    for (code, says) in [
        ("404", "404 Not Found"),
        ("405", "405 Method Not Allowed"),
        ("500", "500 Internal Server Error"),
        ("503", "503 Service Unavailable"),
    ] {
        let s = UrlServer::fake(&["http-status", code]);
        run(&["list", &s.url]).fails(3, &[says, &s.url, &format!("fake status {code}")]);
    }
    let s = UrlServer::fake(&["http-redirect-loop"]);
    run(&["list", &s.url]).fails(3, &["307", "too many redirects", &s.url]);
}

#[test]
fn an_unreachable_url_is_named() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    run(&["list", &url]).fails(3, &[&format!("cannot connect to {url}"), "refused"]);
}

#[test]
fn args_that_are_not_an_object_are_refused_locally() {
    let demo = format!("{} demo", bin());
    run(&["call", &demo, "add", "--args", "[1, 2]"])
        .fails(2, &["--args must be a JSON object", "not an array"]);
    run(&["call", &demo, "add", "--args", "\"x\""]).fails(2, &["not a string"]);
    run(&["call", &demo, "add", "--args", "{oops"]).fails(2, &["--args is not valid JSON"]);
}

/// Issue 10, defect 8: no backtrace even with RUST_BACKTRACE=1, unless MCPWIRE_LOG=debug;
/// a server error is exit status 4, a usage error 2 (clap's too).
#[test]
fn errors_print_causes_not_backtraces() {
    let demo = format!("{} demo", bin());
    let r = run_env(&["call", &demo, "nosuch"], &[("RUST_BACKTRACE", "1")]);
    r.fails(
        4,
        &["error: the server answered `tools/call` with error -32602"],
    );
    assert!(!r.stderr.contains("backtrace"), "{}", r.stderr);
    assert!(r.stderr.lines().count() <= 3, "{}", r.stderr);

    let r = run_env(
        &["call", &demo, "nosuch"],
        &[("RUST_BACKTRACE", "1"), ("MCPWIRE_LOG", "debug")],
    );
    r.fails(4, &["error: the server answered", "Stack backtrace"]);

    // a tool whose result has isError: true
    run(&["call", &demo, "add", "--args", r#"{"a": "x", "b": 1}"#]).fails(4, &["isError"]);
    // clap's own usage errors
    run(&["call"]).fails(2, &["TARGET"]);
    run(&["list", "--timeout", "0", "x"]).fails(2, &["--timeout"]);
    // the codes are documented
    let help = run(&["--help"]);
    for line in [
        "2  usage error",
        "3  connection failure",
        "4  server or tool error",
    ] {
        assert!(help.ok().contains(line), "--help lacks {line:?}");
    }
}

/// `mcpwire run` on something that is not a protomcp tool file says what it expects.
#[test]
fn run_on_a_plain_server_says_what_it_expects() {
    let script = peers::root().join("tests/peers/fake_server.py");
    let r = run(&[
        "run",
        "--handshake-timeout",
        "5",
        script.to_str().expect("utf-8"),
        "--runtime",
        "python3",
    ]);
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("as a protomcp tool process") && r.stderr.contains("mcpwire list|call"),
        "{}",
        r.stderr
    );
}
