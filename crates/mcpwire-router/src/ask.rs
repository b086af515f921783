//! Typed client asks: [`CallCtx::elicit`] derives a form from a Rust type and returns a
//! value of it; [`CallCtx::sample`] builds a sampling request in a few calls.
//!
//! In 2026-07-28 a handler that asks is ended by the ask (`McpError::InputRequired`, which
//! `?` propagates) and **run again from the start** with the client's answers: code before
//! an ask runs once per round, so it must not have effects that cannot be repeated.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;

use mcpwire_model::McpError;
use mcpwire_model::types::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, Role, SamplingMessage,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::CallCtx;
use crate::tool::schema_of;

/// The user's answer to [`CallCtx::elicit`].
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// The user submitted the form.
    Accepted(T),
    /// The user explicitly declined.
    Declined,
    /// The user dismissed the request.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The submitted value, if the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accepted(t) => Some(t),
            _ => None,
        }
    }
}

/// A pending [`CallCtx::elicit`]; `.await` it (optionally after [`ElicitRequest::key`]).
#[must_use = "an elicitation does nothing until awaited"]
pub struct ElicitRequest<'a, T> {
    ctx: &'a CallCtx,
    message: String,
    key: Option<String>,
    _t: PhantomData<fn() -> T>,
}

impl<T> ElicitRequest<'_, T> {
    /// Names the ask in 2026-07-28's `inputRequests` (otherwise asks are numbered in order).
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

impl<'a, T: DeserializeOwned + JsonSchema + Send + 'a> IntoFuture for ElicitRequest<'a, T> {
    type Output = Result<Elicited<T>, McpError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let schema = elicitation_schema::<T>().map_err(McpError::Internal)?;
            let params = ElicitParams {
                message: self.message,
                requested_schema: Some(schema),
                mode: None,
                url: None,
                elicitation_id: None,
            };
            let r = self.ctx.elicit_with(self.key.as_deref(), params).await?;
            match r.action {
                ElicitAction::Decline => Ok(Elicited::Declined),
                ElicitAction::Cancel => Ok(Elicited::Cancelled),
                ElicitAction::Accept => {
                    let content = Value::Object(r.content.unwrap_or_default());
                    serde_json::from_value(content)
                        .map(Elicited::Accepted)
                        .map_err(|e| {
                            McpError::InvalidParams(format!(
                                "the client's answer does not fit the requested form: {e}"
                            ))
                        })
                }
            }
        })
    }
}

/// What [`CallCtx::sample`] returns: the generated text and the whole result.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// The text of the answer (its first text block; empty if it has none).
    pub text: String,
    /// The client's result as sent.
    pub result: CreateMessageResult,
}

/// A pending [`CallCtx::sample`]; set what you need, then `.await` it.
#[must_use = "a sampling request does nothing until awaited"]
pub struct SampleRequest<'a> {
    ctx: &'a CallCtx,
    params: CreateMessageParams,
    key: Option<String>,
}

impl SampleRequest<'_> {
    /// The system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.params.system_prompt = Some(prompt.into());
        self
    }

    /// The most tokens to generate (default 1000).
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.params.max_tokens = n;
        self
    }

    /// The sampling temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.params.temperature = Some(t);
        self
    }

    /// Adds a stop sequence.
    pub fn stop_at(mut self, sequence: impl Into<String>) -> Self {
        self.params
            .stop_sequences
            .get_or_insert_with(Vec::new)
            .push(sequence.into());
        self
    }

    /// Continues the conversation with another text message (after the first user prompt).
    pub fn message(mut self, role: Role, text: impl Into<String>) -> Self {
        self.params.messages.push(text_message(role, text.into()));
        self
    }

    /// Names the ask in 2026-07-28's `inputRequests` (otherwise asks are numbered in order).
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The params as they will be sent.
    pub fn params(&self) -> &CreateMessageParams {
        &self.params
    }
}

impl<'a> IntoFuture for SampleRequest<'a> {
    type Output = Result<Sampled, McpError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let result = self
                .ctx
                .sample_with(self.key.as_deref(), self.params)
                .await?;
            Ok(Sampled {
                text: first_text(&result.content),
                result,
            })
        })
    }
}

fn text_message(role: Role, text: String) -> SamplingMessage {
    SamplingMessage {
        role,
        content: serde_json::json!({ "type": "text", "text": text }),
    }
}

/// The first text block of sampled content (one block or an array of them).
fn first_text(content: &Value) -> String {
    let text_of = |c: &Value| c.get("text").and_then(Value::as_str).map(str::to_owned);
    match content {
        Value::Array(items) => items.iter().find_map(text_of),
        other => text_of(other),
    }
    .unwrap_or_default()
}

impl CallCtx {
    /// Asks the user to fill in a form derived from `T` (`elicitation/create`) and returns
    /// the answer as a `T`, or that the user declined or cancelled.
    ///
    /// `T` must be a flat struct of strings, numbers, integers, booleans, unit-variant enums
    /// and lists of such enums (what MCP forms allow); `Option` fields are not required.
    /// Other types fail with [`McpError::Internal`] naming the field, before anything is
    /// sent. See the module docs for 2026-07-28's re-run rule.
    pub fn elicit<T>(&self, message: impl Into<String>) -> ElicitRequest<'_, T> {
        ElicitRequest {
            ctx: self,
            message: message.into(),
            key: None,
            _t: PhantomData,
        }
    }

    /// Asks the client's LLM (`sampling/createMessage`) with `prompt` as the user message;
    /// the returned builder sets the rest before `.await`.
    pub fn sample(&self, prompt: impl Into<String>) -> SampleRequest<'_> {
        SampleRequest {
            ctx: self,
            params: CreateMessageParams {
                messages: vec![text_message(Role::User, prompt.into())],
                max_tokens: 1000,
                system_prompt: None,
                model_preferences: None,
                include_context: None,
                temperature: None,
                stop_sequences: None,
                metadata: None,
            },
            key: None,
        }
    }
}

/// The elicitation form for `T`: its JSON Schema with every property reduced to what
/// `elicitation/create` accepts, or why `T` cannot be asked for.
pub fn elicitation_schema<T: JsonSchema>() -> Result<Value, String> {
    let name = std::any::type_name::<T>();
    let mut root = schema_of::<T>();
    let Some(obj) = root.as_object_mut() else {
        return Err(format!("{name} has no object schema"));
    };
    let defs = match obj.remove("$defs") {
        Some(Value::Object(d)) => d,
        _ => Map::new(),
    };
    if obj.get("type") != Some(&Value::from("object")) {
        return Err(format!(
            "{name} cannot be elicited: a form is a struct with named fields"
        ));
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (field, p) in props.iter_mut() {
            *p = form_field(p, &defs).map_err(|what| {
                format!(
                    "{name} cannot be elicited: field `{field}` is {what}; a form holds only \
                     strings, numbers, integers, booleans, unit-variant enums and lists of \
                     such enums"
                )
            })?;
        }
    }
    obj.remove("additionalProperties");
    Ok(root)
}

/// One property reduced to a form field, or what it is that a form cannot hold.
fn form_field(p: &Value, defs: &Map<String, Value>) -> Result<Value, &'static str> {
    let Some(obj) = p.as_object() else {
        return Err("not a schema");
    };
    let mut out = obj.clone();
    // `$ref` to a definition (enums, nested structs): inline it, keeping local keywords.
    if let Some(Value::String(r)) = out.remove("$ref") {
        let target = r
            .strip_prefix("#/$defs/")
            .and_then(|n| defs.get(n))
            .and_then(Value::as_object)
            .ok_or("a reference")?;
        for (k, v) in target {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    // `Option<E>`: `anyOf: [E, {type: null}]`.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = out.get(key)
            && alts.len() == 2
            && alts
                .iter()
                .any(|a| a.get("type") == Some(&Value::from("null")))
        {
            let some = alts
                .iter()
                .find(|a| a.get("type") != Some(&Value::from("null")))
                .cloned()
                .unwrap_or_default();
            out.remove(key);
            let inner = form_field(&some, defs)?;
            if let Value::Object(inner) = inner {
                for (k, v) in inner {
                    out.entry(k).or_insert(v);
                }
            }
        }
    }
    // `type: ["string", "null"]` (an `Option` of a primitive).
    if let Some(Value::Array(types)) = out.get("type") {
        let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        match non_null.as_slice() {
            [one] => {
                let one = (*one).clone();
                out.insert("type".into(), one);
            }
            _ => return Err("a union of types"),
        }
    }
    if out.get("default") == Some(&Value::Null) {
        out.remove("default");
    }
    // Titled enum variants: `oneOf: [{const, description} | {enum: [..]}]` → `{const, title}`.
    if let Some(Value::Array(alts)) = out.get_mut("oneOf") {
        let mut consts = Vec::new();
        for a in alts.iter() {
            let Some(a) = a.as_object() else {
                return Err("an enum with data-carrying variants");
            };
            let values: Vec<Value> = match (a.get("const"), a.get("enum")) {
                (Some(c), _) => vec![c.clone()],
                (None, Some(Value::Array(e))) => e.clone(),
                _ => return Err("an enum with data-carrying variants"),
            };
            let title = a.get("title").or_else(|| a.get("description"));
            for v in values {
                let mut c = Map::new();
                c.insert("const".into(), v);
                if let Some(t) = title {
                    c.insert("title".into(), t.clone());
                }
                consts.push(Value::Object(c));
            }
        }
        *alts = consts;
        out.entry("type").or_insert_with(|| Value::from("string"));
    }
    match out.get("type").and_then(Value::as_str) {
        Some("string" | "number" | "integer" | "boolean") => Ok(Value::Object(out)),
        Some("array") => {
            let items = out.get("items").ok_or("a list without item type")?;
            let items = form_field(items, defs)?;
            let is_choice = items.get("enum").is_some() || items.get("oneOf").is_some();
            if !is_choice {
                return Err("a list of something other than enum values");
            }
            // Multi-select items are listed with `anyOf` in MCP forms.
            let items = match items {
                Value::Object(mut i) => {
                    if let Some(one_of) = i.remove("oneOf") {
                        i.insert("anyOf".into(), one_of);
                        i.remove("type");
                    }
                    Value::Object(i)
                }
                other => other,
            };
            out.insert("items".into(), items);
            Ok(Value::Object(out))
        }
        Some("object") => Err("a nested object"),
        Some("null") => Err("always null"),
        _ => Err("of no single type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Color {
        Red,
        /// Green as grass.
        Green,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Size {
        Small,
        Large,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Form {
        /// Your name.
        name: String,
        age: Option<u32>,
        ok: bool,
        color: Color,
        size: Option<Size>,
        sizes: Vec<Size>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        inner: Form,
    }

    #[test]
    fn flat_structs_become_forms() {
        let s = elicitation_schema::<Form>().unwrap_or_else(|e| panic!("{e}"));
        assert!(s.get("$defs").is_none(), "{s}");
        let p = &s["properties"];
        assert_eq!(
            p["name"],
            json!({ "type": "string", "description": "Your name." })
        );
        assert_eq!(p["age"]["type"], "integer");
        assert_eq!(p["ok"], json!({ "type": "boolean" }));
        assert_eq!(
            p["color"]["oneOf"],
            json!([{ "const": "Red" }, { "const": "Green", "title": "Green as grass." }])
        );
        assert_eq!(p["size"]["enum"], json!(["small", "large"]));
        assert_eq!(p["size"]["type"], "string");
        assert_eq!(p["sizes"]["items"]["enum"], json!(["small", "large"]));
        let mut required: Vec<String> =
            serde_json::from_value(s["required"].clone()).unwrap_or_default();
        required.sort();
        assert_eq!(required, ["color", "name", "ok", "sizes"]);
    }

    #[test]
    fn nested_structs_are_refused_by_name() {
        let e = elicitation_schema::<Nested>().unwrap_err();
        assert!(e.contains("field `inner` is a nested object"), "{e}");
    }
}
