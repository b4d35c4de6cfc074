//! The validators of a conditional GET (RFC 9110 §13.1): what a response said of its
//! representation, kept so that the next request can ask "only if it changed".

/// Validators for a conditional GET.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}
