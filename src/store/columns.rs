//! How the model's enums (`model`) sit in the catalog's text columns: each is stored as its
//! `as_str` and read back through `FromStr`, so a value the schema does not know is an error
//! naming it (a damaged or foreign catalog), never a silent default.

use crate::model::{Change, ChangeOutcome, ProblemClass, Via};
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

macro_rules! text_column {
    ($($name:ty),+) => {$(
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                value
                    .as_str()?
                    .parse()
                    .map_err(|e| FromSqlError::Other(Box::new(e)))
            }
        }
    )+};
}

text_column!(Change, ChangeOutcome, ProblemClass, Via);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enum_is_stored_as_its_text_and_an_unknown_text_is_refused() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let text: String = conn
            .query_row("SELECT ?1", [Via::Tombstone], |r| r.get(0))
            .unwrap();
        assert_eq!(text, "tombstone");
        let back: Change = conn
            .query_row("SELECT 'deleted'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(back, Change::Deleted);
        let e = conn
            .query_row("SELECT 'touched'", [], |r| r.get::<_, Change>(0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("touched"), "{e}");
    }
}
