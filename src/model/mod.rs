//! The shared nouns of the mirror's model, as the catalog spells them: the change a version
//! or a change event records ([`Change`], [`ChangeOutcome`]), the way a state's bytes arrived
//! ([`Via`]) and the class of a problem a run recorded ([`ProblemClass`]). Each maps exactly to
//! the text values `schema.sql` documents (`as_str` and `FromStr`), so the store reads and
//! writes them and everyone else compares enums, never strings. What an audit finds has its own
//! vocabulary in `finding::Class`.

pub mod category;
pub mod change;
pub mod channel;
pub mod filter;
pub mod finding;
pub mod kept;
pub mod problem;
pub mod scope;
pub mod validators;
pub mod via;

pub use category::Category;
pub use change::{Change, ChangeOutcome};
pub use channel::Channel;
pub use filter::{Filter, Rules};
pub use kept::Kept;
pub use problem::ProblemClass;
pub use scope::Scope;
pub use validators::Validators;
pub use via::Via;

/// What the user asked of a source's reader beyond its URL (`engine::reader`).
#[derive(Debug, Clone, Default)]
pub struct ReaderOptions {
    /// OAI-PMH `metadataPrefix` (`--oai-prefix`; `None`: `oai_dc`).
    pub oai_prefix: Option<String>,
    /// OAI-PMH `set` (`--oai-set`).
    pub oai_set: Option<String>,
}

/// Which protocol a collection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    ResourceSync,
    /// A `sitemap.xml` carrying the SCP extension namespace.
    Scp,
    /// An ARC sitemap (JSON).
    Arc,
    /// An OAI-PMH 2.0 repository (`formats::oai`).
    Oai,
    /// A IIIF Change Discovery API 1.0 stream (`formats::iiif`).
    Iiif,
}

/// A text value of the catalog that none of a model enum's values spells.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {value:?} is not one the catalog knows")]
pub struct UnknownValue {
    pub what: &'static str,
    pub value: String,
}

/// `as_str`, `FromStr`, `Display` and serde's string form of a fieldless enum, from one table
/// of (variant, text).
macro_rules! catalog_text {
    ($name:ident, $what:literal, { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            /// Every value, in the schema's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The text the catalog holds.
            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::model::UnknownValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| $crate::model::UnknownValue {
                        what: $what,
                        value: s.to_string(),
                    })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}
pub(crate) use catalog_text;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value reads back as itself, and the texts are the schema's.
    fn round_trips<T>(all: &[T], texts: &[&str])
    where
        T: Copy + PartialEq + std::fmt::Debug + std::str::FromStr + std::fmt::Display,
        <T as std::str::FromStr>::Err: std::fmt::Debug,
    {
        let got: Vec<String> = all.iter().map(|v| v.to_string()).collect();
        assert_eq!(got, texts);
        for v in all {
            assert_eq!(v.to_string().parse::<T>().unwrap(), *v);
        }
    }

    #[test]
    fn the_enums_spell_the_schemas_values() {
        round_trips(Change::ALL, &["created", "updated", "deleted"]);
        round_trips(
            ChangeOutcome::ALL,
            &[
                "applied",
                "unchanged",
                "superseded",
                "unknown-delete",
                "failed",
                "refused",
                "pending",
            ],
        );
        round_trips(
            Via::ALL,
            &[
                "http",
                "dump",
                "scp",
                "arc",
                "tombstone",
                "held",
                "record",
                "memento",
                "patch",
                "metadata",
            ],
        );
        round_trips(
            ProblemClass::ALL,
            &[
                "failed",
                "refused",
                "gone",
                "pending",
                "deleted",
                "skipped",
                "warning",
                "gap",
                "document",
                "repaired",
                "quarantined",
                "unrepaired",
                "source",
                "objects",
            ],
        );
        assert!("Created".parse::<Change>().is_err());
        assert_eq!(
            serde_json::to_string(&Via::Tombstone).unwrap(),
            "\"tombstone\""
        );
    }
}
