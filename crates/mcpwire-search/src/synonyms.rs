//! The hand-written vocabulary: synonym groups and intents (stop words and phrases, which
//! the analyzer applies to documents too, are in `words.rs`).
//!
//! Written from how people ask for things, not from any catalog's descriptions. A synonym
//! is added to a query with [`RankingOptions::synonym_weight`](crate::RankingOptions), below
//! the words the user typed; documents are never expanded, so an index's statistics do not
//! depend on the table.

use foldhash::{HashMap, HashMapExt};

use crate::analyze::Analyzer;

/// Words that mean the same in a request to a tool: each expands to the others.
const GROUPS: &[&[&str]] = &[
    &[
        "delete", "remove", "erase", "destroy", "drop", "trash", "rm", "del", "purge",
    ],
    &[
        "create", "new", "add", "make", "insert", "generate", "start",
    ],
    &["find", "search", "lookup", "query", "locate", "seek"],
    &[
        "fetch", "get", "read", "retrieve", "download", "load", "view", "obtain",
    ],
    &["list", "show", "enumerate", "browse", "ls", "display"],
    &["file", "document", "doc"],
    &["issue", "ticket", "bug"],
    &["pr", "mr"],
    &["message", "post", "chat", "dm", "msg"],
    &["send", "post", "reply", "tell", "notify"],
    &["navigate", "visit", "goto", "browse"],
    &["screenshot", "capture", "snapshot"],
    &["write", "save", "store", "persist", "put"],
    &[
        "update", "edit", "modify", "change", "patch", "alter", "set", "replace",
    ],
    &["repository", "repo", "project", "codebase"],
    &["directory", "folder", "dir"],
    &["comment", "note", "reply"],
    &["user", "member", "person", "people", "account", "profile"],
    &["channel", "room", "conversation"],
    &["page", "site", "website", "webpage", "url", "link"],
    &["click", "press", "tap"],
    &["type", "fill", "enter", "input"],
    &["run", "execute", "exec", "launch", "invoke", "evaluate"],
    &[
        "stop",
        "kill",
        "terminate",
        "cancel",
        "abort",
        "end",
        "close",
    ],
    &["convert", "translate", "transform"],
    &["database", "db"],
    &["table", "collection"],
    &["image", "picture", "photo", "pic", "png", "jpeg", "media"],
    &["documentation", "docs", "manual", "reference", "guide"],
    &["think", "reason", "reflect", "ponder"],
    &["label", "tag"],
    &["move", "rename", "mv"],
    &["copy", "duplicate", "clone", "cp"],
    &["upload", "push", "publish", "attach"],
    &["wait", "sleep", "pause", "delay"],
    &["error", "exception", "crash", "failure"],
    &["location", "place", "address", "spot"],
    &["route", "directions", "distance", "travel"],
    &["time", "clock"],
    &["content", "contents", "text", "body"],
    &["log", "logs", "output"],
    &["web", "internet", "online"],
    &["key", "secret", "token"],
    &["container", "pod"],
    &["count", "number", "total", "tally"],
    &["email", "mail"],
    &["dialog", "popup", "alert", "modal", "prompt"],
    &["monitor", "watch", "track"],
    &["observation", "fact"],
    &["details", "info", "information", "metadata"],
    &["size", "space", "bytes"],
    &["geocode", "coordinates", "latitude", "longitude"],
    &["elevation", "altitude", "height"],
];

/// Words that point at other words but not back: `remember` asks to store, but a tool that
/// stores is not about remembering.
const INTENTS: &[(&str, &[&str])] = &[
    (
        "remember",
        &["memory", "store", "save", "add", "observation", "entity"],
    ),
    ("forget", &["delete", "remove", "memory"]),
    ("know", &["memory", "graph", "read", "search"]),
    ("open", &["create", "navigate", "read", "launch"]),
    ("look", &["search", "find", "read"]),
    ("check", &["get", "status", "read", "list"]),
    ("latest", &["recent", "last", "list"]),
    ("recent", &["latest", "last", "list"]),
    ("happened", &["log", "history", "event"]),
    ("history", &["log", "commit"]),
    ("diff", &["compare", "change"]),
    ("changes", &["diff", "commit", "status"]),
    ("staged", &["diff", "status"]),
    ("near", &["nearby", "place", "search"]),
    ("nearby", &["near", "place", "search"]),
    ("drive", &["directions", "route", "distance"]),
    ("far", &["distance", "directions"]),
    ("timezone", &["time", "convert"]),
    ("weather", &["forecast"]),
    ("google", &["search", "web"]),
    ("news", &["search", "web"]),
    ("scrape", &["fetch", "extract", "crawl", "page"]),
    ("crawl", &["fetch", "scrape", "page"]),
    ("summarize", &["read", "fetch", "content"]),
    ("says", &["content", "text", "read"]),
    ("screen", &["screenshot", "snapshot"]),
    ("form", &["fill", "type", "input"]),
    ("login", &["fill", "type", "auth"]),
    ("back", &["navigate", "history"]),
    ("reload", &["navigate", "refresh"]),
    ("javascript", &["evaluate", "script", "js"]),
    ("js", &["evaluate", "script", "javascript"]),
    ("console", &["log", "message"]),
    ("network", &["request", "http"]),
    ("sql", &["query", "database", "table"]),
    ("schema", &["describe", "table", "structure"]),
    ("fork", &["copy", "repository"]),
    ("star", &["favorite"]),
    ("assign", &["assignee", "update"]),
    ("approve", &["review", "merge"]),
    ("ship", &["merge", "deploy"]),
    ("deploy", &["deployment", "publish"]),
    ("step", &["think", "thought"]),
    ("brainstorm", &["think", "thought"]),
    ("library", &["documentation", "docs", "package"]),
    ("api", &["documentation", "docs", "reference"]),
    ("tree", &["directory", "list"]),
    ("size", &["info", "metadata", "stat"]),
    ("profile", &["trace", "performance"]),
    ("print", &["output", "log"]),
    ("switch", &["checkout", "context", "select"]),
    ("stage", &["add"]),
    ("codebase", &["code"]),
    ("readme", &["file", "contents"]),
    ("address", &["geocode"]),
    ("big", &["size"]),
    ("replace", &["edit", "write"]),
    ("rename", &["move"]),
];

/// The table, analyzed with the index's analyzer (so its words meet the index's terms).
pub(crate) struct Synonyms {
    expansions: HashMap<String, Vec<String>>,
}

impl Synonyms {
    /// The table as `analyzer` sees it (stemmed if the analyzer stems).
    pub(crate) fn new(analyzer: &Analyzer) -> Self {
        let mut expansions: HashMap<String, Vec<String>> = HashMap::new();
        let mut add = |from: &str, to: &str| {
            let (Some(from), Some(to)) = (analyzer.word_term(from), analyzer.word_term(to)) else {
                return;
            };
            let targets = expansions.entry(from.clone()).or_default();
            if from != to && !targets.contains(&to) {
                targets.push(to);
            }
        };
        for group in GROUPS {
            for from in *group {
                for to in *group {
                    add(from, to);
                }
            }
        }
        for (from, targets) in INTENTS {
            for to in *targets {
                add(from, to);
            }
        }
        Synonyms { expansions }
    }

    /// The terms `term` expands to (none if it has no synonyms).
    pub(crate) fn of(&self, term: &str) -> &[String] {
        self.expansions.get(term).map_or(&[], Vec::as_slice)
    }

    /// Heap bytes held by the table (an estimate).
    pub(crate) fn approx_bytes(&self) -> usize {
        self.expansions
            .iter()
            .map(|(k, v)| {
                k.capacity()
                    + std::mem::size_of::<(String, Vec<String>)>()
                    + v.iter()
                        .map(|s| s.capacity() + std::mem::size_of::<String>())
                        .sum::<usize>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RankingOptions;

    #[test]
    fn groups_expand_both_ways_intents_one_way() {
        let synonyms = Synonyms::new(&Analyzer::new(&RankingOptions::full()));
        assert!(synonyms.of("delet").contains(&"remov".to_owned()));
        assert!(synonyms.of("remov").contains(&"delet".to_owned()));
        assert!(synonyms.of("rememb").contains(&"memori".to_owned()));
        assert!(!synonyms.of("memori").contains(&"rememb".to_owned()));
        assert!(synonyms.of("zebra").is_empty());
    }
}
