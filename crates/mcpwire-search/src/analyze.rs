//! Text → terms: words, identifier pieces, lowercase and ASCII folding, phrases, stop words,
//! stemming. Documents and queries go through the same analyzer.

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::{decompose_compatible, is_combining_mark};

use crate::options::RankingOptions;
use crate::words::{PHRASES, STOP_WORDS};

/// Pieces longer than this (in bytes, after folding) are not words but ids, hashes or URLs:
/// dropped.
const MAX_PIECE_BYTES: usize = 40;

/// Turns text into terms, as one [`RankingOptions`] asks.
pub(crate) struct Analyzer {
    split_identifiers: bool,
    fold_ascii: bool,
    stop_words: bool,
    phrases: bool,
    stemmer: Option<Stemmer>,
}

/// The analyzer's reusable buffers (one per caller, so analysis does not allocate per word).
#[derive(Default)]
pub(crate) struct Scratch {
    piece: String,
    previous: String,
    phrase: String,
}

impl Analyzer {
    /// The analyzer `options` describe.
    pub(crate) fn new(options: &RankingOptions) -> Self {
        Analyzer {
            split_identifiers: options.split_identifiers,
            fold_ascii: options.fold_ascii,
            stop_words: options.stop_words,
            phrases: options.synonyms,
            stemmer: options.stem.then(|| Stemmer::create(Algorithm::English)),
        }
    }

    /// Emits the terms of `text`, at most `max_terms` of them; returns how many were emitted.
    pub(crate) fn analyze(
        &self,
        text: &str,
        max_terms: usize,
        scratch: &mut Scratch,
        emit: &mut dyn FnMut(&str),
    ) -> usize {
        let mut emitted = 0;
        scratch.previous.clear();
        for word in self.words(text) {
            let (mut start, mut pieces) = (0, 0);
            for end in self.piece_ends(word) {
                if emitted >= max_terms {
                    return emitted;
                }
                let piece = &word[start..end];
                (start, pieces) = (end, pieces + 1);
                self.fold_into(piece, &mut scratch.piece);
                emitted += self.piece_terms(scratch, max_terms - emitted, emit);
            }
            // A word split by case is also itself: `GitLab` is `git`, `lab` and `gitlab`.
            if pieces > 1 && emitted < max_terms && word.chars().all(char::is_alphabetic) {
                self.fold_into(word, &mut scratch.piece);
                emitted += self.piece_terms(scratch, 1, emit);
            }
        }
        emitted
    }

    /// The term one plain word (a synonym table entry) becomes, if it is not a stop word.
    pub(crate) fn word_term(&self, word: &str) -> Option<String> {
        let mut folded = String::new();
        self.fold_into(word, &mut folded);
        self.stem(&folded).map(std::borrow::Cow::into_owned)
    }

    /// Words: runs of letters and digits (and `_`, unless identifiers are split).
    fn words<'t>(&self, text: &'t str) -> impl Iterator<Item = &'t str> {
        let split = self.split_identifiers;
        text.split(move |c: char| !(c.is_alphanumeric() || (!split && c == '_')))
            .filter(|w| !w.is_empty())
    }

    /// The end offsets of a word's pieces: the word itself, or its identifier pieces
    /// (`createIssue` → `create|Issue`, `HTTPRequest` → `HTTP|Request`, `s3Bucket` → `s|3|Bucket`).
    fn piece_ends<'w>(&self, word: &'w str) -> impl Iterator<Item = usize> + 'w {
        let split = self.split_identifiers;
        let mut chars = word.char_indices().peekable();
        let mut previous: Option<char> = None;
        let mut done = false;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            while let Some((at, c)) = chars.next() {
                let boundary = split
                    && previous.is_some_and(|p| {
                        let next = chars.peek().map(|&(_, n)| n);
                        (p.is_lowercase() && c.is_uppercase())
                            || (p.is_uppercase()
                                && c.is_uppercase()
                                && next.is_some_and(char::is_lowercase))
                            || (p.is_alphabetic() && c.is_numeric())
                            || (p.is_numeric() && c.is_alphabetic())
                    });
                previous = Some(c);
                if boundary {
                    return Some(at);
                }
            }
            done = true;
            Some(word.len())
        })
    }

    /// Lowercases `piece` into `out`, folding accents and ligatures when asked.
    fn fold_into(&self, piece: &str, out: &mut String) {
        out.clear();
        for c in piece.chars() {
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            } else if self.fold_ascii {
                decompose_compatible(c, |d| {
                    if !is_combining_mark(d) {
                        out.extend(d.to_lowercase());
                    }
                });
            } else {
                out.extend(c.to_lowercase());
            }
        }
    }

    /// Emits the terms of the folded piece in `scratch.piece` (a phrase it ends, and itself).
    fn piece_terms(
        &self,
        scratch: &mut Scratch,
        budget: usize,
        emit: &mut dyn FnMut(&str),
    ) -> usize {
        let piece = scratch.piece.as_str();
        if piece.is_empty() || piece.len() > MAX_PIECE_BYTES {
            return 0;
        }
        let mut emitted = 0;
        if self.phrases
            && let Some(&(_, _, joined)) = PHRASES
                .iter()
                .find(|(first, second, _)| *first == scratch.previous && *second == piece)
        {
            scratch.phrase.clear();
            scratch.phrase.push_str(joined);
            if let Some(term) = self.stem(&scratch.phrase) {
                emit(&term);
                emitted += 1;
            }
        }
        if emitted < budget
            && let Some(term) = self.stem(piece)
        {
            emit(&term);
            emitted += 1;
        }
        scratch.previous.clear();
        scratch.previous.push_str(piece);
        emitted
    }

    /// The stem of a folded piece, or `None` for a stop word.
    fn stem<'p>(&self, piece: &'p str) -> Option<std::borrow::Cow<'p, str>> {
        if self.stop_words && STOP_WORDS.binary_search(&piece).is_ok() {
            return None;
        }
        Some(match &self.stemmer {
            Some(stemmer) if !piece.bytes().all(|b| b.is_ascii_digit()) => stemmer.stem(piece),
            _ => std::borrow::Cow::Borrowed(piece),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(options: &RankingOptions, text: &str) -> Vec<String> {
        let analyzer = Analyzer::new(options);
        let mut out = Vec::new();
        analyzer.analyze(text, 100, &mut Scratch::default(), &mut |t| {
            out.push(t.to_owned())
        });
        out
    }

    fn split_only() -> RankingOptions {
        RankingOptions::bm25f_split()
    }

    #[test]
    fn identifiers_split_into_words() {
        let o = split_only();
        assert_eq!(terms(&o, "create_issue"), ["create", "issue"]);
        assert_eq!(terms(&o, "createIssue"), ["create", "issue", "createissue"]);
        assert_eq!(terms(&o, "browser_click"), ["browser", "click"]);
        assert_eq!(terms(&o, "get-file-contents"), ["get", "file", "contents"]);
        assert_eq!(terms(&o, "HTTPRequest"), ["http", "request", "httprequest"]);
        assert_eq!(terms(&o, "GitLab"), ["git", "lab", "gitlab"]);
        assert_eq!(terms(&o, "parseJSONFile2"), ["parse", "json", "file", "2"]);
        assert_eq!(
            terms(&o, "s3Bucket base64"),
            ["s", "3", "bucket", "base", "64"]
        );
        assert_eq!(terms(&o, "API"), ["api"]);
    }

    #[test]
    fn without_splitting_underscores_stay_and_case_folds() {
        let o = RankingOptions::plain_bm25();
        assert_eq!(terms(&o, "create_issue"), ["create_issue"]);
        assert_eq!(terms(&o, "createIssue"), ["createissue"]);
        assert_eq!(terms(&o, "get-file"), ["get", "file"]);
    }

    #[test]
    fn folding_and_unicode() {
        let o = split_only();
        assert_eq!(terms(&o, "Café Ünïcode ﬁle"), ["cafe", "unicode", "file"]);
        assert_eq!(terms(&o, "日本語 テスト"), ["日本語", "テスト"]);
        assert_eq!(terms(&o, "ΣΊΣΥΦΟΣ"), ["σισυφοσ"]);
        assert!(terms(&o, "🚀 — …").is_empty());
    }

    #[test]
    fn stop_words_and_stemming() {
        let o = RankingOptions::full();
        assert_eq!(terms(&o, "please delete the issues"), ["delet", "issu"]);
        assert_eq!(terms(&o, "Deleting files"), ["delet", "file"]);
        assert_eq!(terms(&o, "v2 2024"), ["v", "2", "2024"]);
    }

    #[test]
    fn phrases_add_a_joined_term() {
        let o = RankingOptions::full();
        assert_eq!(
            terms(&o, "open a pull request"),
            ["open", "pull", "pr", "request"]
        );
        assert_eq!(terms(&o, "merge_request"), ["merg", "mr", "request"]);
    }

    #[test]
    fn long_pieces_and_the_term_budget() {
        let o = split_only();
        let hash = "a".repeat(41);
        assert_eq!(terms(&o, &format!("x {hash} y")), ["x", "y"]);
        let analyzer = Analyzer::new(&o);
        let mut n = 0;
        let emitted = analyzer.analyze(
            &"word ".repeat(1000),
            7,
            &mut Scratch::default(),
            &mut |_| n += 1,
        );
        assert_eq!((emitted, n), (7, 7));
    }
}
