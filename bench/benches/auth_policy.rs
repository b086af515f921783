//! The per-request cost of authentication and policy (issue 13's overhead budget):
//!
//! - `auth_check`: `Authenticator::check` of one bearer credential, as every HTTP POST pays
//!   it — a JWT verified against a JWKS file's keys (RS256 / RSA-2048, ES256 / P-256,
//!   EdDSA / Ed25519; `iss`, `aud`, `exp`, `nbf` and the required scope checked) and an API
//!   key (SHA-256, constant-time comparison). `jwt_*_first` checks a token the verifier has
//!   not seen (a pool larger than the verified-token cache, cycled: every check verifies the
//!   signature); `jwt_*_again` the same token every time (a cache hit, what a client
//!   reusing its access token pays from its second request on).
//! - `policy`: `Policy::audience` (which rules are about this caller) and `Policy::admits`
//!   (the first rule covering the tool decides) for a JWT caller under a six-rule policy, as
//!   the federation does before it looks up the caller's cached catalog subset.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use jsonwebtoken::Algorithm;
use mcpwire_bench::jwt_fixture::{ISSUER, JwtFixture};
use mcpwire_federation::PolicyItem;
use mcpwire_gateway::GatewayConfig;
use mcpwire_gateway::auth::{Authenticator, Check, MAX_VERIFIED_TOKENS};

const RESOURCE: &str = "http://127.0.0.1:8000/mcp";
const API_KEY: &str = "bench-key-0123456789abcdef";

fn config(dir: &std::path::Path) -> GatewayConfig {
    let text = format!(
        r#"
[[listen]]
url = "http://127.0.0.1:0/mcp"

[backends.demo]
native = "demo"

[auth]
resource = "{RESOURCE}"
scopes = ["mcp"]

[[auth.api_keys]]
name = "ci"
key = "{API_KEY}"

[auth.jwt]
jwks_file = "jwks.json"
issuers = ["{ISSUER}"]

[policy]
default = "deny"

[[policy.rules]]
effect = "deny"
tools = ["*delete*", "*drop*"]

[[policy.rules]]
effect = "allow"
subjects = ["admin-*"]

[[policy.rules]]
effect = "allow"
claims = {{ team = "payments" }}
tools = ["pay_*"]

[[policy.rules]]
effect = "allow"
scopes = ["mcp"]
tools = ["echo", "add", "long*"]

[[policy.rules]]
effect = "allow"
keys = ["ci*"]

[[policy.rules]]
effect = "deny"
anonymous = true
"#
    );
    GatewayConfig::from_toml(&dir.join("gw.toml"), &text).expect("the bench configuration")
}

fn bench(c: &mut Criterion) {
    let dir =
        PathBuf::from(std::env::var("CARGO_TARGET_TMPDIR").unwrap_or_else(|_| "target".into()))
            .join("auth-policy-bench");
    std::fs::create_dir_all(&dir).expect("dir");
    let fixture = JwtFixture::new();
    std::fs::write(dir.join("jwks.json"), fixture.jwks().to_string()).expect("jwks");
    let config = config(&dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _entered = rt.enter();
    let auth = Authenticator::new(config.auth.clone().expect("[auth]")).expect("authenticator");
    rt.block_on(auth.prefetch());

    let mut g = c.benchmark_group("auth_check");
    for (name, alg) in [
        ("jwt_rs256", Algorithm::RS256),
        ("jwt_es256", Algorithm::ES256),
        ("jwt_eddsa", Algorithm::EdDSA),
    ] {
        // Distinct tokens (their `sub` differs), one more than the cache holds: cycled in
        // order, each is gone from the cache by the time it comes round again.
        let pool: Vec<String> = (0..=MAX_VERIFIED_TOKENS)
            .map(|i| fixture.token(alg, RESOURCE, &format!("user-{i}"), "mcp", 3600))
            .collect();
        let mut next = pool.iter().cycle();
        g.bench_function(format!("{name}_first"), |b| {
            b.iter(|| {
                let token = next.next().map(String::as_str);
                matches!(auth.check(black_box(token)), Check::Done(Ok(_)))
            })
        });
        let token = fixture.token(alg, RESOURCE, "alice", "mcp", 3600);
        assert!(
            matches!(auth.check(Some(&token)), Check::Done(Ok(_))),
            "{name}"
        );
        g.bench_function(format!("{name}_again"), |b| {
            b.iter(|| match auth.check(black_box(Some(token.as_str()))) {
                Check::Done(r) => r.is_ok(),
                Check::Wait(_) => false,
            })
        });
    }
    assert!(matches!(auth.check(Some(API_KEY)), Check::Done(Ok(_))));
    g.bench_function("api_key", |b| {
        b.iter(|| match auth.check(black_box(Some(API_KEY))) {
            Check::Done(r) => r.is_ok(),
            Check::Wait(_) => false,
        })
    });
    g.finish();

    let policy = config.policy.clone().expect("[policy]");
    let token = fixture.token(Algorithm::EdDSA, RESOURCE, "alice", "mcp", 3600);
    let Check::Done(Ok(alice)) = auth.check(Some(&token)) else {
        panic!("alice's token");
    };
    let audience = policy.audience(Some(&alice));
    assert!(policy.admits(&audience, "demo", PolicyItem::Tool, "echo"));
    assert!(!policy.admits(&audience, "demo", PolicyItem::Tool, "drop_table"));
    let mut g = c.benchmark_group("policy");
    g.bench_function("audience_and_admits", |b| {
        b.iter(|| {
            let audience = policy.audience(black_box(Some(&alice)));
            policy.admits(&audience, "demo", PolicyItem::Tool, black_box("echo"))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
