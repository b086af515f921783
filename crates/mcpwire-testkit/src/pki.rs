//! The test PKI: certificates made at test time with rcgen (no private key is checked in) —
//! CAs, server certificates for `localhost` and client certificates — written as PEM files
//! into a directory of the test's own, and the rustls configurations a client trusting a
//! CA (and presenting a certificate) or a server presenting a leaf needs. Every TLS test
//! takes its certificates from here (the server's, the CLI's and the client's).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

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
    /// The certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM, PKCS#8).
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
    /// The test's directory.
    pub dir: PathBuf,
    /// The CA.
    pub ca: Ca,
    /// The CA's certificate file (`ca.pem`).
    pub ca_file: PathBuf,
    /// The server certificate file (`server.crt`).
    pub cert: PathBuf,
    /// The server key file (`server.key`).
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

/// The crypto provider every configuration here uses (ring, as the product's).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Ca {
    /// A client configuration trusting only this CA, offering the ALPN protocols `alpn`
    /// (e.g. `b"h2"` for gRPC, `b"http/1.1"` for WebSocket), presenting `certificate` when
    /// the server asks for one.
    pub fn client_config(
        &self,
        alpn: &[&[u8]],
        certificate: Option<&Leaf>,
    ) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        let der = CertificateDer::from_pem_slice(self.pem().as_bytes());
        roots.add(der.expect("CA")).expect("root");
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots);
        let mut config = match certificate {
            None => config.with_no_client_auth(),
            Some(leaf) => config
                .with_client_auth_cert(leaf.chain(), leaf.key())
                .expect("client certificate"),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

impl Leaf {
    /// The certificate chain (this certificate alone).
    pub fn chain(&self) -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("chain")
    }

    /// The private key.
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).expect("key")
    }

    /// A server configuration presenting this certificate (no client authentication).
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(self.chain(), self.key())
            .expect("server config");
        Arc::new(config)
    }
}
