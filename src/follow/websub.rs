//! The WebSub (W3C Recommendation, 23 January 2018) side of `follow`, as ResourceSync Change
//! Notification 1.0.1 uses it: the subscription request a subscriber POSTs to a hub (§5.1), the
//! hub's verification of intent the callback answers (§5.3), and the signature of a
//! content distribution (§7, `X-Hub-Signature`). What is done with a verified notification is
//! transport-neutral (`follow::Follower`).

use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha384, Sha512};

/// `hub.mode` of a request or a verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Subscribe,
    Unsubscribe,
}

impl Mode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Subscribe => "subscribe",
            Mode::Unsubscribe => "unsubscribe",
        }
    }
}

/// The form fields of a subscription request (WebSub §5.1): the callback, the mode, the topic,
/// the lease asked for and, on subscribe, the secret the hub signs deliveries with.
pub(crate) fn request_fields<'a>(
    mode: Mode,
    callback: &'a str,
    topic: &'a str,
    lease_seconds: &'a str,
    secret: &'a str,
) -> Vec<(&'static str, &'a str)> {
    let mut f = vec![
        ("hub.callback", callback),
        ("hub.mode", mode.as_str()),
        ("hub.topic", topic),
    ];
    if mode == Mode::Subscribe {
        f.push(("hub.lease_seconds", lease_seconds));
        f.push(("hub.secret", secret));
    }
    f
}

/// A hub's GET to a callback (WebSub §5.2, §5.3), read from its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verification {
    /// Confirm (or not) that we asked for `mode` of `topic`; answer `challenge`.
    Intent {
        mode: Mode,
        topic: String,
        challenge: String,
        lease_seconds: Option<u64>,
    },
    /// The hub refused the subscription (§5.2).
    Denied {
        topic: String,
        reason: Option<String>,
    },
}

/// The verification a query carries, or why it is none (a GET without `hub.mode`, a mode
/// neither subscribe, unsubscribe nor denied, a missing topic or challenge).
pub(crate) fn verification(query: Option<&str>) -> Result<Verification, String> {
    let mut mode = None;
    let (mut topic, mut challenge, mut lease, mut reason) = (None, None, None, None);
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "hub.mode" => mode = Some(v.into_owned()),
            "hub.topic" => topic = Some(v.into_owned()),
            "hub.challenge" => challenge = Some(v.into_owned()),
            "hub.lease_seconds" => lease = Some(v.into_owned()),
            "hub.reason" => reason = Some(v.into_owned()),
            _ => {}
        }
    }
    let topic = topic.ok_or("no hub.topic")?;
    let mode = match mode.as_deref() {
        Some("subscribe") => Mode::Subscribe,
        Some("unsubscribe") => Mode::Unsubscribe,
        Some("denied") => return Ok(Verification::Denied { topic, reason }),
        Some(other) => return Err(format!("hub.mode {other:?} is none of WebSub's")),
        None => return Err("no hub.mode".into()),
    };
    let challenge = challenge.ok_or("no hub.challenge")?;
    let lease_seconds = match lease {
        None => None,
        Some(l) => Some(
            l.trim()
                .parse::<u64>()
                .map_err(|_| format!("hub.lease_seconds {l:?} is no number of seconds"))?,
        ),
    };
    Ok(Verification::Intent {
        mode,
        topic,
        challenge,
        lease_seconds,
    })
}

/// Why a distribution's signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SignatureError {
    #[error("unsigned (no X-Hub-Signature, though the subscription gave the hub a secret)")]
    Missing,
    #[error("X-Hub-Signature {0:?} is not METHOD=HEX")]
    Malformed(String),
    #[error("X-Hub-Signature method {0:?} is none of sha1, sha256, sha384, sha512")]
    UnknownMethod(String),
    #[error("X-Hub-Signature does not match the body (forged, or signed with another secret)")]
    Mismatch,
}

/// WebSub §7: `X-Hub-Signature: method=signature`, the HMAC of the body with the secret, in
/// hex; method sha1, sha256, sha384 or sha512. Compared in constant time.
pub(crate) fn check_signature(
    header: Option<&str>,
    secret: &[u8],
    body: &[u8],
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?.trim();
    let (method, hex_sig) = header
        .split_once('=')
        .ok_or_else(|| SignatureError::Malformed(header.to_string()))?;
    let sig =
        hex::decode(hex_sig.trim()).map_err(|_| SignatureError::Malformed(header.to_string()))?;
    fn verify<M: Mac + KeyInit>(secret: &[u8], body: &[u8], sig: &[u8]) -> bool {
        let Ok(mut mac) = <M as KeyInit>::new_from_slice(secret) else {
            return false;
        };
        mac.update(body);
        mac.verify_slice(sig).is_ok()
    }
    let ok = match method.trim().to_ascii_lowercase().as_str() {
        "sha1" => verify::<Hmac<Sha1>>(secret, body, &sig),
        "sha256" => verify::<Hmac<Sha256>>(secret, body, &sig),
        "sha384" => verify::<Hmac<Sha384>>(secret, body, &sig),
        "sha512" => verify::<Hmac<Sha512>>(secret, body, &sig),
        other => return Err(SignatureError::UnknownMethod(other.to_string())),
    };
    if ok {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign<M: Mac + KeyInit>(secret: &[u8], body: &[u8]) -> String {
        let mut mac = <M as KeyInit>::new_from_slice(secret).unwrap();
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    }

    #[test]
    fn the_four_methods_verify_and_a_changed_body_does_not() {
        let (secret, body) = (b"s3cret".as_slice(), b"<urlset/>".as_slice());
        for (name, sig) in [
            ("sha1", sign::<Hmac<Sha1>>(secret, body)),
            ("sha256", sign::<Hmac<Sha256>>(secret, body)),
            ("sha384", sign::<Hmac<Sha384>>(secret, body)),
            ("sha512", sign::<Hmac<Sha512>>(secret, body)),
        ] {
            let h = format!("{name}={sig}");
            assert_eq!(check_signature(Some(&h), secret, body), Ok(()), "{name}");
            assert_eq!(
                check_signature(Some(&h), secret, b"<urlset />"),
                Err(SignatureError::Mismatch),
                "{name}"
            );
            assert_eq!(
                check_signature(Some(&h), b"other", body),
                Err(SignatureError::Mismatch)
            );
        }
        assert_eq!(
            check_signature(None, secret, body),
            Err(SignatureError::Missing)
        );
        assert!(matches!(
            check_signature(Some("md5=00"), secret, body),
            Err(SignatureError::UnknownMethod(_))
        ));
        assert!(matches!(
            check_signature(Some("sha256"), secret, body),
            Err(SignatureError::Malformed(_))
        ));
    }

    #[test]
    fn verification_queries() {
        let v = verification(Some(
            "hub.mode=subscribe&hub.topic=http%3A%2F%2Fs%2Ft&hub.challenge=abc&hub.lease_seconds=60",
        ))
        .unwrap();
        assert_eq!(
            v,
            Verification::Intent {
                mode: Mode::Subscribe,
                topic: "http://s/t".into(),
                challenge: "abc".into(),
                lease_seconds: Some(60)
            }
        );
        assert!(matches!(
            verification(Some("hub.mode=denied&hub.topic=t&hub.reason=no")).unwrap(),
            Verification::Denied { .. }
        ));
        assert!(verification(Some("hub.mode=subscribe&hub.topic=t")).is_err());
        assert!(verification(Some("hub.mode=publish&hub.topic=t&hub.challenge=c")).is_err());
        assert!(verification(None).is_err());
    }
}
