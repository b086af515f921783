//! What the wires need to know about an upstream's tools before calling them (task
//! support, `x-mcp-header` parameters), learnt from the `tools/list` pages that pass
//! through on their way to the federation.
//!
//! A handshake-era upstream with the 2025-11-25 `tasks` capability may have tools it runs
//! *only* as tasks (`taskSupport: "required"`). The gateway does not speak that surface
//! downstream, so it calls such a tool as a task itself and answers with the task's result
//! (`super::call::run_as_task`): the tool is listed `"optional"` (a client may call it
//! plainly; a 2026-07-28 client with the tasks extension gets a task of the router's).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use mcpwire_model::types::ServerCapabilities;
use mcpwire_model::{Reply, to_raw};
use mcpwire_router::{TaskSupport, ToolRouting};
use serde_json::Value;

/// Tools remembered at most (an upstream listing more is served, but the routing of the
/// tools past this bound is the default: no tasks, no header parameters).
const MAX_TOOLS: usize = 65_536;

/// The routing of the tools the upstream listed last.
#[derive(Debug, Default)]
pub(super) struct ToolRoutes {
    /// The upstream runs tasks itself (it offers the tasks extension in the era the gateway
    /// speaks to it): its task-supporting tools are routed to its own tasks.
    upstream_runs_tasks: bool,
    /// The upstream runs `tools/call` as 2025-11-25 tasks: its task-required tools are
    /// called as tasks by the gateway.
    runs_v1_tasks: bool,
    tools: Mutex<HashMap<String, Arc<ToolRouting>>>,
    /// Tools the upstream runs only as tasks (when `runs_v1_tasks`).
    task_required: Mutex<HashSet<String>>,
    /// Every tool the upstream listed last (to the catalog session).
    names: Mutex<HashSet<String>>,
}

/// Whether a server with `caps` runs `tools/call` as a 2025-11-25 task when asked.
pub(super) fn runs_v1_tasks(caps: &ServerCapabilities) -> bool {
    caps.tasks
        .as_ref()
        .is_some_and(|t| t.pointer("/requests/tools/call").is_some())
}

impl ToolRoutes {
    /// Routes for an upstream that runs tasks itself (`true`) or leaves them to the router,
    /// and that runs `tools/call` as a 2025-11-25 task (`runs_v1_tasks`).
    pub(super) fn new(upstream_runs_tasks: bool, runs_v1_tasks: bool) -> ToolRoutes {
        ToolRoutes {
            upstream_runs_tasks,
            runs_v1_tasks,
            tools: Mutex::default(),
            task_required: Mutex::default(),
            names: Mutex::default(),
        }
    }

    /// Whether the upstream listed tool `name` (in the catalog session's listing).
    pub(super) fn lists(&self, name: &str) -> bool {
        self.names.lock().is_ok_and(|n| n.contains(name))
    }

    /// Whether tool `name` must be called as a 2025-11-25 task of the upstream's.
    pub(super) fn calls_as_task(&self, name: &str) -> bool {
        self.runs_v1_tasks && self.task_required.lock().is_ok_and(|t| t.contains(name))
    }

    /// A `tools/list` page as the federation gets it: task-required tools of an upstream
    /// whose tasks the gateway follows are `"optional"` (see the module's doc).
    pub(super) fn listed(&self, reply: Reply) -> Reply {
        let Reply::Complete(raw) = reply else {
            return reply;
        };
        if !self.runs_v1_tasks || !raw.get().contains("\"required\"") {
            return Reply::Complete(raw);
        }
        let Ok(mut page) = serde_json::from_str::<Value>(raw.get()) else {
            return Reply::Complete(raw);
        };
        if let Some(Value::Array(tools)) = page.get_mut("tools") {
            for tool in tools {
                if let Some(slot) = tool.pointer_mut("/execution/taskSupport")
                    && slot == "required"
                {
                    *slot = Value::from("optional");
                }
            }
        }
        Reply::Complete(to_raw(&page))
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
        let (Ok(mut tools), Ok(mut required), Ok(mut names)) = (
            self.tools.lock(),
            self.task_required.lock(),
            self.names.lock(),
        ) else {
            return;
        };
        if first_page {
            tools.clear();
            required.clear();
            names.clear();
        }
        for tool in page.tools {
            let Some(name) = tool.get("name").and_then(|n| n.as_str()) else {
                continue;
            };
            if names.len() >= MAX_TOOLS && !names.contains(name) {
                break;
            }
            names.insert(name.to_owned());
            let mut routing = ToolRouting::of_listed_tool(&tool);
            if self.runs_v1_tasks && routing.task_support == TaskSupport::Required {
                required.insert(name.to_owned());
                routing.task_support = TaskSupport::Optional;
            } else {
                required.remove(name);
            }
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
        let routes = ToolRoutes::new(true, false);
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

    #[test]
    fn task_required_tools_of_a_2025_11_25_upstream_are_called_as_tasks_and_listed_optional() {
        let routes = ToolRoutes::new(false, true);
        let listing = page(serde_json::json!({"tools": [
            {"name": "research", "execution": {"taskSupport": "required"}},
            {"name": "maybe", "execution": {"taskSupport": "optional"}},
            {"name": "required"},
        ]}));
        routes.learn(true, &listing);
        assert!(routes.calls_as_task("research"));
        assert!(!routes.calls_as_task("maybe") && !routes.calls_as_task("required"));
        assert_eq!(
            routes.get("research").map(|r| r.task_support),
            Some(TaskSupport::Optional)
        );
        let Reply::Complete(listed) = routes.listed(listing) else {
            panic!("a page")
        };
        let v: serde_json::Value = serde_json::from_str(listed.get()).unwrap();
        assert_eq!(v["tools"][0]["execution"]["taskSupport"], "optional");
        assert_eq!(v["tools"][2]["name"], "required");
        // A new listing forgets what the old one said.
        routes.learn(
            true,
            &page(serde_json::json!({"tools": [{"name": "research"}]})),
        );
        assert!(!routes.calls_as_task("research"));
        // Without the capability nothing changes.
        let plain = ToolRoutes::new(false, false);
        let listing = page(serde_json::json!({"tools": [
            {"name": "research", "execution": {"taskSupport": "required"}}]}));
        plain.learn(true, &listing);
        assert!(!plain.calls_as_task("research"));
        let Reply::Complete(same) = plain.listed(listing) else {
            panic!("a page")
        };
        assert!(same.get().contains("\"required\""));
    }
}
