//! A static sentence-embedding model: one trained vector per token, a text's embedding the
//! mean of its tokens' vectors (WordLlama's `l2_supercat` models, trained contrastively for
//! sentence similarity on Llama 2's token embeddings). No tensor library: a query costs a
//! tokenization and a few thousand additions (microseconds), so it needs no feature.
//! Measured against the transformer by `--models` (`docs/design/search.md`, session 18); the
//! gateway does not use it (it misses the quality targets).
//!
//! The directory the operator supplies holds `tokenizer.json` (a byte-level BPE in the
//! `tokenizers` JSON format: `model.vocab`, `model.merges`, byte fallback; normalizers
//! `Prepend`, `Replace` of a string, `Lowercase` and `Sequence` of these; no pre-tokenizer or
//! `Metaspace`) and `model.safetensors` (one 2-D tensor, vocabulary × dimensions, F16, BF16
//! or F32). Nothing is fetched.

use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Bytes of text read per embedding (as `mcpwire_search::MAX_TOOL_TEXT_BYTES`).
pub const MAX_TEXT_BYTES: usize = 2048;
/// Tokens averaged per text at most.
pub const MAX_TOKENS: usize = 512;
/// The largest `model.safetensors` header read (JSON describing the tensors).
const MAX_HEADER_BYTES: u64 = 1 << 20;

/// What can go wrong loading a static model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StaticModelError {
    /// A model file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A model file is not what it should be, or uses what this reader does not support.
    #[error("{path}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

fn format_error(path: &Path, reason: impl Into<String>) -> StaticModelError {
    StaticModelError::Format {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, StaticModelError> {
    std::fs::read(path).map_err(|source| StaticModelError::Io {
        path: path.to_owned(),
        source,
    })
}

/// One step of text normalization before BPE.
#[derive(Debug, Clone)]
enum Normalize {
    Prepend(String),
    Replace(String, String),
    Lowercase,
}

/// A BPE tokenizer read from a `tokenizer.json`.
#[derive(Debug, Clone)]
struct Bpe {
    vocab: HashMap<String, u32>,
    /// (left id, right id) → (rank, merged id).
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// The id of `<0xXX>` per byte, when the model falls back to bytes.
    bytes: Option<Box<[u32; 256]>>,
    unk: Option<u32>,
    normalizers: Vec<Normalize>,
    /// `Metaspace`: spaces become `▁` (and one is prepended) before BPE.
    metaspace: bool,
}

fn normalizers(
    path: &Path,
    spec: &Value,
    out: &mut Vec<Normalize>,
) -> Result<(), StaticModelError> {
    match spec["type"].as_str() {
        None if spec.is_null() => {}
        Some("Sequence") => {
            for inner in spec["normalizers"].as_array().into_iter().flatten() {
                normalizers(path, inner, out)?;
            }
        }
        Some("Prepend") => out.push(Normalize::Prepend(
            spec["prepend"].as_str().unwrap_or_default().to_owned(),
        )),
        Some("Replace") => {
            let (Some(pattern), Some(content)) =
                (spec["pattern"]["String"].as_str(), spec["content"].as_str())
            else {
                return Err(format_error(
                    path,
                    "only a Replace of a string is supported",
                ));
            };
            out.push(Normalize::Replace(pattern.to_owned(), content.to_owned()));
        }
        Some("Lowercase") => out.push(Normalize::Lowercase),
        other => {
            return Err(format_error(
                path,
                format!("unsupported normalizer {}", other.unwrap_or("(none)")),
            ));
        }
    }
    Ok(())
}

impl Bpe {
    fn load(path: &Path) -> Result<Self, StaticModelError> {
        let json: Value = serde_json::from_slice(&read(path)?)
            .map_err(|e| format_error(path, format!("not JSON: {e}")))?;
        let model = &json["model"];
        if model["type"].as_str() != Some("BPE") {
            return Err(format_error(path, "the tokenizer's model is not BPE"));
        }
        if model["continuing_subword_prefix"]
            .as_str()
            .is_some_and(|p| !p.is_empty())
            || model["end_of_word_suffix"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        {
            return Err(format_error(
                path,
                "subword prefixes or suffixes are not supported",
            ));
        }
        let vocab: HashMap<String, u32> = model["vocab"]
            .as_object()
            .ok_or_else(|| format_error(path, "no model.vocab"))?
            .iter()
            .filter_map(|(token, id)| Some((token.clone(), u32::try_from(id.as_u64()?).ok()?)))
            .collect();
        let mut merges = HashMap::new();
        for (rank, merge) in model["merges"].as_array().into_iter().flatten().enumerate() {
            // "left right" (older files) or ["left", "right"].
            let (left, right) = match merge {
                Value::String(s) => match s.split_once(' ') {
                    Some(pair) => pair,
                    None => return Err(format_error(path, format!("bad merge {s:?}"))),
                },
                Value::Array(pair) => match (pair.first(), pair.get(1)) {
                    (Some(Value::String(l)), Some(Value::String(r))) => (l.as_str(), r.as_str()),
                    _ => return Err(format_error(path, "bad merge")),
                },
                _ => return Err(format_error(path, "bad merge")),
            };
            let (Some(&l), Some(&r), Some(&merged)) = (
                vocab.get(left),
                vocab.get(right),
                vocab.get(&format!("{left}{right}")),
            ) else {
                continue;
            };
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            merges.entry((l, r)).or_insert((rank, merged));
        }
        let bytes = if model["byte_fallback"].as_bool() == Some(true) {
            let mut ids = Box::new([0u32; 256]);
            for (byte, id) in ids.iter_mut().enumerate() {
                *id = *vocab
                    .get(&format!("<0x{byte:02X}>"))
                    .ok_or_else(|| format_error(path, "byte fallback without <0xXX> tokens"))?;
            }
            Some(ids)
        } else {
            None
        };
        let unk = model["unk_token"]
            .as_str()
            .and_then(|t| vocab.get(t))
            .copied();
        let mut steps = Vec::new();
        normalizers(path, &json["normalizer"], &mut steps)?;
        let metaspace = match json["pre_tokenizer"]["type"].as_str() {
            None if json["pre_tokenizer"].is_null() => false,
            Some("Metaspace") => true,
            other => {
                return Err(format_error(
                    path,
                    format!("unsupported pre-tokenizer {}", other.unwrap_or("(none)")),
                ));
            }
        };
        Ok(Bpe {
            vocab,
            merges,
            bytes,
            unk,
            normalizers: steps,
            metaspace,
        })
    }

    fn normalize(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for step in &self.normalizers {
            text = match step {
                Normalize::Prepend(p) => format!("{p}{text}"),
                Normalize::Replace(pattern, content) => text.replace(pattern.as_str(), content),
                Normalize::Lowercase => text.to_lowercase(),
            };
        }
        if self.metaspace {
            text = format!("▁{}", text.replace(' ', "▁"));
        }
        text
    }

    /// The token ids of `text` (no special tokens), at most [`MAX_TOKENS`].
    fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut end = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let text = &text[..end];
        // Runs of whitespace count as one space (so `▁` never repeats: no merge joins two
        // words, and each word is merged on its own).
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return Vec::new();
        }
        let normalized = self.normalize(&text);
        let mut ids = Vec::new();
        // Each word starts at a `▁` (the merges never cross one), so merging word by word
        // gives the whole string's tokens and keeps the work linear in the text.
        let mut start = 0;
        for (at, _) in normalized
            .match_indices('▁')
            .chain([(normalized.len(), "")])
        {
            if at > start {
                self.merge_word(&normalized[start..at], &mut ids);
            }
            start = at;
            if ids.len() >= MAX_TOKENS {
                break;
            }
        }
        ids.truncate(MAX_TOKENS);
        ids
    }

    /// Appends the BPE tokens of one word: its characters (bytes when a character is not in
    /// the vocabulary), merged by rank, the lowest first (leftmost on a tie).
    fn merge_word(&self, word: &str, out: &mut Vec<u32>) {
        let mut ids: Vec<u32> = Vec::with_capacity(word.len());
        let mut buf = [0u8; 4];
        for c in word.chars() {
            if let Some(&id) = self.vocab.get(c.encode_utf8(&mut buf) as &str) {
                ids.push(id);
            } else if let Some(bytes) = &self.bytes {
                ids.extend(c.to_string().bytes().map(|b| bytes[usize::from(b)]));
            } else if let Some(unk) = self.unk {
                // Consecutive unknowns fuse into one.
                if ids.last() != Some(&unk) {
                    ids.push(unk);
                }
            }
        }
        let n = ids.len();
        const NONE: usize = usize::MAX;
        let mut next: Vec<usize> = (1..=n).map(|i| if i < n { i } else { NONE }).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.checked_sub(1).unwrap_or(NONE)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<std::cmp::Reverse<(u32, usize)>>,
                    ids: &[u32],
                    at: usize,
                    right: usize| {
            if let Some(&(rank, _)) = self.merges.get(&(ids[at], ids[right])) {
                heap.push(std::cmp::Reverse((rank, at)));
            }
        };
        for i in 0..n.saturating_sub(1) {
            push(&mut heap, &ids, i, i + 1);
        }
        while let Some(std::cmp::Reverse((rank, at))) = heap.pop() {
            let right = next[at];
            if !alive[at] || right == NONE {
                continue;
            }
            // Stale when either side has changed since it was queued.
            let Some(&(r, merged)) = self.merges.get(&(ids[at], ids[right])) else {
                continue;
            };
            if r != rank {
                continue;
            }
            ids[at] = merged;
            alive[right] = false;
            next[at] = next[right];
            if next[at] != NONE {
                prev[next[at]] = at;
            }
            if prev[at] != NONE {
                push(&mut heap, &ids, prev[at], at);
            }
            if next[at] != NONE {
                push(&mut heap, &ids, at, next[at]);
            }
        }
        out.extend(
            ids.iter()
                .zip(&alive)
                .filter(|(_, alive)| **alive)
                .map(|(id, _)| *id),
        );
    }
}

/// A loaded static model. Immutable once loaded; share it (`Arc`) between threads.
pub struct StaticModel {
    tokenizer: Bpe,
    /// Vocabulary × dimensions, row-major.
    vectors: Vec<f32>,
    dimensions: usize,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("vocab", &self.tokenizer.vocab.len())
            .field("merges", &self.tokenizer.merges.len())
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

/// An IEEE half-precision float's value.
fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match exponent {
        // Zero and subnormals: mantissa × 2^-24.
        0 => ((mantissa as f32) * 2f32.powi(-24)).to_bits(),
        0x1f => 0xff << 23 | mantissa << 13,
        e => (e + 127 - 15) << 23 | mantissa << 13,
    };
    f32::from_bits(sign | magnitude)
}

/// The one 2-D tensor of a safetensors file, as f32 rows: (rows, columns, values).
fn read_matrix(path: &Path) -> Result<(usize, usize, Vec<f32>), StaticModelError> {
    let bytes = read(path)?;
    let header_len = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .filter(|n| *n <= MAX_HEADER_BYTES)
        .ok_or_else(|| format_error(path, "not a safetensors file"))? as usize;
    let header: Value = bytes
        .get(8..8 + header_len)
        .and_then(|h| serde_json::from_slice(h).ok())
        .ok_or_else(|| format_error(path, "unreadable safetensors header"))?;
    let data = &bytes[8 + header_len..];
    let tensors: Vec<&Value> = header
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.as_str() != "__metadata__")
        .map(|(_, t)| t)
        .filter(|t| t["shape"].as_array().is_some_and(|s| s.len() == 2))
        .collect();
    let [tensor] = tensors.as_slice() else {
        return Err(format_error(path, "expected exactly one 2-D tensor"));
    };
    let dim = |i: usize| {
        tensor["shape"][i]
            .as_u64()
            .and_then(|d| usize::try_from(d).ok())
    };
    let offset = |i: usize| {
        tensor["data_offsets"][i]
            .as_u64()
            .and_then(|d| usize::try_from(d).ok())
    };
    let (Some(rows), Some(columns), Some(begin), Some(end)) =
        (dim(0), dim(1), offset(0), offset(1))
    else {
        return Err(format_error(path, "bad tensor shape or offsets"));
    };
    let raw = data
        .get(begin..end)
        .ok_or_else(|| format_error(path, "tensor data out of the file"))?;
    let width = match tensor["dtype"].as_str() {
        Some("F16" | "BF16") => 2,
        Some("F32") => 4,
        other => {
            return Err(format_error(
                path,
                format!("unsupported dtype {}", other.unwrap_or("(none)")),
            ));
        }
    };
    if rows.checked_mul(columns).and_then(|n| n.checked_mul(width)) != Some(raw.len()) {
        return Err(format_error(path, "tensor size does not match its shape"));
    }
    let values = match tensor["dtype"].as_str() {
        Some("F16") => raw
            .chunks_exact(2)
            .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        Some("BF16") => raw
            .chunks_exact(2)
            .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
            .collect(),
        _ => raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    };
    Ok((rows, columns, values))
}

impl StaticModel {
    /// Loads the model in `dir` (`tokenizer.json`, `model.safetensors`). Reads the files
    /// once; nothing is fetched.
    pub fn load(dir: &Path) -> Result<Self, StaticModelError> {
        let tokenizer = Bpe::load(&dir.join("tokenizer.json"))?;
        let weights = dir.join("model.safetensors");
        let (rows, dimensions, vectors) = read_matrix(&weights)?;
        let largest = tokenizer.vocab.values().max().copied().unwrap_or_default();
        if dimensions == 0 || (largest as usize) >= rows {
            return Err(format_error(
                &weights,
                format!("{rows} rows do not cover the tokenizer's ids (up to {largest})"),
            ));
        }
        Ok(StaticModel {
            tokenizer,
            vectors,
            dimensions,
        })
    }

    /// The token ids of `text` as [`StaticModel::embed`] reads it (no special tokens).
    #[cfg(test)]
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.tokenize(text)
    }

    /// The L2-normalized mean of the vectors of `text`'s tokens (zero for a text with no
    /// token).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut sum = vec![0f32; self.dimensions];
        for id in self.tokenizer.tokenize(text) {
            let at = id as usize * self.dimensions;
            if let Some(row) = self.vectors.get(at..at + self.dimensions) {
                sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
            }
        }
        let norm = sum.iter().map(|a| a * a).sum::<f32>().sqrt();
        if norm > 0.0 {
            sum.iter_mut().for_each(|a| *a /= norm);
        }
        sum
    }

    /// The heap held (vectors and tokenizer tables), estimated.
    pub fn approx_bytes(&self) -> usize {
        let vocab: usize = self.tokenizer.vocab.keys().map(|k| k.len() + 40).sum();
        self.vectors.len() * 4 + vocab + self.tokenizer.merges.len() * 24
    }
}

impl mcpwire_search::Embed for StaticModel {
    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, mcpwire_search::EmbedError> {
        Ok(StaticModel::embed(self, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_search::Embed;

    /// A directory under the system's temporary one, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("mcpwire-static-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A safetensors file of one F16 tensor `rows × columns`.
    fn safetensors_f16(rows: usize, columns: usize, values: &[u16]) -> Vec<u8> {
        let header = serde_json::json!({
            "embedding.weight": {
                "dtype": "F16", "shape": [rows, columns], "data_offsets": [0, values.len() * 2]
            }
        })
        .to_string();
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        bytes
    }

    /// A vocabulary of bytes, letters and a few merges; each token's vector is one-hot on
    /// `id % 4`.
    fn tiny_model(dir: &Path) {
        let mut vocab = serde_json::Map::new();
        vocab.insert("<unk>".into(), 0.into());
        for b in 0..=255u32 {
            vocab.insert(format!("<0x{b:02X}>"), (b + 1).into());
        }
        let pieces = ["▁", "a", "b", "c", "▁a", "bc", "▁abc", "ab"];
        for (i, p) in pieces.iter().enumerate() {
            vocab.insert((*p).into(), (257 + i).into());
        }
        let tokenizer = serde_json::json!({
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}
            ]},
            "pre_tokenizer": null,
            "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
                "vocab": vocab,
                // "b c" outranks "a b": `abc` is a + bc, then ▁a + bc.
                "merges": ["▁ a", "b c", "a b", ["▁a", "bc"]]}
        });
        std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).expect("write");
        let rows = 257 + pieces.len();
        let one = 0x3c00u16; // 1.0 in f16
        let values: Vec<u16> = (0..rows)
            .flat_map(|r| (0..4).map(move |c| if r % 4 == c { one } else { 0 }))
            .collect();
        std::fs::write(
            dir.join("model.safetensors"),
            safetensors_f16(rows, 4, &values),
        )
        .expect("write");
    }

    #[test]
    fn bpe_merges_by_rank_and_falls_back_to_bytes() {
        let dir = TempDir::new("bpe");
        tiny_model(&dir.0);
        let model = StaticModel::load(&dir.0).expect("loads");
        let id = |t: &str| model.tokenizer.vocab[t];
        assert_eq!(model.token_ids("abc"), [id("▁abc")]);
        // "ab" is merged only when "bc" is not there to outrank it.
        assert_eq!(model.token_ids("ab"), [id("▁a"), id("b")]);
        assert_eq!(model.token_ids("cab"), [id("▁"), id("c"), id("ab")]);
        // A character not in the vocabulary: its UTF-8 bytes.
        assert_eq!(model.token_ids("é"), [id("▁"), id("<0xC3>"), id("<0xA9>")]);
        // Whitespace runs are one space; nothing is a text with no token.
        assert_eq!(model.token_ids("  abc \n abc "), [id("▁abc"), id("▁abc")]);
        assert!(model.token_ids(" \t").is_empty());
        assert_eq!(model.embed("   "), vec![0.0; 4]);
    }

    #[test]
    fn a_text_is_the_normalized_mean_of_its_tokens() {
        let dir = TempDir::new("mean");
        tiny_model(&dir.0);
        let model = StaticModel::load(&dir.0).expect("loads");
        assert_eq!(model.dimensions(), 4);
        // ▁abc is id 263 (one-hot on 3) and ▁ is 257 (one-hot on 1), c is 260 (on 0).
        let v = model.embed("abc");
        assert_eq!(v, [0.0, 0.0, 0.0, 1.0]);
        // ▁abc ▁abc ▁ c ab: (2, 1, 0, 2) / 3.
        let v = model.embed("abc abc cab");
        let want = [2.0f32 / 3.0, 1.0 / 3.0, 0.0, 2.0 / 3.0];
        assert!(
            v.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6),
            "{v:?}"
        );
        // Long texts are bounded.
        assert!(model.token_ids(&"abc ".repeat(10_000)).len() <= MAX_TOKENS);
    }

    #[test]
    fn half_floats_decode() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8001), -(2f32.powi(-24)));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn unusable_files_are_errors_not_panics() {
        let err = StaticModel::load(Path::new("/nonexistent/model")).unwrap_err();
        assert!(matches!(err, StaticModelError::Io { .. }), "{err}");
        let dir = TempDir::new("bad");
        tiny_model(&dir.0);
        for garbage in [
            &b""[..],
            b"\xff\xff\xff\xff\xff\xff\xff\xff{}",
            b"\x02\0\0\0\0\0\0\0{}",
        ] {
            std::fs::write(dir.0.join("model.safetensors"), garbage).expect("write");
            let err = StaticModel::load(&dir.0).unwrap_err();
            assert!(matches!(err, StaticModelError::Format { .. }), "{err}");
        }
        // Too few rows for the vocabulary.
        std::fs::write(
            dir.0.join("model.safetensors"),
            safetensors_f16(2, 1, &[0, 0]),
        )
        .expect("write");
        assert!(StaticModel::load(&dir.0).is_err());
        std::fs::write(
            dir.0.join("tokenizer.json"),
            r#"{"model": {"type": "WordPiece"}}"#,
        )
        .expect("write");
        assert!(StaticModel::load(&dir.0).is_err());
    }

    /// With `MCPWIRE_SEARCH_STATIC_MODEL` set to WordLlama's files
    /// (`scripts/search_static_model.sh`): the token ids are the reference tokenizer's (ids
    /// recorded with the `tokenizers` library on whitespace-collapsed text), and related texts
    /// are closer.
    #[test]
    fn the_model_when_supplied_tokenizes_as_the_reference() {
        let Some(dir) = std::env::var_os("MCPWIRE_SEARCH_STATIC_MODEL") else {
            return;
        };
        let model = StaticModel::load(Path::new(&dir)).expect("model loads");
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/eval/wordllama-token-ids.json");
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(fixture).expect("fixture"))
                .expect("JSON");
        assert!(cases.len() > 20);
        for case in &cases {
            let text = case["text"].as_str().expect("text");
            let ids: Vec<u32> = case["ids"]
                .as_array()
                .expect("ids")
                .iter()
                .filter_map(|i| i.as_u64().and_then(|i| u32::try_from(i).ok()))
                .collect();
            assert_eq!(model.token_ids(text), ids, "{text:?}");
        }
        let query = model.embed("grab an image of how the page looks");
        let screenshot = model.embed("take a screenshot of the current page");
        let commit = model.embed("record changes to the repository");
        assert_eq!(query.len(), model.dimensions());
        assert!(
            mcpwire_search::cosine(&query, &screenshot) > mcpwire_search::cosine(&query, &commit)
        );
    }
}
