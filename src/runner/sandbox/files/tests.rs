//! The sandbox's last openings, each through the local
//! runner's own path with the real bwrap, and each seen to fail without its
//! fix: credentials under a read-only path, `/tmp` and HOME as big as the
//! file-size limit whatever the memory limit, the host's accounts.

use std::path::Path;
use std::sync::Arc;

use super::minimal_accounts;
use crate::runner::sandbox::tests::{options, run_in, Host};
use crate::runner::sandbox::Limits;
use crate::runner::{Isolation, Sandbox};

/// A home folder holding every kind of credential, and a toolchain.
fn home_with_credentials(root: &Path) -> std::path::PathBuf {
    let home = root.join("home/dev");
    for (file, text) in [
        (".ssh/id_ed25519", "secret-ssh"),
        (".aws/credentials", "secret-aws"),
        (".config/gcloud/credentials.db", "secret-gcloud"),
        (".docker/config.json", "secret-docker"),
        (".netrc", "secret-netrc"),
        (".cargo/credentials.toml", "secret-cargo"),
        (".cargo/credentials", "secret-cargo-old"),
        (".config/gh/hosts.yml", "secret-gh"),
        (".config/hub", "secret-hub"),
        (".git-credentials", "secret-git"),
        (".npmrc", "secret-npm"),
        (".pypirc", "secret-pypi"),
        (".kube/config", "secret-kube"),
        (".cargo/bin/tool", "tool-ok"),
        (".config/tool.toml", "config-ok"),
    ] {
        let path = home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    home
}

async fn read_with_ro_paths(host: &Host, home: &Path, ro_paths: Vec<std::path::PathBuf>) -> String {
    let sandbox = Sandbox {
        ro_paths,
        ..Sandbox::default()
    };
    let cmd = format!(
        "cd {}; for f in .ssh/id_ed25519 .aws/credentials .config/gcloud/credentials.db \
         .docker/config.json .netrc .cargo/credentials.toml .cargo/credentials \
         .config/gh/hosts.yml .config/hub .git-credentials .npmrc .pypirc .kube/config \
         .cargo/bin/tool .config/tool.toml; do cat $f; echo; done; ls -A .ssh",
        home.display()
    );
    run_in(
        &host.workspace,
        &cmd,
        options(Isolation::Sandbox(Arc::new(sandbox))),
    )
    .await
    .1
}

#[tokio::test]
async fn credentials_stay_hidden_when_the_operator_lists_a_parent_folder() {
    let host = Host::new();
    let home = home_with_credentials(&host.root);
    for listed in [host.root.join("home"), home.clone()] {
        let out = read_with_ro_paths(&host, &home, vec![listed.clone()]).await;
        assert!(
            !out.contains("secret"),
            "listed {}: {out}",
            listed.display()
        );
        assert!(
            out.contains("tool-ok") && out.contains("config-ok"),
            "the rest is there: {out}"
        );
    }
}

#[tokio::test]
async fn cargo_credentials_stay_hidden_when_the_operator_lists_cargo_home() {
    let host = Host::new();
    let home = home_with_credentials(&host.root);
    let out = read_with_ro_paths(&host, &home, vec![home.join(".cargo")]).await;
    assert!(!out.contains("secret-cargo"), "{out}");
    assert!(out.contains("tool-ok"), "{out}");
}

#[tokio::test]
async fn tmp_and_home_each_hold_at_most_a_quarter_of_the_memory_limit() {
    let host = Host::new();
    let sandbox = Sandbox {
        limits: Limits {
            memory_bytes: 256 << 20,
            ..Limits::default()
        },
        ..Sandbox::default()
    };
    let (_, out) = run_in(
        &host.workspace,
        "head -c 100M /dev/zero > /tmp/big && echo wrote-tmp; \
         head -c 100M /dev/zero > ~/big && echo wrote-home; \
         rm -f /tmp/big; head -c 60M /dev/zero > /tmp/fits && echo fits",
        options(Isolation::Sandbox(Arc::new(sandbox))),
    )
    .await;
    assert!(
        !out.contains("wrote-tmp") && !out.contains("wrote-home"),
        "{out}"
    );
    assert_eq!(out.matches("No space left on device").count(), 2, "{out}");
    assert!(out.contains("fits"), "{out}");
}

#[tokio::test]
async fn etc_passwd_and_group_show_only_the_sandbox_user() {
    let host = Host::new();
    let (report, out) = run_in(
        &host.workspace,
        "cat /etc/passwd /etc/group; id -un",
        options(Isolation::Sandbox(Arc::new(Sandbox::default()))),
    )
    .await;
    assert!(report.passed(), "{out}");
    // SAFETY: geteuid(2) and getegid(2) cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let (passwd, group) = minimal_accounts(uid, gid);
    let name = passwd.split(':').next().unwrap();
    assert_eq!(out, format!("{passwd}{group}{name}\n"));
}

#[test]
fn the_minimal_accounts_are_one_user_and_nobody() {
    let (passwd, group) = minimal_accounts(1000, 1000);
    insta::assert_snapshot!(format!("{passwd}{group}"), @r"
    runner:x:1000:1000:runner:/home/runner:/bin/sh
    nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
    runner:x:1000:
    nogroup:x:65534:
    ");
}
