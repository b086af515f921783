//! Asks from the process (sampling, roots): answered through the client of the call they
//! are attributed to (see `crate::pending`), off the I/O task. At most
//! [`MAX_ASKS`](crate::channel::MAX_ASKS) wait for a client at once per generation; beyond
//! that an ask is refused at once (a sampling request gets `{error}`, a roots request an
//! empty list), so a flood costs neither tasks nor memory.

use std::sync::Arc;

use crate::channel::{ChildChannel, MAX_ASKS};
use crate::pb::{self, Envelope, envelope::Msg};

/// An ask the process sent.
pub(crate) enum Ask {
    /// `sampling_request`.
    Sampling(pb::SamplingRequest),
    /// `list_roots_request`.
    Roots,
}

/// Starts answering ask `id`; returns the refusal to write at once when too many asks are in
/// flight. An ask that must ride an `input_required` result ends the call it belongs to.
pub(crate) fn start(channel: &Arc<ChildChannel>, id: String, ask: Ask) -> Option<Envelope> {
    let Some(slot) = channel.ask_slot() else {
        return Some(refusal(id, &ask));
    };
    let (origin, ctx) = channel.attributed().unzip();
    let done = channel.done.clone();
    tokio::spawn(async move {
        let answer = async move {
            match ask {
                Ask::Sampling(s) => {
                    let (reply, input_required) = crate::convert::sample(ctx, s).await;
                    (Msg::SamplingResponse(reply), input_required)
                }
                Ask::Roots => {
                    let (reply, input_required) = crate::convert::roots(ctx).await;
                    (Msg::ListRootsResponse(reply), input_required)
                }
            }
        };
        let (reply, input_required) = tokio::select! {
            a = answer => a,
            _ = done.cancelled() => return,
        };
        let channel = slot.channel();
        // The call learns first that it ends with `input_required`; only then may the
        // process hear its ask was refused (and, say, finish its task with that refusal).
        if let (true, Some(origin)) = (input_required, origin.as_deref()) {
            channel.input_required(origin);
        }
        channel.send_control(Envelope {
            msg: Some(reply),
            request_id: id,
            namespace: String::new(),
        });
    });
    None
}

/// The answer to an ask refused for want of room.
fn refusal(id: String, ask: &Ask) -> Envelope {
    let msg = match ask {
        Ask::Sampling(_) => Msg::SamplingResponse(pb::SamplingResponse {
            error: format!("too many requests to the client in flight (limit {MAX_ASKS})"),
            ..Default::default()
        }),
        Ask::Roots => Msg::ListRootsResponse(pb::ListRootsResponse::default()),
    };
    Envelope {
        msg: Some(msg),
        request_id: id,
        namespace: String::new(),
    }
}
