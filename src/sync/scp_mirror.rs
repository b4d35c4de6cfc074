//! STUB — being written: mirroring a Site Content Protocol source (issue 6).
use crate::error::Error;
use crate::settings;
use crate::sync::context::RunContext;
use url::Url;

/// `baseline` of the SCP source whose sitemap is at `sitemap`.
pub fn baseline(
    _ctx: &mut RunContext<'_, '_>,
    _s: &settings::Baseline,
    sitemap: &Url,
) -> Result<(), Error> {
    Err(not_yet(sitemap))
}

/// `incremental` of the SCP source whose sitemap is at `sitemap`.
pub fn incremental(
    _ctx: &mut RunContext<'_, '_>,
    _s: &settings::Incremental,
    sitemap: &Url,
) -> Result<(), Error> {
    Err(not_yet(sitemap))
}

fn not_yet(url: &Url) -> Error {
    Error::Source(crate::error::SourceError::Unusable {
        url: url.to_string(),
        message: "an SCP source; mirroring SCP is not built yet".into(),
    })
}
