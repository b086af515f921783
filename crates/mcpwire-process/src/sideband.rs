//! Turning a raw sideband payload back into the `result_json` text it stands for, bounded.

use crate::pb::RawHeader;

/// Why a raw payload was refused.
#[derive(Debug, thiserror::Error)]
pub enum SidebandError {
    /// Only `result_json` travels raw.
    #[error("raw transfer of unsupported field {0:?}")]
    Field(String),
    /// Unknown compression.
    #[error("raw transfer with unsupported compression {0:?}")]
    Compression(String),
    /// The declared or real decompressed size is over the limit, or does not match.
    #[error("raw transfer: {0}")]
    Size(String),
    /// The zstd frame is corrupt.
    #[error("raw transfer: zstd: {0}")]
    Zstd(String),
    /// The text is not UTF-8.
    #[error("raw transfer is not UTF-8")]
    Utf8,
}

/// Decodes a raw payload into `result_json`: only `field_name = "result_json"`, compression
/// `""` or `"zstd"`. An uncompressed payload must be within `max` bytes (refused before it
/// is copied). For zstd, the declared `uncompressed_size` must be within `max`, the
/// frame must state the same content size, and decompression writes into a buffer of exactly
/// that capacity, failing rather than growing (the decompression-bomb guard).
pub fn decode_result(
    header: &RawHeader,
    payload: &[u8],
    max: u64,
) -> Result<String, SidebandError> {
    if header.field_name != "result_json" {
        return Err(SidebandError::Field(header.field_name.clone()));
    }
    let bytes = match header.compression.as_str() {
        "" => {
            let len = u64::try_from(payload.len()).unwrap_or(u64::MAX);
            if len > max {
                return Err(SidebandError::Size(format!(
                    "raw payload of {len} bytes is over the {max}-byte limit"
                )));
            }
            payload.to_vec()
        }
        "zstd" => {
            let want = header.uncompressed_size;
            if want > max {
                return Err(SidebandError::Size(format!(
                    "declared uncompressed size {want} is over the {max}-byte limit"
                )));
            }
            match zstd::zstd_safe::get_frame_content_size(payload) {
                Ok(Some(n)) if n == want => {}
                Ok(Some(n)) => {
                    return Err(SidebandError::Size(format!(
                        "zstd frame holds {n} bytes, header says {want}"
                    )));
                }
                Ok(None) => {
                    return Err(SidebandError::Size(
                        "zstd frame does not state its content size".into(),
                    ));
                }
                Err(_) => return Err(SidebandError::Zstd("not a zstd frame".into())),
            }
            let mut d =
                zstd::bulk::Decompressor::new().map_err(|e| SidebandError::Zstd(e.to_string()))?;
            let out = d
                .decompress(payload, want as usize)
                .map_err(|e| SidebandError::Zstd(e.to_string()))?;
            if out.len() as u64 != want {
                return Err(SidebandError::Size(format!(
                    "decompressed {} bytes, header says {want}",
                    out.len()
                )));
            }
            out
        }
        other => return Err(SidebandError::Compression(other.to_owned())),
    };
    String::from_utf8(bytes).map_err(|_| SidebandError::Utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(compression: &str, size: usize, uncompressed: u64) -> RawHeader {
        RawHeader {
            request_id: "h1".into(),
            field_name: "result_json".into(),
            size: size as u64,
            compression: compression.into(),
            uncompressed_size: uncompressed,
        }
    }

    #[test]
    fn zstd_round_trip_and_bomb_guard() {
        let text = "[{\"type\":\"text\",\"text\":\"".to_string() + &"x".repeat(200_000) + "\"}]";
        let z = zstd::bulk::compress(text.as_bytes(), 3).expect("compress");
        let h = header("zstd", z.len(), text.len() as u64);
        assert_eq!(decode_result(&h, &z, 1 << 20).expect("decodes"), text);
        // Declared size over the limit: refused before decompressing.
        assert!(matches!(
            decode_result(&h, &z, 1000),
            Err(SidebandError::Size(_))
        ));
        // Header lies about the size (a bomb would claim little and expand a lot).
        let lying = header("zstd", z.len(), 10);
        assert!(matches!(
            decode_result(&lying, &z, 1 << 20),
            Err(SidebandError::Size(_))
        ));
        // Corrupt payload.
        let bad = header("zstd", 4, 4);
        assert!(decode_result(&bad, b"abcd", 1 << 20).is_err());
        // Unknown compression and field.
        assert!(matches!(
            decode_result(&header("gzip", 1, 1), b"x", 10),
            Err(SidebandError::Compression(_))
        ));
        let mut other = header("", 1, 0);
        other.field_name = "other".into();
        assert!(matches!(
            decode_result(&other, b"x", 10),
            Err(SidebandError::Field(_))
        ));
    }

    /// Found by `fuzz/` (target `envelope`, minimized to a 1-byte payload under a 0-byte
    /// limit): an uncompressed payload was copied whatever its size.
    #[test]
    fn uncompressed_payload_over_the_limit_is_refused() {
        assert!(matches!(
            decode_result(&header("", 1, 0), b"x", 0),
            Err(SidebandError::Size(_))
        ));
        assert!(matches!(
            decode_result(&header("", 3, 0), b"abc", 2),
            Err(SidebandError::Size(_))
        ));
        assert_eq!(
            decode_result(&header("", 3, 0), b"abc", 3).expect("at the limit"),
            "abc"
        );
    }

    #[test]
    fn frame_without_content_size_is_refused() {
        use std::io::Write;
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).expect("encoder");
        enc.write_all(&vec![b'a'; 1 << 20]).expect("write");
        let z = enc.finish().expect("finish");
        let h = header("zstd", z.len(), 1 << 20);
        assert!(decode_result(&h, &z, 2 << 20).is_err());
    }
}
