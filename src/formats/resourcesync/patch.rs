//! Partial content: a patch the source offers from the state the mirror holds to the new one
//! (ResourceSync 1.1 §14 `rel="http://www.openarchives.org/rs/terms/patch"` with its `type`,
//! the 2012 draft §4.3.2 `rel="http://www.openarchives.org/rs/partial"`). Only JSON Patch
//! (RFC 6902) is understood. The result is kept only when its bytes have the digest the change
//! declares: JSON has many spellings of one value, so the spellings a source most often writes
//! are tried (compact and two-space pretty, each with and without a final newline, keys in
//! order); none that matches means the whole resource is fetched. Reads bytes; the engine
//! fetches the patch and stores the result.

use crate::rs::digest::{mismatches, Computed, Digest};
use crate::rs::document::Link;

/// ResourceSync 1.1's relation of a patch.
pub const PATCH_REL: &str = "http://www.openarchives.org/rs/terms/patch";
/// The 2012 draft's relation of partial content.
pub const PARTIAL_2012_REL: &str = "http://www.openarchives.org/rs/partial";

/// The media types of JSON Patch (RFC 6902 §6 registers `application/json-patch+json`;
/// ResourceSync 1.1's examples write `application/json-patch`).
const JSON_PATCH_TYPES: &[&str] = &["application/json-patch+json", "application/json-patch"];

/// The patch link of an entry, if it has one.
pub(crate) fn offered(links: &[Link]) -> Option<&Link> {
    links
        .iter()
        .find(|l| l.has_rel(PATCH_REL) || l.has_rel(PARTIAL_2012_REL))
}

/// Whether rsmirror can apply the patch `link` offers; `Err` says why not.
pub(crate) fn understood(link: &Link) -> Result<(), String> {
    match link.media_type.as_deref().map(|t| {
        t.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    }) {
        Some(t) if JSON_PATCH_TYPES.contains(&t.as_str()) => Ok(()),
        Some(t) => Err(format!(
            "a patch of type {t} (only JSON Patch, RFC 6902, is applied)"
        )),
        None => Err("a patch without a type (ResourceSync 1.1 §14 requires one)".into()),
    }
}

/// `held` (the mirror's state, JSON) with `patch` (a JSON Patch document) applied, spelled as
/// the source spelled it: the first spelling whose digests are all `declared`. `Err` says why
/// the result cannot be kept (the whole resource is then fetched).
pub(crate) fn apply(held: &[u8], patch: &[u8], declared: &[Digest]) -> Result<Vec<u8>, String> {
    if !declared.iter().any(Digest::is_usable) {
        return Err("the change declares no usable digest to check the result against".into());
    }
    let mut doc: serde_json::Value = serde_json::from_slice(held)
        .map_err(|e| format!("the mirror's state is not JSON ({e})"))?;
    let ops: json_patch::Patch = serde_json::from_slice(patch)
        .map_err(|e| format!("not a JSON Patch document (RFC 6902): {e}"))?;
    json_patch::patch(&mut doc, &ops).map_err(|e| format!("the patch does not apply: {e}"))?;
    let compact = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
    let pretty = serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?;
    for base in [compact, pretty] {
        let mut lined = base.clone();
        lined.push(b'\n');
        for bytes in [base, lined] {
            if mismatches(declared, &Computed::of(&bytes)).is_empty() {
                return Ok(bytes);
            }
        }
    }
    Err("the patched state does not have the digest the change declares".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rs::digest::parse_hash_attr;

    fn sha(b: &[u8]) -> Vec<Digest> {
        use sha2::Digest as _;
        parse_hash_attr(&format!("sha-256:{}", hex::encode(sha2::Sha256::digest(b))))
    }

    #[test]
    fn rfc_6902_appendix_a1_adds_a_member_and_keeps_the_source_spelling() {
        let held = br#"{"foo":"bar"}"#;
        let patch = br#"[{ "op": "add", "path": "/baz", "value": "qux" }]"#;
        let want = b"{\n  \"baz\": \"qux\",\n  \"foo\": \"bar\"\n}\n";
        assert_eq!(apply(held, patch, &sha(want)).unwrap(), want);
        let compact = br#"{"baz":"qux","foo":"bar"}"#;
        assert_eq!(apply(held, patch, &sha(compact)).unwrap(), compact);
    }

    #[test]
    fn what_is_not_kept() {
        let held = br#"{"foo":"bar"}"#;
        let patch = br#"[{ "op": "add", "path": "/baz", "value": "qux" }]"#;
        let e = apply(held, patch, &sha(b"{}")).unwrap_err();
        assert!(e.contains("digest"), "{e}");
        assert!(apply(held, patch, &[])
            .unwrap_err()
            .contains("no usable digest"));
        let e = apply(b"not json", patch, &sha(b"{}")).unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        let e = apply(held, b"{\"op\":1}", &sha(b"{}")).unwrap_err();
        assert!(e.contains("JSON Patch"), "{e}");
        // RFC 6902 A.15: a test that fails fails the whole patch.
        let e = apply(
            held,
            br#"[{"op":"test","path":"/foo","value":"baz"}]"#,
            &sha(b"{}"),
        )
        .unwrap_err();
        assert!(e.contains("does not apply"), "{e}");
    }
}
