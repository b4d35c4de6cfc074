//! The catalog's schema as this build writes it, and its version (`PRAGMA user_version`).

/// The schema, applied to a new catalog.
pub const SCHEMA: &str = include_str!("../../schema.sql");
/// `PRAGMA user_version` this build writes and reads. Version 12: the categories a source
/// gives each version (`version_categories`). Version 11: what a source says about
/// itself (`source_metadata`: its `describedby` documents). Version 10: the push subscriptions
/// of `follow` (`subscriptions`). Version 6: settings of the whole mirror
/// (`mirror_settings`: where its objects are). Version 5: a source remembers its own
/// settings (`sources.settings_json`: `--include`/`--exclude`). Version 4: a source can stop being
/// followed (`sources.removed_at`). Version 3: SCP pages are resources with their JSON in the
/// object store (`scp_versions` holds what only SCP knows); version 2 kept them in tables of
/// their own; version 1 also had two fan-out folder levels of objects. Older versions are
/// upgraded in place by [`Catalog::open`] (`store::migrate`).
pub const SCHEMA_VERSION: i64 = 12;
