//! The plan of a `.proto` file, made from a JSON Schema (`crate::convert`) and written out as
//! text (`crate::emit`).

/// A message to generate.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub name: String,
    pub doc: Option<String>,
    pub shape: Shape,
    pub fields: Vec<Field>,
    pub messages: Vec<Message>,
    pub enums: Vec<Enum>,
}

impl Message {
    pub(crate) fn new(name: String, shape: Shape) -> Message {
        Message {
            name,
            doc: None,
            shape,
            fields: Vec::new(),
            messages: Vec::new(),
            enums: Vec::new(),
        }
    }
}

/// How a message looks in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Object,
    OneOf,
    AnyOf,
}

/// A string enum to generate.
#[derive(Debug, Clone)]
pub(crate) struct Enum {
    pub name: String,
    /// (proto value name, JSON string); number = index + 1 (0 is `_UNSPECIFIED`).
    pub values: Vec<(String, String)>,
    pub unspecified: String,
}

/// A field to generate.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub name: String,
    /// The JSON member name when it differs from `name`.
    pub json_name: Option<String>,
    pub number: u32,
    pub doc: Option<String>,
    pub ty: Ty,
    pub card: Card,
    /// `buf.validate.FieldRules` as text-format members.
    pub rules: Rules,
    pub nullable: bool,
    /// Lists and maps that must be present in JSON.
    pub json_required: bool,
    /// The verbatim JSON Schema of a `google.protobuf.Value` field.
    pub json_schema: Option<String>,
    /// The JSON Schema `default`, as JSON text.
    pub default: Option<String>,
    /// A string `format` no `buf.validate` rule stands for.
    pub format: Option<String>,
}

/// A field's value type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    String,
    Int64,
    Double,
    Bool,
    /// A generated enum or message, by the name to write.
    Enum(String),
    Message(String),
    Struct,
    Value,
}

/// A field's cardinality.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Card {
    /// `optional` (explicit presence).
    Optional,
    Repeated,
    /// `map<string, ty>`.
    Map,
    /// A member of the message's oneof (union messages).
    OneofMember,
}

/// A text-format value of `buf.validate` rules.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RuleValue {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(String),
    List(Vec<RuleValue>),
    Msg(Rules),
}

/// Ordered text-format members.
pub(crate) type Rules = Vec<(&'static str, RuleValue)>;
