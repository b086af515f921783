//! A tool call's arguments → the HTTP request of its [`Operation`] (sans-IO): the path
//! filled in, the query string, headers, cookies and JSON body, each serialized as its
//! parameter's `style` says.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

use crate::operation::{Body, Location, Operation, Param, Style};

/// Left as they are in a path segment (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// Left as they are in a query component.
const QUERY: &AsciiSet = SEGMENT;

/// The request to send, relative to the base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path and query string (`/pets/7?limit=3`), to append to the base URL's path.
    pub path_and_query: String,
    /// Headers from header and cookie parameters.
    pub headers: Vec<(String, String)>,
    /// The body and its media type.
    pub body: Option<(String, Vec<u8>)>,
}

/// The request `args` (already valid against the tool's input schema) make.
pub fn build(op: &Operation, args: &Map<String, Value>) -> Result<HttpCall, String> {
    let mut path = op.path.clone();
    let mut query: Vec<String> = Vec::new();
    let mut headers = Vec::new();
    let mut cookies: Vec<String> = Vec::new();
    for p in &op.params {
        // An absent or null argument sends nothing (an optional parameter left out).
        let Some(value) = args.get(&p.property).filter(|v| !v.is_null()) else {
            continue;
        };
        match p.location {
            Location::Path => {
                let text = simple(p, value, Some(SEGMENT));
                path = path.replace(&format!("{{{}}}", p.name), &text);
            }
            Location::Query => query.extend(query_pairs(p, value)),
            Location::Header => {
                let text = simple(p, value, None);
                if text.chars().any(char::is_control) {
                    return Err(format!(
                        "header `{}` cannot contain control characters",
                        p.name
                    ));
                }
                headers.push((p.name.clone(), text));
            }
            Location::Cookie => {
                let text = simple(p, value, Some(SEGMENT));
                cookies.push(format!("{}={text}", p.name));
            }
        }
    }
    if !cookies.is_empty() {
        headers.push(("cookie".into(), cookies.join("; ")));
    }
    let value = match &op.body {
        Body::None => None,
        Body::Whole(property) => args.get(property).cloned(),
        Body::Merged(names) => Some(Value::Object(
            names
                .iter()
                .filter_map(|n| args.get(n).map(|v| (n.clone(), v.clone())))
                .collect(),
        )),
    };
    let content_type = op
        .content_type
        .clone()
        .unwrap_or_else(|| "application/json".into());
    let body = match value {
        None => None,
        Some(v) if crate::operation::is_form(&content_type) => Some(form(&v).into_bytes()),
        Some(v) => Some(v.to_string().into_bytes()),
    };
    let mut path_and_query = path;
    if !query.is_empty() {
        path_and_query.push('?');
        path_and_query.push_str(&query.join("&"));
    }
    Ok(HttpCall {
        method: op.method.clone(),
        path_and_query,
        headers,
        body: body.map(|b| (content_type, b)),
    })
}

/// An object as `application/x-www-form-urlencoded` (arrays repeat their key, objects
/// go as JSON text, nulls are left out).
fn form(v: &Value) -> String {
    let Value::Object(m) = v else {
        return String::new();
    };
    let mut pairs = Vec::new();
    for (k, v) in m {
        let key = enc(k, QUERY);
        match v {
            Value::Null => {}
            Value::Array(items) => pairs.extend(
                items
                    .iter()
                    .map(|i| format!("{key}={}", enc(&scalar(i), QUERY))),
            ),
            Value::Object(_) => pairs.push(format!("{key}={}", enc(&v.to_string(), QUERY))),
            other => pairs.push(format!("{key}={}", enc(&scalar(other), QUERY))),
        }
    }
    pairs.join("&")
}

/// A scalar as text (strings unquoted).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn enc(s: &str, set: impl Into<Option<&'static AsciiSet>>) -> String {
    match set.into() {
        Some(set) => utf8_percent_encode(s, set).to_string(),
        None => s.to_owned(),
    }
}

/// `simple` style: arrays `a,b`, objects `k,v,k2,v2` (exploded: `k=v,k2=v2`).
fn simple(p: &Param, value: &Value, set: Option<&'static AsciiSet>) -> String {
    if p.json {
        return enc(&value.to_string(), set);
    }
    match value {
        Value::Array(items) => items
            .iter()
            .map(|i| enc(&scalar(i), set))
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| {
                let sep = if p.explode { "=" } else { "," };
                format!("{}{sep}{}", enc(k, set), enc(&scalar(v), set))
            })
            .collect::<Vec<_>>()
            .join(","),
        v => enc(&scalar(v), set),
    }
}

fn query_pairs(p: &Param, value: &Value) -> Vec<String> {
    let key = enc(&p.name, QUERY);
    if p.json {
        return vec![format!("{key}={}", enc(&value.to_string(), QUERY))];
    }
    match (value, p.style) {
        (Value::Array(items), Style::Form) if p.explode => items
            .iter()
            .map(|i| format!("{key}={}", enc(&scalar(i), QUERY)))
            .collect(),
        (Value::Array(items), style) => {
            let sep = match style {
                Style::SpaceDelimited => "%20",
                Style::PipeDelimited => "%7C",
                _ => ",",
            };
            let joined: Vec<String> = items.iter().map(|i| enc(&scalar(i), QUERY)).collect();
            vec![format!("{key}={}", joined.join(sep))]
        }
        (Value::Object(m), Style::DeepObject) => m
            .iter()
            .map(|(k, v)| format!("{key}%5B{}%5D={}", enc(k, QUERY), enc(&scalar(v), QUERY)))
            .collect(),
        (Value::Object(m), _) if p.explode => m
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k, QUERY), enc(&scalar(v), QUERY)))
            .collect(),
        (Value::Object(m), _) => {
            let flat: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{},{}", enc(k, QUERY), enc(&scalar(v), QUERY)))
                .collect();
            vec![format!("{key}={}", flat.join(","))]
        }
        (v, _) => vec![format!("{key}={}", enc(&scalar(v), QUERY))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::Output;
    use serde_json::json;

    fn param(name: &str, location: Location, style: Style, explode: bool) -> Param {
        Param {
            name: name.into(),
            location,
            property: name.into(),
            style,
            explode,
            json: false,
        }
    }

    #[test]
    fn every_location_and_style() {
        let op = Operation {
            method: "POST".into(),
            path: "/items/{id}".into(),
            params: vec![
                param("id", Location::Path, Style::Simple, false),
                param("tags", Location::Query, Style::Form, true),
                param("ids", Location::Query, Style::PipeDelimited, false),
                param("filter", Location::Query, Style::DeepObject, true),
                param("q", Location::Query, Style::Form, true),
                param("X-Trace", Location::Header, Style::Simple, false),
                param("session", Location::Cookie, Style::Form, true),
            ],
            body: Body::Merged(vec!["name".into()]),
            content_type: Some("application/json".into()),
            output: Output::None,
        };
        let args = json!({"id": "a b/c", "tags": ["x", "y"], "ids": [1, 2],
            "filter": {"min": 3}, "q": "é&", "X-Trace": "t1", "session": "s", "name": "n",
            "ignored": 1});
        let call = build(&op, args.as_object().expect("object")).expect("built");
        assert_eq!(
            call.path_and_query,
            "/items/a%20b%2Fc?tags=x&tags=y&ids=1%7C2&filter%5Bmin%5D=3&q=%C3%A9%26"
        );
        assert_eq!(
            call.headers,
            vec![
                ("X-Trace".to_owned(), "t1".to_owned()),
                ("cookie".to_owned(), "session=s".to_owned())
            ]
        );
        assert_eq!(
            call.body,
            Some(("application/json".into(), br#"{"name":"n"}"#.to_vec()))
        );
    }

    #[test]
    fn form_bodies() {
        let op = Operation {
            method: "POST".into(),
            path: "/login".into(),
            params: vec![],
            body: Body::Merged(vec!["user".into(), "roles".into(), "note".into()]),
            content_type: Some("application/x-www-form-urlencoded".into()),
            output: Output::None,
        };
        let args = json!({"user": "a b&c", "roles": ["x", "y"], "note": null});
        let call = build(&op, args.as_object().expect("object")).expect("built");
        assert_eq!(
            call.body
                .map(|(_, b)| String::from_utf8(b).unwrap_or_default()),
            Some("roles=x&roles=y&user=a%20b%26c".into())
        );
    }

    #[test]
    fn line_breaks_in_headers_are_refused() {
        let op = Operation {
            method: "GET".into(),
            path: "/".into(),
            params: vec![param("X-A", Location::Header, Style::Simple, false)],
            body: Body::None,
            content_type: None,
            output: Output::None,
        };
        let args = json!({"X-A": "a\r\nHost: evil"});
        assert!(build(&op, args.as_object().expect("object")).is_err());
    }
}
