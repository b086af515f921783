//! What the wires need to know about an upstream's tools before calling them (task
//! support, `x-mcp-header` parameters), learnt from the `tools/list` pages that pass
//! through on their way to the federation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcpwire_model::Reply;
use mcpwire_router::{TaskSupport, ToolRouting};

/// Tools remembered at most (an upstream listing more is served, but the routing of the
/// tools past this bound is the default: no tasks, no header parameters).
const MAX_TOOLS: usize = 65_536;

/// The routing of the tools the upstream listed last.
#[derive(Debug, Default)]
pub(super) struct ToolRoutes {
    /// The upstream runs tasks itself (it offers the tasks extension in the era the gateway
    /// speaks to it): its task-supporting tools are routed to its own tasks.
    upstream_runs_tasks: bool,
    tools: Mutex<HashMap<String, Arc<ToolRouting>>>,
}

impl ToolRoutes {
    /// Routes for an upstream that runs tasks itself (`true`) or leaves them to the router.
    pub(super) fn new(upstream_runs_tasks: bool) -> ToolRoutes {
        ToolRoutes {
            upstream_runs_tasks,
            tools: Mutex::default(),
        }
    }

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
            let mut routing = ToolRouting::of_listed_tool(&tool);
            routing.backend_runs_tasks =
                self.upstream_runs_tasks && routing.task_support != TaskSupport::Forbidden;
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
        assert!(!routes.get("slow").unwrap().backend_runs_tasks);
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

    #[test]
    fn an_upstream_that_runs_tasks_keeps_its_task_supporting_tools_tasks() {
        let routes = ToolRoutes::new(true);
        routes.learn(
            true,
            &page(serde_json::json!({"tools": [
                {"name": "slow", "execution": {"taskSupport": "required"}},
                {"name": "plain", "execution": {"taskSupport": "forbidden"}},
            ]})),
        );
        let slow = routes.get("slow").expect("task support");
        assert_eq!(slow.task_support, TaskSupport::Required);
        assert!(slow.backend_runs_tasks);
        assert!(routes.get("plain").is_none());
    }
}
