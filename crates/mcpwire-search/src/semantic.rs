//! Optional semantic re-ranking (feature `semantic`): a small BERT-family sentence-embedding
//! model (e.g. all-MiniLM-L6-v2) read from files the operator supplies, never downloaded.
//!
//! The directory holds `config.json`, `model.safetensors` (f32) and the uncased WordPiece
//! vocabulary as `vocab.txt` (one token a line) or `tokenizer.json`. Texts are embedded as the mean of the last layer's token
//! states, L2-normalized, so a dot product is the cosine. [`fuse`] combines a lexical ranking
//! with a semantic one by weighted reciprocal rank fusion.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use unicode_normalization::UnicodeNormalization;

pub use crate::vectors::{cosine, fuse};

/// Tokens read per text, `[CLS]` and `[SEP]` included (the model's own truncation).
pub const MAX_TOKENS: usize = 128;
/// Bytes of text read per embedding; the rest cannot fit in [`MAX_TOKENS`] anyway.
pub const MAX_TEXT_BYTES: usize = 2048;
/// Characters of one word beyond which it is a single `[UNK]` (as the model's tokenizer).
const MAX_WORD_CHARS: usize = 100;

/// What can go wrong loading or running the embedding model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SemanticError {
    /// A model file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A model file is not what a BERT model's file should be.
    #[error("{path}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The tensor library failed (missing or misshapen weights included).
    #[error("model: {0}")]
    Tensor(#[from] candle_core::Error),
}

/// The architecture figures read from `config.json`.
struct Config {
    hidden: usize,
    heads: usize,
    layers: usize,
    eps: f64,
    max_positions: usize,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// A loaded sentence-embedding model. Immutable once loaded; share it (`Arc`) between
/// threads: [`Embedder::embed`] takes `&self`.
pub struct Embedder {
    tokenizer: WordPiece,
    cls: u32,
    sep: u32,
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_dim: usize,
    device: Device,
}

/// The uncased WordPiece tokenizer of a BERT model's vocabulary.
#[derive(Clone)]
struct WordPiece {
    vocab: HashMap<String, u32>,
    cls: u32,
    sep: u32,
    unk: u32,
    max_tokens: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("vocab", &self.tokenizer.vocab.len())
            .field("layers", &self.layers.len())
            .field("dimensions", &self.dimensions())
            .finish()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, SemanticError> {
    std::fs::read(path).map_err(|source| SemanticError::Io {
        path: path.to_owned(),
        source,
    })
}

fn format_error(path: &Path, reason: impl Into<String>) -> SemanticError {
    SemanticError::Format {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn read_json(path: &Path) -> Result<serde_json::Value, SemanticError> {
    serde_json::from_slice(&read(path)?).map_err(|e| format_error(path, e.to_string()))
}

fn read_config(path: &Path) -> Result<Config, SemanticError> {
    let json = read_json(path)?;
    let number = |key: &str| {
        json[key]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format_error(path, format!("`{key}` must be a positive integer")))
    };
    let config = Config {
        hidden: number("hidden_size")?,
        heads: number("num_attention_heads")?,
        layers: number("num_hidden_layers")?,
        eps: json["layer_norm_eps"].as_f64().unwrap_or(1e-12),
        max_positions: number("max_position_embeddings")?,
    };
    if !config.hidden.is_multiple_of(config.heads) {
        return Err(format_error(
            path,
            "hidden_size is not a multiple of the heads",
        ));
    }
    match json["hidden_act"].as_str() {
        None | Some("gelu") => Ok(config),
        Some(other) => Err(format_error(
            path,
            format!("activation {other} unsupported"),
        )),
    }
}

fn read_vocab(path: &Path) -> Result<HashMap<String, u32>, SemanticError> {
    let json = read_json(path)?;
    let model = &json["model"];
    if model["type"].as_str() != Some("WordPiece") {
        return Err(format_error(
            path,
            "only a WordPiece tokenizer is supported",
        ));
    }
    let vocab = model["vocab"]
        .as_object()
        .ok_or_else(|| format_error(path, "`model.vocab` must be an object"))?;
    vocab
        .iter()
        .map(|(token, id)| {
            id.as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .map(|id| (token.clone(), id))
                .ok_or_else(|| format_error(path, format!("bad id for {token:?}")))
        })
        .collect()
}

/// A `vocab.txt`: one WordPiece token per line, its id the line's number (from 0).
fn read_vocab_txt(path: &Path) -> Result<HashMap<String, u32>, SemanticError> {
    let bytes = read(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| format_error(path, e.to_string()))?;
    text.lines()
        .enumerate()
        .map(|(id, token)| {
            u32::try_from(id)
                .map(|id| (token.trim_end_matches('\r').to_owned(), id))
                .map_err(|_| format_error(path, "too many tokens"))
        })
        .collect()
}

fn layer_norm(vb: VarBuilder<'_>, hidden: usize, eps: f64) -> Result<LayerNorm, SemanticError> {
    Ok(candle_nn::layer_norm(hidden, eps, vb)?)
}

impl WordPiece {
    /// The vocabulary of the model directory `dir`: `vocab.txt`, or failing that
    /// `tokenizer.json`; texts cut to `max_tokens`.
    fn load(dir: &Path, max_tokens: usize) -> Result<Self, SemanticError> {
        let txt = dir.join("vocab.txt");
        let (path, vocab) = if txt.is_file() {
            let vocab = read_vocab_txt(&txt)?;
            (txt, vocab)
        } else {
            let json = dir.join("tokenizer.json");
            let vocab = read_vocab(&json)?;
            (json, vocab)
        };
        let special = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| format_error(&path, format!("no {token} in the vocabulary")))
        };
        let (cls, sep, unk) = (special("[CLS]")?, special("[SEP]")?, special("[UNK]")?);
        Ok(WordPiece {
            vocab,
            cls,
            sep,
            unk,
            max_tokens: max_tokens.max(2),
        })
    }

    /// The token ids of `text`: `[CLS]`, WordPiece pieces of the lowercased, accent-stripped
    /// words and punctuation, `[SEP]`; at most [`MAX_TOKENS`].
    fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut end = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let folded: String = text[..end]
            .nfd()
            .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
            .flat_map(char::to_lowercase)
            .collect();
        let budget = self.max_tokens - 1;
        let mut ids = vec![self.cls];
        let mut word = String::new();
        let push_word = |word: &mut String, ids: &mut Vec<u32>| {
            if !word.is_empty() {
                self.word_pieces(word, ids);
                word.clear();
            }
        };
        for c in folded.chars() {
            if ids.len() >= budget {
                break;
            }
            if c.is_whitespace() || c.is_control() {
                push_word(&mut word, &mut ids);
            } else if c.is_ascii_punctuation() || (!c.is_alphanumeric() && !c.is_ascii()) {
                push_word(&mut word, &mut ids);
                let mut buf = [0u8; 4];
                ids.push(
                    self.vocab
                        .get(&*c.encode_utf8(&mut buf))
                        .copied()
                        .unwrap_or(self.unk),
                );
            } else {
                word.push(c);
            }
        }
        push_word(&mut word, &mut ids);
        ids.truncate(budget);
        ids.push(self.sep);
        ids
    }

    /// Greedy longest-match WordPiece; a word with an unknown piece is one `[UNK]`.
    fn word_pieces(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > MAX_WORD_CHARS {
            ids.push(self.unk);
            return;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                if word.is_char_boundary(end) {
                    piece.clear();
                    if start > 0 {
                        piece.push_str("##");
                    }
                    piece.push_str(&word[start..end]);
                    if let Some(id) = self.vocab.get(&piece) {
                        found = Some((*id, end));
                        break;
                    }
                }
                end -= 1;
            }
            match found {
                Some((id, next)) => {
                    pieces.push(id);
                    start = next;
                }
                None => {
                    ids.push(self.unk);
                    return;
                }
            }
        }
        ids.extend(pieces);
    }
}

impl Embedder {
    /// Loads the model in `dir` (`config.json`, `model.safetensors`, and the vocabulary as
    /// `vocab.txt` or, failing that, `tokenizer.json`) on the CPU. Reads the files once;
    /// nothing is fetched.
    pub fn load(dir: &Path) -> Result<Self, SemanticError> {
        let config = read_config(&dir.join("config.json"))?;
        let tokenizer = WordPiece::load(dir, MAX_TOKENS.min(config.max_positions))?;
        let device = Device::Cpu;
        let weights = dir.join("model.safetensors");
        let tensors = candle_core::safetensors::load(&weights, &device)?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        // Some exports prefix everything with `bert.`.
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let h = config.hidden;
        let e = vb.pp("embeddings");
        let words = candle_nn::embedding(tokenizer.vocab.len(), h, e.pp("word_embeddings"))?;
        let positions = candle_nn::embedding(config.max_positions, h, e.pp("position_embeddings"))?;
        let token_types = candle_nn::embedding(2, h, e.pp("token_type_embeddings"))?;
        let embeddings_norm = layer_norm(e.pp("LayerNorm"), h, config.eps)?;
        let intermediate_size = {
            let t = vb.get_unchecked("encoder.layer.0.intermediate.dense.weight")?;
            t.dims2()?.0
        };
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention");
            layers.push(Layer {
                query: candle_nn::linear(h, h, a.pp("self.query"))?,
                key: candle_nn::linear(h, h, a.pp("self.key"))?,
                value: candle_nn::linear(h, h, a.pp("self.value"))?,
                attention_out: candle_nn::linear(h, h, a.pp("output.dense"))?,
                attention_norm: layer_norm(a.pp("output.LayerNorm"), h, config.eps)?,
                intermediate: candle_nn::linear(h, intermediate_size, l.pp("intermediate.dense"))?,
                output: candle_nn::linear(intermediate_size, h, l.pp("output.dense"))?,
                output_norm: layer_norm(l.pp("output.LayerNorm"), h, config.eps)?,
            });
        }
        Ok(Self {
            cls: tokenizer.cls,
            sep: tokenizer.sep,
            tokenizer,
            words,
            positions,
            token_types,
            embeddings_norm,
            layers,
            heads: config.heads,
            head_dim: h / config.heads,
            device,
        })
    }

    /// The length of an embedding.
    pub fn dimensions(&self) -> usize {
        self.head_dim * self.heads
    }

    /// The L2-normalized embedding of `text` (its first [`MAX_TOKENS`] tokens).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, SemanticError> {
        let ids = self.tokenizer.tokenize(text);
        let n = ids.len();
        let input = Tensor::from_vec(ids, (1, n), &self.device)?;
        let mean = self.forward(&input)?.mean(1)?.squeeze(0)?;
        let mut v: Vec<f32> = mean.to_vec1()?;
        normalize(&mut v);
        Ok(v)
    }

    /// The last layer's token states of a batch of token id rows of one length, `(batch,
    /// tokens)` → `(batch, tokens, dimensions)` (no padding, so no attention mask).
    fn forward(&self, input: &Tensor) -> Result<Tensor, SemanticError> {
        let (batch, n) = input.dims2()?;
        let position_ids: Vec<u32> = (0..n as u32).collect();
        let positions = Tensor::new(position_ids.as_slice(), &self.device)?.unsqueeze(0)?;
        let types = Tensor::zeros((1, n), DType::U32, &self.device)?;
        let mut x = self
            .words
            .forward(input)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .broadcast_add(&self.token_types.forward(&types)?)?;
        x = self.embeddings_norm.forward(&x)?;
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        for layer in &self.layers {
            let split = |t: Tensor| -> candle_core::Result<Tensor> {
                t.reshape((batch, n, self.heads, self.head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = split(layer.query.forward(&x)?)?;
            let k = split(layer.key.forward(&x)?)?;
            let v = split(layer.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?.contiguous()?)? * scale)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context =
                probs
                    .matmul(&v)?
                    .transpose(1, 2)?
                    .reshape((batch, n, self.dimensions()))?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let hidden = layer.intermediate.forward(&attended)?.gelu_erf()?;
            x = layer
                .output_norm
                .forward(&(layer.output.forward(&hidden)? + attended)?)?;
        }
        Ok(x)
    }

    /// The WordPiece token ids of `text` as [`Embedder::embed`] reads it: `[CLS]`, the
    /// pieces, `[SEP]`, at most [`MAX_TOKENS`].
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.tokenize(text)
    }

    /// Static token vectors distilled from this model (as model2vec does): for every token id
    /// of the vocabulary, in order, the model's embedding of the text made of that token
    /// alone (`[CLS] token [SEP]`, mean of the last layer, not normalized), as rows of
    /// [`Embedder::dimensions`] floats. One pass of the model over the vocabulary: tens of
    /// seconds on one core. The evaluation compares a static embedder built on them with the
    /// model (`docs/design/search.md`); the gateway does not use them.
    pub fn distill(&self) -> Result<Vec<f32>, SemanticError> {
        let count = self.words.embeddings().dims2()?.0;
        let mut vectors = Vec::with_capacity(count * self.dimensions());
        let ids: Vec<u32> = (0..count as u32).collect();
        for chunk in ids.chunks(DISTILL_BATCH) {
            let rows: Vec<u32> = chunk
                .iter()
                .flat_map(|&id| [self.cls, id, self.sep])
                .collect();
            let input = Tensor::from_vec(rows, (chunk.len(), 3), &self.device)?;
            let means = self.forward(&input)?.mean(1)?;
            vectors.extend(means.flatten_all()?.to_vec1::<f32>()?);
        }
        Ok(vectors)
    }
}

/// Rows of `[CLS] token [SEP]` run through the model at once when distilling.
const DISTILL_BATCH: usize = 512;

/// Scales `v` to unit length (a zero vector stays zero).
fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|a| *a /= norm);
    }
}

impl crate::Embed for Embedder {
    fn dimensions(&self) -> usize {
        Embedder::dimensions(self)
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, crate::EmbedError> {
        Embedder::embed(self, text).map_err(|e| crate::EmbedError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_model_is_an_error_not_a_panic() {
        let err = Embedder::load(Path::new("/nonexistent/model")).unwrap_err();
        assert!(matches!(err, SemanticError::Io { .. }), "{err}");
    }

    /// With `MCPWIRE_SEARCH_MODEL` set to a MiniLM directory: related texts are closer.
    #[test]
    fn the_model_when_supplied_puts_related_texts_closer() {
        let Some(dir) = std::env::var_os("MCPWIRE_SEARCH_MODEL") else {
            return;
        };
        let model = Embedder::load(Path::new(&dir)).expect("model loads");
        let query = model
            .embed("grab an image of how the page looks")
            .expect("embeds");
        let screenshot = model
            .embed("take a screenshot of the current page")
            .expect("embeds");
        let commit = model
            .embed("record changes to the repository")
            .expect("embeds");
        assert_eq!(query.len(), model.dimensions());
        assert!(cosine(&query, &screenshot) > cosine(&query, &commit));
        // A batch of rows of one length gives each row's own states (what distilling uses).
        let (a, b) = (
            model.token_ids("open a page"),
            model.token_ids("close the tab"),
        );
        assert_eq!(a.len(), b.len());
        let n = a.len();
        let batch = Tensor::from_vec([a.clone(), b].concat(), (2, n), &model.device).expect("ids");
        let states = model.forward(&batch).expect("runs").mean(1).expect("mean");
        let mut first: Vec<f32> = states.get(0).and_then(|t| t.to_vec1()).expect("row");
        normalize(&mut first);
        let alone = model.embed("open a page").expect("embeds");
        assert!(
            cosine(&first, &alone) > 0.9999,
            "{}",
            cosine(&first, &alone)
        );
        let long = "word ".repeat(10_000);
        assert_eq!(
            model.embed(&long).expect("bounded").len(),
            model.dimensions()
        );
    }
}
