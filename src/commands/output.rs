//! Standard output for the reading commands (`ls`, `cat`, `log`, `diff`, `status`, `source
//! list`): buffered, and a reader that went away (`| head`) ends the listing quietly. What is
//! written comes from `access`, which returns rows and never prints.

use crate::store::StoreError;
use std::io::{self, Write};
use std::path::Path;

/// Standard output for a listing: buffered, and a reader that went away (`| head`) ends the
/// listing quietly.
pub struct Out {
    inner: io::BufWriter<io::StdoutLock<'static>>,
    pub closed: bool,
}

impl Out {
    pub(crate) fn stdout() -> Out {
        Out {
            inner: io::BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
            closed: false,
        }
    }

    /// Write; `Ok(false)` once the reader has gone.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<bool, StoreError> {
        if self.closed {
            return Ok(false);
        }
        match self.inner.write_all(bytes) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(false)
            }
            Err(e) => Err(StoreError::io("writing to", Path::new("stdout"), e)),
        }
    }

    pub(crate) fn line(&mut self, s: &str) -> Result<bool, StoreError> {
        if !self.write(s.as_bytes())? {
            return Ok(false);
        }
        self.write(b"\n")
    }

    /// One JSON value on a line of its own.
    pub(crate) fn json_line(&mut self, v: &impl serde::Serialize) -> Result<bool, StoreError> {
        let s = serde_json::to_string(v).expect("serialisable");
        self.line(&s)
    }

    /// The first lines out at once (a person waits for them; `ls | head` wants them).
    pub(crate) fn flush(&mut self) -> Result<(), StoreError> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(StoreError::io("writing to", Path::new("stdout"), e)),
        }
    }
}
