//! TLS for node sessions, from PEM files: the node's certificate and key,
//! and the CA a planner (or a node requiring client certificates) trusts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, server::WebPkiClientVerifier, RootCertStore};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// PEM files for TLS; which ones are needed depends on the side.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    /// This side's certificate chain (a node's server certificate, or a
    /// planner's client certificate for mutual TLS).
    pub cert: Option<PathBuf>,
    /// The private key of `cert`.
    pub key: Option<PathBuf>,
    /// The CA that signed the other side's certificate.
    pub ca: Option<PathBuf>,
}

impl TlsFiles {
    /// Whether any TLS file was given.
    pub fn is_set(&self) -> bool {
        self.cert.is_some() || self.key.is_some() || self.ca.is_some()
    }
}

fn install_provider() {
    // Only aws-lc-rs is compiled in; installing it makes that explicit so
    // rustls never has to guess (a second provider would make it panic).
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", path.display()));
    }
    Ok(certs)
}

fn key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| format!("cannot read a private key from {}: {e}", path.display()))
}

fn roots(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certs(path)? {
        roots
            .add(cert)
            .map_err(|e| format!("bad CA certificate in {}: {e}", path.display()))?;
    }
    Ok(roots)
}

fn pair(files: &TlsFiles) -> Result<Option<(&Path, &Path)>, String> {
    match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => Ok(Some((cert, key))),
        (None, None) => Ok(None),
        _ => Err("--tls-cert and --tls-key go together".into()),
    }
}

/// The node side: its certificate and key; with a CA, peers must present
/// a certificate it signed.
pub fn acceptor(files: &TlsFiles) -> Result<Option<TlsAcceptor>, String> {
    install_provider();
    let Some((cert, key_path)) = pair(files)? else {
        return match files.ca {
            Some(_) => Err("--tls-ca on a node needs --tls-cert and --tls-key".into()),
            None => Ok(None),
        };
    };
    let builder = rustls::ServerConfig::builder();
    let builder = match &files.ca {
        Some(ca) => {
            let verifier = WebPkiClientVerifier::builder(Arc::new(roots(ca)?))
                .build()
                .map_err(|e| format!("cannot use {} as client CA: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(certs(cert)?, key(key_path)?)
        .map_err(|e| {
            format!(
                "{} and {} do not make a key pair: {e}",
                cert.display(),
                key_path.display()
            )
        })?;
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// The dialing side: trusts `ca`; presents `cert`/`key` when given.
pub fn connector(files: &TlsFiles) -> Result<Option<TlsConnector>, String> {
    install_provider();
    let Some(ca) = &files.ca else {
        return match pair(files)? {
            Some(_) => Err(
                "TLS to nodes needs --tls-ca (the CA that signed the nodes' certificates)".into(),
            ),
            None => Ok(None),
        };
    };
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots(ca)?);
    let config = match pair(files)? {
        Some((cert, key_path)) => builder
            .with_client_auth_cert(certs(cert)?, key(key_path)?)
            .map_err(|e| format!("cannot use {} as client certificate: {e}", cert.display()))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Some(TlsConnector::from(Arc::new(config))))
}

/// The name a node's certificate must carry, from the host of `HOST:PORT`.
pub fn server_name(address: &str) -> Result<ServerName<'static>, String> {
    let host = match address.rsplit_once(':') {
        Some((host, _)) => host.trim_start_matches('[').trim_end_matches(']'),
        None => address,
    };
    ServerName::try_from(host.to_string())
        .map_err(|e| format!("`{host}` cannot be checked against a certificate: {e}"))
}
