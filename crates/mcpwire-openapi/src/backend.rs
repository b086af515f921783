//! [`OpenApiBackend`]: an OpenAPI service's operations as tools — the document read (a file
//! or a URL), its tools planned, each call checked against its input schema, sent as an
//! HTTP request and its answer turned into a result; [`OpenApiBackend::reload`] reads the
//! document again and announces a changed list.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use mcpwire_model::types::{Implementation, ListChangedCapability, ServerCapabilities};
use mcpwire_model::{BackendEvent, McpError, Raw, Reply, to_raw};
use mcpwire_router::{Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx};
use mcpwire_server::tls::ClientTls;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::http::{HttpClient, Outgoing};
use crate::operation::{OpInfo, Skipped, ToolPlan, plan};
use crate::response::{Answer, error, result};
use crate::{Document, Limits, OpenApiError, request};

/// Where the document is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A local file (YAML or JSON).
    File(PathBuf),
    /// An `http(s)` URL.
    Url(String),
}

/// Headers a backend's requests carry (its own credentials: static headers, OAuth tokens).
pub trait Credentials: Send + Sync {
    /// The headers for a `method` request to `url`.
    fn headers<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(HeaderName, HeaderValue)>, String>>;
}

/// Which operations become tools.
pub type Select = Arc<dyn Fn(&OpInfo<'_>) -> bool + Send + Sync>;

/// How an OpenAPI backend is set up.
#[derive(Clone)]
pub struct OpenApiConfig {
    /// The backend's name (logs, `serverInfo`).
    pub name: String,
    /// Where the document is.
    pub source: Source,
    /// Where requests go (default: the document's first `servers` URL, resolved against
    /// the document's URL).
    pub base_url: Option<String>,
    /// `https` trust and client certificate (for the service and the document).
    pub tls: ClientTls,
    /// What requests authenticate with.
    pub credentials: Option<Arc<dyn Credentials>>,
    /// One call's deadline (connect, send, read).
    pub call_timeout: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// Largest answer body read; a longer success answer is an error, a longer error
    /// answer is cut.
    pub max_response_bytes: usize,
    /// Bounds on the document.
    pub limits: Limits,
    /// Which operations become tools (default: all).
    pub select: Select,
}

impl std::fmt::Debug for OpenApiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApiConfig")
            .field("name", &self.name)
            .field("source", &self.source)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl OpenApiConfig {
    /// The defaults for a backend `name` reading `source`: 30 s calls, 10 s connects,
    /// 4 MiB answers, every operation.
    pub fn new(name: impl Into<String>, source: Source) -> OpenApiConfig {
        OpenApiConfig {
            name: name.into(),
            source,
            base_url: None,
            tls: ClientTls::default(),
            credentials: None,
            call_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_bytes: 4 << 20,
            limits: Limits::default(),
            select: Arc::new(|_| true),
        }
    }
}

struct Tool {
    plan: ToolPlan,
    input: Option<jsonschema::Validator>,
    output: Option<jsonschema::Validator>,
}

/// One reading of the document.
struct Loaded {
    list: Raw,
    tools: HashMap<String, Arc<Tool>>,
    names: Vec<String>,
    skipped: Vec<Skipped>,
    client: Arc<HttpClient>,
    /// The base URL's path, without a trailing `/`.
    base_path: String,
    info: Implementation,
    /// The document's `openapi` field (`3.1.0`).
    openapi: String,
}

/// An OpenAPI service as a backend.
pub struct OpenApiBackend {
    info: BackendInfo,
    config: OpenApiConfig,
    loaded: ArcSwap<Loaded>,
    events: broadcast::Sender<BackendEvent>,
}

impl OpenApiBackend {
    /// Reads the document and plans its tools.
    pub async fn load(config: OpenApiConfig) -> Result<Arc<OpenApiBackend>, OpenApiError> {
        let loaded = load(&config).await?;
        let (events, _) = broadcast::channel(16);
        Ok(Arc::new(OpenApiBackend {
            info: BackendInfo {
                name: config.name.clone(),
                capabilities: ServerCapabilities {
                    tools: Some(ListChangedCapability {
                        list_changed: Some(true),
                    }),
                    ..ServerCapabilities::default()
                },
            },
            config,
            loaded: ArcSwap::from_pointee(loaded),
            events,
        }))
    }

    /// Reads the document again; when its tools changed, they replace the old ones and
    /// `notifications/tools/list_changed` goes out. Whether they changed.
    pub async fn reload(&self) -> Result<bool, OpenApiError> {
        let next = load(&self.config).await?;
        let changed = next.list.get() != self.loaded.load().list.get();
        if changed {
            tracing::info!(backend = %self.config.name, tools = next.names.len(), "OpenAPI document changed");
            self.loaded.store(Arc::new(next));
            let _ = self.events.send(BackendEvent::ToolsListChanged);
        }
        Ok(changed)
    }

    /// The tools' names, in document order.
    pub fn tool_names(&self) -> Vec<String> {
        self.loaded.load().names.clone()
    }

    /// The operations that did not become tools, and why.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.loaded.load().skipped.clone()
    }

    /// The document's `info` as a `serverInfo`.
    pub fn server_info(&self) -> Implementation {
        self.loaded.load().info.clone()
    }

    /// The version the document says it follows (its `openapi` field, `3.1.0`).
    pub fn openapi_version(&self) -> String {
        self.loaded.load().openapi.clone()
    }

    /// The document's source.
    pub fn source(&self) -> &Source {
        &self.config.source
    }
}

impl Backend for OpenApiBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        Some(self.events.subscribe())
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let loaded = self.loaded.load_full();
        match req {
            BackendRequest::ListTools { .. } => {
                Box::pin(std::future::ready(Ok(Reply::Complete(loaded.list.clone()))))
            }
            BackendRequest::CallTool { name, arguments } => {
                let Some(tool) = loaded.tools.get(&name).cloned() else {
                    return Box::pin(std::future::ready(Err(McpError::ToolNotFound(name))));
                };
                let timeout = self.config.call_timeout;
                let max = self.config.max_response_bytes;
                let credentials = self.config.credentials.clone();
                Box::pin(async move {
                    let args = arguments_of(&name, &tool, arguments.as_deref())?;
                    let call = call(&loaded, &tool, &args, credentials.as_deref(), timeout, max);
                    tokio::select! {
                        r = call => r.map(|v| Reply::Complete(to_raw(&v))),
                        _ = ctx.cancelled() => Err(McpError::Cancelled),
                    }
                })
            }
            BackendRequest::ListResources { .. } => ok(json!({"resources": []})),
            BackendRequest::ListResourceTemplates { .. } => ok(json!({"resourceTemplates": []})),
            BackendRequest::ListPrompts { .. } => ok(json!({"prompts": []})),
            other => Box::pin(std::future::ready(Err(McpError::MethodNotFound(
                format!("{other:?}")
                    .split([' ', '{', '('])
                    .next()
                    .unwrap_or("request")
                    .to_owned(),
            )))),
        }
    }
}

fn ok(v: Value) -> BoxFuture<'static, Result<Reply, McpError>> {
    Box::pin(std::future::ready(Ok(Reply::Complete(to_raw(&v)))))
}

/// The call's arguments, checked against the tool's input schema (−32602 otherwise).
fn arguments_of(
    name: &str,
    tool: &Tool,
    raw: Option<&serde_json::value::RawValue>,
) -> Result<Map<String, Value>, McpError> {
    let invalid = |message: String| McpError::InvalidToolParams {
        tool: name.to_owned(),
        message,
    };
    let value: Value = match raw {
        Some(r) => serde_json::from_str(r.get()).map_err(|e| invalid(e.to_string()))?,
        None => Value::Object(Map::new()),
    };
    let Value::Object(args) = value else {
        return Err(invalid("the arguments are not an object".into()));
    };
    if let Some(v) = &tool.input {
        let value = Value::Object(args);
        let problems: Vec<String> = v
            .iter_errors(&value)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Err(invalid(problems.join("; ")));
        }
        let Value::Object(args) = value else {
            return Err(invalid("the arguments are not an object".into()));
        };
        return Ok(args);
    }
    Ok(args)
}

async fn call(
    loaded: &Loaded,
    tool: &Tool,
    args: &Map<String, Value>,
    credentials: Option<&dyn Credentials>,
    timeout: Duration,
    max: usize,
) -> Result<Value, McpError> {
    let invalid = |message: String| McpError::InvalidToolParams {
        tool: tool.plan.name.clone(),
        message,
    };
    let http = request::build(&tool.plan.op, args).map_err(invalid)?;
    let method =
        hyper::Method::from_bytes(http.method.as_bytes()).map_err(|e| invalid(e.to_string()))?;
    let mut headers = Vec::with_capacity(http.headers.len() + 2);
    for (k, v) in &http.headers {
        let name =
            HeaderName::try_from(k.as_str()).map_err(|e| invalid(format!("header `{k}`: {e}")))?;
        let value =
            HeaderValue::try_from(v.as_str()).map_err(|e| invalid(format!("header `{k}`: {e}")))?;
        headers.push((name, value));
    }
    let path_and_query = format!("{}{}", loaded.base_path, http.path_and_query);
    let url = format!("{}{path_and_query}", loaded.client.origin());
    if let Some(c) = credentials {
        let extra = c
            .headers(&http.method, &url)
            .await
            .map_err(|e| McpError::ToolFailed {
                tool: tool.plan.name.clone(),
                message: format!("obtaining credentials: {e}"),
            })?;
        headers.extend(extra);
    }
    let out = Outgoing {
        method,
        path_and_query,
        headers,
        body: http.body.map(|(media, b)| (media, Bytes::from(b))),
    };
    let resp = match loaded.client.send(out, timeout, max).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(tool = %tool.plan.name, %url, "OpenAPI call failed: {e}");
            return Ok(error(format!("{} {url}: {e}", http.method)));
        }
    };
    let answer = Answer {
        status: resp.status,
        content_type: resp.content_type.as_deref(),
        body: &resp.body,
        truncated: resp.truncated,
    };
    let check = |v: &Value| {
        tool.output.as_ref().and_then(|o| {
            let problems: Vec<String> = o.iter_errors(v).take(2).map(|e| e.to_string()).collect();
            (!problems.is_empty()).then(|| problems.join("; "))
        })
    };
    Ok(result(&tool.plan.op, answer, &check))
}

async fn load(config: &OpenApiConfig) -> Result<Loaded, OpenApiError> {
    let (bytes, doc_url) = match &config.source {
        Source::File(path) => {
            let meta = std::fs::metadata(path)
                .map_err(|e| OpenApiError::Read(format!("{}: {e}", path.display())))?;
            if meta.len() > config.limits.max_document_bytes as u64 {
                return Err(OpenApiError::TooLarge {
                    size: usize::try_from(meta.len()).unwrap_or(usize::MAX),
                    max: config.limits.max_document_bytes,
                });
            }
            let bytes = std::fs::read(path)
                .map_err(|e| OpenApiError::Read(format!("{}: {e}", path.display())))?;
            (bytes, None)
        }
        Source::Url(url) => (fetch(config, url).await?, Some(url.as_str())),
    };
    let doc = Document::parse(&bytes, &config.limits)?;
    let base = base_url(config, &doc, doc_url)?;
    let client = HttpClient::new(&base, config.tls.clone(), config.connect_timeout)
        .map_err(OpenApiError::Invalid)?;
    let base_path = base
        .parse::<hyper::Uri>()
        .map(|u| u.path().trim_end_matches('/').to_owned())
        .unwrap_or_default();
    let select = config.select.clone();
    let catalog = plan(&doc, &config.limits, &move |op| select(op))?;
    let mut tools = HashMap::new();
    let mut names = Vec::new();
    let mut listed = Vec::new();
    for p in catalog.tools {
        let input = compile(&p.name, &p.input_schema);
        let output = p.output_schema.as_ref().and_then(|s| compile(&p.name, s));
        listed.push(listing(&p));
        names.push(p.name.clone());
        tools.insert(
            p.name.clone(),
            Arc::new(Tool {
                plan: p,
                input,
                output,
            }),
        );
    }
    let (title, version) = doc.info();
    let openapi = doc
        .root
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    tracing::info!(backend = %config.name, %base, tools = names.len(), skipped = catalog.skipped.len(), "OpenAPI document read");
    Ok(Loaded {
        list: to_raw(&json!({ "tools": listed })),
        tools,
        names,
        skipped: catalog.skipped,
        client: Arc::new(client),
        base_path,
        openapi,
        info: Implementation::new(
            if title.is_empty() {
                config.name.clone()
            } else {
                title
            },
            if version.is_empty() {
                "0".into()
            } else {
                version
            },
        ),
    })
}

fn compile(name: &str, schema: &Value) -> Option<jsonschema::Validator> {
    match jsonschema::validator_for(schema) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(tool = %name, "a schema does not compile, so it is not checked: {e}");
            None
        }
    }
}

/// A tool as `tools/list` shows it.
fn listing(p: &ToolPlan) -> Value {
    let method = p.op.method.as_str();
    let read_only = matches!(method, "GET" | "HEAD" | "OPTIONS");
    let mut t = json!({
        "name": p.name,
        "description": p.description,
        "inputSchema": p.input_schema,
        "annotations": {
            "readOnlyHint": read_only,
            "idempotentHint": read_only || matches!(method, "PUT" | "DELETE"),
            "destructiveHint": method == "DELETE",
            "openWorldHint": true,
        },
    });
    if let Some(o) = &p.output_schema {
        t["outputSchema"] = o.clone();
    }
    t
}

async fn fetch(config: &OpenApiConfig, url: &str) -> Result<Vec<u8>, OpenApiError> {
    let client = HttpClient::new(url, config.tls.clone(), config.connect_timeout)
        .map_err(OpenApiError::Read)?;
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| OpenApiError::Read(format!("`{url}`: {e}")))?;
    let out = Outgoing {
        method: hyper::Method::GET,
        path_and_query: uri
            .path_and_query()
            .map_or("/".into(), |p| p.as_str().to_owned()),
        headers: Vec::new(),
        body: None,
    };
    let resp = client
        .send(out, config.call_timeout, config.limits.max_document_bytes)
        .await
        .map_err(|e| OpenApiError::Read(format!("GET {url}: {e}")))?;
    if resp.truncated {
        return Err(OpenApiError::TooLarge {
            size: resp.body.len() + 1,
            max: config.limits.max_document_bytes,
        });
    }
    if !(200..300).contains(&resp.status) {
        return Err(OpenApiError::Read(format!(
            "GET {url}: HTTP {}",
            resp.status
        )));
    }
    Ok(resp.body)
}

/// Where requests go: `base_url`, else the document's server URL (a relative one against
/// the document's URL).
fn base_url(
    config: &OpenApiConfig,
    doc: &Document,
    doc_url: Option<&str>,
) -> Result<String, OpenApiError> {
    if let Some(b) = &config.base_url {
        return Ok(b.clone());
    }
    let origin_of = |u: &str| -> Option<String> {
        let uri: hyper::Uri = u.parse().ok()?;
        Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?))
    };
    match (doc.server_url(), doc_url.and_then(origin_of)) {
        (Some(s), _) if s.starts_with("http://") || s.starts_with("https://") => Ok(s),
        (Some(s), Some(origin)) if s.starts_with('/') => Ok(format!("{origin}{s}")),
        (None, Some(origin)) => Ok(origin),
        (Some(s), _) => Err(OpenApiError::Invalid(format!(
            "the document's server URL `{s}` is relative: give base_url"
        ))),
        (None, None) => Err(OpenApiError::Invalid(
            "the document names no server: give base_url".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(servers: &str) -> Document {
        Document::parse(
            format!("openapi: 3.0.3\n{servers}paths: {{}}\n").as_bytes(),
            &Limits::default(),
        )
        .expect("a document")
    }

    #[test]
    fn where_requests_go() {
        let c = OpenApiConfig::new("t", Source::Url("https://api.example.com/spec.json".into()));
        let at = "https://api.example.com/spec.json";
        let relative = doc("servers: [{url: /api/v3}]\n");
        assert_eq!(
            base_url(&c, &relative, Some(at)),
            Ok("https://api.example.com/api/v3".into())
        );
        assert_eq!(
            base_url(&c, &doc(""), Some(at)),
            Ok("https://api.example.com".into())
        );
        let absolute = doc("servers: [{url: 'http://other:8080/v1'}]\n");
        assert_eq!(
            base_url(&c, &absolute, None),
            Ok("http://other:8080/v1".into())
        );
        assert!(
            base_url(&c, &relative, None).is_err(),
            "a file with a relative server"
        );
        assert!(
            base_url(&c, &doc(""), None).is_err(),
            "a file without servers"
        );
        let given = OpenApiConfig {
            base_url: Some("http://x/y".into()),
            ..c
        };
        assert_eq!(base_url(&given, &relative, None), Ok("http://x/y".into()));
    }
}
