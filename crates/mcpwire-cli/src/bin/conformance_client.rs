//! `mcpwire-conformance-client URL`: the library client (`mcpwire_client`) driven the way the
//! official conformance suite's *client* scenarios expect. The suite
//! (`npx @modelcontextprotocol/conformance client --command … --scenario S`) starts a scenario
//! server, then runs this command with the server's URL as its last argument and
//! `MCP_CONFORMANCE_SCENARIO=S` (plus `MCP_CONFORMANCE_PROTOCOL_VERSION`, the revision it
//! tests) in the environment, and scores what the server saw. `scripts/conformance.sh client`
//! runs them, the `auth/*` ones included.
//!
//! `auth/*` scenarios: the server answers `401` and the library's OAuth client
//! (`mcpwire_client::auth`) runs the MCP authorization flow. Consent is obtained as the
//! suite's own harness does it: the authorization URL is fetched and its redirect read
//! (`FollowRedirect`; the suite's authorization server approves everything). The client
//! offers a client ID metadata document URL (`https://conformance-test.local/client-metadata.json`,
//! used where the server accepts such documents), registers dynamically otherwise, and uses
//! the pre-registered credentials the suite passes in `MCP_CONFORMANCE_CONTEXT` when there
//! are (`client_id`, `client_secret` or `private_key_pem`; the client-credentials scenarios use
//! that grant; a `valid_jwt`, the workload identity scenario's, is a JWT-bearer assertion, and
//! an `idp_id_token` is exchanged at `idp_token_endpoint` for one: SEP-990).
//!
//! The era follows `MCP_CONFORMANCE_PROTOCOL_VERSION` as the suite asks (2026-07-28: per-request
//! `_meta`; earlier revisions: `initialize`); without it the client negotiates (`server/discover`
//! with fallback). Server requests are answered as a user who accepts everything would:
//! elicitations accepted with an empty form (the library fills in the schema's defaults, as the
//! declared `applyDefaults` promises), roots an empty list, sampling refused.
//!
//! Exit status: 0 when the scenario's flow completed, 1 otherwise (the message on stderr).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use std::sync::Arc;

use mcpwire_client::auth::{
    Assertion, ClientSigningKey, FollowRedirect, OAuthConfig, OAuthGrant, UpstreamAuth,
};
use mcpwire_client::{Client, ClientEvent, ClientEvents, ClientOptions, EraChoice, Target};
use mcpwire_model::McpError;
use mcpwire_model::types::{Implementation, LoggingLevel};
use serde_json::{Value, json};

/// How long the whole flow may take (the suite kills the client after 30 s by default).
const FLOW_TIMEOUT: Duration = Duration::from_secs(25);

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MCPWIRE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcpwire-conformance-client: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpwire-conformance-client: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<()> {
    let url = std::env::args()
        .nth(1)
        .context("usage: mcpwire-conformance-client URL (the suite appends the URL)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    eprintln!(
        "scenario {scenario:?} at {url} (revision {})",
        version.as_deref().unwrap_or("negotiated")
    );
    let mut opts = options(version.as_deref());
    if scenario.starts_with("auth/") {
        opts.auth = Some(oauth(&scenario)?);
    }
    tokio::time::timeout(FLOW_TIMEOUT, flow(&scenario, &url, &opts))
        .await
        .map_err(|_| anyhow!("the {scenario:?} flow did not finish in {FLOW_TIMEOUT:?}"))?
}

/// What the client says about itself: every client feature declared (the harness answers
/// them), elicitation with `applyDefaults`, and the era the suite asks for.
fn options(version: Option<&str>) -> ClientOptions {
    let mut opts = ClientOptions {
        client_info: Implementation::new("mcpwire-conformance-client", env!("CARGO_PKG_VERSION")),
        era: match version {
            Some("2026-07-28") => EraChoice::Stateless,
            Some(_) => EraChoice::Handshake,
            None => EraChoice::Auto,
        },
        log_level: Some(LoggingLevel::Info),
        ..ClientOptions::default()
    };
    opts.capabilities.roots = Some(json!({}));
    opts.capabilities.sampling = Some(json!({}));
    opts.capabilities.elicitation = Some(json!({ "form": { "applyDefaults": true } }));
    opts.limits.handshake_timeout = Duration::from_secs(15);
    opts
}

/// The client id offered where the authorization server accepts client ID metadata
/// documents (the URL the suite's CIMD scenario expects).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// OAuth as the `auth/*` scenarios need it: the authorization code with consent by
/// following the redirect, or client credentials when the suite's context holds them.
fn oauth(scenario: &str) -> Result<UpstreamAuth> {
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text).context("MCP_CONFORMANCE_CONTEXT is not JSON")?,
        Err(_) => json!({}),
    };
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let grant = if scenario.starts_with("auth/client-credentials") {
        OAuthGrant::ClientCredentials
    } else if context.get("valid_jwt").is_some() || context.get("idp_id_token").is_some() {
        OAuthGrant::JwtBearer
    } else {
        OAuthGrant::AuthorizationCode
    };
    let mut config = OAuthConfig::new(grant);
    config.assertion = text("valid_jwt").map(Assertion::Value);
    if let (Some(endpoint), Some(idp_client), Some(id_token)) = (
        text("idp_token_endpoint"),
        text("idp_client_id"),
        text("idp_id_token"),
    ) {
        config.assertion = Some(Assertion::IdJag {
            token_endpoint: endpoint,
            client_id: idp_client,
            id_token: Box::new(Assertion::Value(id_token)),
        });
    }
    config.client_name = "mcpwire-conformance-client".into();
    config.client_id = text("client_id");
    config.client_secret = text("client_secret");
    if let Some(pem) = text("private_key_pem") {
        let alg = text("signing_algorithm").unwrap_or_else(|| "ES256".into());
        config.signing_key = Some(ClientSigningKey::from_pem(&pem, &alg)?);
    }
    config.client_metadata_url = Some(CLIENT_METADATA_URL.into());
    config.consent = Some(Arc::new(FollowRedirect::default()));
    Ok(UpstreamAuth::new().oauth(config)?)
}

/// Connects, runs the scenario's steps, and closes.
async fn flow(scenario: &str, url: &str, opts: &ClientOptions) -> Result<()> {
    let target = Target::parse(url)?;
    let (client, events) = Client::connect(&target, opts).await?;
    let negotiated = client.negotiated();
    eprintln!(
        "negotiated {} with {} {}",
        negotiated.era.revision().as_str(),
        negotiated.server_info.name,
        negotiated.server_info.version
    );
    let answering = tokio::spawn(answer_server_requests(client.clone(), events));
    let steps = match scenario {
        // Negotiation itself is what these check; a tools/list shows requests flow after it.
        "initialize" | "request-metadata" => list_tools(&client).await.map(drop),
        "tools_call" | "tools-call" => call_first_tool(&client, json!({"a": 2, "b": 3})).await,
        "elicitation-sep1034-client-defaults" => {
            call_named(&client, "test_client_elicitation_defaults").await
        }
        "sse-retry" => call_named(&client, "test_reconnection").await,
        // The protected server lists `test-tool`; listing and calling it may each need
        // (more) authorization.
        auth if auth.starts_with("auth/") => call_first_tool(&client, json!({})).await,
        other => Err(anyhow!(
            "scenario {other:?} is not one this harness runs (initialize, tools_call, \
             elicitation-sep1034-client-defaults, sse-retry, request-metadata)"
        )),
    };
    let closed = client.close().await;
    answering.abort();
    steps?;
    closed?;
    Ok(())
}

async fn list_tools(client: &Client) -> Result<Vec<Value>> {
    let tools = client.list_tools().await?;
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    eprintln!("tools: {names:?}");
    Ok(tools)
}

/// Lists the tools and calls the first with `arguments`.
async fn call_first_tool(client: &Client, arguments: Value) -> Result<()> {
    let tools = list_tools(client).await?;
    let Some(name) = tools
        .first()
        .and_then(|t| t.get("name"))
        .and_then(Value::as_str)
    else {
        bail!("the server lists no tools");
    };
    let result = client.call_tool(name, arguments, false).await?;
    eprintln!("{name}: {result}");
    Ok(())
}

/// Lists the tools, checks `name` is among them, and calls it without arguments.
async fn call_named(client: &Client, name: &str) -> Result<()> {
    let tools = list_tools(client).await?;
    if !tools.iter().any(|t| t.get("name") == Some(&json!(name))) {
        bail!("the server does not list the tool {name:?}");
    }
    let result = client.call_tool(name, json!({}), false).await?;
    eprintln!("{name}: {result}");
    Ok(())
}

/// Answers the server's requests until the connection ends; logs the rest.
async fn answer_server_requests(client: Client, mut events: ClientEvents) {
    while let Some(event) = events.recv().await {
        match event {
            ClientEvent::ServerRequest(r) => {
                let answer = match r.method.as_str() {
                    "elicitation/create" => Ok(json!({ "action": "accept", "content": {} })),
                    "roots/list" => Ok(json!({ "roots": [] })),
                    other => Err(McpError::MethodNotFound(format!(
                        "{other} (the conformance harness does not answer it)"
                    ))),
                };
                eprintln!("server request {}: answering {answer:?}", r.method);
                let answer = answer.map(|v| mcpwire_model::to_raw(&v));
                if client.answer(r.id, answer).await.is_err() {
                    return;
                }
            }
            ClientEvent::Log { entry, .. } => eprintln!("log: {}", entry.data.get()),
            other => eprintln!("event: {other:?}"),
        }
    }
}
