//! One resource at a time: the blocking fetches (a dump's packages, repair, audit's refetch),
//! each on a [`Transfers`] of its own. The many-at-once path is [`crate::net::transfer`].

use crate::net::fetch::{staging_error, Expected, Staged};
use crate::net::transfer::{Request, Transfers};
use crate::net::{FetchError, Http, Scope, Validators};
use crate::store::new_file::NewFile;
use std::path::Path;
use std::sync::Arc;
use url::Url;

/// Fetch one resource on a [`Transfers`] of its own: the blocking form, for the few GETs made
/// one at a time (repair, dump packages).
fn fetch_one(http: &Http, staging: &Path, request: Request) -> Result<Staged<NewFile>, FetchError> {
    let mut transfers = Transfers::new(http, staging, 1);
    transfers.start(request, ());
    loop {
        if let Some((_, outcome)) = transfers.wait().pop() {
            return outcome.into_result();
        }
    }
}

/// Fetch `url` into a new file under `staging`, hashing while writing; verify length and
/// every usable declared digest; on any failure the staging file is removed.
///
/// Retries (connection failures, timeouts, 429, 5xx, and a body that breaks off mid-transfer)
/// share one budget of `HttpConfig::tries` attempts. A body that contradicts the declared
/// length or digests is not retried: the source served it, the source is wrong.
pub fn fetch_to_staging(
    http: &Http,
    url: &Url,
    scope: &Scope,
    staging: &Path,
    expected: &Expected,
) -> Result<Staged, FetchError> {
    let mut request = request(url, scope, expected);
    request.create = NewFile::create_named;
    let Staged {
        file,
        computed,
        final_url,
        etag,
        last_modified,
        media_type,
        content_encoding,
    } = fetch_one(http, staging, request)?;
    let name = file.describe();
    Ok(Staged {
        file: file.keep().map_err(|e| staging_error(&name, e))?,
        computed,
        final_url,
        etag,
        last_modified,
        media_type,
        content_encoding,
    })
}

/// [`fetch_to_staging`] for bytes headed for the object store
/// ([`ObjectStore::ingest_new`](crate::store::ObjectStore::ingest_new)): the file has no name
/// in `staging` where the file system allows.
pub(crate) fn fetch_new_object(
    http: &Http,
    url: &Url,
    scope: &Scope,
    staging: &Path,
    expected: &Expected,
) -> Result<Staged<NewFile>, FetchError> {
    fetch_one(http, staging, request(url, scope, expected))
}

/// [`fetch_new_object`] as a conditional GET with `validators` (those stored with the
/// mirror's version): a 304 is [`FetchError::Status`] 304, nothing staged.
pub(crate) fn fetch_new_object_if_changed(
    http: &Http,
    url: &Url,
    scope: &Scope,
    staging: &Path,
    expected: &Expected,
    validators: &Validators,
) -> Result<Staged<NewFile>, FetchError> {
    let mut request = request(url, scope, expected);
    request.validators = validators.clone();
    fetch_one(http, staging, request)
}

fn request(url: &Url, scope: &Scope, expected: &Expected) -> Request {
    Request::new(url.clone(), Arc::new(scope.clone()), expected.clone())
}
