//! A deterministic generator of realistic MCP tool lists (for `mcpwire tokens
//! --synthetic N` and the token figures in `docs/tokens.md`).
//!
//! Tools are built from a fixed table of services, resources and verbs; each verb has the
//! parameter shapes real servers use (ids, free-text queries, paging, enums, date ranges,
//! nested filter objects, string arrays, free-form metadata) with descriptions of typical
//! length. The same `n` always gives the same tools.

use serde_json::{Value, json};

const SERVICES: &[(&str, &str)] = &[
    ("github", "GitHub"),
    ("jira", "Jira"),
    ("slack", "Slack"),
    ("gdrive", "Google Drive"),
    ("postgres", "the PostgreSQL database"),
    ("stripe", "Stripe"),
    ("k8s", "the Kubernetes cluster"),
    ("notion", "Notion"),
    ("sentry", "Sentry"),
    ("calendar", "Google Calendar"),
];

const RESOURCES: &[(&str, &str)] = &[
    ("issue", "issue"),
    ("pull_request", "pull request"),
    ("comment", "comment"),
    ("user", "user"),
    ("file", "file"),
    ("project", "project"),
    ("event", "event"),
    ("invoice", "invoice"),
    ("deployment", "deployment"),
    ("page", "page"),
];

const VERBS: &[&str] = &["list", "get", "create", "update", "delete", "search"];

/// A small linear congruential generator: deterministic, no dependency.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// `n` tool definitions as `tools/list` returns them (name, description, inputSchema,
/// sometimes outputSchema and annotations).
pub fn synthetic_tools(n: usize) -> Vec<Value> {
    let mut rng = Lcg(0x6d63_7077_6972_6500);
    let mut tools = Vec::with_capacity(n);
    let combos = SERVICES.len() * RESOURCES.len() * VERBS.len();
    for i in 0..n {
        let k = (i * 7919) % combos;
        let (svc, svc_name) = SERVICES[k % SERVICES.len()];
        let (res, res_name) = RESOURCES[(k / SERVICES.len()) % RESOURCES.len()];
        let verb = VERBS[k / (SERVICES.len() * RESOURCES.len())];
        let round = i / combos;
        let name = if round == 0 {
            format!("{svc}_{verb}_{res}")
        } else {
            format!("{svc}_{verb}_{res}_{round}")
        };
        tools.push(tool(&mut rng, &name, verb, res, res_name, svc_name));
    }
    tools
}

fn tool(rng: &mut Lcg, name: &str, verb: &str, res: &str, res_name: &str, svc: &str) -> Value {
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    let id = json!({"type": "string", "minLength": 1,
        "description": format!("The unique identifier of the {res_name} in {svc}.")});
    let description = match verb {
        "list" => {
            props.insert(
                "limit".into(),
                json!({"type": "integer", "minimum": 1, "maximum": 100,
                "description": "Maximum number of results to return (default 20)."}),
            );
            props.insert(
                "cursor".into(),
                json!({"type": "string",
                "description": "Opaque pagination cursor from a previous call's nextCursor."}),
            );
            props.insert(
                "sort".into(),
                json!({"type": "string",
                "enum": ["created", "updated", "name", "relevance"],
                "description": "Field to sort the results by."}),
            );
            props.insert(
                "order".into(),
                json!({"type": "string", "enum": ["asc", "desc"],
                "description": "Sort direction."}),
            );
            if rng.chance(60) {
                props.insert("filter".into(), filter(res_name));
            }
            format!(
                "List {res_name}s in {svc}, newest first. Supports filtering and pagination; use the returned cursor to fetch the next page."
            )
        }
        "get" => {
            props.insert(format!("{res}_id"), id.clone());
            required.push(format!("{res}_id"));
            props.insert(
                "include".into(),
                json!({"type": "array",
                "items": {"type": "string", "enum": ["author", "labels", "history", "attachments"]},
                "description": "Related data to embed in the response."}),
            );
            format!("Get one {res_name} from {svc} by its identifier, with optional related data.")
        }
        "create" | "update" => {
            if verb == "update" {
                props.insert(format!("{res}_id"), id.clone());
                required.push(format!("{res}_id"));
            }
            props.insert(
                "title".into(),
                json!({"type": "string", "minLength": 1, "maxLength": 256,
                "description": format!("Title of the {res_name}.")}),
            );
            props.insert(
                "body".into(),
                json!({"type": "string",
                "description": format!("Body of the {res_name} in Markdown.")}),
            );
            props.insert(
                "labels".into(),
                json!({"type": "array", "items": {"type": "string"},
                "maxItems": 20, "description": "Labels to attach."}),
            );
            props.insert(
                "assignee".into(),
                json!({"type": ["string", "null"],
                "description": "Username of the assignee, or null to unassign."}),
            );
            props.insert(
                "priority".into(),
                json!({"type": "string",
                "enum": ["low", "medium", "high", "urgent"], "description": "Priority level."}),
            );
            if rng.chance(50) {
                props.insert("due".into(), date_range());
            }
            if rng.chance(40) {
                props.insert(
                    "metadata".into(),
                    json!({"type": "object",
                    "description": "Arbitrary key-value metadata stored with the item."}),
                );
            }
            if verb == "create" {
                required.push("title".into());
                format!(
                    "Create a new {res_name} in {svc}. Returns the created {res_name} with its identifier and URL."
                )
            } else {
                format!(
                    "Update fields of an existing {res_name} in {svc}. Only the given fields change."
                )
            }
        }
        "delete" => {
            props.insert(format!("{res}_id"), id.clone());
            required.push(format!("{res}_id"));
            props.insert(
                "force".into(),
                json!({"type": "boolean",
                "description": "Delete even if other items reference it."}),
            );
            format!("Delete a {res_name} from {svc}. This cannot be undone.")
        }
        _ => {
            props.insert("query".into(), json!({"type": "string", "minLength": 1,
                "description": format!("Full-text search query over {res_name}s; supports quoted phrases and -exclusions.")}));
            required.push("query".into());
            props.insert(
                "limit".into(),
                json!({"type": "integer", "minimum": 1, "maximum": 50,
                "description": "Maximum number of results."}),
            );
            props.insert("created".into(), date_range());
            if rng.chance(50) {
                props.insert("filter".into(), filter(res_name));
            }
            format!(
                "Search {res_name}s in {svc} by text, with optional date range and filters. Results are ranked by relevance."
            )
        }
    };
    let mut t = json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props, "required": required},
    });
    if verb == "get" || rng.chance(30) {
        t["outputSchema"] = json!({"type": "object", "properties": {
            "id": {"type": "string"},
            "url": {"type": "string", "format": "uri"},
            "title": {"type": "string"},
            "created_at": {"type": "string", "description": "ISO 8601 timestamp."},
        }, "required": ["id"]});
    }
    if matches!(verb, "get" | "list" | "search") {
        t["annotations"] = json!({"readOnlyHint": true});
    } else if verb == "delete" {
        t["annotations"] = json!({"destructiveHint": true});
    }
    t
}

fn date_range() -> Value {
    json!({"type": "object", "description": "Restrict to a date range (inclusive).",
    "properties": {
        "start": {"type": "string", "description": "Start date (ISO 8601)."},
        "end": {"type": "string", "description": "End date (ISO 8601)."},
    }})
}

fn filter(res_name: &str) -> Value {
    json!({"type": "object", "description": format!("Filters applied to the {res_name}s."),
    "properties": {
        "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "State to match."},
        "author": {"type": "string", "description": "Username of the author."},
        "labels": {"type": "array", "items": {"type": "string"}, "description": "Match items with all these labels."},
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_unique() {
        let a = synthetic_tools(500);
        assert_eq!(a, synthetic_tools(500));
        let names: std::collections::BTreeSet<&str> =
            a.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names.len(), 500);
        for t in &a {
            mcpwire_schema::tool_schemas(
                t["name"].as_str().unwrap_or(""),
                &t["inputSchema"],
                t.get("outputSchema"),
            )
            .expect("every synthetic tool converts");
        }
    }
}
