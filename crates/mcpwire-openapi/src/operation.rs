//! An OpenAPI document's operations → tool plans: each operation's name, description,
//! input schema (parameters and JSON body merged, `docs/design/backends-openapi-grpc.md`
//! § Input schemas), output schema, and what a call must send ([`Operation`]).

use serde_json::{Map, Value, json};

use crate::OpenApiError;
use crate::document::{Document, Limits};
use crate::names::{Unique, base_name};
use crate::schema::Resolver;

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Longest tool description kept, in characters.
const MAX_DESCRIPTION: usize = 4096;

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// In the path template.
    Path,
    /// In the query string.
    Query,
    /// As a request header.
    Header,
    /// In the `Cookie` header.
    Cookie,
}

impl Location {
    fn parse(s: &str) -> Option<Location> {
        Some(match s {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            _ => return None,
        })
    }

    /// As OpenAPI spells it (`path`, `query`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

/// How a parameter's value is serialized (the OpenAPI `style`s this backend writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `simple` (path, header): `a,b,c`.
    Simple,
    /// `form` (query, cookie): `k=a&k=b` exploded, `k=a,b` not.
    Form,
    /// `spaceDelimited` query arrays.
    SpaceDelimited,
    /// `pipeDelimited` query arrays.
    PipeDelimited,
    /// `deepObject` query objects: `k[p]=v`.
    DeepObject,
}

/// One parameter of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Its name in the request.
    pub name: String,
    /// Where it goes.
    pub location: Location,
    /// Its property in the tool's arguments.
    pub property: String,
    /// How it is serialized.
    pub style: Style,
    /// Whether arrays and objects are exploded.
    pub explode: bool,
    /// Whether it is sent as JSON text (a parameter described by `content`).
    pub json: bool,
}

/// Where the JSON request body comes from in the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// The operation takes no body.
    None,
    /// The body's properties are top-level arguments (these ones).
    Merged(Vec<String>),
    /// The body is the value of this argument.
    Whole(String),
}

/// How a 2xx JSON answer becomes `structuredContent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// No output schema: the answer is text only.
    None,
    /// The answer is an object: it is the structured content.
    Object,
    /// The answer is something else: `{"result": answer}`.
    Wrapped,
}

/// What a call of one operation sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path template (`/pets/{petId}`), relative to the base URL.
    pub path: String,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Its JSON body.
    pub body: Body,
    /// The body's media type (`application/json`, a `+json` type, or
    /// `application/x-www-form-urlencoded` when the operation takes no JSON).
    pub content_type: Option<String>,
    /// How its answer is presented.
    pub output: Output,
}

/// One tool made from one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPlan {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its `inputSchema`.
    pub input_schema: Value,
    /// Its `outputSchema`, when the success answer has a JSON schema.
    pub output_schema: Option<Value>,
    /// Whether the operation is marked `deprecated`.
    pub deprecated: bool,
    /// The request it makes.
    pub op: Operation,
}

/// An operation as a selection sees it (include/exclude by id, tag, path).
#[derive(Debug, Clone, Copy)]
pub struct OpInfo<'a> {
    /// `operationId`, if any.
    pub operation_id: Option<&'a str>,
    /// Its tags.
    pub tags: &'a [String],
    /// Its path template.
    pub path: &'a str,
    /// Its method, upper case.
    pub method: &'a str,
}

/// An operation left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `METHOD /path`.
    pub operation: String,
    /// Why it is not a tool.
    pub reason: String,
}

/// Every tool of a document, and the operations that could not become one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    /// The tools, in document order.
    pub tools: Vec<ToolPlan>,
    /// Operations left out (multipart bodies, unsupported styles, bad `$ref`s).
    pub skipped: Vec<Skipped>,
}

/// The tools of `doc`, for the operations `select` keeps.
pub fn plan(
    doc: &Document,
    limits: &Limits,
    select: &dyn Fn(&OpInfo<'_>) -> bool,
) -> Result<Catalog, OpenApiError> {
    let resolver = Resolver::new(doc, limits);
    let mut catalog = Catalog::default();
    let mut names = Unique::default();
    let Some(paths) = doc.root.get("paths").and_then(Value::as_object) else {
        return Ok(catalog);
    };
    let mut count = 0usize;
    for (path, item) in paths {
        let item = resolver.object(item)?;
        let common = item.get("parameters");
        for method in METHODS {
            let Some(op) = item.get(*method) else {
                continue;
            };
            count += 1;
            if count > limits.max_operations {
                return Err(OpenApiError::TooManyOperations(limits.max_operations));
            }
            let upper = method.to_ascii_uppercase();
            let tags: Vec<String> = op
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let operation_id = op.get("operationId").and_then(Value::as_str);
            let info = OpInfo {
                operation_id,
                tags: &tags,
                path,
                method: &upper,
            };
            if !select(&info) {
                continue;
            }
            let name = base_name(operation_id, method, path);
            match one(&resolver, path, &upper, op, common) {
                Ok(mut tool) => {
                    tool.name = names.take(&name);
                    catalog.tools.push(tool);
                }
                Err(reason) => {
                    catalog.skipped.push(Skipped {
                        operation: format!("{upper} {path}"),
                        reason,
                    });
                }
            }
        }
    }
    Ok(catalog)
}

fn one(
    r: &Resolver<'_>,
    path: &str,
    method: &str,
    op: &Value,
    common: Option<&Value>,
) -> Result<ToolPlan, String> {
    let e = |e: OpenApiError| e.to_string();
    // Parameters: the operation's override the path item's of the same name and place.
    let mut raw: Vec<&Value> = Vec::new();
    for list in [common, op.get("parameters")].into_iter().flatten() {
        for p in list.as_array().into_iter().flatten() {
            let p = r.object(p).map_err(e)?;
            let key = (p.get("name"), p.get("in"));
            raw.retain(|q| (q.get("name"), q.get("in")) != key);
            raw.push(p);
        }
    }
    let mut taken = Unique::default();
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut params = Vec::new();
    for location in [
        Location::Path,
        Location::Query,
        Location::Header,
        Location::Cookie,
    ] {
        for p in &raw {
            let Some(name) = p.get("name").and_then(Value::as_str) else {
                return Err("a parameter without a name".into());
            };
            let Some(loc) = p
                .get("in")
                .and_then(Value::as_str)
                .and_then(Location::parse)
            else {
                return Err(format!(
                    "parameter `{name}`: `in` is not path, query, header or cookie"
                ));
            };
            if loc != location {
                continue;
            }
            if loc == Location::Header
                && ["accept", "content-type", "authorization"]
                    .contains(&name.to_ascii_lowercase().as_str())
            {
                continue; // OpenAPI: such header parameters are ignored.
            }
            let (schema, json) = match (p.get("schema"), p.get("content")) {
                (Some(s), _) => (r.schema(s).map_err(e)?, false),
                (None, Some(c)) => {
                    let s = c
                        .as_object()
                        .and_then(|m| m.values().next())
                        .and_then(|m| m.get("schema"))
                        .map_or(Ok(json!({})), |s| r.schema(s))
                        .map_err(e)?;
                    (s, true)
                }
                (None, None) => (json!({"type": "string"}), false),
            };
            let schema = described(schema, p.get("description"));
            let style = match (p.get("style").and_then(Value::as_str), loc) {
                (None, Location::Path | Location::Header) | (Some("simple"), _) => Style::Simple,
                (None, Location::Query | Location::Cookie) | (Some("form"), _) => Style::Form,
                (Some("spaceDelimited"), Location::Query) => Style::SpaceDelimited,
                (Some("pipeDelimited"), Location::Query) => Style::PipeDelimited,
                (Some("deepObject"), Location::Query) => Style::DeepObject,
                (Some(other), _) => {
                    return Err(format!(
                        "parameter `{name}`: style `{other}` is not supported"
                    ));
                }
            };
            let explode = p
                .get("explode")
                .and_then(Value::as_bool)
                .unwrap_or(style == Style::Form);
            let property = if taken.contains(name) {
                taken.take(&format!("{name}_{}", loc.as_str()))
            } else {
                taken.take(name)
            };
            if loc == Location::Path || p.get("required") == Some(&Value::Bool(true)) {
                required.push(Value::String(property.clone()));
            }
            properties.insert(property.clone(), schema);
            params.push(Param {
                name: name.to_owned(),
                location: loc,
                property,
                style,
                explode,
                json,
            });
        }
    }
    for p in params.iter().filter(|p| p.location == Location::Path) {
        if !path.contains(&format!("{{{}}}", p.name)) {
            return Err(format!("path parameter `{}` is not in the path", p.name));
        }
    }
    let (body, content_type) = body(r, op, &mut taken, &mut properties, &mut required)?;
    let (output, output_schema) = output(r, op)?;
    let mut input_schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        input_schema["required"] = Value::Array(required);
    }
    Ok(ToolPlan {
        name: String::new(),
        description: description(op, method, path),
        input_schema,
        output_schema,
        deprecated: op.get("deprecated") == Some(&Value::Bool(true)),
        op: Operation {
            method: method.to_owned(),
            path: path.to_owned(),
            params,
            body,
            content_type,
            output,
        },
    })
}

/// Whether a media type is JSON (`application/json`, `application/problem+json`, …).
pub fn is_json(media: &str) -> bool {
    let m = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
}

/// Whether a media type is a URL-encoded form.
pub fn is_form(media: &str) -> bool {
    media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

fn body(
    r: &Resolver<'_>,
    op: &Value,
    taken: &mut Unique,
    properties: &mut Map<String, Value>,
    required: &mut Vec<Value>,
) -> Result<(Body, Option<String>), String> {
    let Some(rb) = op.get("requestBody") else {
        return Ok((Body::None, None));
    };
    let rb = r.object(rb).map_err(|e| e.to_string())?;
    let content = rb.get("content").and_then(Value::as_object);
    let json_body = content.and_then(|c| c.iter().find(|(m, _)| is_json(m)));
    let form_body = content.and_then(|c| c.iter().find(|(m, _)| is_form(m)));
    let Some((media, mt)) = json_body.or(form_body) else {
        let kinds: Vec<&str> = content
            .into_iter()
            .flatten()
            .map(|(k, _)| k.as_str())
            .collect();
        return Err(format!(
            "its request body is {} — only JSON and URL-encoded form bodies are sent \
             (multipart and binary bodies are not supported)",
            if kinds.is_empty() {
                "without content".to_owned()
            } else {
                kinds.join(", ")
            }
        ));
    };
    let schema = match mt.get("schema") {
        Some(s) => r.schema(s).map_err(|e| e.to_string())?,
        None => json!({}),
    };
    if json_body.is_none() && schema.get("type") != Some(&json!("object")) {
        return Err(format!(
            "its `{media}` body is not an object: it cannot be sent as a form"
        ));
    }
    let schema = described(schema, rb.get("description"));
    let is_required = rb.get("required") == Some(&Value::Bool(true));
    // Merged when the body is a plain, required object whose names are all free.
    let mergeable = is_required
        && schema.get("type") == Some(&json!("object"))
        && ["allOf", "anyOf", "oneOf", "not", "if", "patternProperties"]
            .iter()
            .all(|k| schema.get(*k).is_none())
        && schema
            .get("additionalProperties")
            .is_none_or(|a| a == &Value::Bool(false))
        && schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty() && p.keys().all(|k| !taken.contains(k)));
    if mergeable {
        let mut names = Vec::new();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                taken.insert(k);
                properties.insert(k.clone(), v.clone());
                names.push(k.clone());
            }
        }
        if let Some(req) = schema.get("required").and_then(Value::as_array) {
            required.extend(req.iter().cloned());
        }
        return Ok((Body::Merged(names), Some(media.clone())));
    }
    let property = taken.take("body");
    properties.insert(property.clone(), schema);
    if is_required {
        required.push(Value::String(property.clone()));
    }
    Ok((Body::Whole(property), Some(media.clone())))
}

fn output(r: &Resolver<'_>, op: &Value) -> Result<(Output, Option<Value>), String> {
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return Ok((Output::None, None));
    };
    let mut codes: Vec<&String> = responses.keys().filter(|c| c.starts_with('2')).collect();
    codes.sort();
    let Some(code) = codes.first() else {
        return Ok((Output::None, None));
    };
    let resp = r.object(&responses[*code]).map_err(|e| e.to_string())?;
    let schema = resp
        .get("content")
        .and_then(Value::as_object)
        .and_then(|c| c.iter().find(|(m, _)| is_json(m)))
        .and_then(|(_, mt)| mt.get("schema"));
    let Some(schema) = schema else {
        return Ok((Output::None, None));
    };
    let schema = r.schema(schema).map_err(|e| e.to_string())?;
    if schema.get("type") == Some(&json!("object")) {
        Ok((Output::Object, Some(schema)))
    } else {
        Ok((
            Output::Wrapped,
            Some(json!({
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
            })),
        ))
    }
}

fn described(mut schema: Value, description: Option<&Value>) -> Value {
    if let (Some(obj), Some(Value::String(d))) = (schema.as_object_mut(), description) {
        obj.entry("description")
            .or_insert_with(|| Value::String(d.clone()));
    }
    schema
}

fn description(op: &Value, method: &str, path: &str) -> String {
    let get = |k| {
        op.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let text = match (get("summary"), get("description")) {
        (Some(s), Some(d)) if s != d => format!("{s}\n\n{d}"),
        (Some(s), _) => s.to_owned(),
        (None, Some(d)) => d.to_owned(),
        (None, None) => format!("{method} {path}"),
    };
    text.chars().take(MAX_DESCRIPTION).collect()
}
