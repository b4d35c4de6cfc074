//! The OAI-PMH harvest as a conversation: `Identify`, then `ListRecords` page by page
//! (§4.5), following each `resumptionToken` (§3.5) until the empty one.

use super::xml::{self, Response, OAI_NS};
use crate::engine::reader::{Bytes, Doc, Entry, Next, ReadError, Reader, Start};
use crate::model::Change;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use url::Url;

/// The `metadataPrefix` harvested when none is asked for: every repository offers it (§3.4).
pub(super) const DEFAULT_PREFIX: &str = "oai_dc";

/// The media type of a record's metadata.
const METADATA_TYPE: &str = "application/xml";

/// The finest datestamp the repository supports (`Identify`'s `granularity`, §3.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Granularity {
    Day,
    Seconds,
}

impl Granularity {
    fn format(self, t: Timestamp) -> String {
        match self {
            Granularity::Day => t.to_zoned(TimeZone::UTC).date().to_string(),
            Granularity::Seconds => t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        }
    }

    /// `from` for a harvest since `since`: one step of the granularity earlier, so that a
    /// record stamped in the same day (or second) as the sync point is listed again.
    fn step_back(self, since: Timestamp) -> Option<String> {
        match self {
            Granularity::Day => {
                let day = since.to_zoned(TimeZone::UTC).date().yesterday().ok()?;
                Some(day.to_string())
            }
            Granularity::Seconds => {
                let t = since.checked_sub(SignedDuration::from_secs(1)).ok()?;
                Some(self.format(t))
            }
        }
    }
}

/// A datestamp (§3.3.1): `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDThh:mm:ssZ`.
pub(super) fn datestamp(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    if s.len() == 10 {
        let date: jiff::civil::Date = s.parse().ok()?;
        return date.to_zoned(TimeZone::UTC).ok().map(|z| z.timestamp());
    }
    s.parse().ok()
}

/// What [`Reader::checkpoint`] says: enough to go on with the next page after a kill.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Checkpoint {
    /// The `resumptionToken` to fetch next (`None`: a fresh `ListRecords` with `from`).
    token: Option<String>,
    /// The latest datestamp seen in this harvest (RFC 3339).
    last: Option<String>,
    /// The `from` of the listing under way.
    from: Option<String>,
    /// The sync point the harvest started with (RFC 3339), see [`OaiReader::sync_point`].
    #[serde(default)]
    sync: Option<String>,
    /// Whether every datestamp seen so far came in non-decreasing order.
    #[serde(default)]
    ordered: bool,
    /// Whether a `badResumptionToken` restarted the listing already.
    #[serde(default)]
    restarted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `start` not called yet.
    Idle,
    /// Awaiting the `Identify` response.
    Identify,
    /// Awaiting a `ListRecords` page.
    List,
    Done,
}

/// One harvest of one collection (a base URL, a `metadataPrefix`, perhaps a `set`).
pub(super) struct OaiReader {
    phase: Phase,
    /// The base URL (§2.1), without a query.
    base: Option<Url>,
    prefix: String,
    set: Option<String>,
    since: Option<Timestamp>,
    /// The checkpoint `start` was given, until `Identify` is read.
    resume: Option<Checkpoint>,
    /// Whether this harvest goes on from a checkpoint (it lists only what was left).
    resumed: bool,
    granularity: Granularity,
    deleted_record: Option<String>,
    /// The `from` of the listing under way.
    from: Option<String>,
    /// The `resumptionToken` requested last (`None`: a fresh `ListRecords`).
    token: Option<String>,
    seen: HashSet<String>,
    last: Option<Timestamp>,
    ordered: bool,
    restarted: bool,
    /// A `badResumptionToken` made the listing start over later than the harvest's `from`.
    partial: bool,
    /// A `ListRecords` page was read (or the harvest resumed one).
    listing: bool,
    identify_date: Option<Timestamp>,
    /// The sync point, with its basis.
    sync: Option<(Timestamp, String)>,
    warnings: Vec<String>,
}

const SYNC_BASIS: &str = "responseDate of the first ListRecords response (OAI-PMH 2.0 §3.3)";

impl OaiReader {
    pub(super) fn new() -> OaiReader {
        OaiReader {
            phase: Phase::Idle,
            base: None,
            prefix: DEFAULT_PREFIX.to_string(),
            set: None,
            since: None,
            resume: None,
            resumed: false,
            granularity: Granularity::Day,
            deleted_record: None,
            from: None,
            token: None,
            seen: HashSet::new(),
            last: None,
            ordered: true,
            restarted: false,
            partial: false,
            listing: false,
            identify_date: None,
            sync: None,
            warnings: Vec::new(),
        }
    }

    fn url(&self, pairs: &[(&str, &str)]) -> Url {
        let mut u = self.base.clone().expect("start was called");
        {
            let mut q = u.query_pairs_mut();
            for (k, v) in pairs {
                q.append_pair(k, v);
            }
        }
        u
    }

    /// A fresh `ListRecords` with `self.from`.
    fn list_url(&self) -> Url {
        let mut pairs = vec![
            ("verb", "ListRecords"),
            ("metadataPrefix", self.prefix.as_str()),
        ];
        if let Some(s) = &self.set {
            pairs.push(("set", s));
        }
        if let Some(f) = &self.from {
            pairs.push(("from", f));
        }
        self.url(&pairs)
    }

    fn token_url(&self, token: &str) -> Url {
        self.url(&[("verb", "ListRecords"), ("resumptionToken", token)])
    }

    fn warn(&mut self, doc: &Url, message: impl std::fmt::Display) {
        self.warnings.push(format!("{doc}: {message}"));
    }

    fn identified(&mut self, doc: Doc<'_>, resp: Response) -> Result<Next, ReadError> {
        if let Some((code, message)) = resp.errors.first() {
            return Err(ReadError::new(
                doc.url,
                format!("the repository answered Identify with error {code}: {message}"),
            ));
        }
        let Some(identify) = resp.identify else {
            return Err(ReadError::new(
                doc.url,
                "the response to verb=Identify has no <Identify> element",
            ));
        };
        self.granularity = match identify.granularity.as_deref() {
            Some("YYYY-MM-DD") => Granularity::Day,
            Some("YYYY-MM-DDThh:mm:ssZ") => Granularity::Seconds,
            other => {
                self.warn(
                    doc.url,
                    format!(
                        "granularity {} is neither YYYY-MM-DD nor YYYY-MM-DDThh:mm:ssZ \
                         (OAI-PMH 2.0 §4.2): harvesting by day",
                        other.map_or("(none)".to_string(), |g| format!("{g:?}"))
                    ),
                );
                Granularity::Day
            }
        };
        self.deleted_record = identify.deleted_record;
        self.identify_date = resp.response_date.as_deref().and_then(datestamp);
        self.phase = Phase::List;
        if let Some(cp) = self.resume.take() {
            self.resumed = true;
            self.listing = true;
            self.from = cp.from;
            self.last = cp.last.as_deref().and_then(datestamp);
            self.ordered = cp.ordered;
            self.restarted = cp.restarted;
            self.sync = cp
                .sync
                .as_deref()
                .and_then(datestamp)
                .map(|t| (t, format!("{SYNC_BASIS}, of the harvest this one resumed")));
            if let Some(token) = cp.token {
                self.seen.insert(token.clone());
                let next = self.token_url(&token);
                self.token = Some(token);
                return Ok(Next::Fetch(next));
            }
            return Ok(Next::Fetch(self.list_url()));
        }
        self.from = self.since.and_then(|s| self.granularity.step_back(s));
        Ok(Next::Fetch(self.list_url()))
    }

    fn listed(
        &mut self,
        doc: Doc<'_>,
        resp: Response,
        out: &mut Vec<Entry>,
    ) -> Result<Next, ReadError> {
        let err = |m: String| ReadError::new(doc.url, m);
        if self.sync.is_none() {
            match resp.response_date.as_deref().and_then(datestamp) {
                Some(t) => self.sync = Some((t, SYNC_BASIS.to_string())),
                None => {
                    if let Some(t) = self.identify_date {
                        self.sync = Some((
                            t,
                            "responseDate of the Identify response (OAI-PMH 2.0 §3.3)".into(),
                        ));
                    }
                    self.warn(
                        doc.url,
                        format!(
                            "responseDate {:?} is not a UTC datetime (OAI-PMH 2.0 §3.2)",
                            resp.response_date.as_deref().unwrap_or("")
                        ),
                    );
                }
            }
        }
        if let Some((code, message)) = resp.errors.first() {
            return self.oai_error(doc, code, message);
        }
        if !resp.list_records {
            return Err(err(
                "the response to verb=ListRecords has neither <ListRecords> nor <error>".into(),
            ));
        }
        // Read every record before anything changes: a bad one applies nothing.
        let mut entries = Vec::with_capacity(resp.records.len());
        let mut last = self.last;
        let mut ordered = self.ordered;
        let mut warnings = Vec::new();
        for rec in resp.records {
            let Some(id) = rec.identifier.filter(|i| !i.is_empty()) else {
                return Err(err("a record without <identifier>".into()));
            };
            let uri = Url::parse(&id).map_err(|e| {
                err(format!(
                    "record identifier {id:?} is not a URI ({e}) (OAI-PMH 2.0 §2.4)"
                ))
            })?;
            let time = match rec.datestamp.as_deref().map(|d| (d, datestamp(d))) {
                Some((_, Some(t))) => Some(t),
                Some((d, None)) => {
                    warnings.push(format!(
                        "record {id}: datestamp {d:?} is not a UTC datetime"
                    ));
                    None
                }
                None => {
                    warnings.push(format!("record {id}: no <datestamp>"));
                    None
                }
            };
            if let Some(t) = time {
                if last.is_some_and(|l| t < l) {
                    ordered = false;
                }
                last = last.max(Some(t));
            }
            if rec.deleted {
                entries.push(Entry {
                    uri,
                    change: Some(Change::Deleted),
                    time,
                    bytes: Bytes::None,
                });
                continue;
            }
            let Some(bytes) = rec.metadata else {
                return Err(err(format!(
                    "record {id} has neither metadata nor status=\"deleted\" (OAI-PMH 2.0 §2.5)"
                )));
            };
            if rec.extra_metadata {
                warnings.push(format!(
                    "record {id}: more than one element in <metadata>; the first is kept"
                ));
            }
            entries.push(Entry {
                uri,
                change: None,
                time,
                bytes: Bytes::Inline {
                    bytes,
                    media_type: METADATA_TYPE,
                },
            });
        }
        let next = match resp.token.filter(|t| !t.is_empty()) {
            Some(token) => {
                if self.seen.contains(&token) {
                    return Err(err(format!(
                        "the repository repeated resumptionToken {token}: stopping rather than looping"
                    )));
                }
                Some(token)
            }
            None => None,
        };
        for w in warnings {
            self.warn(doc.url, w);
        }
        out.extend(entries);
        self.last = last;
        self.ordered = ordered;
        self.listing = true;
        Ok(match next {
            Some(token) => {
                self.seen.insert(token.clone());
                let url = self.token_url(&token);
                self.token = Some(token);
                Next::Fetch(url)
            }
            None => self.done(),
        })
    }

    fn done(&mut self) -> Next {
        self.token = None;
        self.phase = Phase::Done;
        Next::Done
    }

    fn oai_error(&mut self, doc: Doc<'_>, code: &str, message: &str) -> Result<Next, ReadError> {
        match code {
            "noRecordsMatch" => {
                self.listing = true;
                Ok(self.done())
            }
            "badResumptionToken" if self.token.is_some() => {
                let token = self.token.take().unwrap_or_default();
                if self.restarted {
                    return Err(ReadError::new(
                        doc.url,
                        format!(
                            "the repository refused resumptionToken {token} (badResumptionToken: \
                             {message}) after the listing was restarted once already"
                        ),
                    ));
                }
                self.restarted = true;
                // OAI-PMH does not order a listing: starting over from the latest datestamp
                // seen is safe only when every datestamp came in order; else from the start.
                let (from, why) = match self.last {
                    Some(last) if self.ordered => {
                        self.partial = true;
                        (
                            Some(self.granularity.format(last)),
                            "the latest datestamp seen",
                        )
                    }
                    _ => (
                        self.from.clone(),
                        "the harvest's own from, as the datestamps seen were not in order",
                    ),
                };
                self.from = from;
                let url = self.list_url();
                self.warn(
                    doc.url,
                    format!(
                        "the repository refused resumptionToken {token} (badResumptionToken: {message}); \
                         the listing starts over from {} ({why})",
                        self.from.as_deref().unwrap_or("the beginning")
                    ),
                );
                Ok(Next::Fetch(url))
            }
            "cannotDisseminateFormat" => Err(ReadError::new(
                doc.url,
                format!(
                    "the repository does not offer metadataPrefix {} (--oai-prefix): {message}",
                    self.prefix
                ),
            )),
            _ => Err(ReadError::new(
                doc.url,
                format!("the repository answered with error {code}: {message}"),
            )),
        }
    }
}

impl Reader for OaiReader {
    fn start(&mut self, base: &Url, from: Start<'_>) -> Result<Url, ReadError> {
        *self = OaiReader::new();
        let mut prefix = None;
        for (k, v) in base.query_pairs() {
            match &*k {
                "metadataPrefix" => prefix = Some(v.into_owned()),
                "set" if !v.is_empty() => self.set = Some(v.into_owned()),
                _ => {}
            }
        }
        let prefix = prefix.unwrap_or_else(|| DEFAULT_PREFIX.to_string());
        if prefix.trim().is_empty() {
            return Err(ReadError::new(
                base,
                "an empty metadataPrefix (--oai-prefix)",
            ));
        }
        self.prefix = prefix;
        let mut b = base.clone();
        b.set_query(None);
        b.set_fragment(None);
        self.base = Some(b);
        self.since = from.since;
        if let Some(cp) = from.resume {
            match serde_json::from_str::<Checkpoint>(cp) {
                Ok(cp) => self.resume = Some(cp),
                Err(e) => self.warn(
                    base,
                    format!(
                        "the stored checkpoint {cp:?} is unreadable ({e}): the harvest starts over"
                    ),
                ),
            }
        }
        self.phase = Phase::Identify;
        Ok(self.url(&[("verb", "Identify")]))
    }

    fn read(&mut self, doc: Doc<'_>, out: &mut Vec<Entry>) -> Result<Next, ReadError> {
        match self.phase {
            Phase::Idle => return Err(ReadError::new(doc.url, "read before start")),
            Phase::Done => return Err(ReadError::new(doc.url, "read after the harvest was done")),
            _ => {}
        }
        match xml::root(doc.bytes) {
            Ok((Some(ns), local)) if ns == OAI_NS && local == "OAI-PMH" => {}
            Ok((ns, local)) => {
                return Err(ReadError::new(
                    doc.url,
                    format!(
                        "not an OAI-PMH response: its root element is <{local}> {}",
                        ns.map_or("in no namespace".to_string(), |n| format!(
                            "in namespace {n}"
                        ))
                    ),
                ))
            }
            Err(e) => {
                return Err(ReadError::new(
                    doc.url,
                    format!("not an OAI-PMH response: {e}"),
                ))
            }
        }
        let resp = xml::parse(doc.bytes).map_err(|e| ReadError::new(doc.url, e))?;
        match self.phase {
            Phase::Identify => self.identified(doc, resp),
            _ => self.listed(doc, resp, out),
        }
    }

    fn checkpoint(&self) -> Option<String> {
        if self.phase != Phase::List || !self.listing {
            return None;
        }
        let cp = Checkpoint {
            token: self.token.clone(),
            last: self.last.map(|t| t.to_string()),
            from: self.from.clone(),
            sync: self.sync.as_ref().map(|(t, _)| t.to_string()),
            ordered: self.ordered,
            restarted: self.restarted,
        };
        serde_json::to_string(&cp).ok()
    }

    fn sync_point(&self) -> Option<(Timestamp, String)> {
        match self.phase {
            Phase::Done => self.sync.clone(),
            _ => None,
        }
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// A complete `ListRecords` harvest lists every record the repository holds, so a
    /// record it no longer lists is gone. Records removed without a deleted status are only
    /// told apart that way; where `deletedRecord` is `transient` or `persistent` the
    /// repository says `status="deleted"` (a transient one may forget it). False when this
    /// harvest resumed from a checkpoint (the pages before it are not listed again) or a
    /// `badResumptionToken` made the listing start over from a later datestamp.
    fn lists_everything(&self) -> bool {
        !self.resumed && !self.partial
    }
}
