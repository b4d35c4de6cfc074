//! STUB — being written: `rsmirror incremental`.
use crate::error::Error;
use crate::progress::Progress;
use crate::settings;
use crate::sync::baseline::Outcome;

pub fn run(_s: &settings::Incremental, _arguments: &str, _progress: &Progress) -> Result<Outcome, Error> {
    Err(Error::Usage(crate::settings::UsageError("incremental is not built yet".into())))
}
