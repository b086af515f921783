//! What the wires need to know about an upstream's tools before calling them (task
//! support, `x-mcp-header` parameters), learnt from the `tools/list` pages that pass
//! through on their way to the federation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcpwire_model::Reply;
use mcpwire_router::ToolRouting;

/// Tools remembered at most (an upstream listing more is served, but the routing of the
/// tools past this bound is the default: no tasks, no header parameters).
const MAX_TOOLS: usize = 65_536;

/// The routing of the tools the upstream listed last.
#[derive(Debug, Default)]
pub(super) struct ToolRoutes {
    tools: Mutex<HashMap<String, Arc<ToolRouting>>>,
}

impl ToolRoutes {
    /// Learns from a `tools/list` page; a first page (no cursor) starts a new listing.
    pub(super) fn learn(&self, first_page: bool, reply: &Reply) {
        let Reply::Complete(raw) = reply else { return };
        #[derive(serde::Deserialize)]
        struct Page {
            #[serde(default)]
            tools: Vec<serde_json::Value>,
        }
        let Ok(page) = serde_json::from_str::<Page>(raw.get()) else {
            return;
        };
        let Ok(mut tools) = self.tools.lock() else {
            return;
        };
        if first_page {
            tools.clear();
        }
        for tool in page.tools {
            let Some(name) = tool.get("name").and_then(|n| n.as_str()) else {
                continue;
            };
            if tools.len() >= MAX_TOOLS && !tools.contains_key(name) {
                break;
            }
            let routing = ToolRouting::of_listed_tool(&tool);
            if routing != ToolRouting::default() {
                tools.insert(name.to_owned(), Arc::new(routing));
            } else {
                tools.remove(name);
            }
        }
    }

    /// The routing of tool `name`, if it declares any.
    pub(super) fn get(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.tools.lock().ok()?.get(name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_router::TaskSupport;

    fn page(json: serde_json::Value) -> Reply {
        Reply::Complete(mcpwire_model::to_raw(&json))
    }

    #[test]
    fn listed_tools_declare_tasks_and_headers_and_a_new_listing_replaces_the_old() {
        let routes = ToolRoutes::default();
        routes.learn(
            true,
            &page(serde_json::json!({"tools": [
                {"name": "slow", "execution": {"taskSupport": "optional"}, "inputSchema": {}},
                {"name": "plain", "inputSchema": {"type": "object"}},
                {"name": "region", "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}}}},
            ]})),
        );
        assert_eq!(
            routes.get("slow").map(|r| r.task_support),
            Some(TaskSupport::Optional)
        );
        assert!(routes.get("plain").is_none());
        let region = routes.get("region").expect("header params");
        assert_eq!(region.header_params[0].header, "region");

        routes.learn(
            false,
            &page(serde_json::json!({"tools": [
            {"name": "must", "execution": {"taskSupport": "required"}}]})),
        );
        assert!(routes.get("slow").is_some(), "a later page adds");
        routes.learn(true, &page(serde_json::json!({"tools": []})));
        assert!(routes.get("slow").is_none() && routes.get("must").is_none());
    }
}
