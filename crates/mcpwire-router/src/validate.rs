//! [`Validator`]: a tool's input schema, compiled once, checking the arguments of each call
//! before the handler runs (cargo feature `validation`, on by default, through the
//! `jsonschema` crate).
//!
//! Without the feature nothing is compiled and nothing is checked beyond what the handler
//! itself enforces: a typed tool's arguments still have to deserialize into its Rust type
//! (so types, required fields and enums are enforced by serde), but keyword constraints
//! serde does not know (`minimum`, `pattern`, `maxLength`, …) and the schemas of raw tools
//! (tool processes, upstream catalogs) are not checked here — the backend that owns the
//! tool checks them, as an upstream server does. A tool author's small server can leave
//! the feature off to compile about 80 fewer crates.

use serde_json::Value;

/// A compiled input schema.
#[cfg(feature = "validation")]
pub(crate) struct Validator(jsonschema::Validator);

/// A compiled input schema: none exist without the `validation` feature.
#[cfg(not(feature = "validation"))]
pub(crate) enum Validator {}

impl Validator {
    /// `schema` compiled; `None` when it does not compile (or validation is compiled out):
    /// such a tool's arguments are then not checked against it.
    pub(crate) fn compile(schema: &Value) -> Option<Validator> {
        #[cfg(feature = "validation")]
        {
            jsonschema::validator_for(schema).ok().map(Validator)
        }
        #[cfg(not(feature = "validation"))]
        {
            let _ = schema;
            None
        }
    }

    /// What is wrong with `value`, at most three findings, each with the path it is at;
    /// empty when it is valid.
    pub(crate) fn errors(&self, value: &Value) -> Vec<String> {
        #[cfg(feature = "validation")]
        {
            self.0
                .iter_errors(value)
                .take(3)
                .map(|e| {
                    let path = e.instance_path().to_string();
                    if path.is_empty() {
                        e.to_string()
                    } else {
                        format!("{path}: {e}")
                    }
                })
                .collect()
        }
        #[cfg(not(feature = "validation"))]
        {
            let _ = value;
            match *self {}
        }
    }
}
