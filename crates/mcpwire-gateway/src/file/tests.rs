//! The configuration file's parser, case by case.

use super::*;
use crate::config::{BackendSource, FailMode, UpstreamSpec};
use crate::listen::Scheme;
use mcpwire_client::Target;
use std::time::Duration;

fn load(text: &str) -> Result<GatewayConfig, ConfigError> {
    GatewayConfig::from_toml(Path::new("conf/mcpwire.toml"), text)
}

#[test]
fn a_full_file() {
    let c = load(
        r#"
[server]
name = "gw"
prefix = "always"
call_timeout_secs = 60

[[listen]]
url = "http://127.0.0.1:0/mcp"
max_sessions = 5

[[listen]]
url = "mcpb://127.0.0.1:0"
tokens = ["t"]

[backends.zeta]
native = "demo"

[backends.tools]
process = "tools.py"
watch = true
include = ["a*"]
rename = { add = "plus" }
fail = "closed"

[backends.fs]
command = ["npx", "-y", "server fs"]

[backends.web]
url = "https://example.com/mcp"

[backends.gw]
mcpb = "127.0.0.1:9000"
"#,
    )
    .unwrap();
    assert_eq!(c.server.name, "gw");
    assert_eq!(c.server.prefix, PrefixMode::Always);
    assert_eq!(c.server.call_timeout, Some(Duration::from_secs(60)));
    let schemes: Vec<Scheme> = c.listeners.iter().map(|l| l.scheme).collect();
    assert_eq!(schemes, [Scheme::Http, Scheme::Mcpb]);
    let names: Vec<&str> = c.backends.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        ["zeta", "tools", "fs", "web", "gw"],
        "the order written"
    );
    let BackendSource::Process(p) = &c.backends[1].source else {
        panic!("a process backend")
    };
    assert_eq!(p.file, Path::new("conf/tools.py"), "relative to the file");
    assert!(p.watch);
    assert_eq!(c.backends[1].member.fail, FailMode::Closed);
    assert_eq!(c.backends[1].member.rename["add"], "plus");
    assert_eq!(
        c.backends[2].source,
        BackendSource::Upstream(UpstreamSpec::new(Target::Command {
            argv: vec!["npx".into(), "-y".into(), "server fs".into()]
        }))
    );
    assert_eq!(c.backends[4].source.kind(), "upstream");
}

#[test]
fn listeners_default_to_stdio() {
    let c = load("[backends.d]\nnative = \"demo\"\n").unwrap();
    assert_eq!(c.listeners.len(), 1);
    assert!(c.listeners[0].is_stdio());
}

#[test]
fn admin_section_names_the_admin_listener() {
    let c =
        load("[admin]\nlisten = \"127.0.0.1:9100\"\n[backends.d]\nnative = \"demo\"\n").unwrap();
    let admin = c.admin.expect("an admin listener");
    assert_eq!(admin.listen, "127.0.0.1:9100".parse().unwrap());
    assert!(
        load("[backends.d]\nnative = \"demo\"\n")
            .unwrap()
            .admin
            .is_none()
    );
    let e = refused("[admin]\nlisten = \"localhost\"\n[backends.d]\nnative = \"demo\"\n");
    assert!(
        e.starts_with("conf/mcpwire.toml:2:10: admin.listen: invalid socket address"),
        "{e}"
    );
}

#[test]
fn tls_listeners_and_upstreams() {
    let c = load(
        r#"
[[listen]]
url = "tcps://127.0.0.1:9443"
tls = { cert = "c.pem", key = "/etc/k.pem", client_ca = "ca.pem", client_auth = "optional" }

[backends.web]
url = "https://example.com/mcp"
ca = "internal.pem"
"#,
    )
    .unwrap();
    let l = &c.listeners[0];
    assert_eq!(l.url(), "mcpbs://127.0.0.1:9443");
    let tls = l.tls.as_ref().expect("tls");
    assert_eq!(tls.cert, Path::new("conf/c.pem"), "relative to the file");
    assert_eq!(tls.key, Path::new("/etc/k.pem"));
    assert_eq!(tls.client_ca.as_deref(), Some(Path::new("conf/ca.pem")));
    assert_eq!(tls.client_auth, mcpwire_server::tls::ClientAuth::Optional);
    let BackendSource::Upstream(up) = &c.backends[0].source else {
        panic!("an upstream")
    };
    assert_eq!(up.tls.ca.as_deref(), Some(Path::new("conf/internal.pem")));

    for (text, says) in [
        (
            "[[listen]]\nurl = \"http://127.0.0.1:1/mcp\"\ntls = { cert = \"c\", key = \"k\" }\n",
            "listen[0].tls: `tls` is set but `http://127.0.0.1:1/mcp` is not a TLS URL: write https://",
        ),
        (
            "[[listen]]\nurl = \"wss://127.0.0.1:1/mcp\"\ntls = { cert = \"c\", key = \"k\", client_auth = \"optional\" }\n",
            "listen[0].tls: `tls.client_auth` needs `tls.client_ca`",
        ),
        (
            "[[listen]]\nurl = \"grpcs://127.0.0.1:1\"\ntls = { cert = \"c\" }\n",
            "listen[0].tls: missing field `key`",
        ),
        (
            "[backends.w]\nurl = \"http://example.com/mcp\"\nca = \"ca.pem\"\n",
            "backends.w.ca: `ca` is for TLS upstreams",
        ),
        (
            "[backends.w]\nmcpb = \"mcpbs://gw.local:1\"\nclient_cert = \"c.pem\"\n",
            "backends.w.client_key: a client certificate needs both",
        ),
        (
            "[backends.w]\nnative = \"demo\"\nca = \"ca.pem\"\n",
            "backends.w.ca: `ca` is an option of upstream, openapi and grpc backends",
        ),
    ] {
        let e = refused(&format!("{text}[backends.d]\nnative = \"demo\"\n"));
        assert!(e.contains(says), "{says}\n{e}");
    }
}

fn refused(text: &str) -> String {
    load(text).unwrap_err().to_string()
}

#[test]
fn refusals_name_file_line_and_key() {
    let cases = [
        (
            "[backends.d]\nnative = \"demo\"\nnatve = 1\n",
            "conf/mcpwire.toml:3:1: backends.d.natve: unknown field `natve`",
        ),
        (
            "[[listen]]\nurl = \"stdio\"\n\n[[listen]]\nurl = \"http://127.0.0.1:1\"\nmax_sessions = \"many\"\n[backends.d]\nnative = \"x\"\n",
            "conf/mcpwire.toml:6:16: listen[1].max_sessions: invalid type: string \"many\"",
        ),
        (
            "[[listen]]\nurl = \"https://127.0.0.1:1/mcp\"\n[backends.d]\nnative = \"x\"\n",
            "conf/mcpwire.toml:2:7: listen[0].url: `https://127.0.0.1:1/mcp` is a TLS listener: give its certificate and key",
        ),
        (
            "[[listen]]\nurl = \"grpc://127.0.0.1:1\"\ntokens = [\"x\"]\n[backends.d]\nnative = \"x\"\n",
            "conf/mcpwire.toml:3:10: listen[0].tokens: `tokens` is an option of mcpb:// listeners, not of grpc://",
        ),
        (
            "[backends.fs]\ncommand = \"npx x\"\nruntime = \"node\"\n",
            "conf/mcpwire.toml:3:11: backends.fs.runtime: `runtime` is an option of process backends, not of command backends",
        ),
        (
            "[backends.d]\nnative = \"x\"\n[policy]\n[[policy.rules]]\neffect = \"deny\"\nbackends = [\"gh\"]\n",
            "conf/mcpwire.toml:6:12: policy.rules[0].backends: no backend is named `gh`",
        ),
        (
            "[backends.d]\nnative = \"x\"\n[policy]\n[[policy.rules]]\neffect = \"maybe\"\n",
            "conf/mcpwire.toml:5:10: policy.rules[0].effect: unknown variant `maybe`",
        ),
        (
            "[backends.fs]\ncommand = \"npx x\"\nurl = \"http://x\"\n",
            "conf/mcpwire.toml:3:7: backends.fs.url: a backend is one of",
        ),
        (
            "[backends.fs]\ninclude = [\"x\"]\n",
            "conf/mcpwire.toml:1:11: backends.fs: say what this backend is",
        ),
        (
            "[backends.\"a.b\"]\nnative = \"x\"\n",
            "conf/mcpwire.toml:1:11: backends.\"a.b\": `a.b` is not a backend name",
        ),
        (
            "[server]\nprefix = \"sometimes\"\n[backends.d]\nnative = \"x\"\n",
            "conf/mcpwire.toml:2:10: server.prefix: unknown variant `sometimes`",
        ),
        (
            "[backends.fs]\nurl = \"ws://x/mcp\"\n",
            "conf/mcpwire.toml:2:7: backends.fs.url: `ws://x/mcp` is not an http:// or https:// URL",
        ),
        (
            "[backends.fs]\nmcpb = \"nowhere\"\n",
            "conf/mcpwire.toml:2:8: backends.fs.mcpb: `nowhere` is not an MCPB address",
        ),
        (
            "[[listen]]\nurl = \"http://127.0.0.1:8000/a\"\n[[listen]]\nurl = \"mcpb://127.0.0.1:8000\"\n[backends.d]\nnative = \"x\"\n",
            "conf/mcpwire.toml:3:1: listen[1]: 127.0.0.1:8000 is already listened on by listener 1",
        ),
        ("", "conf/mcpwire.toml: nothing to serve"),
        (
            "[backends.d]\nnative = \"x\"\nrename = { a = \"b c\" }\n",
            "conf/mcpwire.toml:3:16: backends.d.rename.a: `b c` cannot be a tool or prompt name",
        ),
        ("[backends\n", "conf/mcpwire.toml:1:"),
    ];
    for (text, says) in cases {
        let e = refused(text);
        assert!(e.starts_with(says), "{text:?}\n  got: {e}\n want: {says}");
    }
}

#[test]
fn command_args_env_and_cwd() {
    let c = load(
        "[backends.mem]\ncommand = \"/opt/my server/bin\"\nargs = [\"-y\", \"a b\"]\nenv = { TOKEN = \"t\" }\ncwd = \"data\"\n",
    )
    .unwrap();
    let BackendSource::Upstream(up) = &c.backends[0].source else {
        panic!("an upstream")
    };
    assert_eq!(
        up.target,
        Target::Command {
            argv: vec!["/opt/my server/bin".into(), "-y".into(), "a b".into()]
        },
        "with args, command is the program, not split"
    );
    assert_eq!(up.env["TOKEN"], "t");
    assert_eq!(up.cwd.as_deref(), Some(Path::new("conf/data")));
    for (text, says) in [
        (
            "[backends.m]\ncommand = [\"a\", \"b\"]\nargs = [\"c\"]\n",
            "backends.m.command: with `args`, `command` is the program alone",
        ),
        (
            "[backends.m]\nurl = \"http://h/mcp\"\nenv = { A = \"1\" }\n",
            "backends.m.env: `env` is an option of command backends, not of url backends",
        ),
        (
            "[backends.m]\nnative = \"demo\"\nargs = []\n",
            "backends.m.args: `args` is an option of command backends",
        ),
        (
            "[backends.m]\ncommand = \"x\"\nenv = { \"A=B\" = \"1\" }\n",
            "backends.m.env: `A=B` cannot be an environment variable's name",
        ),
        (
            "[backends.m]\nurl = \"http://127.0.0.1:99999/mcp\"\n",
            "backends.m.url: `http://127.0.0.1:99999/mcp` is not a usable URL: port `99999` is not 1 to 65535",
        ),
    ] {
        let e = refused(text);
        assert!(e.contains(says), "{says}\n{e}");
    }
}

#[test]
fn a_search_model_is_a_directory_relative_to_the_file() {
    let c =
        load("[server]\nsearch_model = \"models/minilm\"\n\n[backends.demo]\nnative = \"demo\"\n")
            .unwrap();
    assert_eq!(
        c.server.search_model.as_deref(),
        Some(Path::new("conf/models/minilm"))
    );
}

#[test]
fn catalog_modes_of_the_server_listeners_and_views() {
    let c = load(
        r#"
[server]
catalog = "search"

[[listen]]
url = "http://127.0.0.1:0/mcp"
catalog = "full"

[views.files]
members = ["demo"]
catalog = "full"

[backends.demo]
native = "demo"
"#,
    )
    .unwrap();
    assert_eq!(c.server.catalog, CatalogMode::Search);
    assert_eq!(c.listeners[0].options.catalog, Some(CatalogMode::Full));
    assert_eq!(c.views[0].catalog, Some(CatalogMode::Full));
    assert!(c.searches());
    assert_eq!(c.server.search_model, None);
    let plain = load("[backends.demo]\nnative = \"demo\"\n").unwrap();
    assert_eq!(plain.server.catalog, CatalogMode::Full);
    assert!(!plain.searches());
    let e = load("[server]\ncatalog = \"lean\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("catalog"), "{e}");
}

#[test]
fn openapi_backends() {
    let c = load(
        "[backends.pets]\nopenapi = \"petstore.yaml\"\nbase_url = \"https://pets.example.com/v3\"\n\
         tags = [\"pet\"]\nexclude_operations = [\"delete*\"]\npaths = [\"/pet*\"]\n\
         call_timeout_secs = 5\nmax_response_bytes = 1024\nheaders = { \"X-Team\" = \"qa\" }\n",
    )
    .expect("loads");
    let BackendSource::OpenApi(o) = &c.backends[0].source else {
        panic!("{:?}", c.backends[0].source);
    };
    assert_eq!(c.backends[0].source.kind(), "openapi");
    assert!(matches!(&o.source, mcpwire_openapi::Source::File(f) if f.ends_with("petstore.yaml")));
    assert_eq!(o.call_timeout, std::time::Duration::from_secs(5));
    assert_eq!(o.max_response_bytes, 1024);
    assert_eq!(
        o.credentials.headers,
        vec![("x-team".to_owned(), "qa".to_owned())]
    );
    let pet = ["pet".to_owned()];
    let keeps = |id: &str, path: &str, tags: &[String]| {
        o.select.keeps(&mcpwire_openapi::OpInfo {
            operation_id: Some(id),
            tags,
            path,
            method: "GET",
        })
    };
    assert!(keeps("getPet", "/pet/{id}", &pet));
    assert!(!keeps("deletePet", "/pet/{id}", &pet));
    assert!(!keeps("getOrder", "/store/order", &pet));
    assert!(!keeps("getPet", "/pet/{id}", &[]));

    for (text, says) in [
        (
            "[backends.w]\nopenapi = \"a.yaml\"\nshared = true\n",
            "`shared` is an option of upstream backends",
        ),
        (
            "[backends.w]\nurl = \"http://x/mcp\"\ntags = [\"a\"]\n",
            "`tags` is an option of openapi backends",
        ),
        (
            "[backends.w]\nopenapi = \"ftp://x/a.yaml\"\n",
            "give a file or an http(s):// URL",
        ),
        (
            "[backends.w]\nopenapi = \"a.yaml\"\nbase_url = \"x.example.com\"\n",
            "backends.w.base_url",
        ),
        (
            "[backends.w]\nopenapi = \"a.yaml\"\n[backends.w.oauth]\ngrant = \"authorization_code\"\n",
            "authorization_code is per user",
        ),
    ] {
        let e = refused(&format!("{text}[backends.d]\nnative = \"demo\"\n"));
        assert!(e.contains(says), "{says}\n{e}");
    }
}

#[test]
fn the_runtime_s_worker_threads() {
    let one = load("[server]\nworkers = 1\n\n[backends.d]\nnative = \"demo\"\n").unwrap();
    assert_eq!(one.server.workers, Some(1));
    let unset = load("[backends.d]\nnative = \"demo\"\n").unwrap();
    assert_eq!(unset.server.workers, None);
    let e = refused("[server]\nworkers = 0\n\n[backends.d]\nnative = \"demo\"\n");
    assert!(e.contains("`workers` must be at least 1"), "{e}");
}

#[test]
fn the_http_listeners_threads() {
    let text = "[server]\nhttp_threads = 2\n\n[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n\n\
                [[listen]]\nurl = \"http://127.0.0.1:0/other\"\nthreads = 3\n\n\
                [backends.d]\nnative = \"demo\"\n";
    let c = load(text).unwrap();
    assert_eq!(c.server.http_threads, Some(2));
    assert_eq!(
        c.listeners[0].options.threads, None,
        "the server's default applies"
    );
    assert_eq!(c.listeners[1].options.threads, Some(3));
    let e = refused("[server]\nhttp_threads = 0\n\n[backends.d]\nnative = \"demo\"\n");
    assert!(e.contains("`http_threads` must be at least 1"), "{e}");
    let e = refused(
        "[[listen]]\nurl = \"mcpb://127.0.0.1:0\"\nthreads = 2\n\n[backends.d]\nnative = \"demo\"\n",
    );
    assert!(
        e.contains("`threads` is an option of http:// listeners"),
        "{e}"
    );
}
