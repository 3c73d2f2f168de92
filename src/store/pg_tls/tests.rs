//! `sslmode` and `sslrootcert` against a real PostgreSQL offering TLS with
//! a certificate made here (a CA of its own, the server's certificate
//! naming `localhost` and `127.0.0.1`), and against one that offers none.

use std::path::Path;
use std::process::Command;

use super::*;
use crate::store::{Store, StoreError};

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs (scripts/with-deps installs it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`{name}-ca.pem`) and, where `server`, a server certificate it
/// signed (`server.pem`, `server.key`).
fn make_ca(dir: &Path, name: &str) {
    let (key, cert) = (format!("{name}-ca.key"), format!("{name}-ca.pem"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &cert,
            "-days",
            "2",
            "-subj",
            &format!("/CN=taskgate test {name} CA"),
        ],
    );
}

fn make_server_cert(dir: &Path, ca: &str) {
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints = critical, CA:FALSE\n\
         keyUsage = critical, digitalSignature\n\
         extendedKeyUsage = serverAuth\n\
         subjectAltName = DNS:localhost, IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-CA",
            &format!("{ca}-ca.pem"),
            "-CAkey",
            &format!("{ca}-ca.key"),
            "-CAcreateserial",
            "-extfile",
            "server.ext",
        ],
    );
}

/// Whether the session `url` opens is encrypted, as the server sees it.
fn encrypted(url: &str) -> Result<bool, String> {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let target = PgTarget::parse(&url).map_err(|e| e.to_string())?;
        let mut client = target.connect().map_err(|e| target.explain(&e))?;
        let row = client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .map_err(|e| e.to_string())?;
        Ok(row.get::<_, bool>(0))
    })
    .join()
    .expect("no panic")
}

#[test]
fn sslmode_and_sslrootcert_are_honoured_against_a_server_with_tls() {
    let dir = tempfile::tempdir().unwrap();
    make_ca(dir.path(), "right");
    make_ca(dir.path(), "wrong");
    make_server_cert(dir.path(), "right");
    let cluster = pgtest::PgCluster::start_on_tcp(Some(pgtest::TlsFiles {
        cert: dir.path().join("server.pem"),
        key: dir.path().join("server.key"),
    }))
    .unwrap();
    let db = cluster.tcp_url("postgres");
    let root = |ca: &str| {
        dir.path()
            .join(format!("{ca}-ca.pem"))
            .display()
            .to_string()
    };
    let localhost = db.replace("127.0.0.1", "localhost");

    // The default, prefer, encrypts when the server offers TLS.
    assert_eq!(encrypted(&db), Ok(true));
    assert_eq!(encrypted(&format!("{db}?sslmode=disable")), Ok(false));
    assert_eq!(encrypted(&format!("{db}?sslmode=require")), Ok(true));
    // verify-full with the right root passes, by address or by name.
    let full = |url: &str, ca: &str| format!("{url}?sslmode=verify-full&sslrootcert={}", root(ca));
    assert_eq!(encrypted(&full(&db, "right")), Ok(true));
    assert_eq!(encrypted(&full(&localhost, "right")), Ok(true));
    // With the wrong root it fails, saying which setting asked.
    let refused = encrypted(&full(&db, "wrong")).unwrap_err();
    assert!(refused.contains("sslmode=verify-full"), "{refused}");
    assert!(refused.contains("certificate"), "{refused}");
    // require given a root checks the chain as libpq does.
    let required = format!("{db}?sslmode=require&sslrootcert={}", root("wrong"));
    assert!(encrypted(&required).is_err());
    // verify-ca checks the chain, not the name: a host name the
    // certificate does not give (reached at its address) is fine there;
    // verify-full refuses it. The key-value form takes the same settings.
    let port = db.rsplit(':').next().unwrap().split('/').next().unwrap();
    let kv = |mode: &str, host: &str| {
        format!(
            "host={host} hostaddr=127.0.0.1 port={port} user=taskgate dbname=postgres \
             sslmode={mode} sslrootcert={}",
            root("right")
        )
    };
    assert_eq!(encrypted(&kv("verify-full", "localhost")), Ok(true));
    assert_eq!(encrypted(&kv("verify-ca", "db.invalid")), Ok(true));
    let refused = encrypted(&kv("verify-full", "db.invalid")).unwrap_err();
    assert!(refused.contains("names the host"), "{refused}");
}

#[test]
fn require_against_a_server_without_tls_refuses_to_open_the_store() {
    let cluster = pgtest::PgCluster::start_on_tcp(None).unwrap();
    let db = cluster.tcp_url("postgres");
    // prefer goes on in the clear where the server offers no TLS.
    assert_eq!(encrypted(&db), Ok(false));
    let refused = match Store::open_url(&format!("{db}?sslmode=require")) {
        Ok(_) => panic!("opened without TLS"),
        Err(e) => e,
    };
    let StoreError::Postgres(why) = &refused else {
        panic!("{refused:?}");
    };
    assert!(
        why.contains("sslmode=require") && why.contains("turn TLS on at the server"),
        "{why}"
    );
}

#[test]
fn the_tls_settings_are_read_from_either_form_and_bad_ones_refused() {
    let (rest, s) = take_tls_settings(
        "postgres://u:p@db.example:5432/tg?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
    );
    assert_eq!(rest, "postgres://u:p@db.example:5432/tg?application_name=x");
    assert_eq!(
        (s.mode.as_deref(), s.root_cert.as_deref()),
        (Some("verify-full"), Some("/etc/ca.pem"))
    );
    let (rest, s) = take_tls_settings("host=db port=5432 sslmode=require user=u");
    assert_eq!(rest, "host=db port=5432 user=u");
    assert_eq!(s.mode.as_deref(), Some("require"));
    let (rest, s) = take_tls_settings("postgres://u@db/tg");
    assert_eq!(
        (rest.as_str(), s),
        ("postgres://u@db/tg", TlsSettings::default())
    );

    let message = |url: &str| PgTarget::parse(url).unwrap_err().to_string();
    insta::assert_snapshot!(message("postgres://u@db/tg?sslmode=allow"), @"DATABASE_URL: sslmode=allow is not one taskgate takes: disable, prefer (the default), require, verify-ca or verify-full");
    insta::assert_snapshot!(message("postgres://u@db/tg?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"), @"DATABASE_URL: sslrootcert /nonexistent/ca.pem: I/O error: No such file or directory (os error 2)");
    let empty = tempfile::NamedTempFile::new().unwrap();
    let not_pem = format!(
        "postgres://u@db/tg?sslmode=verify-ca&sslrootcert={}",
        empty.path().display()
    );
    assert!(
        message(&not_pem).contains("no certificate in it could be read"),
        "{}",
        message(&not_pem)
    );
}
