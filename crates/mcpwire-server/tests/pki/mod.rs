//! Certificates made at test time with rcgen (no private key is checked in): CAs, server
//! certificates for `localhost` and client certificates, written as PEM files into a
//! directory of the test's own. Shared by the library's and the CLI's TLS tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType,
    SerialNumber,
};

/// A certificate authority.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        Ca {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA"),
        }
    }

    /// The CA certificate (PEM).
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `localhost` (and 127.0.0.1) named `cn` with serial `serial`,
    /// signed by this CA.
    pub fn leaf(&self, cn: &str, serial: u64) -> Leaf {
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.serial_number = Some(SerialNumber::from(serial));
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }
}

impl Ca {
    /// A client certificate whose only name is the URI subject alternative name `uri`
    /// (e.g. a SPIFFE id), signed by this CA.
    pub fn client(&self, uri: &str, serial: u64) -> Leaf {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.subject_alt_names = vec![SanType::URI(uri.try_into().expect("an IA5 URI"))];
        params.serial_number = Some(SerialNumber::from(serial));
        let key = KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("client certificate");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }
}

/// A certificate and its key.
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
    /// The certificate as a peer presents it.
    pub der: Vec<u8>,
}

/// A fresh directory for one test's files.
pub fn dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-tls-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// Writes `leaf` as `{name}.crt` and `{name}.key` in `dir`; their paths.
pub fn write(dir: &Path, name: &str, leaf: &Leaf) -> (PathBuf, PathBuf) {
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert, &leaf.cert_pem).expect("write cert");
    std::fs::write(&key, &leaf.key_pem).expect("write key");
    (cert, key)
}

/// Writes `ca`'s certificate as `{name}.pem` in `dir`; its path.
pub fn write_ca(dir: &Path, name: &str, ca: &Ca) -> PathBuf {
    let path = dir.join(format!("{name}.pem"));
    std::fs::write(&path, ca.pem()).expect("write CA");
    path
}

/// What most TLS tests start from: a directory of their own holding a CA (`ca.pem`) and a
/// server certificate for `localhost` it signed (`server.crt`, `server.key`).
pub struct Setup {
    pub dir: PathBuf,
    pub ca: Ca,
    pub ca_file: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Setup {
    /// The files for the test `test`.
    pub fn new(test: &str) -> Setup {
        let dir = dir(test);
        let ca = Ca::new("test CA");
        let ca_file = write_ca(&dir, "ca", &ca);
        let (cert, key) = write(&dir, "server", &ca.leaf("server", 1));
        Setup {
            dir,
            ca,
            ca_file,
            cert,
            key,
        }
    }

    /// `--tls-cert CERT --tls-key KEY`.
    pub fn flags(&self) -> Vec<String> {
        let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_owned();
        vec![
            "--tls-cert".into(),
            path(&self.cert),
            "--tls-key".into(),
            path(&self.key),
        ]
    }
}
