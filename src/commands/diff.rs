//! `rsmirror diff WHEN1 [WHEN2]`: the rows of `access::diff` as lines (`+ URI`) or JSON Lines.

use crate::access::{self, Reader, When};
use crate::commands::output::Out;
use crate::error::Error;
use std::path::Path;

pub struct Options {
    pub from: When,
    pub to: Option<When>,
    pub json: bool,
}

pub(crate) fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    let a = reader.point(Some(&o.from))?;
    let b = reader.point(o.to.as_ref())?;
    if let Some(note) = reader.in_progress_note(o.to.as_ref()) {
        note!("rsmirror: {note}");
    }
    detail!(
        "rsmirror: from the mirror {} to the mirror {}",
        reader.describe_point(a),
        reader.describe_point(b)
    );
    let mut out = Out::stdout();
    let marks = access::diff::between(&reader, a, b, |line| {
        Ok(if o.json {
            out.json_line(&line)?
        } else {
            match line.after.filter(|v| v.metadata_only) {
                Some(_) => out.line(&format!(
                    "{} {}  ({})",
                    line.mark,
                    line.uri,
                    access::VersionRow::NO_BYTES
                ))?,
                None => out.line(&format!("{} {}", line.mark, line.uri))?,
            }
        })
    })?;
    out.flush()?;
    detail!(
        "rsmirror: {} created (+), {} deleted (-), {} updated (*)",
        marks.created,
        marks.deleted,
        marks.updated
    );
    Ok(())
}
