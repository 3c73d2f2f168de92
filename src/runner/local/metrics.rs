//! The metrics a task's tests report, and the check of them against the
//! plan's bounds.
//!
//! Owns: reading `::taskgate-metric name=value` lines and
//! [`METRICS_FILE`] (the file wins), the warnings for what is unreadable
//! (bounded), and [`check_metrics`]. Must not: follow a symbolic link or
//! read more than [`MAX_METRICS_FILE_BYTES`]: the file is written by the
//! code under test.

use std::collections::HashMap;
use std::path::Path;

use taskgate_core::plan::Metric;

/// The file a test may write its metrics to, at the workspace root.
pub const METRICS_FILE: &str = "taskgate-metrics.json";
const METRIC_PREFIX: &str = "::taskgate-metric ";
/// Largest `taskgate-metrics.json` read; a larger one is refused with a warning.
pub const MAX_METRICS_FILE_BYTES: u64 = 1 << 20;
/// Unreadable-metric warnings said per run; the rest are counted.
pub const MAX_METRIC_WARNINGS: usize = 20;

/// Metrics from `::taskgate-metric name=value` lines, then from
/// `taskgate-metrics.json` (which wins), with warnings for what is unreadable.
/// Linear in the output: names are kept in a map (bounded by the output
/// cap), and at most [`MAX_METRIC_WARNINGS`] warnings are said.
pub(super) fn read_metrics(
    workdir: &Path,
    outputs: &[&str],
) -> (HashMap<String, f64>, Vec<String>) {
    let mut found: HashMap<String, f64> = HashMap::new();
    let mut warnings = Vec::new();
    let mut unreadable = 0usize;
    let set = |found: &mut HashMap<String, f64>, name: &str, value: f64| {
        if let Some(slot) = found.get_mut(name) {
            *slot = value;
        } else {
            found.insert(name.to_string(), value);
        }
    };
    for line in outputs.iter().flat_map(|o| o.lines()) {
        let Some(rest) = line.trim().strip_prefix(METRIC_PREFIX) else {
            continue;
        };
        for pair in rest.split_whitespace() {
            match pair.split_once('=').map(|(n, v)| (n, v.parse::<f64>())) {
                Some((name, Ok(value))) if !name.is_empty() && value.is_finite() => {
                    set(&mut found, name, value)
                }
                _ => {
                    unreadable += 1;
                    if unreadable <= MAX_METRIC_WARNINGS {
                        let pair = taskgate_core::report::clip_middle(pair, 200);
                        warnings.push(format!("unreadable metric `{pair}` (expected name=number)"));
                    }
                }
            }
        }
    }
    if unreadable > MAX_METRIC_WARNINGS {
        warnings.push(format!(
            "… and {} more unreadable metrics",
            unreadable - MAX_METRIC_WARNINGS
        ));
    }
    match read_metrics_file(&workdir.join(METRICS_FILE)) {
        Ok(None) => {}
        Ok(Some(text)) => {
            match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text) {
                Ok(map) => {
                    let mut bad = 0usize;
                    for (name, value) in map {
                        match value.as_f64() {
                            Some(v) => set(&mut found, &name, v),
                            None => {
                                bad += 1;
                                if bad <= MAX_METRIC_WARNINGS {
                                    let name = taskgate_core::report::clip_middle(&name, 200);
                                    warnings
                                        .push(format!("{METRICS_FILE}: `{name}` is not a number"));
                                }
                            }
                        }
                    }
                    if bad > MAX_METRIC_WARNINGS {
                        warnings.push(format!(
                            "{METRICS_FILE}: … and {} more values that are not numbers",
                            bad - MAX_METRIC_WARNINGS
                        ));
                    }
                }
                Err(e) => warnings.push(format!(
                    "{METRICS_FILE} is not a JSON object of numbers: {e}"
                )),
            }
        }
        Err(why) => warnings.push(why.to_string()),
    }
    (found, warnings)
}

/// The metrics file's text; `Ok(None)` when there is none. Written by the
/// code under test, so it is opened without following a symbolic link
/// (`O_NOFOLLOW`: a link to a file outside the workspace is refused, not
/// read), must be a regular file, and is read to at most
/// [`MAX_METRICS_FILE_BYTES`]. `Err` is the warning to show.
fn read_metrics_file(path: &Path) -> Result<Option<String>, MetricsFileError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(MetricsFileError::Symlink),
        Err(e) => return Err(MetricsFileError::Unreadable(e)),
    };
    let meta = file.metadata().map_err(MetricsFileError::Unreadable)?;
    if !meta.is_file() {
        return Err(MetricsFileError::NotAFile);
    }
    if meta.len() > MAX_METRICS_FILE_BYTES {
        return Err(MetricsFileError::TooLarge);
    }
    let mut bytes = Vec::new();
    file.take(MAX_METRICS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(MetricsFileError::Unreadable)?;
    if bytes.len() as u64 > MAX_METRICS_FILE_BYTES {
        return Err(MetricsFileError::TooLarge);
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Why the metrics file was not read; its Display is the gate's warning.
#[derive(Debug, thiserror::Error)]
pub enum MetricsFileError {
    #[error(
        "{METRICS_FILE} is a symbolic link; taskgate does not follow it (write the file itself)"
    )]
    Symlink,
    #[error("{METRICS_FILE} could not be read: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error("{METRICS_FILE} is not a regular file; taskgate reads only a plain file")]
    NotAFile,
    #[error("{METRICS_FILE} is over {MAX_METRICS_FILE_BYTES} bytes; taskgate did not read it")]
    TooLarge,
}

pub(super) fn check_metrics(expected: &[Metric], found: &HashMap<String, f64>) -> Vec<String> {
    expected
        .iter()
        .filter_map(|m| match found.get(m.name.as_str()) {
            None => Some(format!(
                "`{}` was not reported (print `{METRIC_PREFIX}{}=<value>` or write it to {METRICS_FILE})",
                m.name, m.name
            )),
            Some(v) if !m.operator.holds(*v, m.value) => {
                Some(format!("`{}` = {v}, expected {} {}", m.name, m.operator.symbol(), m.value))
            }
            Some(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metrics_file_not_read_says_why() {
        let said = [
            MetricsFileError::Symlink,
            MetricsFileError::Unreadable(std::io::Error::from(
                std::io::ErrorKind::PermissionDenied,
            )),
            MetricsFileError::NotAFile,
            MetricsFileError::TooLarge,
        ]
        .map(|e| e.to_string());
        insta::assert_snapshot!(said.join("\n"), @r"
        taskgate-metrics.json is a symbolic link; taskgate does not follow it (write the file itself)
        taskgate-metrics.json could not be read: permission denied
        taskgate-metrics.json is not a regular file; taskgate reads only a plain file
        taskgate-metrics.json is over 1048576 bytes; taskgate did not read it
        ");
    }
}
