//! [`RawFileSet`]: a `google.protobuf.FileDescriptorSet` that keeps its bytes, so extension
//! options survive prost.

/// A `google.protobuf.FileDescriptorSet` held as its encoded bytes. prost's
/// `prost_types::FileDescriptorSet` drops every extension option when it decodes (prost
/// keeps no unknown fields), which loses the `buf.validate` rules and mcpwire's JSON options;
/// this type encodes and decodes the same wire format byte for byte. Use it as the Rust type
/// of a `FileDescriptorSet` field with prost-build:
/// `config.extern_path(".google.protobuf.FileDescriptorSet", "::mcpwire_schema::RawFileSet")`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RawFileSet(Vec<u8>);

impl RawFileSet {
    /// Wraps encoded `FileDescriptorSet` bytes.
    pub fn new(bytes: Vec<u8>) -> RawFileSet {
        RawFileSet(bytes)
    }

    /// The encoded set.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The file names, in order.
    pub fn file_names(&self) -> Vec<String> {
        crate::split_file_set(&self.0)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }
}

impl std::fmt::Debug for RawFileSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawFileSet")
            .field("files", &self.file_names())
            .field("bytes", &self.0.len())
            .finish()
    }
}

impl prost::Message for RawFileSet {
    fn encode_raw(&self, buf: &mut impl prost::bytes::BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl prost::bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        if tag == 1 && wire_type == prost::encoding::WireType::LengthDelimited {
            let mut file: Vec<u8> = Vec::new();
            prost::encoding::bytes::merge(wire_type, &mut file, buf, ctx)?;
            self.0.extend(crate::join_file_set([file.as_slice()]));
            Ok(())
        } else {
            prost::encoding::skip_field(wire_type, tag, buf, ctx)
        }
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}
