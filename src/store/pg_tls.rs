//! TLS to PostgreSQL as libpq does it: `sslmode` (`disable`, `prefer` the
//! default, `require`, `verify-ca`, `verify-full`) and `sslrootcert` read
//! from `DATABASE_URL` (as URL query parameters or in the key-value form),
//! with rustls and ring (the TLS stack the GitHub client already carries:
//! no OpenSSL).
//!
//! Owns: reading those two settings out of the URL (the `postgres` crate
//! knows only `disable`, `prefer` and `require`, and no root certificate),
//! the rustls configuration each mode asks for, and the sentence a refused
//! connection says. Must not: run statements or hold connections
//! (`store::db`, `store::wakeups`).
//!
//! The modes, as libpq's docs give them: `disable` never encrypts;
//! `prefer` encrypts when the server offers TLS and goes on in the clear
//! when it does not; `require` encrypts or refuses; `verify-ca` also checks
//! the server's certificate against the root certificates; `verify-full`
//! also checks it names the host. Under `prefer` and `require` the
//! certificate is checked against `sslrootcert` when one is given (libpq
//! does the same with a root file), and not otherwise. Under `verify-*`
//! the roots are `sslrootcert` (a PEM file, or `system` for the host's
//! bundle), else `~/.postgresql/root.crt`; with none, taskgate refuses to
//! start rather than verify against nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use percent_encoding::percent_decode_str;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode, PgTlsError> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // libpq's `allow` tries the clear first: an attacker on the path
            // then chooses. Refused rather than taken for `prefer`.
            other => return Err(PgTlsError::Mode(other.to_owned())),
        })
    }

    fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether a connection without TLS is refused.
    pub fn requires_tls(self) -> bool {
        !matches!(self, SslMode::Disable | SslMode::Prefer)
    }
}

/// A `DATABASE_URL`'s TLS settings taskgate refuses, before connecting.
#[derive(Debug, thiserror::Error)]
pub enum PgTlsError {
    #[error(
        "DATABASE_URL: sslmode={0} is not one taskgate takes: disable, prefer (the default), \
         require, verify-ca or verify-full"
    )]
    Mode(String),
    #[error("DATABASE_URL: sslrootcert {path}: {why}")]
    RootCert { path: String, why: String },
    #[error(
        "DATABASE_URL: sslmode={mode} checks the server's certificate, and there is no root \
         certificate to check it against: add sslrootcert=/path/to/ca.pem (your provider's CA \
         bundle) or sslrootcert=system, or put it at ~/.postgresql/root.crt"
    )]
    NoRootCert { mode: &'static str },
    #[error("DATABASE_URL: {0}")]
    Url(String),
}

/// What taskgate connects with: the URL without the two TLS settings (for
/// the `postgres` crate), the mode, and the TLS connector for it.
pub struct PgTarget {
    pub config: postgres::Config,
    pub mode: SslMode,
    pub tls: MakeRustlsConnect,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTarget")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl PgTarget {
    /// Reads `url`'s TLS settings and builds the connector they ask for.
    pub fn parse(url: &str) -> Result<PgTarget, PgTlsError> {
        let (rest, settings) = take_tls_settings(url);
        let mode = match settings.mode.as_deref() {
            None => SslMode::Prefer,
            Some(m) => SslMode::parse(m)?,
        };
        let mut config: postgres::Config = rest
            .parse()
            .map_err(|e: postgres::Error| PgTlsError::Url(e.to_string()))?;
        config.ssl_mode(match mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        let roots = match settings.root_cert.as_deref() {
            Some(path) => Some(read_roots(path)?),
            None if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) => {
                let default = home_root_cert()
                    .filter(|p| p.exists())
                    .ok_or(PgTlsError::NoRootCert { mode: mode.name() })?;
                Some(read_roots(&default.to_string_lossy())?)
            }
            None => None,
        };
        let tls = MakeRustlsConnect::new(client_config(mode, roots)?);
        Ok(PgTarget { config, mode, tls })
    }

    /// Connects, with a refusal that says which setting asked for TLS.
    pub fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        self.config.connect(self.tls.clone())
    }

    /// Why a connection failed, in a sentence that names the TLS setting
    /// where TLS is what failed.
    pub fn explain(&self, error: &postgres::Error) -> String {
        // The error's own words and its causes' ("error performing TLS
        // handshake: invalid peer certificate: UnknownIssuer").
        let mut text = error.to_string();
        let mut cause = std::error::Error::source(error);
        while let Some(c) = cause {
            text.push_str(&format!(": {c}"));
            cause = c.source();
        }
        let tls_failed = text.contains("TLS") || text.contains("certificate");
        if tls_failed && self.mode.requires_tls() {
            format!(
                "{text} (DATABASE_URL asks for sslmode={}: the server must offer TLS{}; \
                 turn TLS on at the server, or change sslmode)",
                self.mode.name(),
                match self.mode {
                    SslMode::VerifyCa => " with a certificate signed by sslrootcert's CA",
                    SslMode::VerifyFull => {
                        " with a certificate signed by sslrootcert's CA that names the host"
                    }
                    _ => "",
                }
            )
        } else {
            text
        }
    }
}

/// The two settings taken out of a URL or key-value string.
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsSettings {
    mode: Option<String>,
    root_cert: Option<String>,
}

/// Splits `sslmode` and `sslrootcert` off `url`: from its query string
/// (`postgres://…?sslmode=require&sslrootcert=/ca.pem`), or from the
/// key-value form (`host=… sslmode=require`). The rest is kept as given.
fn take_tls_settings(url: &str) -> (String, TlsSettings) {
    let mut settings = TlsSettings::default();
    let mut take = |key: &str, value: String| match key {
        "sslmode" => settings.mode = Some(value),
        "sslrootcert" => settings.root_cert = Some(value),
        _ => unreachable!("only the two TLS keys are taken"),
    };
    let is_tls_key = |k: &str| k == "sslmode" || k == "sslrootcert";
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_owned(), settings);
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if is_tls_key(key) {
                take(
                    key,
                    percent_decode_str(value).decode_utf8_lossy().into_owned(),
                );
            } else {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rest, settings);
    }
    let mut kept = Vec::new();
    for word in url.split_whitespace() {
        match word.split_once('=') {
            Some((key, value)) if is_tls_key(key.trim()) => {
                take(key.trim(), value.trim_matches('\'').to_owned())
            }
            _ => kept.push(word),
        }
    }
    (kept.join(" "), settings)
}

/// libpq's default root file.
fn home_root_cert() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".postgresql/root.crt"))
}

/// Where Debian, Fedora and Alpine keep the host's CA bundle.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

fn read_roots(path: &str) -> Result<RootCertStore, PgTlsError> {
    let file = if path == "system" {
        let found = SYSTEM_BUNDLES.iter().find(|p| Path::new(p).exists());
        let Some(found) = found else {
            return Err(PgTlsError::RootCert {
                path: path.to_owned(),
                why: format!("no CA bundle at {}", SYSTEM_BUNDLES.join(", ")),
            });
        };
        PathBuf::from(found)
    } else {
        PathBuf::from(path)
    };
    let refused = |why: String| PgTlsError::RootCert {
        path: path.to_owned(),
        why,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&file)
        .map_err(|e| refused(e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| refused(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(refused(
            "no certificate in it could be read (a PEM file is expected)".into(),
        ));
    }
    Ok(roots)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(
    mode: SslMode,
    roots: Option<RootCertStore>,
) -> Result<rustls::ClientConfig, PgTlsError> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| PgTlsError::Url(format!("TLS: {e}")))?;
    let verifier = |roots: RootCertStore| {
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| PgTlsError::Url(format!("TLS roots: {e}")))
    };
    let config = match (mode, roots) {
        (SslMode::VerifyFull, Some(roots)) => builder
            .with_webpki_verifier(verifier(roots)?)
            .with_no_client_auth(),
        // verify-ca, and prefer or require given a root: the chain, not the name.
        (_, Some(roots)) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier(roots)?)))
            .with_no_client_auth(),
        // prefer or require without a root: encrypted, not authenticated
        // (libpq's behaviour; `verify-*` never reach here).
        (_, None) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(provider.clone())))
            .with_no_client_auth(),
    };
    Ok(config)
}

/// `verify-ca`: the certificate must chain to a root; the name it gives is
/// not compared with the host.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a root: any certificate, as libpq takes
/// it then; the handshake's signatures are still checked, so the session
/// is with the holder of the certificate's key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests;
