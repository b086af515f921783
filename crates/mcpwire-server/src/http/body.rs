//! Reading a whole HTTP body under a size bound — a client's request here, an upstream's
//! answer in `mcpwire-client` — without the copy and the bookkeeping a general collector
//! makes: a body that arrives as one frame (most: the whole of it read with its head) is
//! that frame's bytes as they are; trailers are ignored.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Body;

/// Why [`read_to_limit`] gave no bytes.
#[derive(Debug, thiserror::Error)]
pub enum BodyError<E> {
    /// The body is longer than the bound.
    #[error("the body is longer than {max} bytes")]
    TooLarge {
        /// The bound.
        max: usize,
    },
    /// The body could not be read (the connection broke).
    #[error("could not read the body: {0}")]
    Read(E),
}

/// The whole of `body`, at most `max` bytes (more is [`BodyError::TooLarge`], found as soon
/// as the frames read pass the bound).
pub async fn read_to_limit<B>(mut body: B, max: usize) -> Result<Bytes, BodyError<B::Error>>
where
    B: Body<Data = Bytes> + Unpin,
{
    let mut first: Option<Bytes> = None;
    let mut more: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(BodyError::Read)?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers: not part of the message
        };
        if data.is_empty() {
            continue;
        }
        len = len.saturating_add(data.len());
        if len > max {
            return Err(BodyError::TooLarge { max });
        }
        match (&mut first, &mut more) {
            (None, None) => first = Some(data),
            (Some(head), None) => {
                let mut buf = BytesMut::with_capacity(len);
                buf.extend_from_slice(head);
                buf.extend_from_slice(&data);
                first = None;
                more = Some(buf);
            }
            (_, Some(buf)) => buf.extend_from_slice(&data),
        }
    }
    Ok(match (first, more) {
        (_, Some(buf)) => buf.freeze(),
        (Some(one), None) => one,
        (None, None) => Bytes::new(),
    })
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use axum::http::{HeaderMap, HeaderValue};
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    use super::*;

    type Frames = Vec<Result<Frame<Bytes>, Infallible>>;

    fn body_of(frames: Frames) -> impl Body<Data = Bytes, Error = Infallible> + Unpin {
        StreamBody::new(futures::stream::iter(frames))
    }

    fn data(b: &'static [u8]) -> Result<Frame<Bytes>, Infallible> {
        Ok(Frame::data(Bytes::from_static(b)))
    }

    #[tokio::test]
    async fn one_frame_is_taken_as_it_is() {
        let frame = Bytes::from_static(b"{\"a\":1}");
        let ptr = frame.as_ptr();
        let body = body_of(vec![Ok(Frame::data(frame))]);
        let read = read_to_limit(body, 64).await.unwrap();
        assert_eq!(&read[..], b"{\"a\":1}");
        assert_eq!(read.as_ptr(), ptr, "not copied");
    }

    #[tokio::test]
    async fn frames_are_joined_in_order_and_trailers_ignored() {
        let mut trailers = HeaderMap::new();
        trailers.insert("x-t", HeaderValue::from_static("1"));
        let body = body_of(vec![
            data(b"ab"),
            data(b""),
            data(b"cd"),
            data(b"e"),
            Ok(Frame::trailers(trailers)),
        ]);
        assert_eq!(&read_to_limit(body, 5).await.unwrap()[..], b"abcde");
        assert_eq!(&read_to_limit(body_of(vec![]), 5).await.unwrap()[..], b"");
    }

    #[tokio::test]
    async fn a_body_past_the_bound_is_refused() {
        let one = body_of(vec![data(b"abcdef")]);
        assert!(matches!(
            read_to_limit(one, 5).await,
            Err(BodyError::TooLarge { max: 5 })
        ));
        let split = body_of(vec![data(b"abc"), data(b"def")]);
        assert!(matches!(
            read_to_limit(split, 5).await,
            Err(BodyError::TooLarge { max: 5 })
        ));
    }

    #[tokio::test]
    async fn a_broken_body_is_a_read_error() {
        let frames: Vec<Result<Frame<Bytes>, &str>> =
            vec![Ok(Frame::data(Bytes::from_static(b"ab"))), Err("reset")];
        let body = StreamBody::new(futures::stream::iter(frames));
        assert!(matches!(
            read_to_limit(body, 64).await,
            Err(BodyError::Read("reset"))
        ));
    }
}
