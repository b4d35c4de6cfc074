//! The current state of every resource, as an audit loads its index of them
//! (`audit::mirror_states`): read in shares of resource ids, one connection per share on its own
//! thread, each row borrowed and decoded only as far as it is wanted (a million rows' decoding
//! is most of an audit's one serial phase). The digest columns are handed over as the bytes
//! SQLite holds, so that the usual lower-case hex is packed without being checked as UTF-8
//! first; anything else is checked as every text column is. Packing the states is
//! `mirror_states`' business.

use crate::model::Change;
use crate::store::{Catalog, StoreError};
use rusqlite::types::ValueRef;
use rusqlite::Row;
use std::ops::RangeInclusive;

/// How many resources the catalog has, and their smallest and largest ids (`None`: none).
pub(crate) fn resource_ids(
    catalog: &Catalog,
) -> Result<(u64, Option<i64>, Option<i64>), StoreError> {
    let (total, first, last): (i64, Option<i64>, Option<i64>) = catalog.conn().query_row(
        "SELECT count(*), min(id), max(id) FROM resources",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok((total as u64, first, last))
}

/// A text column as SQLite holds it, not yet checked as UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnText<'r> {
    Null,
    Text(&'r [u8]),
}

impl<'r> ColumnText<'r> {
    /// The text, checked as UTF-8 (an error names what is wrong, as for any text column).
    pub(crate) fn as_str(self) -> Result<Option<&'r str>, StoreError> {
        match self {
            ColumnText::Null => Ok(None),
            ColumnText::Text(b) => Ok(Some(std::str::from_utf8(b).map_err(|e| {
                rusqlite::Error::from(rusqlite::types::FromSqlError::Utf8Error(e))
            })?)),
        }
    }
}

/// One resource's current state, borrowed from the catalog's row.
pub struct CurrentRow<'r, 's> {
    row: &'r Row<'s>,
}

impl<'r> CurrentRow<'r, '_> {
    pub(crate) fn uri(&self) -> Result<&'r str, StoreError> {
        Ok(self
            .row
            .get_ref(0)?
            .as_str()
            .map_err(rusqlite::Error::from)?)
    }

    /// A tombstone.
    pub(crate) fn deleted(&self) -> Result<bool, StoreError> {
        Ok(self
            .row
            .get_ref(1)?
            .as_str()
            .map_err(rusqlite::Error::from)?
            == Change::Deleted.as_str())
    }

    pub(crate) fn lastmod(&self) -> Result<Option<&'r str>, StoreError> {
        self.text(2)
    }

    pub(crate) fn length_bytes(&self) -> Result<Option<u64>, StoreError> {
        self.count(3)
    }

    pub(crate) fn md5_hex(&self) -> Result<ColumnText<'r>, StoreError> {
        self.raw(4)
    }

    pub(crate) fn sha1_hex(&self) -> Result<Option<&'r str>, StoreError> {
        self.text(5)
    }

    pub(crate) fn sha256_hex(&self) -> Result<ColumnText<'r>, StoreError> {
        self.raw(6)
    }

    pub(crate) fn declared_length_bytes(&self) -> Result<Option<u64>, StoreError> {
        self.count(7)
    }

    /// The source's digests as recorded (`md5:… sha-256:…`).
    pub(crate) fn declared_hash(&self) -> Result<Option<&'r str>, StoreError> {
        self.text(8)
    }

    /// Recorded without bytes (`--metadata-only`): the state is what the source declared.
    pub(crate) fn metadata_only(&self) -> Result<bool, StoreError> {
        Ok(self.row.get(9)?)
    }

    fn text(&self, i: usize) -> Result<Option<&'r str>, StoreError> {
        Ok(self
            .row
            .get_ref(i)?
            .as_str_or_null()
            .map_err(rusqlite::Error::from)?)
    }

    fn count(&self, i: usize) -> Result<Option<u64>, StoreError> {
        Ok(self
            .row
            .get_ref(i)?
            .as_i64_or_null()
            .map_err(rusqlite::Error::from)?
            .map(|n| n as u64))
    }

    /// A text column's bytes; any other type than text or NULL is an error, as for
    /// [`Self::text`].
    fn raw(&self, i: usize) -> Result<ColumnText<'r>, StoreError> {
        match self.row.get_ref(i)? {
            ValueRef::Text(b) => Ok(ColumnText::Text(b)),
            other => Ok(
                match other.as_str_or_null().map_err(rusqlite::Error::from)? {
                    None => ColumnText::Null,
                    Some(s) => ColumnText::Text(s.as_bytes()),
                },
            ),
        }
    }
}

/// The current states of the resources with ids in `ids`, in id order, handed to `f` one at
/// a time; `Ok(false)` stops.
pub(crate) fn each_current_state(
    catalog: &Catalog,
    ids: RangeInclusive<i64>,
    mut f: impl FnMut(&CurrentRow<'_, '_>) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT r.uri, v.change, v.lastmod, v.length_bytes, v.md5_hex, v.sha1_hex, v.sha256_hex,
                v.declared_length_bytes, v.declared_hash, v.arrived_via = 'metadata'
         FROM resources r JOIN versions v ON v.id = r.current_version_id
         WHERE r.id BETWEEN ?1 AND ?2",
    )?;
    let mut rows = stmt.query([ids.start(), ids.end()])?;
    while let Some(row) = rows.next()? {
        if !f(&CurrentRow { row })? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_column_comes_as_its_bytes_and_other_types_are_refused() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let column = |sql: &str| {
            conn.query_row(sql, [], |row| {
                Ok(CurrentRow { row }.raw(0).map(|c| match c {
                    ColumnText::Null => None,
                    ColumnText::Text(b) => Some(b.to_vec()),
                }))
            })
            .unwrap()
        };
        assert_eq!(column("SELECT 'ab'").unwrap(), Some(b"ab".to_vec()));
        assert_eq!(column("SELECT NULL").unwrap(), None);
        // Not UTF-8: handed over as it is, refused once read as text.
        assert_eq!(
            column("SELECT CAST(x'ff' AS TEXT)").unwrap(),
            Some(vec![0xff])
        );
        assert!(ColumnText::Text(b"\xff").as_str().is_err());
        assert!(column("SELECT 42").is_err());
    }
}
