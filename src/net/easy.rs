//! One GET on a libcurl easy handle, made the same way for documents (`document`) and for
//! resources (`transfer`): the request's options, the response head read from libcurl's header
//! lines with its framing checked, and what a libcurl error comes to.
//!
//! Both kinds of GET share these, and so one trust store and one proxy convention: `--ca-file`
//! replaces the usual certificate authorities (libcurl's `CURLOPT_CAINFO`, with the folder of
//! authorities dropped), and proxies are libcurl's own environment variables (`http_proxy`,
//! `https_proxy`/`HTTPS_PROXY`, `all_proxy`/`ALL_PROXY`, `no_proxy`/`NO_PROXY`; the upper-case
//! `HTTP_PROXY` is ignored, as curl does, since a CGI environment lets a client set it), read
//! because no proxy option is set.

use crate::model::Validators;
use crate::net::config::HttpConfig;
use crate::net::FetchError;
use curl::easy::{Easy2, List};
use std::time::Duration;
use url::Url;

/// The most bytes of response head accepted for one GET: status lines and header fields of
/// every interim (`1xx`) response, the final one, and any trailer fields.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most interim (`1xx`) responses accepted before the final one.
const MAX_INTERIM: u32 = 8;
/// The most bytes of an error or redirect body read (and dropped) before the connection is
/// given up instead.
pub(crate) const MAX_DROPPED_BODY: u64 = 64 * 1024;

/// Set the options of a GET of `url` on `easy` (fresh, or reset since its last transfer):
/// conditional when `validators` are given, on a new connection when `fresh`.
pub(crate) fn configure_get<H>(
    easy: &mut Easy2<H>,
    cfg: &HttpConfig,
    user_agent: &str,
    url: &Url,
    validators: &Validators,
    fresh: bool,
) -> Result<(), curl::Error> {
    let mut target = url.clone();
    target.set_fragment(None);
    easy.url(target.as_str())?;
    only_http(easy)?;
    // The out-of-step check is HTTP/1.1's: on an HTTP/2 connection (here, cleartext with prior
    // knowledge) other streams' frames wait on the socket by design, and a request seeing them
    // would be refused (every one, under load). HTTP/2 frames carry their stream: nothing can
    // be taken for another response.
    let http2_known = cfg.http2_prior_knowledge && url.scheme() == "http";
    if !http2_known {
        check_reused_connections(easy)?;
    }
    if fresh {
        easy.fresh_connect(true)?;
    }
    // Redirects are ours: every hop goes through the scope.
    easy.follow_location(false)?;
    easy.useragent(user_agent)?;
    // The representation as served: nothing decoded, `Content-Encoding` recorded.
    easy.http_content_decoding(false)?;
    easy.http_transfer_decoding(true)?;
    let mut headers = List::new();
    headers.append("Accept: */*")?;
    headers.append("Accept-Encoding: identity")?;
    // A validator that cannot be a header value (hostile or corrupted) is simply not sent:
    // the GET becomes unconditional, which is always correct (RFC 9110 §13.1).
    if let Some(etag) = validators.etag.as_deref().filter(|v| header_safe(v)) {
        headers.append(&format!("If-None-Match: {}", etag.trim()))?;
    }
    if let Some(lm) = validators
        .last_modified
        .as_deref()
        .filter(|v| header_safe(v))
    {
        headers.append(&format!("If-Modified-Since: {}", lm.trim()))?;
    }
    for (name, value) in cfg.credentials.for_url(url) {
        headers.append(&format!("{name}: {value}"))?;
    }
    easy.http_headers(headers)?;
    trust(easy, cfg)?;
    if http2_known {
        easy.http_version(curl::easy::HttpVersion::V2PriorKnowledge)?;
    }
    easy.connect_timeout(cfg.timeout)?;
    Ok(())
}

/// Whether the linked libcurl speaks HTTP/2 with prior knowledge soundly: libcurl 7.88 fails
/// every request after the first on such a connection ("Error in the HTTP2 framing layer", the
/// curl tool alike), and under load fresh connections too; 8.0 and later do not. Where it does
/// not, `--http2-prior-knowledge` is refused (`settings`).
pub(crate) fn h2c_works() -> bool {
    curl::Version::get().version_num() >= 0x08_00_00
}

/// `--ca-file`: its authorities instead of the usual ones. The curl crate points every new
/// (or reset) handle at the system's bundle and folder of authorities (found by
/// openssl-probe, which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`); the file replaces the
/// bundle, and the folder is dropped, or its authorities would still be trusted beside it.
///
/// Without it, `SSL_CERT_FILE` and `SSL_CERT_DIR` name the usual ones, as they do for the curl
/// tool and OpenSSL: a system libcurl (Debian's) has its own paths compiled in and would
/// otherwise ignore them, so a build with it and one with the bundled libcurl would trust
/// different authorities.
fn trust<H>(easy: &mut Easy2<H>, cfg: &HttpConfig) -> Result<(), curl::Error> {
    let Some(ca_file) = &cfg.ca_file else {
        let (file, dir) = usual_authorities();
        if let Some(file) = file {
            easy.cainfo(file)?;
        }
        if let Some(dir) = dir {
            easy.capath(dir)?;
        }
        return Ok(());
    };
    easy.cainfo(ca_file)?;
    // SAFETY: a valid easy handle; CURLOPT_CAPATH takes a string, NULL for no folder.
    let rc = unsafe {
        curl_sys::curl_easy_setopt(
            easy.raw(),
            curl_sys::CURLOPT_CAPATH,
            std::ptr::null::<libc::c_char>(),
        )
    };
    if rc == curl_sys::CURLE_OK {
        Ok(())
    } else {
        Err(curl::Error::new(rc))
    }
}

/// `SSL_CERT_FILE` and `SSL_CERT_DIR`, when set and not empty (read once).
fn usual_authorities() -> &'static (Option<std::path::PathBuf>, Option<std::path::PathBuf>) {
    static USUAL: std::sync::OnceLock<(Option<std::path::PathBuf>, Option<std::path::PathBuf>)> =
        std::sync::OnceLock::new();
    USUAL.get_or_init(|| {
        let named = |var| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(Into::into)
        };
        (named("SSL_CERT_FILE"), named("SSL_CERT_DIR"))
    })
}

/// `CURLOPT_PREREQFUNCTION` and `CURLOPT_PREREQDATA` (libcurl 7.80) and `CURLINFO_SCHEME`
/// (7.52): not wrapped by the crates.
const CURLOPT_PREREQFUNCTION: curl_sys::CURLoption = 20_000 + 312;
const CURLOPT_PREREQDATA: curl_sys::CURLoption = 10_000 + 313;
const CURLINFO_SCHEME: curl_sys::CURLINFO = 0x10_0000 + 49;
const CURL_PREREQFUNC_ABORT: libc::c_int = 1;

/// Refuse a kept-alive plain-http connection that has bytes waiting before the request goes
/// out. libcurl checks an idle connection only when it has been idle for a second, so a stray
/// response that arrived since the last one (a broken or hostile server, a response smuggled
/// behind another) would be read as the answer to the next request: with no digest declared,
/// the wrong bytes would be stored under the next resource's name. (Over TLS the socket's
/// readability says nothing about the HTTP stream; there libcurl's own check stands.)
fn check_reused_connections<H>(easy: &mut Easy2<H>) -> Result<(), curl::Error> {
    extern "C" fn prereq(
        clientp: *mut libc::c_void,
        _primary_ip: *mut libc::c_char,
        _local_ip: *mut libc::c_char,
        primary_port: libc::c_int,
        local_port: libc::c_int,
    ) -> libc::c_int {
        let handle = clientp as *mut curl_sys::CURL;
        let mut connects: libc::c_long = 1;
        let mut scheme: *const libc::c_char = std::ptr::null();
        // SAFETY: `handle` is the easy handle this callback was set on, alive while its
        // transfer runs; each getinfo writes one value of the type passed.
        unsafe {
            curl_sys::curl_easy_getinfo(handle, curl_sys::CURLINFO_NUM_CONNECTS, &mut connects);
            curl_sys::curl_easy_getinfo(handle, CURLINFO_SCHEME, &mut scheme);
        }
        let plain = !scheme.is_null()
            // SAFETY: libcurl gives a NUL-terminated string it owns.
            && unsafe { std::ffi::CStr::from_ptr(scheme) }
                .to_bytes()
                .eq_ignore_ascii_case(b"http");
        if !plain {
            return 0;
        }
        let ports = (local_port, primary_port);
        if crate::net::sockets::before_request(handle as usize, ports, connects == 0) {
            0
        } else {
            CURL_PREREQFUNC_ABORT
        }
    }
    extern "C" fn sockopt(
        _clientp: *mut libc::c_void,
        fd: curl_sys::curl_socket_t,
        _purpose: curl_sys::curlsocktype,
    ) -> libc::c_int {
        crate::net::sockets::opened(fd);
        0
    }
    extern "C" fn closesocket(
        _clientp: *mut libc::c_void,
        fd: curl_sys::curl_socket_t,
    ) -> libc::c_int {
        crate::net::sockets::closed(fd);
        // SAFETY: libcurl hands over a socket it opened and will not use again.
        unsafe { libc::close(fd) }
    }
    type Sockopt = extern "C" fn(
        *mut libc::c_void,
        curl_sys::curl_socket_t,
        curl_sys::curlsocktype,
    ) -> libc::c_int;
    type Closesocket = extern "C" fn(*mut libc::c_void, curl_sys::curl_socket_t) -> libc::c_int;
    type Prereq = extern "C" fn(
        *mut libc::c_void,
        *mut libc::c_char,
        *mut libc::c_char,
        libc::c_int,
        libc::c_int,
    ) -> libc::c_int;
    let raw = easy.raw();
    // SAFETY: a valid easy handle; a function pointer of libcurl's prototype, and the handle
    // itself as its data.
    let rc = unsafe {
        let mut rc = curl_sys::curl_easy_setopt(raw, CURLOPT_PREREQFUNCTION, prereq as Prereq);
        if rc == curl_sys::CURLE_OK {
            rc = curl_sys::curl_easy_setopt(raw, CURLOPT_PREREQDATA, raw as *mut libc::c_void);
        }
        if rc == curl_sys::CURLE_OK {
            rc = curl_sys::curl_easy_setopt(
                raw,
                curl_sys::CURLOPT_SOCKOPTFUNCTION,
                sockopt as Sockopt,
            );
        }
        if rc == curl_sys::CURLE_OK {
            rc = curl_sys::curl_easy_setopt(
                raw,
                curl_sys::CURLOPT_CLOSESOCKETFUNCTION,
                closesocket as Closesocket,
            );
        }
        rc
    };
    if rc == curl_sys::CURLE_OK {
        Ok(())
    } else {
        Err(curl::Error::new(rc))
    }
}

/// Speak only http and https, whatever the URL says (a redirect is checked by the scope too).
fn only_http<H>(easy: &mut Easy2<H>) -> Result<(), curl::Error> {
    // CURLOPT_PROTOCOLS_STR (libcurl 7.85) is not wrapped by the crate; CURLOPT_PROTOCOLS is
    // the older bitmask form of the same setting.
    const CURLPROTO_HTTP: libc::c_long = 1;
    const CURLPROTO_HTTPS: libc::c_long = 2;
    // SAFETY: a valid easy handle and a long-valued option.
    let rc = unsafe {
        curl_sys::curl_easy_setopt(
            easy.raw(),
            curl_sys::CURLOPT_PROTOCOLS,
            CURLPROTO_HTTP | CURLPROTO_HTTPS,
        )
    };
    if rc == curl_sys::CURLE_OK {
        Ok(())
    } else {
        Err(curl::Error::new(rc))
    }
}

/// Whether `v` can go into a request header as it is.
pub(crate) fn header_safe(v: &str) -> bool {
    let v = v.trim();
    !v.is_empty() && v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

pub(crate) fn transport(url: &Url, message: String) -> FetchError {
    FetchError::Transport {
        url: url.to_string(),
        message,
    }
}

/// The head of the response being received (the last one: a `1xx` is replaced by what
/// follows), read from libcurl's header lines.
#[derive(Debug, Default, Clone)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) http10: bool,
    pub(crate) content_length: Option<u64>,
    pub(crate) transfer_encoding: Vec<String>,
    pub(crate) etag: Option<String>,
    pub(crate) last_modified: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) content_encoding: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) retry_after: Option<String>,
    /// Every `Link` field value as served (RFC 8288), in order; parsed by `net::link`.
    pub(crate) links: Vec<String>,
    /// The final response's head is complete (what follows is body, then trailers).
    pub(crate) complete: bool,
    /// Bytes of head so far, interim responses and trailers included.
    bytes: usize,
    interim: u32,
}

impl Head {
    /// Whether any of the response (a status line, an interim response) has come.
    pub(crate) fn started(&self) -> bool {
        self.bytes > 0
    }

    /// Take one header line as libcurl hands it over: `Ok(true)` when it completed the final
    /// response's head, `Err` with the reason the response is refused.
    pub(crate) fn line(&mut self, line: &[u8]) -> Result<bool, String> {
        self.bytes += line.len();
        if self.bytes > MAX_HEAD {
            return Err(format!(
                "response head (interim responses and trailers included) over {MAX_HEAD} bytes"
            ));
        }
        if self.complete {
            // Trailer fields, bounded with the head; nothing in them is used.
            return Ok(false);
        }
        if line.starts_with(b"HTTP/") {
            let status = line
                .split(|&b| b == b' ')
                .nth(1)
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.parse::<u16>().ok());
            let Some(status) = status else {
                return Err(framing("malformed status line"));
            };
            *self = Head {
                status,
                http10: line.starts_with(b"HTTP/1.0"),
                bytes: self.bytes,
                interim: self.interim,
                ..Head::default()
            };
            return Ok(false);
        }
        if line == b"\r\n" || line == b"\n" {
            if (100..=199).contains(&self.status) {
                self.interim += 1;
                if self.interim > MAX_INTERIM {
                    let why = format!("more than {MAX_INTERIM} interim (1xx) responses");
                    return Err(framing(&why));
                }
                return Ok(false);
            }
            self.complete = true;
            return self.check_framing().map(|()| true);
        }
        self.field(line).map(|()| false)
    }

    /// One header field of the response.
    fn field(&mut self, line: &[u8]) -> Result<(), String> {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Ok(());
        };
        let name = String::from_utf8_lossy(&line[..colon]).to_ascii_lowercase();
        let raw = &line[colon + 1..];
        let value = || {
            let v = String::from_utf8_lossy(raw).trim().to_string();
            (!v.is_empty()).then_some(v)
        };
        match name.trim_end() {
            "content-length" => {
                let text = String::from_utf8_lossy(raw);
                let Ok(n) = text.trim().parse::<u64>() else {
                    return Err(framing(&format!("Content-Length {:?}", text.trim())));
                };
                if self.content_length.is_some_and(|m| m != n) {
                    return Err(framing("two different Content-Length values"));
                }
                self.content_length = Some(n);
            }
            "transfer-encoding" => {
                // Bytes outside ASCII make the whole value unusable: kept as they are, so the
                // framing check refuses it rather than seeing no Transfer-Encoding.
                let text = String::from_utf8_lossy(raw);
                for part in text.split(',') {
                    let part = part.trim();
                    if !part.is_empty() || !raw.is_ascii() {
                        self.transfer_encoding.push(part.to_string());
                    }
                }
            }
            "etag" => self.etag = value(),
            "last-modified" => self.last_modified = value(),
            "content-type" => self.content_type = value(),
            "content-encoding" => self.content_encoding = value(),
            "location" => self.location = value(),
            "retry-after" => self.retry_after = value(),
            "link" => {
                if let Some(v) = value() {
                    self.links.push(v);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The complete head's framing must be unambiguous (RFC 9112 §6).
    fn check_framing(&self) -> Result<(), String> {
        let te = &self.transfer_encoding;
        if te.is_empty() {
            return Ok(());
        }
        if te.len() > 1 || !te[0].eq_ignore_ascii_case("chunked") {
            let te = te.join(", ");
            return Err(framing(&format!(
                "Transfer-Encoding {te:?} (only a single \"chunked\" is accepted)"
            )));
        }
        if self.content_length.is_some() {
            return Err(framing(
                "both Transfer-Encoding and Content-Length (RFC 9112 §6.3: a sign of request \
                 smuggling)",
            ));
        }
        if self.http10 {
            return Err(framing("Transfer-Encoding on an HTTP/1.0 response"));
        }
        Ok(())
    }

    /// Whether the final response carries the representation: a 2xx other than 206 (a part
    /// of one, never asked for).
    pub(crate) fn has_representation(&self) -> bool {
        (200..=299).contains(&self.status) && self.status != 206
    }

    /// `Content-Encoding` as served, unless `identity`.
    pub(crate) fn encoding(&self) -> Option<String> {
        self.content_encoding
            .clone()
            .filter(|e| !e.eq_ignore_ascii_case("identity"))
    }
}

fn framing(why: &str) -> String {
    format!("refused response framing: {why}")
}

/// What a libcurl error of a GET of `url` comes to, and whether another attempt may mend it.
/// `received`: the body bytes in before it, `None` while the head was incomplete. (What only
/// a resource transfer sets, `--max-size`, `--max-time` and the low-speed cut-off, is the
/// transfer's to judge first.)
pub(crate) fn failure(
    url: &Url,
    e: &curl::Error,
    timeout: Duration,
    received: Option<u64>,
) -> (FetchError, bool) {
    let detail = e
        .extra_description()
        .map(str::to_string)
        .unwrap_or_else(|| e.description().to_string());
    if e.is_operation_timedout() {
        let url = url.to_string();
        return (FetchError::Timeout { url, timeout }, true);
    }
    // CURLE_TOO_LARGE (libcurl 8.6 and later; out of memory before).
    const CURLE_TOO_LARGE: curl_sys::CURLcode = 100;
    if (e.is_out_of_memory() || e.code() == CURLE_TOO_LARGE) && received.is_none() {
        // libcurl's answer to a header line longer than it takes (100 KiB).
        let message =
            format!("response head too large: a header line over libcurl's limit ({detail})");
        return (transport(url, message), false);
    }
    if e.is_bad_content_encoding() && received.is_none() {
        // Nothing is content-decoded here, so this is libcurl (8.x) refusing a
        // Transfer-Encoding as its header line arrives, before `Head` sees the whole head: the
        // same refusal (RFC 9112 §6.1), in the same words, whatever the libcurl.
        let message = format!("refused response framing: Transfer-Encoding ({detail})");
        return (transport(url, message), false);
    }
    let retryable = e.is_couldnt_resolve_host()
        || e.is_couldnt_connect()
        || e.is_partial_file()
        || e.is_got_nothing()
        || e.is_send_error()
        || e.is_recv_error()
        || e.is_http2_error()
        || e.is_http2_stream_error()
        || e.is_again()
        || e.code() == curl_sys::CURLE_FTP_WEIRD_SERVER_REPLY;
    let text = match (e.is_couldnt_resolve_host(), received) {
        (true, _) => format!("host not found ({detail})"),
        (false, Some(n)) => format!("{detail} (after {n} bytes of the body)"),
        (false, None) => detail,
    };
    // TLS, unsupported protocols, malformed responses: the same request fails the same way.
    (transport(url, tls_hint(url, text)), retryable)
}

/// A TLS handshake that meets plain HTTP (`https://` given for an http port) fails with
/// OpenSSL's "wrong version number" (or, from other TLS libraries, a "corrupt message" of
/// an unexpected type): say what it means.
pub(crate) fn tls_hint(url: &Url, message: String) -> String {
    let plain_http = [
        "wrong version number",
        "InvalidContentType",
        "corrupt message",
    ];
    if url.scheme() == "https" && plain_http.iter().any(|m| message.contains(m)) {
        let mut plain = url.clone();
        let _ = plain.set_scheme("http");
        format!(
            "{message}: the server does not answer TLS on this port; if it serves plain HTTP \
             there, give {plain}"
        )
    } else {
        message
    }
}

/// `CURLINFO_HTTP_VERSION` of a response over HTTP/2.
pub(crate) const CURL_HTTP_VERSION_2_0: libc::c_long = 3;

/// The HTTP version a transfer's response came over (`CURLINFO_HTTP_VERSION`: 2 for 1.1, 3
/// for 2, 4 for 3; 0 when unknown).
pub(crate) fn http_version(handle: *mut curl_sys::CURL) -> libc::c_long {
    const CURLINFO_HTTP_VERSION: curl_sys::CURLINFO = 0x20_0000 + 46;
    let mut version: libc::c_long = 0;
    // SAFETY: a valid easy handle; the info is one long.
    let rc = unsafe { curl_sys::curl_easy_getinfo(handle, CURLINFO_HTTP_VERSION, &mut version) };
    if rc == curl_sys::CURLE_OK {
        version
    } else {
        0
    }
}

/// `host:port` of `url`, as the no-reuse set and the HTTP/2 hosts key them.
pub(crate) fn host_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    format!("{host}:{}", url.port_or_known_default().unwrap_or(0))
}
