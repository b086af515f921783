//! Request spans do not change the stdio relay's path (issue 24): with `mcpwire::request`
//! spans on, the relay still carries the plain calls, and each call's `request` span has the
//! fields the general path gives the same call (wire, method, tool, backend, outcome). Its
//! own test binary: the subscriber is process-wide.

mod peers;
mod relay_conversation;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use relay_conversation::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

/// One span's fields, by name.
type Fields = BTreeMap<String, String>;

/// Keeps the fields of every `request` span that closed.
#[derive(Clone, Default)]
struct Requests(Arc<Mutex<Vec<Fields>>>);

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Requests {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "request" {
            return;
        }
        let mut fields = Fields::new();
        attrs.record(&mut Collect(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(&mut Collect(fields));
        }
    }
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && let Some(fields) = span.extensions_mut().remove::<Fields>()
            && let Ok(mut all) = self.0.lock()
        {
            all.push(fields);
        }
    }
}

impl Requests {
    /// The `tools/call` spans closed so far, sorted (calls finish in any order), and
    /// forgotten.
    fn take(&self) -> Vec<Fields> {
        let mut all: Vec<Fields> = std::mem::take(&mut *self.0.lock().expect("lock"))
            .into_iter()
            .filter(|f| f.get("method").map(String::as_str) == Some("tools/call"))
            .collect();
        all.sort();
        all
    }
}

#[tokio::test]
async fn relayed_calls_have_the_general_paths_request_spans() {
    let requests = Requests::default();
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target("mcpwire::request", tracing::Level::INFO);
    let subscriber = Registry::default().with(requests.clone().with_filter(filter));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let (general, none) = transcript(demo(), false).await;
    let spans_general = requests.take();
    let (relayed, count) = transcript(demo(), true).await;
    let spans_relayed = requests.take();
    assert_eq!(none, 0, "a gateway with `relay = false` relays nothing");
    assert_eq!(
        count, 10,
        "with request spans on, the relay still carried the plain calls"
    );
    assert_eq!(relayed, general);
    assert!(
        spans_general
            .iter()
            .any(|f| f.get("outcome").map(String::as_str) == Some("tool_error")),
        "{spans_general:?}"
    );
    assert_eq!(spans_relayed, spans_general);
}
