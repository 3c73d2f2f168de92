//! URL plumbing shared by the routes: matching a path against an OpenAPI
//! path template, percent-decoding, query strings, and GitHub-style
//! pagination with `Link` headers.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{Reply, Req};

/// Parameters that may span several path segments (`heads/feature/x`, `a/b.yml`).
fn is_greedy(name: &str) -> bool {
    matches!(name, "ref" | "path" | "branch" | "basehead")
}

/// Matches `path` against an OpenAPI template; returns the parameters and
/// the number of literal segments (more literals = more specific).
pub fn match_template(template: &str, path: &str) -> Option<(HashMap<String, String>, usize)> {
    let t: Vec<&str> = template.trim_matches('/').split('/').collect();
    let p: Vec<&str> = path.trim_matches('/').split('/').collect();
    let param = |s: &str| {
        s.strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .map(str::to_string)
    };
    let greedy = t
        .iter()
        .position(|s| param(s).is_some_and(|n| is_greedy(&n)));
    let mut params = HashMap::new();
    let mut literals = 0;
    let mut seg = |ts: &str, ps: &str, params: &mut HashMap<String, String>| -> bool {
        match param(ts) {
            Some(name) if !ps.is_empty() => {
                params.insert(name, percent_decode(ps, false));
                true
            }
            Some(_) => false,
            None => {
                literals += 1;
                ts == ps
            }
        }
    };
    match greedy {
        None => {
            if t.len() != p.len() || !t.iter().zip(&p).all(|(ts, ps)| seg(ts, ps, &mut params)) {
                return None;
            }
        }
        Some(g) => {
            let suffix = t.len() - g - 1;
            if p.len() < t.len() {
                return None;
            }
            let head_ok = t[..g]
                .iter()
                .zip(&p[..g])
                .all(|(ts, ps)| seg(ts, ps, &mut params));
            let tail_ok = t[g + 1..]
                .iter()
                .zip(&p[p.len() - suffix..])
                .all(|(ts, ps)| seg(ts, ps, &mut params));
            if !head_ok || !tail_ok {
                return None;
            }
            let name = param(t[g]).unwrap();
            params.insert(
                name,
                percent_decode(&p[g..p.len() - suffix].join("/"), false),
            );
        }
    }
    Some((params, literals))
}

pub fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => match std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(v) => {
                    out.push(v);
                    i += 3;
                    continue;
                }
                None => out.push(b'%'),
            },
            b'+' if plus_is_space => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn parse_query(q: Option<&str>) -> BTreeMap<String, String> {
    q.unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// The request's `per_page`, as GitHub reads it: 30 unless given, 1 to 100.
pub fn per_page(req: &Req) -> usize {
    req.query
        .get("per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30usize)
        .clamp(1, 100)
}

/// Pages a list the way GitHub does (`per_page` ≤ 100, default 30, `page`
/// from 1) with a `Link` header.
pub fn paginate(req: &Req, items: Vec<Value>) -> Reply {
    let per_page = per_page(req);
    let page = req
        .query
        .get("page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let body: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let mut reply = Reply::ok(Value::Array(body));
    let page_link = |n: usize, rel: &str| {
        link(
            req,
            &[("per_page", per_page.to_string()), ("page", n.to_string())],
            rel,
        )
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(page_link(page - 1, "prev"));
    }
    if page < last {
        links.push(page_link(page + 1, "next"));
        links.push(page_link(last, "last"));
    }
    if page > 1 {
        links.push(page_link(1, "first"));
    }
    if !links.is_empty() {
        reply.headers.push(("link".into(), links.join(", ")));
    }
    reply
}

/// One `Link` header entry for this request's path: its query with `set`'s
/// keys replaced, those last and in order, e.g.
/// `<{base}{path}?state=open&per_page=30&page=2>; rel="next"`.
pub fn link(req: &Req, set: &[(&str, String)], rel: &str) -> String {
    let mut qs: Vec<String> = req
        .query
        .iter()
        .filter(|(k, _)| !set.iter().any(|(s, _)| s == k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    qs.extend(set.iter().map(|(k, v)| format!("{k}={v}")));
    format!("<{}{}?{}>; rel=\"{rel}\"", req.base, req.path, qs.join("&"))
}
