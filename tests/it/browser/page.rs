//! A loaded tab of the [`Browser`]: its rendered text, sections, table
//! rows, positions, clicks and screenshots.
//!
//! Owns: reading the page as a person sees it (scripts run in the page
//! read `innerText` and layout boxes, never the HTML source) and writing
//! `target/browser-artifacts/<test>.png`.
//! Must not: change the page other than as a person would (a mouse click).

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::{Browser, DEADLINE, HEIGHT, WIDTH};

/// One tab, loaded.
pub struct Page<'b> {
    browser: &'b Browser,
    session: String,
}

impl<'b> Page<'b> {
    /// Sets the tab of `session` up (its requests paused so that the
    /// sign-in dialog reaches the driver, the window size) and loads `url`.
    pub(super) async fn load(browser: &'b Browser, session: String, url: &str) -> Page<'b> {
        let page = Page { browser, session };
        page.call("Page.enable", json!({})).await;
        page.call("Fetch.enable", json!({ "handleAuthRequests": true }))
            .await;
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": false }),
        )
        .await;
        page.navigate(url).await;
        page
    }

    /// What a person reads on the page: its rendered text.
    pub async fn text(&self) -> String {
        self.eval("document.body.innerText").await
    }

    /// The visible text under the heading that reads `heading` (or begins
    /// with it), up to the next heading of the same or a higher level;
    /// panics naming the headings there are when none matches.
    pub async fn section(&self, heading: &str) -> String {
        let script = format!("({SECTION_JS})({})", json!(heading));
        let found: Value = self.eval(&script).await;
        match found["text"].as_str() {
            Some(text) => text.to_owned(),
            None => panic!(
                "no heading {heading:?} on the page; its headings: {}",
                found["headings"]
            ),
        }
    }

    /// Every visible table row on the page, as the text of its cells.
    pub async fn rows(&self) -> Vec<Vec<String>> {
        self.eval(ROWS_JS).await
    }

    /// How far from the page's left edge, in CSS pixels, the first
    /// rendered text that contains `text` begins: where a person sees it.
    pub async fn left_of(&self, text: &str) -> f64 {
        let script = format!("({LEFT_OF_JS})({})", json!(text));
        let left: Option<f64> = self.eval(&script).await;
        left.unwrap_or_else(|| panic!("no rendered text {text:?} on the page"))
    }

    /// Clicks, with the mouse, the one visible link, button or `<summary>`
    /// whose text is `label`, then waits for the next frame. For changes
    /// within the page (a `<details>` opening); it does not wait for a
    /// navigation.
    pub async fn click_on(&self, label: &str) {
        let script = format!("({CLICK_TARGET_JS})({})", json!(label));
        let found: Value = self.eval(&script).await;
        let (Some(x), Some(y)) = (found["x"].as_f64(), found["y"].as_f64()) else {
            panic!(
                "expected one visible link, button or summary reading {label:?}, found {}",
                found["matches"]
            );
        };
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )
            .await;
        }
        let frame = "new Promise(r => requestAnimationFrame(() => r(true)))";
        let _: Value = self.eval(frame).await;
    }

    /// Saves the whole page as `target/browser-artifacts/<name>.png` and
    /// prints the path; `name` is the test's name.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "a screenshot is named after its test: {name:?}"
        );
        let metrics = self.call("Page.getLayoutMetrics", json!({})).await;
        let size = &metrics["cssContentSize"];
        let width = size["width"].as_f64().unwrap_or(f64::from(WIDTH));
        let height = size["height"].as_f64().unwrap_or(f64::from(HEIGHT));
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({
                    "format": "png",
                    "captureBeyondViewport": true,
                    "clip": { "x": 0, "y": 0, "width": width, "height": height.min(16_000.0), "scale": 1 },
                }),
            )
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("a base64 PNG");
        let dir = artifacts_dir();
        std::fs::create_dir_all(&dir).expect("target/browser-artifacts");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("the screenshot written");
        println!("screenshot: {}", path.display());
        path
    }

    async fn navigate(&self, url: &str) {
        let mut events = self.browser.conn.events.subscribe();
        let nav = self.call("Page.navigate", json!({ "url": url })).await;
        if let Some(error) = nav.get("errorText") {
            self.browser.fail(&format!("loading {url}: {error}"));
        }
        let loaded = async {
            loop {
                match events.recv().await {
                    Ok(e)
                        if e["method"] == "Page.loadEventFired"
                            && e["sessionId"] == self.session.as_str() =>
                    {
                        return;
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        };
        if tokio::time::timeout(DEADLINE, loaded).await.is_err() {
            self.browser
                .fail(&format!("{url} did not finish loading within {DEADLINE:?}"));
        }
    }

    /// The value of a JavaScript expression (awaited if a promise).
    async fn eval<T: serde::de::DeserializeOwned>(&self, expression: &str) -> T {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        if let Some(e) = result.get("exceptionDetails") {
            panic!("the page's script failed: {e}\n{expression}");
        }
        serde_json::from_value(result["result"]["value"].clone())
            .unwrap_or_else(|e| panic!("unexpected value of {expression}: {e}: {result}"))
    }

    async fn call(&self, method: &str, params: Value) -> Value {
        self.browser.call(Some(&self.session), method, params).await
    }
}

/// `(heading) => { text } | { headings }`, rendered text only.
const SECTION_JS: &str = r"(name) => {
  const all = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')];
  const read = h => h.innerText.trim();
  const h = all.find(h => read(h) === name) ?? all.find(h => read(h).startsWith(name));
  if (!h) return { headings: all.map(read) };
  const level = Number(h.tagName[1]);
  const parts = [];
  for (let n = h.nextSibling; n; n = n.nextSibling) {
    if (n.nodeType === Node.TEXT_NODE) { parts.push(n.textContent.trim()); continue; }
    if (n.nodeType !== Node.ELEMENT_NODE) continue;
    if (/^H[1-6]$/.test(n.tagName) && Number(n.tagName[1]) <= level) break;
    if (n.checkVisibility()) parts.push(n.innerText.trim());
  }
  return { text: parts.filter(p => p).join('\n') };
}";

/// `[[cell text]]` of every rendered `<tr>`.
const ROWS_JS: &str = r"[...document.querySelectorAll('tr')]
  .filter(tr => tr.checkVisibility())
  .map(tr => [...tr.cells].map(c => c.innerText.trim()))";

/// `(text) => x | null`: the left edge of `text` in the first rendered
/// text node holding it, in page coordinates.
const LEFT_OF_JS: &str = r"(text) => {
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const at = n.textContent.indexOf(text);
    if (at < 0 || !n.parentElement.checkVisibility()) continue;
    const range = document.createRange();
    range.setStart(n, at);
    range.setEnd(n, at + text.length);
    const r = range.getBoundingClientRect();
    if (r.width > 0) return r.left + window.scrollX;
  }
  return null;
}";

/// `(label) => { x, y } | { matches }`: the centre of the one visible
/// clickable element reading `label`, scrolled into view.
const CLICK_TARGET_JS: &str = r"(label) => {
  const found = [...document.querySelectorAll('a, button, summary, [role=button]')]
    .filter(e => e.checkVisibility() && e.innerText.trim() === label);
  if (found.length !== 1) return { matches: found.map(e => e.outerHTML.slice(0, 120)) };
  found[0].scrollIntoView({ block: 'center' });
  const r = found[0].getBoundingClientRect();
  return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
}";

/// `target/browser-artifacts`, beside the test binaries' scratch space
/// (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn artifacts_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("browser-artifacts")
}
