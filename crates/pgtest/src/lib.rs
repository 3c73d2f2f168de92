//! pgtest: throwaway PostgreSQL clusters for taskgate's tests.
//!
//! Owns *a private PostgreSQL server for one test process*: finding the
//! server programs, `initdb` into a temporary directory, `pg_ctl start`,
//! handing out one database per test, and removing all of it afterwards.
//! Must not: touch a cluster it did not start, listen on TCP, or skip. Where
//! PostgreSQL is missing, [`PgCluster::start`] returns
//! [`PgError::NotInstalled`] and [`shared`] panics with it, so the
//! PostgreSQL half of a suite fails loudly instead of passing unseen.
//!
//! The ideas:
//! - **Unix socket only** (`listen_addresses = ''`, the socket in the
//!   cluster's own directory): no network, and no port clash with another
//!   cluster or a system server. The port ([`PORT`], always 5432) only names
//!   the socket file. A test of a client's TLS settings starts a cluster of
//!   its own that also listens on 127.0.0.1, on a free port, with a
//!   certificate it made ([`PgCluster::start_on_tcp`]).
//! - **Never as root.** `initdb` and `postgres` refuse to run as root. When
//!   the tests run as root (CI does), the three programs run as `nobody`
//!   (std's `Command::uid`/`gid`, which also drop supplementary groups), the
//!   cluster's directory is chowned to it, and root's clients reach the
//!   socket in it anyway.
//! - **One cluster per test binary, one database per test.** [`shared`]
//!   starts a cluster once, lazily (`initdb` and start: about 0.6 s);
//!   [`fresh_database`] creates a database on it for each test (10-20 ms)
//!   and drops it with its [`PgDatabase`] guard (about 10 ms), so hundreds
//!   of tests do not pile up 8 MB copies of `template1`.
//! - **In memory where it can be**: under `/dev/shm` (a tmpfs) when it has
//!   a gigabyte free, else under `TMPDIR`; on disk here a cluster started
//!   twice as slowly and created databases ten times as slowly.
//! - **A watchdog cleans up**, since a static is never dropped and SIGKILL
//!   runs no handler: each cluster starts a small `sh` that waits for end of
//!   file on a pipe only the cluster holds. The pipe closes when the cluster
//!   is dropped *or its process ends in any way*; the watchdog then stops
//!   the server (immediate shutdown, as `pg_ctl stop -m immediate`) and
//!   removes the directory. Were the watchdog killed too, the postmaster
//!   still shuts itself down within a minute of its directory going away.
//! - **Speed over durability**: `--no-sync`, `fsync`, `synchronous_commit`
//!   and `full_page_writes` off. A crash loses the cluster, which is thrown
//!   away anyway.
//! - **Callable from async tests.** The `postgres` crate blocks on a runtime
//!   of its own and panics inside another, so every call it makes here runs
//!   on a thread of its own: a `#[tokio::test]` may call [`fresh_database`]
//!   directly.
//!
//! ```no_run
//! let db = pgtest::fresh_database();
//! let mut client = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
//! client.batch_execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
//! ```

use std::ffi::CString;
use std::io::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::chown;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};

mod find;

/// The cluster's superuser, the user of every connection string here.
pub const USER: &str = "taskgate";
/// The port the server is told; it only names its socket file.
pub const PORT: u16 = 5432;

/// Why a cluster could not be started.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error(
        "PostgreSQL is not installed: no `initdb` (with `pg_ctl` and `postgres` beside it) \
         on PATH or in /usr/lib/postgresql/*/bin. The PostgreSQL tests need a real server: \
         install Debian's `postgresql` package (`apt-get install postgresql`; .ci/run does)"
    )]
    NotInstalled,
    #[error(
        "the tests run as root, where initdb and postgres refuse to run, and there is no \
         user `nobody` to run them as"
    )]
    NoUnprivilegedUser,
    #[error(
        "{0}: the socket path in it is not UTF-8 or too long; set TMPDIR to a short directory"
    )]
    UnusableTempDir(PathBuf),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{command} failed ({status}):\n{output}")]
    Command {
        command: String,
        status: ExitStatus,
        output: String,
    },
    #[error("on the test cluster, `{sql}`: {source}")]
    Sql {
        sql: String,
        #[source]
        source: postgres::Error,
    },
}

/// A running PostgreSQL server in a temporary directory of its own, stopped
/// and removed when dropped (or when the process ends).
#[derive(Debug)]
pub struct PgCluster {
    /// The socket's directory, holding `data/` and `server.log` too.
    dir: PathBuf,
    run_as: Option<User>,
    /// Its stdin is the pipe whose closing stops the server.
    watchdog: Mutex<Option<Child>>,
    next_database: AtomicU64,
    /// Appended to `CREATE DATABASE`.
    create_strategy: &'static str,
    /// [`PORT`] on the socket; a free one for a cluster also on TCP.
    port: u16,
    /// Also listening on 127.0.0.1 (and with TLS where given).
    tcp: Option<Option<TlsFiles>>,
}

/// A server certificate and its key, for a cluster that offers TLS.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, Clone, Copy)]
struct User {
    uid: u32,
    gid: u32,
}

impl PgCluster {
    /// Creates and starts a cluster (about 0.7 s), with [`USER`] as its
    /// superuser and trust authentication on its socket.
    pub fn start() -> Result<PgCluster, PgError> {
        PgCluster::start_with(None)
    }

    /// A cluster that also listens on 127.0.0.1 (on a free port:
    /// [`PgCluster::tcp_url`]), offering TLS with `tls` where given
    /// (trust authentication, as on the socket): for testing a client's
    /// TLS settings.
    pub fn start_on_tcp(tls: Option<TlsFiles>) -> Result<PgCluster, PgError> {
        PgCluster::start_with(Some(tls))
    }

    fn start_with(tcp: Option<Option<TlsFiles>>) -> Result<PgCluster, PgError> {
        let port = match tcp {
            None => PORT,
            Some(_) => std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .map_err(io_error("finding a free port"))?,
        };
        let path = std::env::var_os("PATH");
        let bindir = find::bindir(path.as_deref(), Path::new(find::DEBIAN_ROOT))?;
        let run_as = unprivileged_user()?;
        let dir = make_dir()?;
        let watchdog = spawn_watchdog(&dir).map_err(|source| {
            let _ = std::fs::remove_dir(&dir);
            io_error("starting the cluster's watchdog (sh)")(source)
        })?;
        // From here on, dropping `cluster` (on an error too) removes it all.
        let mut cluster = PgCluster {
            dir,
            run_as,
            watchdog: Mutex::new(Some(watchdog)),
            next_database: AtomicU64::new(0),
            create_strategy: "",
            port,
            tcp,
        };
        cluster.init_and_start(&bindir)?;
        // PostgreSQL 15's default, WAL_LOG, writes template1 (8 MB) to the
        // WAL for each database; copying its files is 2-3 times faster.
        let version = std::fs::read_to_string(cluster.dir.join("data/PG_VERSION"));
        let major: u32 = version
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if major >= 15 {
            cluster.create_strategy = " STRATEGY = FILE_COPY";
        }
        Ok(cluster)
    }

    fn init_and_start(&self, bindir: &Path) -> Result<(), PgError> {
        let socket = self.dir.join(format!(".s.PGSQL.{}", self.port));
        // sun_path holds 108 bytes, its terminating NUL included.
        if self.dir.to_str().is_none() || socket.as_os_str().len() > 107 {
            return Err(PgError::UnusableTempDir(self.dir.clone()));
        }
        if let Some(user) = self.run_as {
            chown(&self.dir, Some(user.uid), Some(user.gid))
                .map_err(io_error("handing the cluster's directory to `nobody`"))?;
        }
        let data = self.dir.join("data");
        run(self
            .command(&bindir.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ]))?;
        self.configure(&data.join("postgresql.conf"))?;
        let log = self.dir.join("server.log");
        let started = run(self
            .command(&bindir.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(&log)
            .args(["-w", "start"]));
        started.map_err(|err| match err {
            PgError::Command {
                command,
                status,
                mut output,
            } => {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                output.push_str(&format!("server log:\n{log}"));
                PgError::Command {
                    command,
                    status,
                    output,
                }
            }
            other => other,
        })
    }

    /// Appends the test settings to `postgresql.conf` (a file rather than
    /// `pg_ctl -o`, which goes through a shell: no quoting to get wrong).
    fn configure(&self, conf: &Path) -> Result<(), PgError> {
        let dir = self.socket_dir_str().replace('\'', "''");
        let port = self.port;
        let listen = if self.tcp.is_some() { "127.0.0.1" } else { "" };
        let tls = match &self.tcp {
            Some(Some(files)) => self.tls_settings(files)?,
            _ => String::new(),
        };
        let settings = format!(
            "\n# pgtest: a throwaway cluster on a Unix socket (and 127.0.0.1 where asked)\n\
             listen_addresses = '{listen}'\n\
             unix_socket_directories = '{dir}'\n\
             port = {port}\n\
             {tls}\
             fsync = off\n\
             synchronous_commit = off\n\
             full_page_writes = off\n\
             # Tests must not depend on the machine's zone.\n\
             timezone = 'UTC'\n\
             # Parallel tests each hold a pool.\n\
             max_connections = 200\n\
             shared_buffers = 16MB\n\
             # WAL is recycled early: the cluster may live in memory.\n\
             min_wal_size = 32MB\n\
             max_wal_size = 64MB\n\
             # Under data/ (pg_dynshmem), not /dev/shm: all of it goes\n\
             # with the directory, whatever the shutdown.\n\
             dynamic_shared_memory_type = mmap\n"
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(conf)
            .and_then(|mut file| file.write_all(settings.as_bytes()))
            .map_err(io_error("writing the test settings into postgresql.conf"))
    }

    /// Copies the certificate and key into the cluster's directory, owned
    /// by the server's user (the server refuses a key others may read),
    /// and says where they are.
    fn tls_settings(&self, files: &TlsFiles) -> Result<String, PgError> {
        use std::os::unix::fs::PermissionsExt;
        let (cert, key) = (self.dir.join("server.crt"), self.dir.join("server.key"));
        for (from, to) in [(&files.cert, &cert), (&files.key, &key)] {
            std::fs::copy(from, to).map_err(io_error("copying the TLS certificate and key"))?;
            std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600))
                .map_err(io_error("making the TLS key private"))?;
            if let Some(user) = self.run_as {
                chown(to, Some(user.uid), Some(user.gid))
                    .map_err(io_error("handing the TLS files to `nobody`"))?;
            }
        }
        let quoted = |p: &Path| p.to_string_lossy().replace('\'', "''");
        Ok(format!(
            "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
            quoted(&cert),
            quoted(&key)
        ))
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.current_dir(&self.dir).stdin(Stdio::null());
        if let Some(user) = self.run_as {
            command.uid(user.uid).gid(user.gid);
        }
        command
    }

    /// Creates database `name` (lowercase letters, digits and `_`, at most
    /// 63 bytes), dropped again with the returned guard.
    ///
    /// # Panics
    /// On a name outside that set, or when the server refuses (a name in use).
    pub fn create_database(&self, name: &str) -> PgDatabase<'_> {
        let valid = name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        assert!(
            valid,
            "pgtest: `{name}` is not a plain lowercase database name"
        );
        self.admin(&format!("CREATE DATABASE {name}{}", self.create_strategy))
            .unwrap_or_else(|err| panic!("pgtest: {err}"));
        PgDatabase {
            cluster: self,
            name: name.to_owned(),
            url: self.url(name),
        }
    }

    /// A new database with a name unique in this cluster (`test_<n>`).
    pub fn fresh_database(&self) -> PgDatabase<'_> {
        let n = self.next_database.fetch_add(1, Ordering::Relaxed);
        self.create_database(&format!("test_{n}"))
    }

    /// A URL for database `dbname`, the socket directory percent-encoded as
    /// its host (`postgres://taskgate@%2Ftmp%2Fpgtest.XXXX:5432/dbname`):
    /// what `DATABASE_URL` takes, and the `postgres` crate too.
    pub fn url(&self, dbname: &str) -> String {
        let host = utf8_percent_encode(self.socket_dir_str(), NON_ALPHANUMERIC);
        format!("postgres://{USER}@{host}:{}/{dbname}", self.port)
    }

    /// A URL for database `dbname` over TCP, for a cluster started with
    /// [`PgCluster::start_on_tcp`] (`postgres://taskgate@127.0.0.1:PORT/dbname`).
    ///
    /// # Panics
    /// On a cluster that listens on its socket only.
    pub fn tcp_url(&self, dbname: &str) -> String {
        assert!(
            self.tcp.is_some(),
            "pgtest: this cluster is on its socket only"
        );
        format!("postgres://{USER}@127.0.0.1:{}/{dbname}", self.port)
    }

    /// The key-value form for database `dbname` (`host=… port=5432
    /// user=taskgate dbname=…`), as libpq and the `postgres` crate take it.
    pub fn conninfo(&self, dbname: &str) -> String {
        let host = self
            .socket_dir_str()
            .replace('\\', "\\\\")
            .replace('\'', "\\'");
        format!(
            "host='{host}' port={} user={USER} dbname={dbname}",
            self.port
        )
    }

    /// The directory of the server's socket; `data/` and `server.log` (the
    /// server's own log, for when a test needs it) are in it too.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    fn socket_dir_str(&self) -> &str {
        self.dir.to_str().expect("checked UTF-8 at start")
    }

    /// Runs `sql` in database `postgres`, on a connection of its own made
    /// on a thread of its own (see the module header: async callers).
    fn admin(&self, sql: &str) -> Result<(), PgError> {
        let conninfo = self.conninfo("postgres");
        let result = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls)?;
                    client.batch_execute(sql)
                })
                .join()
        });
        match result {
            Ok(done) => done.map_err(|source| PgError::Sql {
                sql: sql.to_owned(),
                source,
            }),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for PgCluster {
    /// Closes the watchdog's pipe and waits for it to stop the server and
    /// remove the directory.
    fn drop(&mut self) {
        let watchdog = self
            .watchdog
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut watchdog) = watchdog {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
    }
}

/// One database on a [`PgCluster`], dropped (connections and all) with
/// this guard.
#[derive(Debug)]
pub struct PgDatabase<'c> {
    cluster: &'c PgCluster,
    name: String,
    url: String,
}

impl PgDatabase<'_> {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// See [`PgCluster::url`].
    pub fn url(&self) -> &str {
        &self.url
    }

    /// See [`PgCluster::conninfo`].
    pub fn conninfo(&self) -> String {
        self.cluster.conninfo(&self.name)
    }
}

impl Drop for PgDatabase<'_> {
    fn drop(&mut self) {
        // FORCE (PostgreSQL 13+) ends the connections a test left open.
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(err) = self.cluster.admin(&sql) {
            // Never a panic here: this runs while a failing test unwinds too.
            eprintln!("pgtest: {err}");
        }
    }
}

/// The test binary's cluster, started on first use and stopped when the
/// process ends (by the watchdog: see the module header).
///
/// # Panics
/// When the cluster cannot start, in particular with
/// [`PgError::NotInstalled`]'s message when PostgreSQL is missing: the
/// PostgreSQL tests fail, they do not skip.
pub fn shared() -> &'static PgCluster {
    static SHARED: OnceLock<Result<PgCluster, PgError>> = OnceLock::new();
    match SHARED.get_or_init(PgCluster::start) {
        Ok(cluster) => cluster,
        Err(err) => panic!("pgtest: cannot start the test PostgreSQL cluster: {err}"),
    }
}

/// A new database on the [`shared`] cluster, for one test.
///
/// # Panics
/// As [`shared`] does.
pub fn fresh_database() -> PgDatabase<'static> {
    shared().fresh_database()
}

/// Waits for end of file on stdin, then stops the server and removes the
/// directory `$1`. The stop is `pg_ctl stop -m immediate`'s (SIGQUIT, then
/// wait for the postmaster to remove its pid file, here for 10 s at most),
/// done by hand since the watchdog may be root, which `pg_ctl` refuses. It
/// signals only a process whose arguments name this cluster's data
/// directory: a pid file left by a crash may hold a reused number.
const WATCHDOG: &str = r#"
cat >/dev/null
pidfile="$1/data/postmaster.pid"
pid=$(head -n 1 "$pidfile" 2>/dev/null)
if [ -n "$pid" ] &&
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$1/data" &&
  kill -QUIT "$pid" 2>/dev/null; then
  n=0
  while [ -e "$pidfile" ] && [ "$n" -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
fi
rm -rf "$1"
"#;

fn spawn_watchdog(dir: &Path) -> io::Result<Child> {
    Command::new("sh")
        .args(["-c", WATCHDOG, "pgtest-watchdog"])
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Out of the terminal's process group: a Ctrl-C that ends the
        // tests must leave the watchdog to clean up after them.
        .process_group(0)
        .spawn()
}

fn run(command: &mut Command) -> Result<(), PgError> {
    let shown = format!("{command:?}");
    let out = command
        .output()
        .map_err(|source| io_error(&format!("running {shown}"))(source))?;
    if out.status.success() {
        return Ok(());
    }
    Err(PgError::Command {
        command: shown,
        status: out.status,
        output: String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned(),
    })
}

/// The cluster's directory, new: in `/dev/shm` where that is a tmpfs with
/// a gigabyte free (on this project's machines a cluster on disk took
/// 1.2 s rather than 0.55 s to start, and 200 ms rather than 10 to create
/// a database), else in the temporary directory (`TMPDIR`).
fn make_dir() -> Result<PathBuf, PgError> {
    let shm = Path::new("/dev/shm");
    let in_shm = (free_bytes(shm) >= 1 << 30)
        .then(|| {
            tempfile::Builder::new()
                .prefix("pgtest.")
                .tempdir_in(shm)
                .ok()
        })
        .flatten();
    let dir = match in_shm {
        Some(dir) => dir,
        None => tempfile::Builder::new()
            .prefix("pgtest.")
            .tempdir()
            .map_err(io_error("creating the cluster's directory"))?,
    };
    Ok(dir.keep())
}

/// Bytes free for an unprivileged user on `dir`'s file system; 0 when
/// unknown.
fn free_bytes(dir: &Path) -> u64 {
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: a zeroed `statvfs` is a valid out-parameter, `path` is a
    // NUL-terminated string that outlives the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    // Both are u64 on 64-bit Linux, narrower on some other targets.
    #[allow(clippy::useless_conversion)]
    let (blocks, size) = (u64::from(stat.f_bavail), u64::from(stat.f_frsize));
    blocks.saturating_mul(size)
}

/// `nobody`, when this process runs as root; `None` otherwise.
fn unprivileged_user() -> Result<Option<User>, PgError> {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = CString::new("nobody").expect("no NUL");
    // SAFETY: a zeroed `passwd` is a valid out-parameter.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, `buf` outlives it, and
    // `entry` is read only when `found` says it was filled.
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut entry,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || entry.pw_uid == 0 {
        return Err(PgError::NoUnprivilegedUser);
    }
    Ok(Some(User {
        uid: entry.pw_uid,
        gid: entry.pw_gid,
    }))
}

fn io_error(what: &str) -> impl FnOnce(io::Error) -> PgError + '_ {
    move |source| PgError::Io {
        what: what.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_script_is_valid_sh() {
        let status = Command::new("sh")
            .args(["-n", "-c", WATCHDOG])
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn not_installed_names_the_package() {
        let shown = PgError::NotInstalled.to_string();
        assert!(shown.contains("apt-get install postgresql"), "{shown}");
    }
}
