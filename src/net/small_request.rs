//! Small requests outside the transfer machinery, for `follow`'s WebSub side: a form POST
//! (`application/x-www-form-urlencoded`), as a subscriber sends its subscription requests to a
//! hub (WebSub 1.0 §5.1), and a GET of a discovery document whose `Link` headers count
//! (WebSub §4). Each is bounded by a timeout and a body limit; redirects are not followed on
//! the POST (a hub answers 202 or an error), followed (at most 5) on the GET.

use curl::easy::{Easy, List};
use std::time::Duration;
use url::Url;

/// What the server answered.
#[derive(Debug, Clone)]
pub struct FormResponse {
    pub status: u16,
    pub body: String,
}

/// A document fetched for discovery: the URL it ended at, its status, its `Link` header
/// values and its body (at most `max` bytes: more is an error).
#[derive(Debug, Clone)]
pub struct Discovered {
    pub url: Url,
    pub status: u16,
    pub links: Vec<String>,
    pub body: Vec<u8>,
}

/// GET `url` for WebSub discovery.
pub(crate) fn get_document(
    url: &Url,
    agent: &str,
    timeout: Duration,
    max: usize,
) -> Result<Discovered, String> {
    let mut easy = Easy::new();
    let mut body = Vec::new();
    let mut links = Vec::new();
    let too_large = std::cell::Cell::new(false);
    let fail = |e: curl::Error| format!("{url}: {e}");
    easy.url(url.as_str()).map_err(fail)?;
    easy.follow_location(true).map_err(fail)?;
    easy.max_redirections(5).map_err(fail)?;
    easy.useragent(agent).map_err(fail)?;
    easy.timeout(timeout).map_err(fail)?;
    easy.accept_encoding("").map_err(fail)?;
    {
        let mut transfer = easy.transfer();
        transfer
            .header_function(|h| {
                let line = String::from_utf8_lossy(h);
                if line.starts_with("HTTP/") {
                    links.clear(); // a redirect's headers do not count
                } else if let Some((name, value)) = line.split_once(':') {
                    if name.trim().eq_ignore_ascii_case("link") {
                        links.push(value.trim().to_string());
                    }
                }
                true
            })
            .map_err(fail)?;
        transfer
            .write_function(|data| {
                if body.len() + data.len() > max {
                    too_large.set(true);
                    return Ok(0);
                }
                body.extend_from_slice(data);
                Ok(data.len())
            })
            .map_err(fail)?;
        if let Err(e) = transfer.perform() {
            return Err(match too_large.get() {
                true => format!("{url}: larger than {max} bytes"),
                false => format!("{url}: {e}"),
            });
        }
    }
    let status = easy.response_code().map_err(fail)?;
    let at = easy
        .effective_url()
        .ok()
        .flatten()
        .and_then(|u| Url::parse(u).ok())
        .unwrap_or_else(|| url.clone());
    Ok(Discovered {
        url: at,
        status: u16::try_from(status).unwrap_or(0),
        links,
        body,
    })
}

const MAX_BODY: usize = 64 * 1024;

/// POST `fields` form-encoded to `url`, with the User-Agent `agent`.
pub(crate) fn post_form(
    url: &Url,
    fields: &[(&str, &str)],
    agent: &str,
    timeout: Duration,
) -> Result<FormResponse, String> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let mut easy = Easy::new();
    let mut got = Vec::new();
    let fail = |e: curl::Error| format!("{url}: {e}");
    easy.url(url.as_str()).map_err(fail)?;
    easy.post(true).map_err(fail)?;
    easy.post_fields_copy(body.as_bytes()).map_err(fail)?;
    easy.useragent(agent).map_err(fail)?;
    easy.timeout(timeout).map_err(fail)?;
    easy.connect_timeout(timeout.min(Duration::from_secs(10)))
        .map_err(fail)?;
    let mut headers = List::new();
    headers
        .append("Content-Type: application/x-www-form-urlencoded")
        .map_err(fail)?;
    easy.http_headers(headers).map_err(fail)?;
    {
        let mut transfer = easy.transfer();
        transfer
            .write_function(|data| {
                let room = MAX_BODY.saturating_sub(got.len());
                got.extend_from_slice(&data[..data.len().min(room)]);
                Ok(data.len())
            })
            .map_err(fail)?;
        transfer.perform().map_err(fail)?;
    }
    let status = easy.response_code().map_err(fail)?;
    Ok(FormResponse {
        status: u16::try_from(status).unwrap_or(0),
        body: String::from_utf8_lossy(&got).into_owned(),
    })
}
