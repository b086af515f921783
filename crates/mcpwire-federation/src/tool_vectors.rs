//! The semantic side of the tool index: a sentence-embedding model ([`Embed`]) the operator
//! supplied, the vectors of the exposed tools, and one background thread that embeds a
//! member's tools when the catalog changes them (17 ms or so per tool with MiniLM-L6: never
//! under a lock, never on the runtime). Until a member's vectors are ready its tools rank by
//! the lexical side alone; vectors of an outdated listing are never installed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};

use mcpwire_search::{Embed, Hit, TextOptions, ToolInput, ToolRef, VectorIndex, tool_text};

/// Query vectors kept per generation of the cache (two generations: at most twice this).
const QUERY_CACHE: usize = 256;

/// The model, the tool vectors and the embedding thread of one federation.
pub(crate) struct ToolVectors {
    model: Arc<dyn Embed>,
    shared: Arc<Shared>,
    queries: Mutex<QueryCache>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// The vectors, apart from the jobs' state: searches only read them (concurrently),
    /// the embedding thread writes once per member embedded.
    vectors: RwLock<VectorIndex>,
}

#[derive(Default)]
struct State {
    /// The stamp of each member's current listing; a job with another stamp is outdated.
    expected: HashMap<String, u64>,
    /// At most one job per member (a newer listing replaces the queued one).
    pending: VecDeque<Job>,
    /// A job is being embedded.
    busy: bool,
    /// The last stamp given.
    last_stamp: u64,
    closed: bool,
}

struct Job {
    member: String,
    stamp: u64,
    /// (exposed name, text to embed).
    tools: Vec<(String, String)>,
}

/// Recent query vectors, in two generations (the older one is dropped when the newer fills).
#[derive(Default)]
struct QueryCache {
    new: HashMap<String, Arc<[f32]>>,
    old: HashMap<String, Arc<[f32]>>,
}

impl QueryCache {
    fn get(&mut self, query: &str) -> Option<Arc<[f32]>> {
        if let Some(v) = self.new.get(query) {
            return Some(v.clone());
        }
        let v = self.old.remove(query)?;
        self.put(query, v.clone());
        Some(v)
    }

    fn put(&mut self, query: &str, vector: Arc<[f32]>) {
        if self.new.len() >= QUERY_CACHE {
            self.old = std::mem::take(&mut self.new);
        }
        self.new.insert(query.to_owned(), vector);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

impl ToolVectors {
    /// Starts the embedding thread for `model`.
    pub(crate) fn new(model: Arc<dyn Embed>) -> ToolVectors {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            vectors: RwLock::new(VectorIndex::new()),
        });
        let (worker, thread_model) = (shared.clone(), model.clone());
        let spawned = std::thread::Builder::new()
            .name("mcpwire-embed".into())
            .spawn(move || embed_jobs(&worker, &*thread_model));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "no thread to embed tools: search is lexical only");
        }
        ToolVectors {
            model,
            shared,
            queries: Mutex::new(QueryCache::default()),
        }
    }

    /// `member`'s tools changed to `tools` (exposed name, the tool as embedded): their
    /// vectors are computed again (in the background); the old ones are dropped at once.
    pub(crate) fn replace_member<'t>(
        &self,
        member: &str,
        tools: impl IntoIterator<Item = (&'t str, ToolInput<'t>)>,
    ) {
        let tools: Vec<(String, String)> = tools
            .into_iter()
            .map(|(key, t)| {
                (
                    key.to_owned(),
                    tool_text(member, &t, TextOptions::default()),
                )
            })
            .collect();
        let mut st = lock(&self.shared.state);
        st.last_stamp += 1;
        let stamp = st.last_stamp;
        write(&self.shared.vectors).remove_backend(member);
        st.pending.retain(|j| j.member != member);
        if tools.is_empty() {
            st.expected.remove(member);
            return;
        }
        st.expected.insert(member.to_owned(), stamp);
        st.pending.push_back(Job {
            member: member.to_owned(),
            stamp,
            tools,
        });
        drop(st);
        self.shared.wake.notify_one();
    }

    /// `member` left the catalog (or has no tools any more).
    pub(crate) fn remove_member(&self, member: &str) {
        let mut st = lock(&self.shared.state);
        write(&self.shared.vectors).remove_backend(member);
        st.expected.remove(member);
        st.pending.retain(|j| j.member != member);
    }

    /// The model (for query vectors).
    pub(crate) fn model(&self) -> &Arc<dyn Embed> {
        &self.model
    }

    /// A cached vector for `query`.
    pub(crate) fn cached_query(&self, query: &str) -> Option<Arc<[f32]>> {
        lock(&self.queries).get(query)
    }

    /// Remembers `query`'s vector.
    pub(crate) fn cache_query(&self, query: &str, vector: Arc<[f32]>) {
        lock(&self.queries).put(query, vector);
    }

    /// Calls `with` on the `depth` tools closest to `query` among those `visible` admits.
    pub(crate) fn search<R>(
        &self,
        query: &[f32],
        depth: usize,
        visible: &dyn Fn(ToolRef<'_>) -> bool,
        with: impl FnOnce(&[Hit<'_>]) -> R,
    ) -> R {
        let vectors = self
            .shared
            .vectors
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        with(&vectors.search(query, depth, visible))
    }

    /// Members whose vectors are queued or being computed.
    pub(crate) fn pending(&self) -> usize {
        let st = lock(&self.shared.state);
        st.pending.len() + usize::from(st.busy)
    }

    /// Vectors held, and their heap bytes about.
    pub(crate) fn size(&self) -> (usize, usize) {
        let vectors = self
            .shared
            .vectors
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        (vectors.len(), vectors.approx_bytes())
    }
}

impl Drop for ToolVectors {
    fn drop(&mut self) {
        lock(&self.shared.state).closed = true;
        self.shared.wake.notify_all();
    }
}

/// The embedding thread: takes a job, embeds its texts with no lock held, installs the
/// vectors if the job is still current; stops when the index is dropped.
fn embed_jobs(shared: &Shared, model: &dyn Embed) {
    loop {
        let job = {
            let mut st = lock(&shared.state);
            st.busy = false;
            loop {
                if st.closed {
                    return;
                }
                if let Some(job) = st.pending.pop_front() {
                    st.busy = true;
                    break job;
                }
                st = shared.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let current = |st: &State| st.expected.get(&job.member) == Some(&job.stamp);
        let mut vectors = Vec::with_capacity(job.tools.len());
        let mut outdated = false;
        for (name, text) in &job.tools {
            {
                let st = lock(&shared.state);
                if st.closed || !current(&st) {
                    outdated = true;
                    break;
                }
            }
            match model.embed(text) {
                Ok(v) if v.len() == model.dimensions() => vectors.push((name.clone(), v)),
                Ok(_) => tracing::warn!(tool = %name, "embedding of the wrong length, skipped"),
                Err(e) => tracing::warn!(tool = %name, error = %e, "tool not embedded"),
            }
        }
        let st = lock(&shared.state);
        if !outdated && current(&st) {
            tracing::debug!(member = %job.member, tools = vectors.len(), "tool vectors ready");
            // Under the state lock too, so a newer listing cannot slip in between.
            write(&shared.vectors).replace_backend(&job.member, vectors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_cache_holds_two_generations_at_most() {
        let mut cache = QueryCache::default();
        let vector: Arc<[f32]> = vec![1.0].into();
        for i in 0..QUERY_CACHE * 5 {
            cache.put(&format!("q{i}"), vector.clone());
            assert!(cache.new.len() + cache.old.len() <= 2 * QUERY_CACHE);
        }
        // The most recent queries are kept; the oldest are gone.
        let last = QUERY_CACHE * 5 - 1;
        assert!(cache.get(&format!("q{last}")).is_some());
        assert!(cache.get("q0").is_none());
        // A query found in the older generation moves to the newer one.
        let older = cache
            .old
            .keys()
            .next()
            .cloned()
            .expect("an older generation");
        assert!(cache.get(&older).is_some());
        assert!(cache.new.contains_key(&older) && !cache.old.contains_key(&older));
    }
}
