//! What `--capture SIZE` keeps of the job's output: the first SIZE/4 bytes and the last
//! 3·SIZE/4 of the merged stream, and how many bytes there were in all. A job's first lines
//! say what it set out to do and its last ones how it ended; the middle is what a limit drops.

use std::collections::VecDeque;

/// The kept head and tail of a stream of bytes, and its length.
#[derive(Debug)]
pub(crate) struct Kept {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl Kept {
    /// Keep at most `size` bytes: a quarter from the start, the rest from the end.
    pub(crate) fn new(size: usize) -> Kept {
        let head_cap = size / 4;
        Kept {
            head: Vec::with_capacity(head_cap),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: size - head_cap,
            total: 0,
        }
    }

    /// More bytes of the stream, in the order they were read.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let to_head = (self.head_cap - self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..to_head]);
        bytes = &bytes[to_head..];
        // Only the last tail_cap bytes can still be kept.
        if bytes.len() > self.tail_cap {
            bytes = &bytes[bytes.len() - self.tail_cap..];
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// How many more bytes the head takes.
    pub(crate) fn head_room(&self) -> usize {
        self.head_cap - self.head.len()
    }

    /// How many bytes the tail keeps.
    pub(crate) fn tail_cap(&self) -> usize {
        self.tail_cap
    }

    /// `n` bytes of the stream passed unseen: only for bytes after a full head that at least
    /// `tail_cap` more will follow (so none of them could be in the tail).
    pub(crate) fn skip(&mut self, n: u64) {
        if n > 0 {
            self.total += n;
            self.tail.clear();
        }
    }

    /// How many of `bytes()`'s last bytes are the stream's own last bytes, in one piece: all
    /// of them when nothing was left out, else the tail (after the marker).
    pub(crate) fn stream_tail(&self) -> usize {
        let kept = self.head.len() + self.tail.len();
        if self.total > kept as u64 {
            self.tail.len()
        } else {
            kept
        }
    }

    /// Bytes the stream had in all.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The kept bytes: the head, a marker line naming how many bytes were left out (only when
    /// some were), and the tail.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut out = self.head.clone();
        if self.total > kept {
            out.extend_from_slice(marker(self.total - kept).as_bytes());
        }
        out.extend(self.tail.iter());
        out
    }
}

/// The line between head and tail: on a line of its own.
pub(crate) fn marker(left_out: u64) -> String {
    format!("\n[dlock: {left_out} bytes left out]\n")
}

#[cfg(test)]
mod tests;
