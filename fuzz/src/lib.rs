//! Helpers shared by mcpwire's fuzz targets: splitting an input into a byte stream and the
//! chunks it arrives in, driving a `Decoder` the way `FramedRead` does, and an allocator
//! that remembers the largest single allocation (so a target can assert that a declared
//! length never turns into a huge `Vec::with_capacity`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::BytesMut;
use tokio_util::codec::Decoder;

/// The system allocator, recording the largest single request made inside
/// [`LargestAlloc::measure`] since [`LargestAlloc::reset`] (the harness's own vectors are
/// not the code under test).
pub struct LargestAlloc;

static LARGEST: AtomicUsize = AtomicUsize::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

fn record(size: usize) {
    if ARMED.load(Ordering::Relaxed) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
    }
}

impl LargestAlloc {
    /// Runs `f` with allocations recorded.
    pub fn measure<R>(f: impl FnOnce() -> R) -> R {
        ARMED.store(true, Ordering::Relaxed);
        let r = f();
        ARMED.store(false, Ordering::Relaxed);
        r
    }

    /// Forgets the largest request seen so far.
    pub fn reset() {
        LARGEST.store(0, Ordering::Relaxed);
    }

    /// The largest single allocation (or reallocation target) since the last reset.
    pub fn largest() -> usize {
        LARGEST.load(Ordering::Relaxed)
    }
}

// SAFETY: every call is forwarded unchanged to `System`; only a counter is updated.
unsafe impl GlobalAlloc for LargestAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// An input read as `[n][n chunk sizes][stream]`: the low 3 bits of the first byte say how
/// many size bytes follow; each size byte `b` is a chunk of `b + 1` bytes, used in turn and
/// cyclically. No size bytes at all means one byte per chunk.
pub struct Split<'a> {
    sizes: Vec<usize>,
    /// The byte stream to decode.
    pub stream: &'a [u8],
}

impl<'a> Split<'a> {
    /// Splits `data` (an empty input is an empty stream).
    pub fn new(data: &'a [u8]) -> Split<'a> {
        let Some((&first, rest)) = data.split_first() else {
            return Split {
                sizes: vec![1],
                stream: data,
            };
        };
        let n = usize::from(first & 7).min(rest.len());
        let (sizes, stream) = rest.split_at(n);
        let mut sizes: Vec<usize> = sizes.iter().map(|&b| usize::from(b) + 1).collect();
        if sizes.is_empty() {
            sizes.push(1);
        }
        Split { sizes, stream }
    }

    /// The stream in the chunks the input asked for.
    pub fn chunks(&self) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut rest = self.stream;
        let mut i = 0;
        while !rest.is_empty() {
            let n = self.sizes[i % self.sizes.len()].min(rest.len());
            let (a, b) = rest.split_at(n);
            out.push(a);
            rest = b;
            i += 1;
        }
        out
    }
}

/// What one run of a decoder over a stream produced: its items, and the error that ended it.
pub struct Run<I, E> {
    /// Every item, in order.
    pub items: Vec<I>,
    /// The error that ended decoding, if one did.
    pub error: Option<E>,
}

impl<I: Debug, E: Debug> Run<I, E> {
    /// Items and error as text, for comparing two runs.
    pub fn fingerprint(&self) -> (Vec<String>, Option<String>) {
        (
            self.items.iter().map(|i| format!("{i:?}")).collect(),
            self.error.as_ref().map(|e| format!("{e:?}")),
        )
    }
}

/// Feeds `chunks` to `codec` as `FramedRead` would: after each chunk, `decode` until it
/// returns `None`; at the end, `decode_eof` until it returns `None`. Stops at the first
/// error. Allocations inside `decode`/`decode_eof` are measured by [`LargestAlloc`]
/// (when it is the global allocator). `idle` is called with the codec and buffer whenever `decode` asks for more bytes.
pub fn drive<D, F>(codec: &mut D, chunks: &[&[u8]], mut idle: F) -> Run<D::Item, D::Error>
where
    D: Decoder,
    F: FnMut(&D, &BytesMut),
{
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match LargestAlloc::measure(|| codec.decode(&mut buf)) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => {
                    idle(codec, &buf);
                    break;
                }
                Err(e) => {
                    return Run {
                        items,
                        error: Some(e),
                    };
                }
            }
        }
    }
    // `FramedRead` calls `decode_eof` until it yields `None`; a codec that keeps yielding
    // at EOF without consuming anything would hang it, so that is bounded and checked.
    for _ in 0..=chunks.iter().map(|c| c.len()).sum::<usize>() + 1 {
        match LargestAlloc::measure(|| codec.decode_eof(&mut buf)) {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return Run { items, error: None },
            Err(e) => {
                return Run {
                    items,
                    error: Some(e),
                };
            }
        }
    }
    panic!("decode_eof kept yielding items without consuming input");
}
