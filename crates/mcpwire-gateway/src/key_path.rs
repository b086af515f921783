//! [`KeyPath`]: the name of a key in the configuration (`listen[1].url`), as errors print
//! it and as `position.rs` finds it in a document.

use std::fmt;

/// A key in the configuration: `backends.fs.command`, `listen[1].url`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(Vec<Seg>);

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

impl KeyPath {
    /// The whole document.
    pub fn root() -> KeyPath {
        KeyPath::default()
    }

    /// This path's key `key`.
    pub fn key(&self, key: &str) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Seg::Key(key.to_owned()));
        p
    }

    /// This path's element `i`.
    pub fn index(&self, i: usize) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    /// The steps.
    pub fn segs(&self) -> &[Seg] {
        &self.0
    }

    /// Whether `self` is `other` or inside it.
    pub fn starts_with(&self, other: &KeyPath) -> bool {
        self.0.starts_with(&other.0)
    }

    pub(crate) fn from_segs(segs: Vec<Seg>) -> KeyPath {
        KeyPath(segs)
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => f.write_str(&quoted(k))?,
                Seg::Key(k) => write!(f, ".{}", quoted(k))?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// A key as TOML would need it written.
fn quoted(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}
