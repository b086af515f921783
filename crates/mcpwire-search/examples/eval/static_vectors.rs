//! A static embedder built on token vectors distilled from the model
//! ([`Embedder::distill`]): a text's vector is the normalized sum of its WordPiece tokens'
//! vectors, microseconds instead of milliseconds. Post-processing options are compared as a
//! grid fixed before running (choose on the tuned set only).

use std::path::Path;

use mcpwire_search::semantic::Embedder;
use mcpwire_search::{Embed, EmbedError};

/// How the distilled token vectors are post-processed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StaticOptions {
    /// Subtract the mean token vector (the direction every token shares).
    pub center: bool,
    /// Scale each token vector to unit length (before weighting).
    pub normalize_tokens: bool,
    /// Weight tokens by `sif / (sif + p)`, `p` from the token's rank in the vocabulary
    /// (WordPiece vocabularies are ordered by frequency); `None`: no weights.
    pub sif: Option<f64>,
}

impl std::fmt::Display for StaticOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sif = self
            .sif
            .map_or("no weights".to_owned(), |s| format!("SIF {s}"));
        write!(
            f,
            "{}{}{sif}",
            if self.center { "centered, " } else { "" },
            if self.normalize_tokens {
                "unit tokens, "
            } else {
                ""
            }
        )
    }
}

/// The grid compared.
pub fn grid() -> Vec<StaticOptions> {
    let mut all = Vec::new();
    for center in [false, true] {
        for normalize_tokens in [false, true] {
            for sif in [None, Some(1e-4), Some(1e-3)] {
                all.push(StaticOptions {
                    center,
                    normalize_tokens,
                    sif,
                });
            }
        }
    }
    all
}

/// Static token vectors: one row of `dimensions` floats per token id.
#[derive(Debug)]
pub struct StaticEmbedder<'m> {
    model: &'m Embedder,
    dimensions: usize,
    vectors: Vec<f32>,
}

fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|a| *a /= norm);
    }
}

const MAGIC: &[u8; 8] = b"MCPWSTV1";

impl<'m> StaticEmbedder<'m> {
    /// The raw distilled vectors of `model`: read from `cache`, or distilled and written there
    /// (a read-only directory only costs the next run); whether they were distilled now.
    pub fn distilled(
        model: &'m Embedder,
        cache: &Path,
    ) -> Result<(Self, bool), Box<dyn std::error::Error>> {
        let dimensions = model.dimensions();
        if let Ok(bytes) = std::fs::read(cache)
            && bytes.len() > MAGIC.len()
            && bytes.starts_with(MAGIC)
            && (bytes.len() - MAGIC.len()).is_multiple_of(4 * dimensions)
        {
            let vectors = bytes[MAGIC.len()..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            return Ok((
                StaticEmbedder {
                    model,
                    dimensions,
                    vectors,
                },
                false,
            ));
        }
        let vectors = model.distill()?;
        let mut bytes = MAGIC.to_vec();
        vectors
            .iter()
            .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
        if let Err(e) = std::fs::write(cache, bytes) {
            eprintln!("static vectors not cached: {e}");
        }
        Ok((
            StaticEmbedder {
                model,
                dimensions,
                vectors,
            },
            true,
        ))
    }

    /// Heap bytes of the token vectors.
    pub fn approx_bytes(&self) -> usize {
        self.vectors.len() * size_of::<f32>()
    }

    /// These token vectors post-processed by `options`.
    pub fn with_options(&self, options: StaticOptions) -> StaticEmbedder<'m> {
        let d = self.dimensions.max(1);
        let mut vectors = self.vectors.clone();
        let count = vectors.len() / d;
        if options.center && count > 0 {
            let mut mean = vec![0.0f64; d];
            for row in vectors.chunks_exact(d) {
                mean.iter_mut()
                    .zip(row)
                    .for_each(|(m, x)| *m += f64::from(*x));
            }
            for row in vectors.chunks_exact_mut(d) {
                row.iter_mut()
                    .zip(&mean)
                    .for_each(|(x, m)| *x -= (m / count as f64) as f32);
            }
        }
        if options.normalize_tokens {
            vectors.chunks_exact_mut(d).for_each(normalize);
        }
        if let Some(sif) = options.sif {
            let harmonic: f64 = (1..=count).map(|rank| 1.0 / rank as f64).sum();
            for (id, row) in vectors.chunks_exact_mut(d).enumerate() {
                let p = 1.0 / ((id + 1) as f64 * harmonic);
                let weight = (sif / (sif + p)) as f32;
                row.iter_mut().for_each(|x| *x *= weight);
            }
        }
        StaticEmbedder {
            model: self.model,
            dimensions: self.dimensions,
            vectors,
        }
    }

    /// The normalized sum of `text`'s token vectors (`[CLS]` and `[SEP]` left out).
    pub fn embed_text(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dimensions];
        let ids = self.model.token_ids(text);
        let inner = ids.get(1..ids.len().saturating_sub(1)).unwrap_or_default();
        for &id in inner {
            let start = id as usize * self.dimensions;
            if let Some(row) = self.vectors.get(start..start + self.dimensions) {
                v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
            }
        }
        normalize(&mut v);
        v
    }
}

impl Embed for StaticEmbedder<'_> {
    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed_text(text))
    }
}
