//! The index: documents (one per tool), the term dictionary and postings, kept per backend
//! so that one backend's catalog change re-indexes that backend alone.

use std::sync::{Arc, OnceLock};

use foldhash::{HashMap, HashMapExt};

use crate::analyze::{Analyzer, Scratch};
use crate::input::ToolInput;
use crate::options::{FIELD_COUNT, Field, RankingOptions};
use crate::synonyms::Synonyms;

/// At most this many terms are read from one field of one tool (descriptions can be long).
pub const MAX_FIELD_TERMS: usize = 1024;

pub(crate) type TermId = u32;
pub(crate) type DocId = u32;

/// One term's occurrences: which documents hold it, how often in each field.
pub(crate) struct Postings {
    pub(crate) term: Box<str>,
    pub(crate) entries: Vec<Posting>,
}

/// One document holding a term, and the term's frequency in each of its fields.
#[derive(Clone, Copy)]
pub(crate) struct Posting {
    pub(crate) doc: DocId,
    pub(crate) tf: [u16; FIELD_COUNT],
}

/// One indexed tool.
pub(crate) struct Doc {
    pub(crate) backend: Arc<str>,
    pub(crate) name: Box<str>,
    /// Terms per field (the BM25F field lengths).
    pub(crate) lengths: [u32; FIELD_COUNT],
    /// The distinct terms it holds, to find its postings when it is removed.
    terms: Box<[TermId]>,
}

/// A search index over the tools of many backends.
///
/// Built with one [`RankingOptions`] (changing them means a new index). Backends are added,
/// replaced and removed one at a time; document frequencies and field lengths stay those of
/// the tools currently indexed, so an index updated backend by backend ranks exactly as one
/// built from scratch with the same tools.
pub struct Index {
    pub(crate) options: RankingOptions,
    pub(crate) analyzer: Analyzer,
    /// The synonym table, built by the first search that expands a term (≈ 10 M
    /// instructions: a gateway whose catalog is never searched does not pay for it).
    synonyms: OnceLock<Synonyms>,
    pub(crate) terms: HashMap<Box<str>, TermId>,
    pub(crate) postings: Vec<Postings>,
    free_terms: Vec<TermId>,
    pub(crate) docs: Vec<Option<Doc>>,
    free_docs: Vec<DocId>,
    backends: HashMap<Arc<str>, Vec<DocId>>,
}

impl Index {
    /// An empty index that analyzes and ranks as `options` say.
    pub fn new(options: RankingOptions) -> Self {
        let analyzer = Analyzer::new(&options);
        Index {
            options,
            analyzer,
            synonyms: OnceLock::new(),
            terms: HashMap::new(),
            postings: Vec::new(),
            free_terms: Vec::new(),
            docs: Vec::new(),
            free_docs: Vec::new(),
            backends: HashMap::new(),
        }
    }

    /// The options the index was built with.
    pub fn options(&self) -> &RankingOptions {
        &self.options
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.docs.len() - self.free_docs.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many distinct terms the index holds.
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }

    /// Replaces everything indexed for `backend` with `tools` (the backend's name and
    /// `instructions` are indexed with each tool). Only this backend's tools are analyzed.
    /// Tool names are expected to be unique within a backend; duplicates are indexed as given.
    pub fn replace_backend<'t>(
        &mut self,
        backend: &str,
        instructions: &str,
        tools: impl IntoIterator<Item = ToolInput<'t>>,
    ) {
        self.remove_backend(backend);
        let backend: Arc<str> = Arc::from(backend);
        let mut scratch = Scratch::default();
        let mut shared = FieldTerms::default();
        self.analyze_field(&mut shared, Field::BackendName, &backend, &mut scratch);
        self.analyze_field(
            &mut shared,
            Field::BackendInstructions,
            instructions,
            &mut scratch,
        );
        let mut ids = Vec::new();
        let mut terms = FieldTerms::default();
        for tool in tools {
            terms.clone_from(&shared);
            self.analyze_tool(&mut terms, &tool, &mut scratch);
            ids.push(self.insert_doc(Arc::clone(&backend), tool.name, &mut terms));
        }
        // A backend with no tools leaves its name's and instructions' terms unused.
        for &(term, _) in &shared.occurrences {
            self.free_if_unused(term);
        }
        self.backends.insert(backend, ids);
    }

    /// Removes every tool of `backend`; returns whether it was indexed.
    pub fn remove_backend(&mut self, backend: &str) -> bool {
        let Some(ids) = self.backends.remove(backend) else {
            return false;
        };
        for id in ids {
            let Some(doc) = self.docs.get_mut(id as usize).and_then(Option::take) else {
                continue;
            };
            for &term in doc.terms.iter() {
                self.remove_posting(term, id);
            }
            self.free_docs.push(id);
        }
        true
    }

    /// An estimate of the heap bytes the index holds (dictionary, postings, documents,
    /// synonym table), from capacities: what a gateway would report as the catalog's cost.
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        let dictionary: usize = self
            .terms
            .keys()
            .map(|k| k.len() + size_of::<(Box<str>, TermId)>() + 1)
            .sum();
        let postings: usize = self
            .postings
            .iter()
            .map(|p| {
                p.term.len() + size_of::<Postings>() + p.entries.capacity() * size_of::<Posting>()
            })
            .sum();
        let docs: usize = self
            .docs
            .iter()
            .flatten()
            .map(|d| d.name.len() + d.terms.len() * size_of::<TermId>())
            .sum::<usize>()
            + self.docs.capacity() * size_of::<Option<Doc>>();
        let backends: usize = self
            .backends
            .iter()
            .map(|(name, ids)| name.len() + 16 + ids.capacity() * size_of::<DocId>())
            .sum();
        let synonyms = self.synonyms.get().map_or(0, Synonyms::approx_bytes);
        dictionary + postings + docs + backends + synonyms
    }

    /// The synonym table (built on first use).
    pub(crate) fn synonyms(&self) -> &Synonyms {
        self.synonyms.get_or_init(|| Synonyms::new(&self.analyzer))
    }

    fn analyze_tool(
        &mut self,
        terms: &mut FieldTerms,
        tool: &ToolInput<'_>,
        scratch: &mut Scratch,
    ) {
        self.analyze_field(terms, Field::Name, tool.name, scratch);
        if let Some(title) = tool.title {
            self.analyze_field(terms, Field::Title, title, scratch);
        }
        if let Some(description) = tool.description {
            self.analyze_field(terms, Field::Description, description, scratch);
        }
        if self.options.indexed(Field::Params).is_some() {
            let mut texts = Vec::new();
            tool.param_texts(&mut |text| texts.push(text));
            for text in texts {
                self.analyze_field(terms, Field::Params, text, scratch);
            }
        }
    }

    /// Adds the terms of `text` to `terms` under `field`'s slot (if the field is indexed).
    fn analyze_field(
        &mut self,
        terms: &mut FieldTerms,
        field: Field,
        text: &str,
        scratch: &mut Scratch,
    ) {
        if self.options.indexed(field).is_none() {
            return;
        }
        let slot = self.options.slot_of(field);
        let budget = MAX_FIELD_TERMS.saturating_sub(terms.lengths[slot] as usize);
        let dictionary = Dictionary {
            terms: &mut self.terms,
            postings: &mut self.postings,
            free: &mut self.free_terms,
        };
        let mut dictionary = dictionary;
        let n = self.analyzer.analyze(text, budget, scratch, &mut |term| {
            let id = dictionary.intern(term);
            terms.occurrences.push((id, slot as u8));
        });
        terms.lengths[slot] += n as u32;
    }

    fn insert_doc(&mut self, backend: Arc<str>, name: &str, terms: &mut FieldTerms) -> DocId {
        let id = self.free_docs.pop().unwrap_or(self.docs.len() as DocId);
        terms.occurrences.sort_unstable();
        let mut distinct = Vec::new();
        let mut occurrences = terms.occurrences.iter().peekable();
        while let Some(&(term, slot)) = occurrences.next() {
            let mut tf = [0u16; FIELD_COUNT];
            tf[slot as usize] = 1;
            while let Some(&&(next, slot)) = occurrences.peek() {
                if next != term {
                    break;
                }
                tf[slot as usize] = tf[slot as usize].saturating_add(1);
                occurrences.next();
            }
            self.postings[term as usize]
                .entries
                .push(Posting { doc: id, tf });
            distinct.push(term);
        }
        let doc = Doc {
            backend,
            name: name.into(),
            lengths: terms.lengths,
            terms: distinct.into_boxed_slice(),
        };
        match self.docs.get_mut(id as usize) {
            Some(slot) => *slot = Some(doc),
            None => self.docs.push(Some(doc)),
        }
        id
    }

    fn remove_posting(&mut self, term: TermId, doc: DocId) {
        let Some(postings) = self.postings.get_mut(term as usize) else {
            return;
        };
        if let Some(at) = postings.entries.iter().position(|p| p.doc == doc) {
            postings.entries.swap_remove(at);
        }
        self.free_if_unused(term);
    }

    /// Drops `term` from the dictionary once no document holds it.
    fn free_if_unused(&mut self, term: TermId) {
        let Some(postings) = self.postings.get_mut(term as usize) else {
            return;
        };
        if postings.entries.is_empty() && !postings.term.is_empty() {
            self.terms.remove(&postings.term);
            postings.term = Box::from("");
            postings.entries = Vec::new();
            self.free_terms.push(term);
        }
    }
}

/// A tool's analyzed terms before they become postings: `(term, field slot)` per occurrence.
#[derive(Clone, Default)]
struct FieldTerms {
    occurrences: Vec<(TermId, u8)>,
    lengths: [u32; FIELD_COUNT],
}

/// The term dictionary, borrowed apart from the analyzer.
struct Dictionary<'i> {
    terms: &'i mut HashMap<Box<str>, TermId>,
    postings: &'i mut Vec<Postings>,
    free: &'i mut Vec<TermId>,
}

impl Dictionary<'_> {
    fn intern(&mut self, term: &str) -> TermId {
        if let Some(&id) = self.terms.get(term) {
            return id;
        }
        let postings = Postings {
            term: term.into(),
            entries: Vec::new(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.postings[id as usize] = postings;
                id
            }
            None => {
                self.postings.push(postings);
                (self.postings.len() - 1) as TermId
            }
        };
        self.terms.insert(term.into(), id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index nobody searches never builds the synonym table; the first search does,
    /// and expands with it (`remove` finds the tool that says `delete`).
    #[test]
    fn the_synonym_table_is_built_by_the_first_search() {
        let mut index = Index::new(RankingOptions::full());
        let description = Some("Delete a file");
        let tool = ToolInput {
            name: "unlink",
            description,
            ..Default::default()
        };
        index.replace_backend("files", "", [tool]);
        assert!(index.synonyms.get().is_none(), "not built by the index");
        let hits = index.search("remove", 5, &|_| true);
        assert!(index.synonyms.get().is_some(), "built by the search");
        assert_eq!(hits.len(), 1, "found through the synonym");
    }
}
