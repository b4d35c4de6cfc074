//! What a handler answers, before it meets HTTP: a status, headers and a payload (nothing,
//! bytes made here, or an object's bytes, verified as they go out). `serve::http` turns it into
//! a response.

use crate::access::cat::Object;

pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Payload,
}

pub(crate) enum Payload {
    Empty,
    Bytes(Vec<u8>),
    /// An object's bytes and their length as the catalog records it.
    Object {
        object: Box<Object>,
        length: u64,
    },
}

impl Reply {
    pub(crate) fn new(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Payload::Empty,
        }
    }

    /// A reply of text (`content_type`) made here.
    pub(crate) fn text(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            headers: vec![("content-type", content_type.to_string())],
            body: Payload::Bytes(body.into()),
        }
    }

    /// A refusal or an error, said in one line of plain text.
    pub(crate) fn error(status: u16, message: &str) -> Reply {
        Reply::text(status, "text/plain; charset=utf-8", format!("{message}\n"))
    }

    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }
}
