//! What the ranking does, each part switchable so an evaluation can measure what it earns.

/// The fields a tool is indexed under, in the order of their slots in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// The exposed tool name (`create_issue`), split into words.
    Name,
    /// The tool's title (`title`, or `annotations.title`).
    Title,
    /// The tool's description.
    Description,
    /// Parameter names, descriptions and enum values from `inputSchema.properties`.
    Params,
    /// The backend's name (`gitlab`), split into words.
    BackendName,
    /// The backend's instructions (from its `initialize` result).
    BackendInstructions,
}

impl Field {
    /// Every field, in slot order.
    pub const ALL: [Field; FIELD_COUNT] = [
        Field::Name,
        Field::Title,
        Field::Description,
        Field::Params,
        Field::BackendName,
        Field::BackendInstructions,
    ];

    /// The field's slot in per-field arrays.
    pub const fn slot(self) -> usize {
        self as usize
    }
}

/// How many fields there are.
pub const FIELD_COUNT: usize = 6;

/// One field's BM25F parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldParams {
    /// How much one occurrence in this field counts (0 leaves the field out of the index).
    pub weight: f32,
    /// Length normalization, 0 (none) to 1 (full).
    pub b: f32,
}

/// Which fields are indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldMode {
    /// Plain BM25: the name and the description as one field, nothing else.
    NameAndDescription,
    /// BM25F over every field with its own weight and length normalization.
    AllFields,
}

/// How tools are analyzed and ranked. Changing it means building a new index.
#[derive(Clone, Debug, PartialEq)]
pub struct RankingOptions {
    /// Which fields are indexed.
    pub fields: FieldMode,
    /// Per-field weight and `b`, indexed by [`Field::slot`].
    pub field_params: [FieldParams; FIELD_COUNT],
    /// BM25 term-frequency saturation.
    pub k1: f32,
    /// Split identifiers into words (`createIssue`, `get-file`, `HTTPRequest`, `s3bucket`).
    /// Off: only whitespace and punctuation other than `_` separate words.
    pub split_identifiers: bool,
    /// Fold accents to ASCII (`café` → `cafe`). Lowercasing is always on.
    pub fold_ascii: bool,
    /// Drop English stop words and request filler (`please`, `my`, `the`).
    pub stop_words: bool,
    /// English Snowball stemming (`issues` → `issu`, `deleting` → `delet`).
    pub stem: bool,
    /// Expand queries with the synonym table and recognize phrases (`pull request`).
    pub synonyms: bool,
    /// The query weight of a synonym, relative to 1.0 for a word the user typed.
    pub synonym_weight: f32,
}

impl RankingOptions {
    /// Everything on: the ranking the gateway uses.
    pub fn full() -> Self {
        RankingOptions {
            fields: FieldMode::AllFields,
            field_params: DEFAULT_FIELD_PARAMS,
            k1: 1.5,
            split_identifiers: true,
            fold_ascii: true,
            stop_words: true,
            stem: true,
            synonyms: true,
            synonym_weight: 0.4,
        }
    }

    /// Plain BM25 over name + description: lowercase words, nothing else.
    pub fn plain_bm25() -> Self {
        RankingOptions {
            fields: FieldMode::NameAndDescription,
            split_identifiers: false,
            fold_ascii: false,
            stop_words: false,
            stem: false,
            synonyms: false,
            ..Self::full()
        }
    }

    /// BM25F over all fields, with plain BM25's analysis.
    pub fn bm25f() -> Self {
        RankingOptions {
            fields: FieldMode::AllFields,
            ..Self::plain_bm25()
        }
    }

    /// [`bm25f`](Self::bm25f) plus identifier splitting and ASCII folding.
    pub fn bm25f_split() -> Self {
        RankingOptions {
            split_identifiers: true,
            fold_ascii: true,
            ..Self::bm25f()
        }
    }

    /// [`bm25f_split`](Self::bm25f_split) plus stemming.
    pub fn bm25f_split_stem() -> Self {
        RankingOptions {
            stem: true,
            ..Self::bm25f_split()
        }
    }

    /// [`bm25f_split_stem`](Self::bm25f_split_stem) plus synonyms (no stop words yet).
    pub fn bm25f_split_stem_synonyms() -> Self {
        RankingOptions {
            synonyms: true,
            ..Self::bm25f_split_stem()
        }
    }

    /// The named variants an evaluation compares, from plain to full.
    pub fn variants() -> [(&'static str, RankingOptions); 6] {
        [
            ("plain BM25 (name+description)", Self::plain_bm25()),
            ("BM25F all fields", Self::bm25f()),
            ("+ identifier split", Self::bm25f_split()),
            ("+ stemming", Self::bm25f_split_stem()),
            ("+ synonyms", Self::bm25f_split_stem_synonyms()),
            ("full (+ stop words)", Self::full()),
        ]
    }

    /// The parameters of `field`, or `None` when the field is not indexed.
    pub(crate) fn indexed(&self, field: Field) -> Option<FieldParams> {
        let params = self.field_params[field.slot()];
        match self.fields {
            FieldMode::AllFields => (params.weight > 0.0).then_some(params),
            FieldMode::NameAndDescription => match field {
                Field::Name | Field::Description => Some(FieldParams {
                    weight: 1.0,
                    b: 0.75,
                }),
                _ => None,
            },
        }
    }

    /// The slot `field`'s words go to: plain BM25 puts the name into the description's slot.
    pub(crate) fn slot_of(&self, field: Field) -> usize {
        match (self.fields, field) {
            (FieldMode::NameAndDescription, Field::Name) => Field::Description.slot(),
            _ => field.slot(),
        }
    }
}

impl Default for RankingOptions {
    fn default() -> Self {
        Self::full()
    }
}

/// The field weights: a word in the name says most about what a tool does; the backend's
/// name says which service it talks to; instructions are long and say least per word.
const DEFAULT_FIELD_PARAMS: [FieldParams; FIELD_COUNT] = [
    FieldParams {
        weight: 3.0,
        b: 0.3,
    },
    FieldParams {
        weight: 2.0,
        b: 0.3,
    },
    FieldParams {
        weight: 1.0,
        b: 0.75,
    },
    FieldParams {
        weight: 0.3,
        b: 0.75,
    },
    FieldParams {
        weight: 2.5,
        b: 0.0,
    },
    FieldParams {
        weight: 0.2,
        b: 0.75,
    },
];
