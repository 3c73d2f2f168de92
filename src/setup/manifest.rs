//! The manifest as posted to GitHub: `app-manifest.yml` (embedded, or a
//! file the person names) with this installation's URLs put in. Pure.

use serde_json::{Map, Value};

use super::SetupError;
use taskgate_core::plan::yaml::{self, Node};

/// The manifest shipped with taskgate (the permissions and events it needs).
pub const APP_MANIFEST: &str = include_str!("../../app-manifest.yml");

/// GitHub's limit on an app's name.
pub const MAX_NAME_CHARS: usize = 34;

/// What this installation adds to the manifest.
#[derive(Debug, Clone)]
pub struct ManifestOptions {
    /// Where GitHub will post webhooks (`…/webhook` of `taskgate serve`).
    pub webhook_url: String,
    /// Where GitHub sends the browser back with the code.
    pub redirect_url: String,
    /// Replaces the manifest's `name` (app names are unique on GitHub).
    pub name: Option<String>,
}

/// `src` (YAML) as the JSON GitHub takes, with `options` applied.
pub fn manifest_json(src: &str, options: &ManifestOptions) -> Result<Value, SetupError> {
    check_http_url("--webhook-url", &options.webhook_url)?;
    let root = yaml::load(src)
        .map_err(|p| match p.pos {
            Some(at) => SetupError::Manifest(format!("{}:{}: {}", at.line, at.column, p.message)),
            None => SetupError::Manifest(p.message),
        })?
        .ok_or_else(|| SetupError::Manifest("the manifest is empty".into()))?;
    let Value::Object(mut manifest) = to_json(&root) else {
        return Err(SetupError::Manifest("the manifest is not a mapping".into()));
    };
    // GitHub would register the App and then never send these events.
    let needs = taskgate_core::doctor::Needs::from_manifest(src)
        .map_err(|e| SetupError::Manifest(e.to_string()))?;
    if let Some((event, permission)) = needs.events_without_permission().first() {
        return Err(SetupError::Manifest(format!(
            "`default_events` lists `{event}`, which GitHub sends only to an App with the `{permission}` permission: add `{permission}: read` under `default_permissions`"
        )));
    }
    if let Some(name) = &options.name {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(SetupError::BadInput(format!(
                "--name must be 1 to {MAX_NAME_CHARS} characters (GitHub's limit)"
            )));
        }
        manifest.insert("name".into(), Value::String(name.to_owned()));
    }
    let hook = manifest
        .entry("hook_attributes")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hook) = hook else {
        return Err(SetupError::Manifest(
            "`hook_attributes` is not a mapping".into(),
        ));
    };
    hook.insert("url".into(), Value::String(options.webhook_url.clone()));
    manifest.insert(
        "redirect_url".into(),
        Value::String(options.redirect_url.clone()),
    );
    Ok(Value::Object(manifest))
}

/// Where the browser posts the manifest: the person's settings, or the
/// organisation's. `web_base` is the web host (`https://github.com`, or a
/// GitHub Enterprise host).
pub fn form_action(web_base: &str, org: Option<&str>, state: &str) -> String {
    match org {
        Some(org) => format!("{web_base}/organizations/{org}/settings/apps/new?state={state}"),
        None => format!("{web_base}/settings/apps/new?state={state}"),
    }
}

/// Organisation logins are letters, digits and single hyphens.
pub fn check_org(org: &str) -> Result<(), SetupError> {
    let ok = !org.is_empty()
        && org.len() <= 39
        && org.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !org.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(SetupError::BadInput(format!(
            "--org `{org}` is not a GitHub organisation login"
        )))
    }
}

fn check_http_url(flag: &str, url: &str) -> Result<(), SetupError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') && !url.contains(char::is_whitespace) => {
            Ok(())
        }
        _ => Err(SetupError::BadInput(format!(
            "{flag} must be an http(s) URL GitHub can reach, such as https://taskgate.example.com/webhook (got `{url}`)"
        ))),
    }
}

fn to_json(node: &Node) -> Value {
    match &node.value {
        yaml::Value::Null => Value::Null,
        yaml::Value::Bool(b) => Value::Bool(*b),
        yaml::Value::Int(i) => Value::from(*i),
        yaml::Value::Float(f) => Value::from(*f),
        yaml::Value::Str(s) => Value::String(s.clone()),
        yaml::Value::Seq(items) => Value::Array(items.iter().map(to_json).collect()),
        yaml::Value::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, _, v)| (k.clone(), to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ManifestOptions {
        ManifestOptions {
            webhook_url: "https://taskgate.example.com/webhook".into(),
            redirect_url: "http://localhost:3000/setup/callback".into(),
            name: None,
        }
    }

    #[test]
    fn the_embedded_manifest_with_this_installations_urls() {
        let json = manifest_json(APP_MANIFEST, &options()).unwrap();
        insta::assert_snapshot!(serde_json::to_string_pretty(&json).unwrap());
    }

    #[test]
    fn a_name_replaces_the_manifests_within_githubs_limit() {
        let named = ManifestOptions {
            name: Some(" taskgate (acme) ".into()),
            ..options()
        };
        assert_eq!(
            manifest_json(APP_MANIFEST, &named).unwrap()["name"],
            "taskgate (acme)"
        );
        for bad in ["", "   ", &"x".repeat(35)] {
            let err = manifest_json(
                APP_MANIFEST,
                &ManifestOptions {
                    name: Some(bad.to_owned()),
                    ..options()
                },
            )
            .unwrap_err();
            assert!(err.to_string().contains("--name"), "{err}");
        }
    }

    #[test]
    fn a_webhook_url_github_cannot_post_to_is_refused() {
        for bad in [
            "",
            "taskgate.example.com/webhook",
            "ftp://x/webhook",
            "https://",
            "https:///webhook",
            "https://a b/webhook",
        ] {
            let err = manifest_json(
                APP_MANIFEST,
                &ManifestOptions {
                    webhook_url: bad.into(),
                    ..options()
                },
            )
            .unwrap_err();
            assert!(
                err.to_string().starts_with("--webhook-url must be"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_broken_manifest_file_is_named_as_such() {
        let err = manifest_json("name: [unclosed", &options()).unwrap_err();
        assert!(matches!(err, SetupError::Manifest(_)), "{err}");
        let err = manifest_json("- a list\n", &options()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "app manifest: the manifest is not a mapping"
        );
    }

    #[test]
    fn a_manifest_asking_for_merge_group_without_the_merge_queues_permission_is_refused() {
        let src =
            "name: mine\ndefault_permissions:\n  checks: write\ndefault_events:\n  - merge_group\n";
        let err = manifest_json(src, &options()).unwrap_err();
        insta::assert_snapshot!(err, @"app manifest: `default_events` lists `merge_group`, which GitHub sends only to an App with the `merge_queues` permission: add `merge_queues: read` under `default_permissions`");
        let fixed = src.replace("checks: write", "checks: write\n  merge_queues: read");
        assert!(manifest_json(&fixed, &options()).is_ok());
    }

    #[test]
    fn the_form_goes_to_the_person_or_the_organisation() {
        assert_eq!(
            form_action("https://github.com", None, "s1"),
            "https://github.com/settings/apps/new?state=s1"
        );
        assert_eq!(
            form_action("https://ghe.example.com", Some("acme"), "s1"),
            "https://ghe.example.com/organizations/acme/settings/apps/new?state=s1"
        );
    }

    #[test]
    fn organisation_logins_are_checked() {
        assert!(check_org("acme-corp").is_ok());
        for bad in ["", "-acme", "acme/x", "a b", &"a".repeat(40)] {
            assert!(check_org(bad).is_err(), "{bad}");
        }
    }
}
