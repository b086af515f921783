//! Merged lists served in pages, serialized once per catalog change.
//!
//! A cursor is the number of the page it leads to (the position in the merged list, in
//! pages): lists change only with a `list_changed` announcement, after which clients list
//! again from the start.

use std::sync::Arc;

use mcpwire_model::{BackendEvent, McpError, Raw, to_raw};
use serde_json::{Map, Value};

use crate::listing::{Item, Kind};

/// The pages of `items` under `field`, `page_size` items each; an empty list is one empty
/// page.
pub(crate) fn paginate<'a>(
    field: &str,
    items: impl Iterator<Item = &'a Item>,
    page_size: usize,
) -> Arc<Vec<Raw>> {
    let items: Vec<&Item> = items.collect();
    let chunks: Vec<&[&Item]> = if items.is_empty() {
        vec![&[]]
    } else {
        items.chunks(page_size.max(1)).collect()
    };
    let n = chunks.len();
    let pages = chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let mut page = Map::new();
            page.insert(
                field.to_owned(),
                Value::Array(chunk.iter().map(|&it| Value::Object(it.clone())).collect()),
            );
            if i + 1 < n {
                page.insert("nextCursor".into(), Value::from((i + 1).to_string()));
            }
            to_raw(&page)
        })
        .collect();
    Arc::new(pages)
}

/// The page `cursor` leads to.
pub(crate) fn page(pages: &[Raw], cursor: Option<&str>) -> Result<Raw, McpError> {
    let invalid = || McpError::InvalidParams(format!("invalid cursor {:?}", cursor.unwrap_or("")));
    let i = match cursor {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| invalid())?,
    };
    pages.get(i).cloned().ok_or_else(invalid)
}

/// Whether two lists of pages are the same text.
fn same(a: &[Raw], b: &[Raw]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.get() == y.get())
}

/// The `list_changed` events between two sets of per-kind pages (in `Kind::ALL` order):
/// one per list whose text changed (resources and templates share one), or all of them
/// when `refused_changed` (a fail-closed refusal started or ended).
pub(crate) fn list_changes(
    old: &[Arc<Vec<Raw>>; 4],
    new: &[Arc<Vec<Raw>>; 4],
    refusal_changed: bool,
) -> Vec<BackendEvent> {
    let differs = |k: Kind| refusal_changed || !same(&old[k.index()], &new[k.index()]);
    let mut events = Vec::new();
    if differs(Kind::Tools) {
        events.push(BackendEvent::ToolsListChanged);
    }
    if differs(Kind::Prompts) {
        events.push(BackendEvent::PromptsListChanged);
    }
    if differs(Kind::Resources) || differs(Kind::Templates) {
        events.push(BackendEvent::ResourcesListChanged);
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str) -> Item {
        let mut m = Map::new();
        m.insert("name".into(), Value::from(name));
        m
    }

    #[test]
    fn pages_and_cursors() {
        let items: Vec<Item> = (0..5).map(|i| item(&format!("t{i}"))).collect();
        let pages = paginate("tools", items.iter(), 2);
        assert_eq!(pages.len(), 3);
        let first: Value = serde_json::from_str(page(&pages, None).unwrap().get()).unwrap();
        assert_eq!(first["nextCursor"], "1");
        assert_eq!(first["tools"][1]["name"], "t1");
        let last: Value = serde_json::from_str(page(&pages, Some("2")).unwrap().get()).unwrap();
        assert!(last.get("nextCursor").is_none());
        assert!(page(&pages, Some("3")).is_err());
        assert!(page(&pages, Some("x")).is_err());
        let empty = paginate("tools", std::iter::empty(), 2);
        assert_eq!(empty[0].get(), r#"{"tools":[]}"#);
    }
}
