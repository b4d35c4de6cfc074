//! STUB — being written: `rsmirror audit`.
use crate::error::Error;
use crate::exit::Exit;
use crate::settings;

pub fn run(_s: &settings::Audit, _arguments: &str) -> Result<Exit, Error> {
    Err(Error::Usage(crate::settings::UsageError(
        "audit is not built yet".into(),
    )))
}
