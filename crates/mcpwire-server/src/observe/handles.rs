//! Metric handles resolved once per label value and kept, so recording a call costs an
//! atomic add on a handle instead of building a labelled key and looking it up in the
//! recorder's registry (a `Vec` of labels, owned strings, a hash and a shard lock per
//! `metrics::counter!`).
//!
//! A [`LabelTable`] holds one [`Series`] per value of one label (`method`, `tool`): a
//! counter per `wire` × `outcome` and a histogram per `wire`, each registered with the
//! recorder the first time it is used (a combination never used never shows on `/metrics`).
//! The table is a fixed array of slots probed by the value's hash; a slot is written once
//! (`OnceLock`) and then only read, so lookups take no lock. It is bounded: a value that
//! finds no free slot within [`MAX_PROBES`] is not kept, and its caller records through
//! the `metrics` facade instead (same names and labels, slower). Which values may enter is
//! the caller's decision: a tool name enters only once the call was answered as a known
//! tool, so names a client makes up never take a slot.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use std::sync::OnceLock;

use metrics::{Counter, Histogram};

use super::wire_label::WireLabel;

/// The `outcome` label of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A result.
    Ok,
    /// A result with `isError: true`.
    ToolError,
    /// An `input_required` answer (2026-07-28).
    InputRequired,
    /// A JSON-RPC error.
    Error,
    /// Cancelled by the client, or dropped with its connection.
    Cancelled,
}

impl Outcome {
    const COUNT: usize = 5;

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::InputRequired => "input_required",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// How many slots a value may probe before it counts as not fitting.
pub(crate) const MAX_PROBES: usize = 16;

/// The metric pair one table records: a counter by `wire`, `label`, `outcome` and a
/// histogram by `wire`, `label`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Family {
    /// The counter's name.
    pub(crate) counter: &'static str,
    /// The histogram's name.
    pub(crate) histogram: &'static str,
    /// The label the table is keyed by.
    pub(crate) label: &'static str,
}

impl Family {
    /// Counts and times one call labelled `value` through the `metrics` facade (a value
    /// the table does not hold).
    pub(crate) fn record_uncached(
        self,
        wire: WireLabel,
        value: &str,
        outcome: Outcome,
        seconds: f64,
    ) {
        let (w, v) = (wire.as_str(), value.to_owned());
        metrics::counter!(self.counter, "wire" => w, self.label => v.clone(), "outcome" => outcome.as_str())
            .increment(1);
        metrics::histogram!(self.histogram, "wire" => w, self.label => v).record(seconds);
    }
}

/// The handles of one label value.
pub(crate) struct Series {
    value: Box<str>,
    counters: [[OnceLock<Counter>; Outcome::COUNT]; WireLabel::COUNT],
    histograms: [OnceLock<Histogram>; WireLabel::COUNT],
}

impl Series {
    fn new(value: &str) -> Series {
        Series {
            value: value.into(),
            counters: Default::default(),
            histograms: Default::default(),
        }
    }

    /// The label value.
    pub(crate) fn value(&self) -> &str {
        &self.value
    }
}

/// A bounded, lock-free-to-read map from label value to its [`Series`].
pub(crate) struct LabelTable {
    family: Family,
    slots: Box<[OnceLock<Series>]>,
    hasher: RandomState,
}

impl LabelTable {
    /// A table of `capacity` slots for `family`.
    pub(crate) fn new(family: Family, capacity: usize) -> LabelTable {
        LabelTable {
            family,
            slots: (0..capacity.max(1)).map(|_| OnceLock::new()).collect(),
            hasher: RandomState::default(),
        }
    }

    /// The metric pair this table records.
    pub(crate) fn family(&self) -> Family {
        self.family
    }

    /// The slots `value` may occupy, in probing order.
    fn probe(&self, value: &str) -> impl Iterator<Item = &OnceLock<Series>> {
        let n = self.slots.len();
        let start = (self.hasher.hash_one(value) as usize) % n;
        (0..MAX_PROBES.min(n)).map(move |i| &self.slots[(start + i) % n])
    }

    /// The series of `value` if the table holds it.
    pub(crate) fn get(&self, value: &str) -> Option<&Series> {
        for slot in self.probe(value) {
            match slot.get() {
                None => return None,
                Some(s) if *s.value == *value => return Some(s),
                Some(_) => {}
            }
        }
        None
    }

    /// The series of `value`, taking a free slot for it if it has none (`None`: no free
    /// slot within [`MAX_PROBES`]). Two threads adding the same value meet in the same
    /// slot: slots are filled once, in probing order.
    pub(crate) fn get_or_insert(&self, value: &str) -> Option<&Series> {
        self.probe(value).find_map(|slot| {
            let s = slot.get_or_init(|| Series::new(value));
            (*s.value == *value).then_some(s)
        })
    }

    /// How many values the table holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.get().is_some()).count()
    }

    /// Counts and times one call of `series` (a series of this table).
    pub(crate) fn record(&self, series: &Series, wire: WireLabel, outcome: Outcome, seconds: f64) {
        let f = self.family;
        let w = wire as usize;
        series.counters[w][outcome as usize]
            .get_or_init(|| {
                metrics::counter!(f.counter, "wire" => wire.as_str(), f.label => series.value.to_string(), "outcome" => outcome.as_str())
            })
            .increment(1);
        series.histograms[w]
            .get_or_init(|| {
                metrics::histogram!(f.histogram, "wire" => wire.as_str(), f.label => series.value.to_string())
            })
            .record(seconds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAMILY: Family = Family {
        counter: "test_calls_total",
        histogram: "test_call_duration_seconds",
        label: "tool",
    };

    #[test]
    fn a_value_is_found_where_it_was_put() {
        let t = LabelTable::new(FAMILY, 8);
        assert!(t.get("echo").is_none());
        let s = t.get_or_insert("echo").expect("room") as *const Series;
        assert_eq!(t.get("echo").map(|s| s as *const Series), Some(s));
        assert_eq!(t.get_or_insert("echo").map(|s| s as *const Series), Some(s));
        assert_eq!(t.len(), 1);
        assert!(t.get("add").is_none());
    }

    #[test]
    fn the_table_stays_bounded_past_its_capacity() {
        let t = LabelTable::new(FAMILY, 32);
        let mut kept = 0;
        for i in 0..10_000 {
            let name = format!("tool_{i}");
            if let Some(s) = t.get_or_insert(&name) {
                assert_eq!(s.value(), name);
                kept += 1;
            }
        }
        assert_eq!(t.len(), 32, "every slot is used, no more");
        assert_eq!(kept, 32);
        // A full table takes nothing more.
        assert!(t.get_or_insert("one_more").is_none());
        assert!(t.get("one_more").is_none());
        assert_eq!(t.len(), 32);
        // Recording through a held series needs no slot.
        let s = (0..10_000)
            .find_map(|i| t.get(&format!("tool_{i}")))
            .expect("a kept value");
        t.record(s, WireLabel::Http, Outcome::Ok, 0.001);
        assert_eq!(t.len(), 32);
    }

    #[test]
    fn values_added_from_many_threads_each_get_one_slot() {
        let t = LabelTable::new(FAMILY, 64);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for i in 0..40 {
                        t.get_or_insert(&format!("tool_{i}"));
                    }
                });
            }
        });
        let mut held: Vec<&str> = t
            .slots
            .iter()
            .filter_map(|s| s.get())
            .map(|s| s.value())
            .collect();
        let all = held.len();
        held.sort_unstable();
        held.dedup();
        assert_eq!(held.len(), all, "no value took two slots");
        for i in 0..40 {
            let name = format!("tool_{i}");
            if let Some(s) = t.get(&name) {
                assert_eq!(s.value(), name);
            }
        }
    }
}
