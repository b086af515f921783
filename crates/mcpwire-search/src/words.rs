//! The word lists the analyzer applies to documents and queries alike: stop words and
//! phrases. Hand-written, from how people ask for things.

/// English stop words and request filler, sorted (binary search), folded, unstemmed.
#[rustfmt::skip]
pub(crate) const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are",
    "as", "at", "be", "been", "being", "both", "but", "by", "can", "could", "d", "did", "do",
    "does", "doing", "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let",
    "lets", "ll", "m", "me", "mine", "my", "myself", "need", "needs", "of", "on", "or", "our",
    "ours", "please", "re", "s", "should", "so", "some", "t", "than", "thanks", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "thx", "to", "too", "up",
    "us", "ve", "very", "want", "wants", "was", "we", "were", "what", "whats", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// Two adjacent words that mean one thing: the joined term is added after the second
/// (documents and queries alike), so `pull request` also says `pr`.
pub(crate) const PHRASES: &[(&str, &str, &str)] = &[
    ("pull", "request", "pr"),
    ("merge", "request", "mr"),
    ("look", "up", "lookup"),
    ("go", "to", "navigate"),
    ("log", "in", "login"),
    ("sign", "in", "login"),
    ("screen", "shot", "screenshot"),
    ("sea", "level", "elevation"),
    ("web", "page", "webpage"),
    ("e", "mail", "email"),
    ("to", "do", "todo"),
    ("key", "value", "kv"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_and_folded() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(
            STOP_WORDS
                .iter()
                .all(|w| w.bytes().all(|b| b.is_ascii_lowercase()))
        );
    }
}
