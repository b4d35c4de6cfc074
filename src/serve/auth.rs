//! `--auth-token-file`: every request carries `Authorization: Bearer TOKEN` (RFC 6750 §2.1)
//! or is answered 401 with a challenge (§3). The token is kept only as its SHA-256, and a
//! presented token is compared by its SHA-256 in constant time, so neither the time an answer
//! takes nor the process's memory gives the token away.

use crate::error::{Error, UsageError};
use sha2::{Digest as _, Sha256};
use std::path::Path;

/// Shorter tokens are refused: a guessable token is no access control.
const SHORTEST: usize = 16;
/// What a client is told when it carried no token.
const CHALLENGE: &str = "Bearer realm=\"rsmirror\"";
/// What a client is told when the token it carried is not the one.
const REFUSED: &str = "Bearer realm=\"rsmirror\", error=\"invalid_token\"";

pub(crate) struct Token {
    digest: [u8; 32],
}

impl Token {
    /// The token on the first line of `file` (surrounding blanks and the line end dropped).
    pub(crate) fn read(file: &Path) -> Result<Token, Error> {
        let named = |why: String| {
            Error::from(UsageError(format!(
                "--auth-token-file {}: {why}",
                file.display()
            )))
        };
        let text = std::fs::read_to_string(file).map_err(|e| named(e.to_string()))?;
        let token = text.lines().next().unwrap_or("").trim();
        if token.is_empty() {
            return Err(named(
                "its first line is empty: write the token there".into(),
            ));
        }
        if let Some(bad) = token.chars().find(|c| !b64token(*c)) {
            return Err(named(format!(
                "the token holds {bad:?}, which a Bearer token cannot (RFC 6750 §2.1: letters, \
                 digits and -._~+/, then = at the end)"
            )));
        }
        if token.trim_end_matches('=').contains('=') {
            return Err(named(
                "the token has = before its end (RFC 6750 §2.1: = only at the end)".into(),
            ));
        }
        if token.len() < SHORTEST {
            return Err(named(format!(
                "the token is {} characters long; at least {SHORTEST} (`openssl rand -hex 32` \
                 makes one)",
                token.len()
            )));
        }
        warn_if_others_read(file);
        Ok(Token {
            digest: Sha256::digest(token.as_bytes()).into(),
        })
    }

    /// Whether a request's `Authorization` header carries the token; if not, the
    /// `WWW-Authenticate` challenge its 401 gives.
    pub(crate) fn admits(&self, authorization: Option<&str>) -> Result<(), &'static str> {
        let Some(value) = authorization else {
            return Err(CHALLENGE);
        };
        let presented = match value.trim().split_once(' ') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
            _ => return Err(CHALLENGE),
        };
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let differ = digest
            .iter()
            .zip(self.digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differ == 0 {
            Ok(())
        } else {
            Err(REFUSED)
        }
    }
}

/// RFC 6750's b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/", then "=".
fn b64token(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/=".contains(c)
}

/// A token file others can read is said on stderr (as ssh does with a private key).
fn warn_if_others_read(file: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(file) {
            if meta.permissions().mode() & 0o077 != 0 {
                say!(
                    "rsmirror: warning: --auth-token-file {}: readable by others than its owner \
                     (chmod 600 it)",
                    file.display()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(text: &str) -> Result<Token, Error> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, text).unwrap();
        Token::read(&file)
    }

    #[test]
    fn the_token_is_the_first_line_and_only_it_is_admitted() {
        let t = token("  s3cret-token_0123456789~+/==\nsecond line\n").unwrap();
        assert!(t
            .admits(Some("Bearer s3cret-token_0123456789~+/=="))
            .is_ok());
        assert!(t
            .admits(Some("bearer   s3cret-token_0123456789~+/==  "))
            .is_ok());
        assert_eq!(t.admits(None), Err(CHALLENGE));
        assert_eq!(t.admits(Some("Basic dXNlcjpwYXNz")), Err(CHALLENGE));
        assert_eq!(
            t.admits(Some("Bearer s3cret-token_0123456789~+/=")),
            Err(REFUSED)
        );
        // The scheme without a token carries no credentials: the plain challenge.
        assert_eq!(t.admits(Some("Bearer ")), Err(CHALLENGE));
    }

    #[test]
    fn an_unusable_token_file_is_refused_with_why() {
        let why = |text: &str| token(text).err().unwrap().to_string();
        assert!(why("\n").contains("first line is empty"), "{}", why("\n"));
        assert!(
            why("abc def ghi jkl mno\n").contains("' '"),
            "{}",
            why("abc def ghi jkl mno")
        );
        assert!(why("abc=defghijklmnopq").contains("= before its end"));
        assert!(why("short").contains("5 characters long"));
        let dir = tempfile::tempdir().unwrap();
        let missing = Token::read(&dir.path().join("none"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            missing.contains("--auth-token-file") && missing.contains("none"),
            "{missing}"
        );
    }
}
