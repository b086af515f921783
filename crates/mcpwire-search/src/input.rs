//! What the index is fed: a tool (borrowed, no copy) and the text of its parameters.

use serde_json::Value;

use crate::SearchError;

/// How deep nested `properties`/`items` of an input schema are walked.
pub const MAX_SCHEMA_DEPTH: usize = 4;
/// At most this many schema nodes (parameters, nested ones included) are read per tool.
pub const MAX_SCHEMA_NODES: usize = 256;
/// At most this many `enum` strings are read per parameter.
const MAX_ENUM_VALUES: usize = 16;

/// One tool as the index reads it, borrowed from its definition.
#[derive(Clone, Copy, Debug, Default)]
pub struct ToolInput<'a> {
    /// The exposed name (what `tools/call` takes).
    pub name: &'a str,
    /// The human title, if any.
    pub title: Option<&'a str>,
    /// The description, if any.
    pub description: Option<&'a str>,
    /// The `inputSchema` object, if any.
    pub input_schema: Option<&'a Value>,
}

impl<'a> ToolInput<'a> {
    /// Reads an MCP `Tool` object: `name` (required), `title` (or `annotations.title`),
    /// `description`, `inputSchema`.
    pub fn from_json(tool: &'a Value) -> Result<Self, SearchError> {
        let object = tool.as_object().ok_or(SearchError::NotAnObject)?;
        let name = object
            .get("name")
            .and_then(Value::as_str)
            .ok_or(SearchError::MissingName)?;
        let title = object
            .get("title")
            .and_then(Value::as_str)
            .or_else(|| tool.pointer("/annotations/title").and_then(Value::as_str));
        Ok(ToolInput {
            name,
            title,
            description: object.get("description").and_then(Value::as_str),
            input_schema: object.get("inputSchema"),
        })
    }

    /// Calls `text` with each piece of parameter text: names, titles, descriptions and enum
    /// strings of `inputSchema.properties`, nested objects and array items included, bounded
    /// by [`MAX_SCHEMA_DEPTH`] and [`MAX_SCHEMA_NODES`].
    pub(crate) fn param_texts(&self, text: &mut dyn FnMut(&'a str)) {
        if let Some(schema) = self.input_schema {
            let mut budget = MAX_SCHEMA_NODES;
            walk_properties(schema, 0, &mut budget, text);
        }
    }
}

fn walk_properties<'a>(
    schema: &'a Value,
    depth: usize,
    budget: &mut usize,
    text: &mut dyn FnMut(&'a str),
) {
    if depth >= MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        if let Some(items) = schema.get("items") {
            walk_properties(items, depth + 1, budget, text);
        }
        return;
    };
    for (name, property) in properties {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        text(name);
        walk_node(property, depth, budget, text);
    }
}

fn walk_node<'a>(
    property: &'a Value,
    depth: usize,
    budget: &mut usize,
    text: &mut dyn FnMut(&'a str),
) {
    for key in ["title", "description"] {
        if let Some(s) = property.get(key).and_then(Value::as_str) {
            text(s);
        }
    }
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        values
            .iter()
            .filter_map(Value::as_str)
            .take(MAX_ENUM_VALUES)
            .for_each(&mut *text);
    }
    walk_properties(property, depth + 1, budget, text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_tool_and_its_parameters() {
        let tool = json!({
            "name": "create_issue",
            "annotations": {"title": "Create issue"},
            "description": "Opens an issue.",
            "inputSchema": {"type": "object", "properties": {
                "repo": {"type": "string", "description": "owner/name"},
                "labels": {"type": "array", "items": {"type": "object", "properties": {
                    "color": {"enum": ["red", "green", 3]}
                }}}
            }}
        });
        let input = ToolInput::from_json(&tool).unwrap();
        assert_eq!(
            (input.name, input.title),
            ("create_issue", Some("Create issue"))
        );
        let mut texts = Vec::new();
        input.param_texts(&mut |t| texts.push(t));
        texts.sort_unstable();
        assert_eq!(
            texts,
            ["color", "green", "labels", "owner/name", "red", "repo"]
        );
    }

    #[test]
    fn refuses_what_is_not_a_tool() {
        assert_eq!(
            ToolInput::from_json(&json!([1])).unwrap_err(),
            SearchError::NotAnObject
        );
        assert_eq!(
            ToolInput::from_json(&json!({"name": 3})).unwrap_err(),
            SearchError::MissingName
        );
    }

    #[test]
    fn deep_and_wide_schemas_are_bounded() {
        let mut deep = json!({"type": "string"});
        for i in 0..100 {
            deep = json!({"properties": {format!("p{i}"): deep}});
        }
        let wide: serde_json::Map<String, Value> =
            (0..10_000).map(|i| (format!("w{i}"), json!({}))).collect();
        for schema in [deep, json!({"properties": wide})] {
            let input = ToolInput {
                name: "t",
                input_schema: Some(&schema),
                ..ToolInput::default()
            };
            let mut n = 0;
            input.param_texts(&mut |_| n += 1);
            assert!(n <= MAX_SCHEMA_NODES, "{n}");
        }
    }
}
