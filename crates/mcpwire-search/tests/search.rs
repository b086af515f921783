//! The index on a small catalog written for these tests.

use mcpwire_search::{Hit, Index, MAX_QUERY_BYTES, RankingOptions, ToolInput, ToolRef};
use proptest::prelude::*;
use serde_json::{Value, json};

/// (backend, instructions, tools)
fn catalog() -> Vec<(&'static str, &'static str, Vec<Value>)> {
    vec![
        (
            "github",
            "Tools for GitHub repositories.",
            vec![
                json!({"name": "create_issue", "description": "Open a new issue in a repository",
                       "inputSchema": {"properties": {"title": {"description": "Issue title"}}}}),
                json!({"name": "create_branch", "description": "Create a new branch"}),
                json!({"name": "list_commits", "description": "Commits of a branch"}),
            ],
        ),
        (
            "gitlab",
            "",
            vec![
                json!({"name": "create_issue", "description": "Open a new issue in a project"}),
                json!({"name": "create_branch", "description": "Create a new branch"}),
                json!({"name": "create_merge_request", "description": "Propose changes"}),
            ],
        ),
        (
            "browser",
            "",
            vec![
                json!({"name": "browserNavigate", "description": "Load a URL in the current tab"}),
                json!({"name": "take-screenshot", "description": "Capture the viewport as PNG"}),
                json!({"name": "HTTPRequest", "description": "Send a raw request"}),
            ],
        ),
        (
            "files",
            "",
            vec![
                json!({"name": "delete_file", "description": "Removes a path"}),
                json!({"name": "read_file", "title": "Read file",
                       "description": "Mentions deleting nothing; returns contents"}),
            ],
        ),
    ]
}

fn index(options: RankingOptions) -> Index {
    let mut index = Index::new(options);
    for (backend, instructions, tools) in catalog() {
        let tools: Vec<ToolInput<'_>> = tools
            .iter()
            .map(|t| ToolInput::from_json(t).unwrap())
            .collect();
        index.replace_backend(backend, instructions, tools);
    }
    index
}

fn names(hits: &[Hit<'_>]) -> Vec<String> {
    hits.iter()
        .map(|h| format!("{}/{}", h.backend, h.name))
        .collect()
}

fn top(index: &Index, query: &str) -> String {
    names(&index.search(query, 1, &|_| true))
        .pop()
        .unwrap_or_default()
}

#[test]
fn identifier_pieces_match_words() {
    let index = index(RankingOptions::full());
    assert_eq!(top(&index, "navigate"), "browser/browserNavigate");
    assert_eq!(top(&index, "screenshot"), "browser/take-screenshot");
    assert_eq!(top(&index, "http"), "browser/HTTPRequest");
    let unsplit = self::index(RankingOptions::bm25f());
    assert!(unsplit.search("navigate", 5, &|_| true).is_empty());
}

#[test]
fn stems_and_synonyms_match_other_words() {
    let index = index(RankingOptions::full());
    assert_eq!(top(&index, "navigating"), "browser/browserNavigate");
    assert_eq!(top(&index, "erase the file"), "files/delete_file");
    assert_eq!(
        top(&index, "open a pull request on gitlab"),
        "gitlab/create_merge_request"
    );
    let without = self::index(RankingOptions::bm25f_split_stem());
    assert!(without.search("erase", 5, &|_| true).is_empty());
}

#[test]
fn a_word_in_the_name_beats_the_same_word_in_a_description() {
    let index = index(RankingOptions::full());
    let hits = names(&index.search("delete file", 2, &|_| true));
    assert_eq!(hits, ["files/delete_file", "files/read_file"]);
}

#[test]
fn the_backend_name_disambiguates() {
    let index = index(RankingOptions::full());
    assert_eq!(
        top(&index, "make a branch in gitlab"),
        "gitlab/create_branch"
    );
    assert_eq!(
        top(&index, "make a branch in github"),
        "github/create_branch"
    );
    assert_eq!(
        top(&index, "report a ticket on GitLab"),
        "gitlab/create_issue"
    );
}

#[test]
fn the_filter_hides_tools_and_their_statistics() {
    let index = index(RankingOptions::full());
    let no_github = |t: ToolRef<'_>| t.backend != "github";
    for query in ["create issue github", "branch", "new issue", "commits"] {
        let hits = index.search(query, 10, &no_github);
        assert!(hits.iter().all(|h| h.backend != "github"), "{query}");
        // Exactly what an index without github would say: scores included.
        let mut without = Index::new(RankingOptions::full());
        for (backend, instructions, tools) in catalog().into_iter().filter(|c| c.0 != "github") {
            let tools = tools
                .iter()
                .map(|t| ToolInput::from_json(t).unwrap())
                .collect::<Vec<_>>();
            without.replace_backend(backend, instructions, tools);
        }
        assert_eq!(hits, without.search(query, 10, &|_| true), "{query}");
    }
    assert!(index.search("issue", 10, &|_| false).is_empty());
}

#[test]
fn bad_input_costs_nothing() {
    let index = index(RankingOptions::full());
    assert!(index.search("", 5, &|_| true).is_empty());
    assert!(index.search("   ?!  ", 5, &|_| true).is_empty());
    assert!(index.search("the of and", 5, &|_| true).is_empty());
    assert!(index.search("issue", 0, &|_| true).is_empty());
    assert_eq!(index.search("issue", usize::MAX, &|_| true).len(), 2);
    let huge = "ticket ".repeat(100_000);
    assert!(!index.search(&huge, 5, &|_| true).is_empty());
    let wide = "é".repeat(MAX_QUERY_BYTES); // a cut inside a character must not panic
    assert!(index.search(&wide, 5, &|_| true).is_empty());
    assert!(index.search("日本語 🚀 ΣΊΣΥΦΟΣ", 5, &|_| true).is_empty());
    assert!(
        Index::new(RankingOptions::full())
            .search("issue", 5, &|_| true)
            .is_empty()
    );
}

#[test]
fn removing_a_backend_frees_its_terms() {
    let mut index = index(RankingOptions::full());
    let (terms, tools) = (index.term_count(), index.len());
    index.replace_backend(
        "extra",
        "zebra instructions",
        [ToolInput {
            name: "quux_zebra",
            ..Default::default()
        }],
    );
    assert!(index.term_count() > terms);
    assert!(index.remove_backend("extra"));
    assert!(!index.remove_backend("extra"));
    assert_eq!((index.term_count(), index.len()), (terms, tools));
    index.replace_backend("empty", "words nobody holds", []);
    assert_eq!(index.term_count(), terms);
    assert!(index.approx_bytes() > 0);
}

/// One step of a random history of catalog changes.
#[derive(Debug, Clone)]
enum Change {
    Replace { backend: usize, tools: Vec<usize> },
    Remove { backend: usize },
}

const NAMES: [&str; 8] = [
    "create_issue",
    "delete_file",
    "browserNavigate",
    "list_commits",
    "get-file-contents",
    "HTTPRequest",
    "search_code",
    "take_screenshot",
];
const DESCRIPTIONS: [&str; 4] = [
    "Create or open something new",
    "Remove files and folders",
    "Read the contents",
    "",
];

fn tool(i: usize) -> Value {
    json!({"name": NAMES[i % NAMES.len()], "description": DESCRIPTIONS[i % DESCRIPTIONS.len()]})
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0..4usize, prop::collection::vec(0..32usize, 0..6))
            .prop_map(|(backend, tools)| Change::Replace { backend, tools }),
        (0..4usize).prop_map(|backend| Change::Remove { backend }),
    ]
}

proptest! {
    /// An index updated backend by backend ranks exactly as one rebuilt from the final state.
    #[test]
    fn incremental_updates_equal_a_rebuild(changes in prop::collection::vec(change(), 1..20)) {
        let mut incremental = Index::new(RankingOptions::full());
        let mut state: [Option<Vec<usize>>; 4] = Default::default();
        for change in &changes {
            match change {
                Change::Replace { backend, tools } => {
                    let json: Vec<Value> = tools.iter().map(|&i| tool(i)).collect();
                    let inputs = json.iter().map(|t| ToolInput::from_json(t).unwrap());
                    incremental.replace_backend(&format!("b{backend}"), "shared words", inputs);
                    state[*backend] = Some(tools.clone());
                }
                Change::Remove { backend } => {
                    incremental.remove_backend(&format!("b{backend}"));
                    state[*backend] = None;
                }
            }
        }
        let mut rebuilt = Index::new(RankingOptions::full());
        for (backend, tools) in state.iter().enumerate() {
            if let Some(tools) = tools {
                let json: Vec<Value> = tools.iter().map(|&i| tool(i)).collect();
                let inputs = json.iter().map(|t| ToolInput::from_json(t).unwrap());
                rebuilt.replace_backend(&format!("b{backend}"), "shared words", inputs);
            }
        }
        prop_assert_eq!(incremental.len(), rebuilt.len());
        prop_assert_eq!(incremental.term_count(), rebuilt.term_count());
        for query in ["create issue", "remove file", "navigate", "b1 contents", "http request words"] {
            prop_assert_eq!(
                incremental.search(query, 50, &|_| true),
                rebuilt.search(query, 50, &|_| true)
            );
        }
    }
}
