//! Writing the app's settings into a `.env` file without losing what else
//! it holds. Pure: text in, text out.
//!
//! Lines that set one of the keys are replaced in place (a value that would
//! change is refused unless forced: it belongs to another app); every other
//! line, comments included, stays as it was; keys not yet there are added
//! at the end. Values are written so that `dotenvy` (which `taskgate serve`
//! reads) gives them back exactly.

use super::SetupError;

/// `existing` with `values` set. `Err` names the first key that already has
/// another value, unless `force`.
pub fn merge(existing: &str, values: &[(&str, &str)], force: bool) -> Result<String, SetupError> {
    let mut out = String::new();
    let mut written = vec![false; values.len()];
    for line in existing.lines() {
        let replaced = key_of(line).and_then(|key| {
            let i = values.iter().position(|(k, _)| *k == key)?;
            Some((i, current_value(line)))
        });
        match replaced {
            Some((i, current)) => {
                let (key, value) = values[i];
                if !force && current.as_deref() != Some(value) {
                    return Err(SetupError::EnvConflict(key.to_owned()));
                }
                if !written[i] {
                    out.push_str(&assignment(key, value));
                    out.push('\n');
                    written[i] = true;
                }
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    let missing: Vec<usize> = (0..values.len()).filter(|i| !written[*i]).collect();
    if !missing.is_empty() {
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str("# The GitHub App, registered by `taskgate setup`.\n");
        for i in missing {
            let (key, value) = values[i];
            out.push_str(&assignment(key, value));
            out.push('\n');
        }
    }
    Ok(out)
}

/// Which of `keys` `existing` already sets (to anything: before GitHub
/// answers, any value there is another app's).
pub fn conflicts(existing: &str, keys: &[&str]) -> Vec<String> {
    existing
        .lines()
        .filter_map(key_of)
        .filter(|k| keys.contains(k))
        .map(str::to_owned)
        .collect()
}

/// `KEY` of a `KEY=value` or `export KEY=value` line.
fn key_of(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let line = line.strip_prefix("export ").unwrap_or(line);
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    (!key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then_some(key)
}

/// The value a line sets, as dotenv reads simple values: quotes removed.
fn current_value(line: &str) -> Option<String> {
    let (_, value) = line.split_once('=')?;
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        return Some(inner.replace("\\\"", "\"").replace("\\\\", "\\"));
    }
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return Some(inner.to_owned());
    }
    Some(value.to_owned())
}

/// `KEY=value`, double-quoted (with `\` and `"` escaped) when the value has
/// anything a plain dotenv value may not.
fn assignment(key: &str, value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:@+,".contains(&b));
    if plain {
        format!("{key}={value}")
    } else {
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        format!("{key}=\"{escaped}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUES: &[(&str, &str)] = &[
        ("APP_ID", "4242"),
        ("PRIVATE_KEY_PATH", "/srv/taskgate keys/app.pem"),
        ("WEBHOOK_SECRET", "0123abcd"),
    ];

    #[test]
    fn a_new_file_gets_the_three_settings() {
        insta::assert_snapshot!(merge("", VALUES, false).unwrap(), @r#"
        # The GitHub App, registered by `taskgate setup`.
        APP_ID=4242
        PRIVATE_KEY_PATH="/srv/taskgate keys/app.pem"
        WEBHOOK_SECRET=0123abcd
        "#);
    }

    #[test]
    fn other_lines_stay_and_equal_values_are_rewritten_in_place() {
        let existing = "# mine\nPORT=4000\nexport APP_ID=\"4242\"\nRUST_LOG=debug\n";
        insta::assert_snapshot!(merge(existing, VALUES, false).unwrap(), @r#"
        # mine
        PORT=4000
        APP_ID=4242
        RUST_LOG=debug

        # The GitHub App, registered by `taskgate setup`.
        PRIVATE_KEY_PATH="/srv/taskgate keys/app.pem"
        WEBHOOK_SECRET=0123abcd
        "#);
    }

    #[test]
    fn another_apps_settings_are_kept_unless_forced() {
        let existing = "APP_ID=7\nWEBHOOK_SECRET=old\n";
        let err = merge(existing, VALUES, false).unwrap_err();
        assert_eq!(err, SetupError::EnvConflict("APP_ID".into()));
        let forced = merge(existing, VALUES, true).unwrap();
        assert!(
            forced.starts_with("APP_ID=4242\nWEBHOOK_SECRET=0123abcd\n"),
            "{forced}"
        );
        assert_eq!(conflicts(existing, &["APP_ID", "PORT"]), vec!["APP_ID"]);
    }

    #[test]
    fn what_is_written_reads_back_the_same_through_dotenvy() {
        let tricky = [
            ("A", "plain"),
            ("B", "with \"quotes\" and \\ and #"),
            ("C", ""),
        ];
        let text = merge("", &tricky, false).unwrap();
        let read: Vec<(String, String)> = dotenvy::from_read_iter(text.as_bytes())
            .map(|kv| kv.unwrap())
            .collect();
        assert_eq!(
            read,
            tricky
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        );
    }
}
