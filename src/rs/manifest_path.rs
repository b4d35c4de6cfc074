//! Names inside a dump package: the rules that turn a manifest `path` into the ZIP entry name
//! it selects, and that decide whether an entry name in the package is acceptable at all.
//!
//! Both are pure functions over strings, so they can be property-tested. The name they return
//! is only ever used to *look up* an entry in the archive; nothing here (or in `dump.rs`) turns
//! it into a file-system path: the object store names the files. The rules are strict anyway,
//! because an ambiguous name (`a//b`, `./a`, `a\b`) is resolved differently by different ZIP
//! tools, and a package that relies on that is hostile (zip-slip and its cousins).

use std::fmt;

/// Why a manifest path or an entry name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// Nothing left to name an entry (`""`, `"/"`).
    Empty,
    /// A NUL byte: C-string APIs would see a different name.
    Nul,
    /// A backslash: a Windows separator, so `a\..\b` would climb on some systems.
    Backslash,
    /// Absolute: starts with `/` (after the one leading `/` a manifest path may carry).
    Absolute,
    /// A component starting with a Windows drive letter (`C:`).
    DriveLetter,
    /// A `..` component.
    ParentDir,
    /// A `.` component: another spelling of a name, resolved differently by different tools.
    CurrentDir,
    /// An empty component (`a//b`, or a trailing `/` on something that is not a directory).
    EmptyComponent,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathError::Empty => "empty name",
            PathError::Nul => "contains a NUL byte",
            PathError::Backslash => "contains a backslash",
            PathError::Absolute => "absolute path",
            PathError::DriveLetter => "Windows drive letter",
            PathError::ParentDir => "`..` component",
            PathError::CurrentDir => "`.` component",
            PathError::EmptyComponent => "empty component (`//`)",
        })
    }
}

impl std::error::Error for PathError {}

/// The ZIP entry name a manifest `path` selects.
///
/// ResourceSync 1.1 §9 (our spec notes): strip the single leading `/` (1.1 manifests write
/// `/resources/res1`, the ZIP stores `resources/res1`) and look the rest up as the entry name;
/// paths without the slash (the 2012 draft's `<rs:path>`, resync's writer, CORE) are accepted
/// too. Reject `..`, absolute paths, drive letters, backslashes and NUL. A second leading `/`
/// makes the rest absolute and is refused; no other normalisation is done (no
/// percent-decoding, no case folding), so one path selects at most one entry.
pub(crate) fn resolve_manifest_path(path: &str) -> Result<String, PathError> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    check_name(rest)?;
    Ok(rest.to_string())
}

/// Check one entry name of the archive (the central directory's, decoded). A directory entry
/// may end with one `/`; everything else follows the manifest-path rules.
pub(crate) fn check_entry_name(name: &str, is_dir: bool) -> Result<(), PathError> {
    let name = if is_dir {
        name.strip_suffix('/').unwrap_or(name)
    } else {
        name
    };
    check_name(name)
}

/// Check the raw bytes of an entry name before decoding (a CP437 name is decoded by the ZIP
/// reader, and NUL or `\` must not hide behind the decoding).
pub(crate) fn check_entry_name_bytes(raw: &[u8]) -> Result<(), PathError> {
    if raw.contains(&0) {
        return Err(PathError::Nul);
    }
    if raw.contains(&b'\\') {
        return Err(PathError::Backslash);
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), PathError> {
    if name.is_empty() {
        return Err(PathError::Empty);
    }
    if name.contains('\0') {
        return Err(PathError::Nul);
    }
    if name.contains('\\') {
        return Err(PathError::Backslash);
    }
    if name.starts_with('/') {
        return Err(PathError::Absolute);
    }
    for component in name.split('/') {
        match component {
            "" => return Err(PathError::EmptyComponent),
            "." => return Err(PathError::CurrentDir),
            ".." => return Err(PathError::ParentDir),
            c if has_drive_letter(c) => return Err(PathError::DriveLetter),
            _ => {}
        }
    }
    Ok(())
}

/// `C:`, `c:foo`: a drive-relative or drive-absolute path on Windows.
fn has_drive_letter(component: &str) -> bool {
    let b = component.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_leading_slash_is_stripped_and_none_is_needed() {
        assert_eq!(
            resolve_manifest_path("/resources/res1").unwrap(),
            "resources/res1"
        );
        assert_eq!(
            resolve_manifest_path("resources/res1").unwrap(),
            "resources/res1"
        );
        assert_eq!(resolve_manifest_path("fd8/a.json").unwrap(), "fd8/a.json");
        // Kept as written: no percent-decoding, no case folding.
        assert_eq!(resolve_manifest_path("/R/a%20b").unwrap(), "R/a%20b");
        assert_eq!(resolve_manifest_path("/..foo/a..b").unwrap(), "..foo/a..b");
    }

    #[test]
    fn hostile_paths_are_refused() {
        use PathError::*;
        let cases: &[(&str, PathError)] = &[
            ("", Empty),
            ("/", Empty),
            ("//etc/passwd", Absolute),
            ("/../etc/passwd", ParentDir),
            ("resources/../../x", ParentDir),
            ("/resources/..", ParentDir),
            ("C:/Windows/x", DriveLetter),
            ("/C:/Windows/x", DriveLetter),
            ("c:x", DriveLetter),
            ("/a/D:b", DriveLetter),
            ("/a\\..\\b", Backslash),
            ("\\\\server\\share", Backslash),
            ("/a\0b", Nul),
            ("/a//b", EmptyComponent),
            ("/a/", EmptyComponent),
            ("/./a", CurrentDir),
        ];
        for (path, expected) in cases {
            assert_eq!(resolve_manifest_path(path), Err(*expected), "{path:?}");
        }
    }

    #[test]
    fn entry_names() {
        assert_eq!(check_entry_name("resources/", true), Ok(()));
        assert_eq!(
            check_entry_name("resources/", false),
            Err(PathError::EmptyComponent)
        );
        assert_eq!(check_entry_name("/etc/x", false), Err(PathError::Absolute));
        assert_eq!(check_entry_name("../x/", true), Err(PathError::ParentDir));
        assert_eq!(check_entry_name_bytes(b"a\\b"), Err(PathError::Backslash));
        assert_eq!(check_entry_name_bytes(b"a\0b"), Err(PathError::Nul));
        assert_eq!(check_entry_name_bytes(b"r\x81sum\x82"), Ok(()));
    }

    /// What every accepted name satisfies, whatever the input.
    fn assert_safe(name: &str) {
        assert!(!name.is_empty());
        assert!(!name.starts_with('/'), "{name:?}");
        assert!(!name.contains('\\'), "{name:?}");
        assert!(!name.contains('\0'), "{name:?}");
        for c in name.split('/') {
            assert!(c != ".." && c != "." && !c.is_empty(), "{name:?}");
            assert!(!has_drive_letter(c), "{name:?}");
        }
        // And as a relative path on this system it stays below its base.
        let p = std::path::Path::new(name);
        assert!(p.is_relative(), "{name:?}");
        assert!(
            p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_))),
            "{name:?}"
        );
    }

    proptest! {
        #[test]
        fn any_string_resolves_to_a_safe_name_or_an_error(path in any::<String>()) {
            if let Ok(name) = resolve_manifest_path(&path) {
                assert_safe(&name);
            }
        }

        #[test]
        fn path_like_strings_resolve_to_a_safe_name_or_an_error(
            path in r"[/\\.a:C\x00]{0,12}"
        ) {
            if let Ok(name) = resolve_manifest_path(&path) {
                assert_safe(&name);
            }
        }

        #[test]
        fn plain_relative_names_resolve_to_themselves(
            parts in proptest::collection::vec("[A-Za-z0-9_-][A-Za-z0-9_.-]{0,8}", 1..5)
        ) {
            let name = parts.join("/");
            prop_assume!(parts.iter().all(|p| p != "." && p != ".." && !has_drive_letter(p)));
            prop_assert_eq!(resolve_manifest_path(&name), Ok(name.clone()));
            prop_assert_eq!(resolve_manifest_path(&format!("/{name}")), Ok(name));
        }
    }
}
