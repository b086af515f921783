//! Which shape each message to an MCPB client is written in (`docs/design/mcpb.md` §
//! Message shapes): an answer in the shape its request came in, anything else (a
//! notification, an ask, an answer to a message without an id) in the shape the client
//! used last. A connection that always uses one shape costs one comparison per message;
//! only one that changes shape remembers the shapes of its requests (bounded).

use std::collections::HashMap;

use mcpwire_model::{Message, Outbound, RequestId};
use mcpwire_wire::Decoded;
use mcpwire_wire::mcpb::McpbShape;

/// Requests whose shape one connection remembers at most (more than any in-flight limit;
/// past it, an answer takes the shape of the requests before the client changed shape).
const MAX_REMEMBERED: usize = 4096;

/// The shapes of one connection's messages.
#[derive(Debug, Default)]
pub(super) struct Shapes {
    /// The shape of the client's first MCP message (and of every request before it
    /// changed shape).
    first: Option<McpbShape>,
    /// The shape of its latest.
    latest: Option<McpbShape>,
    /// Once it changed shape: the shapes of its requests since, by id, until answered.
    requests: Option<HashMap<RequestId, McpbShape>>,
}

impl Shapes {
    /// Notes an MCP message from the client in `shape`.
    pub(super) fn inbound(&mut self, shape: McpbShape, msg: &Decoded) {
        if self.first.is_none() {
            self.first = Some(shape);
        } else if self.latest != Some(shape) && self.requests.is_none() {
            self.requests = Some(HashMap::new());
        }
        self.latest = Some(shape);
        if let (Some(requests), Ok(Message::Request(r))) = (&mut self.requests, msg)
            && requests.len() < MAX_REMEMBERED
        {
            requests.insert(r.id.clone(), shape);
        }
    }

    /// Whether every MCP message of the client so far was plain JSON-RPC (and there was
    /// one): a plain request may then be relayed, its answer written plain.
    pub(super) fn all_plain(&self) -> bool {
        self.requests.is_none() && self.latest == Some(McpbShape::Plain)
    }

    /// The shape the client used last (`None` before its first MCP message).
    pub(super) fn latest(&self) -> Option<McpbShape> {
        self.latest
    }

    /// The shape to write `msg` in.
    pub(super) fn outbound(&mut self, msg: &Outbound) -> Option<McpbShape> {
        let Some(requests) = &mut self.requests else {
            return self.latest;
        };
        match msg.response_id() {
            Some(id) => requests.remove(id).or(self.first),
            None => self.latest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_model::jsonrpc::decode;

    fn request(id: i64) -> Decoded {
        Ok(decode(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes()).unwrap())
    }

    fn answer(id: i64) -> Outbound {
        Outbound::Response {
            id: RequestId::Int(id),
            result: mcpwire_model::to_raw(&serde_json::json!({})),
        }
    }

    #[test]
    fn each_answer_takes_its_requests_shape() {
        let mut s = Shapes::default();
        s.inbound(McpbShape::Plain, &request(1));
        assert_eq!(s.outbound(&answer(1)), Some(McpbShape::Plain));
        // A plain request in flight, then the client switches to the router's envelope.
        s.inbound(McpbShape::Plain, &request(2));
        s.inbound(McpbShape::Envelope, &request(3));
        assert_eq!(s.outbound(&answer(3)), Some(McpbShape::Envelope));
        assert_eq!(s.outbound(&answer(2)), Some(McpbShape::Plain));
        s.inbound(McpbShape::AuthWrapper, &request(4));
        s.inbound(McpbShape::Envelope, &request(5));
        assert_eq!(s.outbound(&answer(5)), Some(McpbShape::Envelope));
        assert_eq!(s.outbound(&answer(4)), Some(McpbShape::AuthWrapper));
        // A notification goes in the latest shape.
        let note = Outbound::Notification {
            method: "notifications/message".into(),
            params: None,
        };
        assert_eq!(s.outbound(&note), Some(McpbShape::Envelope));
    }
}
