//! Metrics do not change the stdio relay's path (issue 24): with the Prometheus recorder
//! installed, the relay still carries the plain calls, and counts them in the same series
//! (`mcpwire_tool_calls_total`, `mcpwire_requests_total` and their durations, by tool,
//! outcome and wire) as many times as the general path counts the same conversation. Its
//! own test binary: the recorder is process-wide, and no other test may call meanwhile.

mod peers;
mod relay_conversation;

use std::collections::BTreeMap;

use relay_conversation::*;

/// The call series in a Prometheus rendering: `name{labels}` → value, for the families a
/// call records.
fn call_series(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| {
            l.starts_with("mcpwire_tool_calls_total{")
                || l.starts_with("mcpwire_tool_call_duration_seconds_count{")
                || l.starts_with("mcpwire_requests_total{method=\"tools/call\"")
                || l.starts_with("mcpwire_request_duration_seconds_count{method=\"tools/call\"")
        })
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// What changed from `before` to `after`, per series.
fn delta(before: &BTreeMap<String, f64>, after: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    after
        .into_iter()
        .map(|(k, v)| {
            let d = v - before.get(&k).copied().unwrap_or(0.0);
            (k, d)
        })
        .filter(|(_, d)| *d != 0.0)
        .collect()
}

#[tokio::test]
async fn relayed_calls_are_measured_as_the_general_path_measures_them() {
    let metrics = mcpwire::observe::prometheus().expect("the Prometheus recorder");
    let before = call_series(&metrics.render());
    let (general, none) = transcript(demo(), false).await;
    let counted_general = delta(&before, call_series(&metrics.render()));
    let before = call_series(&metrics.render());
    let (relayed, count) = transcript(demo(), true).await;
    let counted_relayed = delta(&before, call_series(&metrics.render()));
    assert_eq!(none, 0, "a gateway with `relay = false` relays nothing");
    assert_eq!(
        count, 10,
        "with metrics on, the relay still carried the plain calls"
    );
    assert_eq!(relayed, general);
    assert!(
        counted_general
            .keys()
            .any(|k| k.contains("outcome=\"tool_error\"")),
        "the conversation has tool errors: {counted_general:?}"
    );
    assert_eq!(counted_relayed, counted_general);
}
