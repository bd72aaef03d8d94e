//! One answer of the board: its status, its body (in memory, or streamed while it is written)
//! and its type; gzip for the bodies worth it.

/// One answer: status, body, content type.
pub struct Answer {
    pub code: u16,
    pub body: Body,
    pub kind: &'static str,
}

/// A body in memory, or one written while it is sent (chunked): `/api/locks`, which would
/// otherwise hold every lock at once.
pub enum Body {
    Bytes(Vec<u8>),
    Stream(std::io::PipeReader),
}

impl Answer {
    pub fn bytes(code: u16, body: Vec<u8>, kind: &'static str) -> Answer {
        Answer {
            code,
            body: Body::Bytes(body),
            kind,
        }
    }

    /// A 200 whose body `fill` writes on a thread of its own while it is sent (chunked), so
    /// that it is never whole in memory; a 500 if the thread or its pipe cannot be had.
    pub fn streamed(
        kind: &'static str,
        name: &str,
        fill: impl FnOnce(&mut dyn std::io::Write) + Send + 'static,
    ) -> Answer {
        let cannot = |e: std::io::Error| {
            Answer::text(
                500,
                format!("cannot stream the answer: {}\n", crate::log::io_reason(&e)),
            )
        };
        let (rx, tx) = match std::io::pipe() {
            Ok(p) => p,
            Err(e) => return cannot(e),
        };
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || fill(&mut std::io::BufWriter::with_capacity(64 * 1024, tx)));
        match spawned {
            Ok(_) => Answer {
                code: 200,
                body: Body::Stream(rx),
                kind,
            },
            Err(e) => cannot(e),
        }
    }

    /// Compress the body with gzip, when that is worth it: a page in memory of more than a few
    /// kilobytes (the front page of 1,000 locks with their timelines is ten megabytes of
    /// markup that repeats itself, a tenth of that compressed; streamed bodies stay as they
    /// are). True when it did.
    pub fn gzip(&mut self) -> bool {
        let Body::Bytes(b) = &self.body else {
            return false;
        };
        if b.len() < GZIP_FROM {
            return false;
        }
        let mut z = flate2::write::GzEncoder::new(
            Vec::with_capacity(b.len() / 8),
            flate2::Compression::fast(),
        );
        match std::io::Write::write_all(&mut z, b).and_then(|()| z.finish()) {
            Ok(zipped) => {
                self.body = Body::Bytes(zipped);
                true
            }
            Err(_) => false,
        }
    }

    pub(super) fn html(code: u16, body: String) -> Answer {
        Answer::bytes(code, body.into_bytes(), "text/html; charset=utf-8")
    }

    pub(super) fn text(code: u16, body: String) -> Answer {
        Answer::bytes(code, body.into_bytes(), "text/plain; charset=utf-8")
    }
}

/// Bodies shorter than this are sent as they are: gzip would save less than it costs.
const GZIP_FROM: usize = 4096;
