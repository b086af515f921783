//! The caller a verified client certificate names, for listeners with mTLS and no other
//! authentication: `cert:` and the certificate's first URI subject alternative name (a
//! SPIFFE id, say), else its first DNS name, else `sha256:` and the certificate's
//! fingerprint; the names are the identity's claims (`uri`, `dns`). Subject alternative
//! names, not the subject's common name: they are the typed names a CA vouches for (RFC
//! 6125), and rustls-webpki (already verifying the chain) reads them without another X.509
//! parser.

use mcpwire_router::Identity;
use rustls::pki_types::CertificateDer;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The identity of the end-entity certificate `der` (already verified by the handshake).
pub(crate) fn certificate_identity(der: &CertificateDer<'_>) -> Identity {
    let names = webpki::EndEntityCert::try_from(der).ok();
    let collect = |f: fn(&webpki::EndEntityCert<'_>) -> Vec<String>| {
        names.as_ref().map(f).unwrap_or_default()
    };
    let uris = collect(|c| c.valid_uri_names().map(str::to_owned).collect());
    let dns = collect(|c| c.valid_dns_names().map(str::to_owned).collect());
    let name = match uris.first().or(dns.first()) {
        Some(n) => n.clone(),
        None => {
            let digest = Sha256::digest(der.as_ref());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("sha256:{hex}")
        }
    };
    let list = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
    let mut claims = Map::new();
    claims.insert("uri".into(), list(uris));
    claims.insert("dns".into(), list(dns));
    Identity::client_certificate(format!("cert:{name}"), claims)
}
