//! The redactor as it was before it was made faster, kept only for the tests: every output of
//! the real one must be byte for byte what this one gives (see `equivalence.rs`). Its
//! `shapes.rs` and `stream.rs` are the old files as they were; do not change them.

#![allow(dead_code)]

mod shapes;
mod stream;

pub use super::REDACTED;
pub use stream::RedactingStream;

/// The old redactor, for the same secret values as a new one.
#[derive(Debug, Clone)]
pub struct Redactor {
    values: Vec<Vec<u8>>,
    starts: [u8; 256],
    shape_starts: shapes::ShapeStarts,
}

impl Redactor {
    /// The old redactor looking for what `new` looks for.
    pub fn like(new: &super::Redactor) -> Self {
        let values = new.values.clone();
        let shape_starts = shapes::ShapeStarts::new();
        let mut starts = [0u8; 256];
        for (byte, flags) in starts.iter_mut().enumerate() {
            if shape_starts.anywhere[byte] {
                *flags |= stream::ANYWHERE;
            }
            if shape_starts.word[byte] {
                *flags |= stream::AT_WORD;
            }
        }
        for value in &values {
            starts[usize::from(value[0])] |= stream::VALUE;
        }
        Self {
            values,
            starts,
            shape_starts,
        }
    }

    /// `bytes` with every secret replaced, as the old redactor did it.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut stream = RedactingStream::new(self);
        stream.push(bytes, |clean| out.extend_from_slice(clean));
        stream.finish(|clean| out.extend_from_slice(clean));
        out
    }
}
