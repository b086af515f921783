//! [`SchemaCache`]: converted schemas kept across catalog rebuilds.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::{SchemaError, ToolSchemas, tool_schemas};

/// Converted tool schemas by (tool name, input schema, output schema), so a catalog rebuilt
/// after `list_changed` converts only the tools that changed (a conversion costs about a
/// millisecond of protox compiling). Bounded: when full it starts over.
#[derive(Debug)]
pub struct SchemaCache {
    entries: Mutex<HashMap<String, Result<ToolSchemas, SchemaError>>>,
    capacity: usize,
}

impl SchemaCache {
    /// A cache of at most `capacity` tools.
    pub fn new(capacity: usize) -> SchemaCache {
        SchemaCache {
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// [`tool_schemas`] for these schemas, converted once (failures are cached too).
    pub fn get(
        &self,
        tool_name: &str,
        input: &Value,
        output: Option<&Value>,
    ) -> Result<ToolSchemas, SchemaError> {
        let key = format!(
            "{tool_name}\n{input}\n{}",
            output.map_or_else(String::new, Value::to_string)
        );
        if let Ok(map) = self.entries.lock()
            && let Some(hit) = map.get(&key)
        {
            return hit.clone();
        }
        let converted = tool_schemas(tool_name, input, output);
        if let Ok(mut map) = self.entries.lock() {
            if map.len() >= self.capacity {
                map.clear();
            }
            map.insert(key, converted.clone());
        }
        converted
    }

    /// Tools currently cached.
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |m| m.len())
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for SchemaCache {
    fn default() -> SchemaCache {
        SchemaCache::new(10_000)
    }
}
