-- rsmirror catalog, schema version 10 (PRAGMA user_version). Version 1 had objects in two
-- fan-out folder levels (objects/sha256/ab/cd/<sha256>); version 2 has one. Versions 1 and 2
-- kept SCP pages apart (`scp_pages`, `scp_page_versions`, the JSON inside the catalog); version
-- 3 keeps them as resources and objects like every other format (`scp_versions` below), names
-- each collection once (`collections`), and remembers `--map` with its source. Version 4 says
-- when a source stopped being followed (`sources.removed_at`). Version 5 remembers a source's
-- own settings (`sources.settings_json`: its --include/--exclude rules). Version 6 remembers
-- settings of the whole mirror (`mirror_settings`: where its objects are). Version 7 remembers
-- where each collection publishes its changes (`change_documents`). Version 8 records a
-- version's content coding, declared and served (`versions.declared_encoding`,
-- `versions.content_encoding`). Version 9 remembers where a harvest killed between two
-- documents resumes (`harvests`: an OAI-PMH resumptionToken). Version 10 remembers the push
-- subscriptions of `rsmirror follow` (`subscriptions`: WebSub hub, topic, callback, lease).
-- Times are UTC RFC 3339 text (`2026-01-01T00:00:00Z`, sub-seconds kept when the source gave
-- them). Digests are lower-case hex. A column carries its unit in its name.

-- What the user pointed rsmirror at; the mirror remembers it so cron lines stay short.
CREATE TABLE sources (
    id            INTEGER PRIMARY KEY,
    url           TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL DEFAULT 'resourcesync', -- resourcesync | scp | arc
    added_at      TEXT NOT NULL,
    maps_json     TEXT,                        -- the --map rules given with it: [[URL_PREFIX, DIR], ...]
    removed_at    TEXT,                        -- no longer followed since (`rsmirror source remove`, or a
                                               -- first baseline that found nothing); its versions stay
    settings_json TEXT                         -- its own settings: {"include": [GLOB...], "exclude": [GLOB...]}
);

-- One command invocation.
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    command       TEXT NOT NULL,               -- baseline | incremental | audit
    source_id     INTEGER REFERENCES sources(id),
    arguments     TEXT NOT NULL,               -- the command line, for the record
    started_at    TEXT NOT NULL,
    ended_at      TEXT,                        -- NULL while running (or if the process died)
    outcome       TEXT,                        -- ok | partial | failed | interrupted | abandoned
    exit_code     INTEGER,
    counts_json   TEXT                         -- created/updated/unchanged/failed/refused/deleted/bytes
);

-- Every source document read: Source Descriptions, Capability Lists, lists, indexes.
CREATE TABLE documents (
    id            INTEGER PRIMARY KEY,
    source_id     INTEGER NOT NULL REFERENCES sources(id),
    url           TEXT NOT NULL,
    capability    TEXT,                        -- rs:md capability; NULL for a plain Sitemap
    root          TEXT NOT NULL,               -- urlset | sitemapindex
    syntax        TEXT NOT NULL,               -- plain | alpha2012 | beta2013 | v1
    at            TEXT,
    completed     TEXT,
    from_time     TEXT,
    until_time    TEXT,
    entry_count   INTEGER NOT NULL,
    etag          TEXT,
    last_modified TEXT,
    fetched_at    TEXT NOT NULL,
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    UNIQUE (source_id, url)
);

-- The collections resources belong to, each named once: a Capability List (or list) URL, an
-- ARC sitemap URL, an SCP section (`SOURCE#scp-section=NAME`). The same names are used by
-- sync_points, change_events and collection_identities.
CREATE TABLE collections (
    id                 INTEGER PRIMARY KEY,
    name               TEXT NOT NULL UNIQUE
);

-- A resource is a URI; its states are its versions.
CREATE TABLE resources (
    id                 INTEGER PRIMARY KEY,
    uri                TEXT NOT NULL UNIQUE,   -- as the source listed it (resolved, trimmed)
    collection_id      INTEGER NOT NULL REFERENCES collections(id), -- the collection it was first listed in
    first_run_id       INTEGER NOT NULL REFERENCES runs(id),
    current_version_id INTEGER                 -- the latest version; kept in the same transaction
);

-- Every state ever fetched. A tombstone (change = 'deleted') has no object.
CREATE TABLE versions (
    id                   INTEGER PRIMARY KEY,
    resource_id          INTEGER NOT NULL REFERENCES resources(id),
    run_id               INTEGER NOT NULL REFERENCES runs(id),
    change               TEXT NOT NULL,        -- created | updated | deleted
    event_time           TEXT,                 -- change time from the source, if any
    lastmod              TEXT,                 -- <lastmod> the source declared
    length_bytes         INTEGER,              -- computed length (NULL for a tombstone)
    declared_length_bytes INTEGER,
    declared_hash        TEXT,                 -- the source's digests, normalised: "md5:… sha-256:…"
    md5_hex              TEXT,                 -- computed
    sha1_hex             TEXT,                 -- computed only when the source declared sha-1
    sha256_hex           TEXT,                 -- computed; names the object
    media_type           TEXT,
    arrived_via          TEXT NOT NULL,        -- http | dump | scp | arc | tombstone | held | record
    fetched_from         TEXT,                 -- final URL after redirects (or dump package)
    etag                 TEXT,
    last_modified        TEXT,                 -- (when a version was recorded: its run's time)
    declared_encoding    TEXT,                 -- the content coding the source declared
                                               -- (`rs:md encoding`, `rs:contentencoding`)
    content_encoding     TEXT                  -- the `Content-Encoding` it was served with;
                                               -- the bytes are kept as served, never decoded
);
CREATE INDEX versions_by_resource ON versions(resource_id, id);
CREATE INDEX versions_by_object ON versions(sha256_hex);

-- Where each collection's mirror is guaranteed up to (ResourceSync 1.1 §10.1 step 5).
CREATE TABLE sync_points (
    collection    TEXT PRIMARY KEY,            -- Capability List URL (or list URL)
    source_id     INTEGER NOT NULL REFERENCES sources(id),
    at            TEXT,                        -- NULL for an unanchored baseline
    anchored      INTEGER NOT NULL,            -- 0: plain Sitemap, no `at`; see `basis`
    basis         TEXT NOT NULL,               -- what `at` came from
    run_id        INTEGER NOT NULL REFERENCES runs(id), -- the run that set `at` (a later run that
                                               -- found it the same keeps it)
    updated_at    TEXT NOT NULL                -- when a run last recorded it (set or confirmed)
);

-- Where each collection publishes its changes, as its Capability List said at the last run
-- that read it: the Change List (or Change List Index) the next incremental asks for at once,
-- with the Capability List, rather than a round trip after it.
CREATE TABLE change_documents (
    collection    TEXT PRIMARY KEY,            -- as in sync_points
    source_id     INTEGER NOT NULL REFERENCES sources(id),
    url           TEXT NOT NULL,
    run_id        INTEGER NOT NULL REFERENCES runs(id)
);

-- Resources a run could not mirror, and why (failed, refused, gone at the source).
CREATE TABLE run_problems (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    uri           TEXT NOT NULL,
    class         TEXT NOT NULL,               -- failed | refused | gone | pending | deleted | skipped | warning | gap | document | repaired | quarantined | unrepaired
    reason        TEXT NOT NULL
);
CREATE INDEX run_problems_by_run ON run_problems(run_id);

-- Every change an incremental run applied (or skipped as already applied), for the change
-- history of the mirror and the feed.
CREATE TABLE change_events (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    collection    TEXT NOT NULL,
    uri           TEXT NOT NULL,
    change        TEXT NOT NULL,               -- created | updated | deleted
    event_time    TEXT,                        -- NULL: the source gave none
    document_url  TEXT NOT NULL,               -- the Change List it came from
    version_id    INTEGER REFERENCES versions(id),
    outcome       TEXT NOT NULL                -- applied | unchanged | superseded | unknown-delete | failed | refused | pending
);
CREATE INDEX change_events_by_run ON change_events(run_id);
CREATE INDEX change_events_by_uri ON change_events(uri);

-- Closed Change Lists fully processed: never fetched again (ResourceSync 1.1 §10.2 step 6).
CREATE TABLE processed_change_lists (
    url           TEXT PRIMARY KEY,
    collection    TEXT NOT NULL,
    from_time     TEXT,
    until_time    TEXT NOT NULL,
    run_id        INTEGER NOT NULL REFERENCES runs(id)
);

-- What each audit found, one row per finding.
CREATE TABLE audit_findings (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    mark          TEXT NOT NULL,               -- = + - * ! ?
    class         TEXT NOT NULL,               -- in-sync | missing | extra | changed | corrupt | missing-object | unreadable | stray-object | catalog | unverifiable
    uri           TEXT,
    object        TEXT,                        -- sha256 hex of the object concerned
    field         TEXT,                        -- md5 | sha-256 | length | lastmod | ...
    expected      TEXT,
    actual        TEXT,
    hint          TEXT
);
CREATE INDEX audit_findings_by_run ON audit_findings(run_id);

-- SCP sources (SCP 0.1, seed 000): the sitemap that announces the collections. Its
-- validators are kept only after a run that applied everything it listed, so a 304 on the
-- next run means "nothing new".
CREATE TABLE scp_sitemaps (
    source_id         INTEGER PRIMARY KEY REFERENCES sources(id),
    url               TEXT NOT NULL,           -- the sitemap.xml, after redirects
    etag              TEXT,
    last_modified     TEXT,
    fetched_at        TEXT NOT NULL,
    run_id            INTEGER NOT NULL REFERENCES runs(id)
);

-- Every SCP collection file applied (a row only once it was fully read and verified). The
-- same URL may appear several times when the publisher re-used it for new content.
CREATE TABLE scp_collections (
    id                    INTEGER PRIMARY KEY,
    source_id             INTEGER NOT NULL REFERENCES sources(id),
    url                   TEXT NOT NULL,       -- as the sitemap lists it
    fetched_from          TEXT NOT NULL,       -- after redirects
    section               TEXT NOT NULL,
    type                  TEXT NOT NULL,       -- snapshot | delta
    collection_id         TEXT NOT NULL,       -- line 1 `id`
    generated             TEXT NOT NULL,       -- line 1 `generated`
    since                 TEXT,                -- line 1 `since` (deltas)
    listed_generated      TEXT NOT NULL,       -- the sitemap's `generated` (orders collections)
    version               TEXT NOT NULL,       -- line 1 `version`
    compression           TEXT NOT NULL,       -- gzip | zstd | none (by magic bytes)
    checksum              TEXT,                -- declared `sha256:...`; NULL when none
    checksum_status       TEXT NOT NULL,       -- spec-literal | reference-variant | unverified
    sha256_hex            TEXT NOT NULL,       -- of the decompressed stream as received
    compressed_bytes      INTEGER NOT NULL,
    decompressed_bytes    INTEGER NOT NULL,
    line_count            INTEGER NOT NULL,    -- metadata line included
    page_count            INTEGER NOT NULL,    -- valid pages read
    pages_skipped         INTEGER NOT NULL,    -- pages skipped for an invalid URL (warned)
    listed_pages          INTEGER,             -- the sitemap's `pages`
    listed_size_bytes     INTEGER,             -- the sitemap's `size` (compressed bytes)
    warning_count         INTEGER NOT NULL,
    etag                  TEXT,
    last_modified         TEXT,
    fetched_at            TEXT NOT NULL,
    run_id                INTEGER NOT NULL REFERENCES runs(id)
);
CREATE INDEX scp_collections_by_url ON scp_collections(source_id, url);

-- The sections followed, and how far each is applied.
CREATE TABLE scp_sections (
    id                    INTEGER PRIMARY KEY,
    source_id             INTEGER NOT NULL REFERENCES sources(id),
    name                  TEXT NOT NULL,
    snapshot_id           INTEGER REFERENCES scp_collections(id), -- the snapshot the state rests on
    snapshot_generated    TEXT,                -- its listed `generated`; NULL: no snapshot yet
    applied_through       TEXT,                -- listed `generated` of the newest collection applied
    run_id                INTEGER NOT NULL REFERENCES runs(id),
    updated_at            TEXT NOT NULL,
    UNIQUE (source_id, name)
);

-- What only SCP knows of a page state (SCP 0.1, seed 000). An SCP page is a resource like any
-- other: its URI is the page URL (`#scp-section=NAME` appended only when another collection of
-- the mirror holds that URL already), its collection the section (`SOURCE#scp-section=NAME`),
-- each state a `versions` row (arrived_via = 'scp') whose object is the page's JSON exactly as
-- published; the page's `modified` is the version's `lastmod`. A tombstone (absent from a newer
-- snapshot) has a row here naming that snapshot.
CREATE TABLE scp_versions (
    version_id            INTEGER PRIMARY KEY REFERENCES versions(id),
    collection_row        INTEGER NOT NULL REFERENCES scp_collections(id), -- the collection that brought it (its section is the page's)
    line                  INTEGER,             -- its line in the collection; NULL for a tombstone
    title                 TEXT,
    language              TEXT
);

-- ARC sitemaps a mirror follows (seed 002), as last read; the URL is the collection's id.
CREATE TABLE arc_sitemaps (
    url                  TEXT PRIMARY KEY,
    source_id            INTEGER NOT NULL REFERENCES sources(id),
    site                 TEXT NOT NULL,          -- its `site`: the collection's identity in feeds
    arc_sitemap_version  TEXT NOT NULL,
    generated_at         TEXT NOT NULL,
    page_count           INTEGER NOT NULL,
    crawl_delay_seconds  REAL,                   -- from its crawl_rate, if it gives one
    delta_feeds_json     TEXT,                   -- the delta feed URLs it names (JSON array)
    etag                 TEXT,
    last_modified        TEXT,
    fetched_at           TEXT NOT NULL,
    run_id               INTEGER NOT NULL REFERENCES runs(id)
);

-- What an ARC sitemap or delta feed said of the page a version was fetched for (seed 002 §E.4).
CREATE TABLE arc_versions (
    version_id           INTEGER PRIMARY KEY REFERENCES versions(id),
    sitemap_url          TEXT NOT NULL,
    document_url         TEXT NOT NULL,          -- the sitemap or delta feed that listed it
    ai_indexable         INTEGER NOT NULL,       -- recorded, not enforced
    ai_summary           TEXT,
    ai_tags_json         TEXT,                   -- JSON array of strings
    ai_checksum          TEXT,                   -- as declared: "sha256:<hex>"
    ai_snapshot_json     TEXT,                   -- JSON object
    crawl_priority       REAL,
    robots_directive     TEXT
);

-- How a collection is known outside the mirror, for its feed (`rsmirror feed`): a Capability
-- List's rs:ln rel="describes", an ARC sitemap's site. Without a row, the collection's id.
CREATE TABLE collection_identities (
    collection    TEXT PRIMARY KEY,            -- as in sync_points and change_events
    identity      TEXT NOT NULL,
    basis         TEXT NOT NULL,               -- what it came from
    recorded_at   TEXT NOT NULL
);

-- Settings of the whole mirror, chosen when it was made. `objects`: where the objects are, an
-- `s3://BUCKET/PREFIX` (objects under PREFIX/objects/sha256/ab/<sha256>); without a row, in the
-- mirror folder's objects/. Never credentials.
CREATE TABLE mirror_settings (
    name          TEXT PRIMARY KEY,
    value         TEXT NOT NULL
);

-- A harvest under way, read document by document (an OAI-PMH ListRecords): what its reader
-- needs to go on after the last document whose records were committed (its own text, such as
-- a resumptionToken). Written in the same transaction as those records; gone once the
-- harvest is complete.
CREATE TABLE harvests (
    collection    TEXT PRIMARY KEY,            -- as in sync_points
    source_id     INTEGER NOT NULL REFERENCES sources(id),
    state         TEXT NOT NULL,
    run_id        INTEGER NOT NULL REFERENCES runs(id)
);

-- A push subscription of `rsmirror follow` (ResourceSync Change Notification over WebSub): the
-- hub, the topic, the callback URL given to the hub (its path unguessable) and the secret the
-- hub signs deliveries with (X-Hub-Signature), kept so that a restarted follower goes on
-- verifying them; the lease the hub granted. Written outside runs, under the mirror's lock.
CREATE TABLE subscriptions (
    id                      INTEGER PRIMARY KEY,
    source_id               INTEGER NOT NULL REFERENCES sources(id),
    hub                     TEXT NOT NULL,
    topic                   TEXT NOT NULL,
    callback                TEXT NOT NULL UNIQUE,
    secret                  TEXT NOT NULL,
    state                   TEXT NOT NULL,     -- subscribing | active | unsubscribing | ended | denied
    lease_requested_seconds INTEGER,
    lease_granted_seconds   INTEGER,
    lease_until             TEXT,
    last_notification_at    TEXT,
    last_catch_up_at        TEXT,
    UNIQUE (source_id, hub, topic)
);

-- What a source says about itself (IFCC-0001): every state of each `rs:ln rel="describedby"`
-- document of a site or a collection, a row each time it changed; the feeds read the latest.
CREATE TABLE source_metadata (
    id            INTEGER PRIMARY KEY,
    collection    TEXT NOT NULL,               -- as in sync_points
    role          TEXT NOT NULL,               -- site (the Source Description's) | collection
    url           TEXT NOT NULL,               -- the rs:ln rel="describedby" href
    run_id        INTEGER NOT NULL REFERENCES runs(id), -- the run that found this state
    sha256        TEXT NOT NULL,               -- of bytes
    media_type    TEXT,
    bytes         BLOB NOT NULL,               -- the document as served (small: a title, an author)
    format        TEXT NOT NULL,               -- Atom | HTML | Dublin Core | unrecognised
    title         TEXT,
    author        TEXT
);
CREATE INDEX IF NOT EXISTS source_metadata_by_collection ON source_metadata(collection, role, id);

-- The categories the source gave a resource (2012 draft §3.1.7: `xhtml:link
-- rel="DCTERMS.subject"`, `xhtml:meta name="DC.subject"`), with the version it listed them for.
CREATE TABLE version_categories (
    version_id    INTEGER NOT NULL REFERENCES versions(id),
    place         INTEGER NOT NULL,            -- the source's order, from 0
    name          TEXT NOT NULL,               -- xhtml:link rel / xhtml:meta name (DCTERMS.subject)
    value         TEXT NOT NULL,               -- its href (resolved) / content
    title         TEXT,                        -- xhtml:link title
    PRIMARY KEY (version_id, place)
) WITHOUT ROWID;

PRAGMA user_version = 12;
