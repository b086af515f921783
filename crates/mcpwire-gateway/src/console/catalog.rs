//! The catalog as one caller lists it, beside every exposed item, and why each item the
//! caller does not see is hidden: which `[policy]` rule (or its default), or which view
//! leaves it out.

use std::sync::Arc;

use mcpwire_federation::{
    CatalogReport, Effect, ExposedItem, Federation, Policy, PolicyItem, View,
};
use mcpwire_model::Reply;
use mcpwire_router::{Backend, BackendRequest, CallCtx, Identity};
use serde_json::{Value, json};

/// Pages of `tools/list` read at most for one catalog.
const MAX_PAGES: usize = 64;

/// The JSON object of a reply.
pub(super) fn reply_json(reply: Reply) -> Value {
    match reply {
        Reply::Complete(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
        Reply::InputRequired(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
    }
}

/// Every tool definition `who` lists through `shown` (at most [`MAX_PAGES`] pages).
pub(super) async fn list_tools(
    shown: Arc<dyn Backend>,
    who: Option<Identity>,
) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let ctx = CallCtx::detached().with_identity(who.clone());
        let req = BackendRequest::ListTools {
            cursor: cursor.take(),
            query: None,
        };
        let page = reply_json(shown.call(ctx, req).await.map_err(|e| e.to_string())?);
        if let Some(Value::Array(t)) = page.get("tools") {
            tools.extend(t.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    Ok(tools)
}

/// Who is asking and through what: what decides why an item is hidden.
pub(super) struct Judge<'a> {
    pub(super) policy: &'a Policy,
    pub(super) who: Option<&'a Identity>,
    /// The view the caller looks through, and what it holds.
    pub(super) view: Option<(&'a str, CatalogReport)>,
}

impl Judge<'_> {
    /// Why `item` (of `kind`) is hidden from the caller, in words naming the rule.
    fn why(&self, item: &ExposedItem, kind: PolicyItem, in_view: Option<&[ExposedItem]>) -> String {
        if let (Some((name, _)), Some(in_view)) = (&self.view, in_view)
            && !in_view.iter().any(|i| i.exposed == item.exposed)
        {
            return format!("view `{name}` leaves it out");
        }
        let audience = self.policy.audience(self.who);
        match self
            .policy
            .deciding_rule(&audience, &item.member, kind, &item.exposed)
        {
            Some(i) => format!(
                "[[policy.rules]] #{} ({})",
                i + 1,
                effect_word(self.policy.rules[i].effect)
            ),
            None => format!(
                "[policy] default = \"{}\"",
                effect_word(self.policy.default)
            ),
        }
    }

    /// Items of one kind: every exposed one, and whether the caller sees it, and if not
    /// why.
    fn items(
        &self,
        all: &[ExposedItem],
        sees: &[ExposedItem],
        kind: PolicyItem,
        in_view: Option<&[ExposedItem]>,
    ) -> Vec<Value> {
        all.iter()
            .map(|i| {
                let visible = sees.iter().any(|s| s.exposed == i.exposed);
                json!({
                    "name": i.exposed,
                    "backend": i.member,
                    "upstream": i.original,
                    "visible": visible,
                    "hidden_by": (!visible).then(|| self.why(i, kind, in_view)),
                })
            })
            .collect()
    }

    /// The catalog: every item of `all`, marked as `sees` (the caller's report) and
    /// `listed` (its tools' definitions) show it.
    pub(super) fn catalog(
        &self,
        all: &CatalogReport,
        sees: &CatalogReport,
        listed: &[Value],
    ) -> Value {
        let view = self.view.as_ref().map(|(_, r)| r);
        let tools: Vec<Value> = self
            .items(
                &all.tools,
                &sees.tools,
                PolicyItem::Tool,
                view.map(|v| &v.tools[..]),
            )
            .into_iter()
            .map(|mut t| {
                let def = listed.iter().find(|d| d.get("name") == t.get("name"));
                if let (Some(def), Value::Object(o)) = (def, &mut t) {
                    o.insert("visible".into(), true.into());
                    o.insert("hidden_by".into(), Value::Null);
                    for k in ["description", "inputSchema", "title"] {
                        if let Some(v) = def.get(k) {
                            o.insert(k.into(), v.clone());
                        }
                    }
                }
                t
            })
            .collect();
        let (prompts, resources, templates) = (
            view.map(|v| &v.prompts[..]),
            view.map(|v| &v.resources[..]),
            view.map(|v| &v.templates[..]),
        );
        json!({
            "tools": tools,
            "prompts": self.items(&all.prompts, &sees.prompts, PolicyItem::Prompt, prompts),
            "resources": self.items(&all.resources, &sees.resources, PolicyItem::Resource, resources),
            "templates": self.items(&all.templates, &sees.templates, PolicyItem::Resource, templates),
            "collisions": all.collisions,
        })
    }
}

fn effect_word(e: Effect) -> &'static str {
    match e {
        Effect::Allow => "allow",
        Effect::Deny => "deny",
    }
}

/// What the caller sees: through `view` (its items the policy admits) or the federation.
pub(super) fn seen(fed: &Federation, view: Option<&View>, who: Option<&Identity>) -> CatalogReport {
    match view {
        Some(v) => v.report_as(who),
        None => fed.report_as(who),
    }
}
