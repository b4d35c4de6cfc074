//! IIIF Change Discovery API 1.0 (https://iiif.io/api/discovery/1.0/): an Activity Streams
//! collection of the changes to IIIF Manifests and Collections.

use crate::engine::reader::Registration;

/// How IIIF Change Discovery plugs in.
pub(crate) fn registration() -> Registration {
    todo!("the IIIF Change Discovery reader")
}
