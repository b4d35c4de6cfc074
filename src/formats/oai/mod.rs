//! OAI-PMH 2.0 (http://www.openarchives.org/OAI/openarchivesprotocol.html): a repository's
//! records harvested with `ListRecords`, each record a resource named by its identifier.

use crate::engine::reader::Registration;

/// How OAI-PMH plugs in.
pub(crate) fn registration() -> Registration {
    todo!("the OAI-PMH reader")
}
