//! The dashboard's chart of the ship queue's last day: landings per hour
//! as bars and the mean wait of each hour's landings as a line, an inline
//! SVG (no script, no external file), with the waits' p50 and p95.
//!
//! Owns: the chart's geometry and its one-line summary. Must not: read
//! the store or count anything (`core::ship::figures` does).

use taskgate_core::report::render_duration;
use taskgate_core::ship::figures::QueueFigures;

const WIDTH: u32 = 480;
const HEIGHT: u32 = 96;
const BAR: u32 = WIDTH / 24;

/// The chart and what it says in words.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueueChart {
    /// `<svg …>…</svg>`: numbers and fixed text only, safe to embed.
    pub svg: String,
    /// `3 landed in the last 24 h · wait p50 12 min 00 s, p95 …`.
    pub summary: String,
}

/// The chart of `f`.
pub fn queue_chart(f: &QueueFigures) -> QueueChart {
    let day: u64 = f.last_day.iter().map(|h| h.landed).sum();
    let max_landed = f
        .last_day
        .iter()
        .map(|h| h.landed)
        .max()
        .unwrap_or(0)
        .max(1);
    let means: Vec<Option<i64>> = f
        .last_day
        .iter()
        .map(|h| (h.landed > 0).then(|| h.wait_s / h.landed as i64))
        .collect();
    let max_wait = means.iter().flatten().copied().max().unwrap_or(0).max(1);
    let mut svg = format!(
        r#"<svg class="queue-chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}"><title>Landings (bars) and mean wait (line) per hour, last 24 hours</title>"#
    );
    for (i, h) in f.last_day.iter().enumerate() {
        let height = (h.landed * u64::from(HEIGHT - 4) / max_landed) as u32;
        let x = i as u32 * BAR + 1;
        let y = HEIGHT - height;
        let ago = 23 - i;
        svg.push_str(&format!(
            r##"<rect x="{x}" y="{y}" width="{}" height="{height}" fill="#8ec5ff"><title>{ago} h ago: {} landed</title></rect>"##,
            BAR - 2,
            h.landed
        ));
    }
    let points: Vec<String> = means
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            m.map(|w| {
                let x = i as u32 * BAR + BAR / 2;
                let y = HEIGHT as i64 - 2 - w * i64::from(HEIGHT - 4) / max_wait;
                format!("{x},{y}")
            })
        })
        .collect();
    if !points.is_empty() {
        svg.push_str(&format!(
            r##"<polyline points="{}" fill="none" stroke="#bf3989" stroke-width="2"/>"##,
            points.join(" ")
        ));
    }
    svg.push_str("</svg>");
    let wait = |p| {
        f.wait_percentile(p).map_or("–".to_owned(), |s| {
            render_duration(s.max(0) as u64 * 1000)
        })
    };
    let runs = f.runs_per_landed().map_or(String::new(), |r| {
        format!(" · {r:.2} proof runs per landed story")
    });
    QueueChart {
        svg,
        summary: format!(
            "{day} landed in the last 24 h, {} in all · wait from ship request to landing: p50 {}, p95 {}{runs}",
            f.landed,
            wait(50),
            wait(95)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::ship::StoryRecord;

    #[test]
    fn the_chart_has_a_bar_per_hour_and_a_line_through_the_hours_with_landings() {
        let hour = 3_600_000;
        let now = 100 * hour;
        let landed = |ago_ms: i64, wait_s: i64| StoryRecord {
            landed_at_ms: Some(now - ago_ms),
            queue_wait_ms: Some(wait_s * 1000),
            proof_runs: 1,
            ..StoryRecord::default()
        };
        let records = [
            landed(10 * 60_000, 600),
            landed(20 * 60_000, 1200),
            landed(5 * hour + 1, 300),
        ];
        let chart = queue_chart(&QueueFigures::of(&records, now));
        insta::assert_snapshot!(chart.summary, @"3 landed in the last 24 h, 3 in all · wait from ship request to landing: p50 10 min 00 s, p95 20 min 00 s · 1.00 proof runs per landed story");
        let svg = chart.svg.replace("><", ">\n<");
        insta::assert_snapshot!(svg, @r##"
        <svg class="queue-chart" role="img" viewBox="0 0 480 96" width="480" height="96">
        <title>Landings (bars) and mean wait (line) per hour, last 24 hours</title>
        <rect x="1" y="96" width="18" height="0" fill="#8ec5ff">
        <title>23 h ago: 0 landed</title>
        </rect>
        <rect x="21" y="96" width="18" height="0" fill="#8ec5ff">
        <title>22 h ago: 0 landed</title>
        </rect>
        <rect x="41" y="96" width="18" height="0" fill="#8ec5ff">
        <title>21 h ago: 0 landed</title>
        </rect>
        <rect x="61" y="96" width="18" height="0" fill="#8ec5ff">
        <title>20 h ago: 0 landed</title>
        </rect>
        <rect x="81" y="96" width="18" height="0" fill="#8ec5ff">
        <title>19 h ago: 0 landed</title>
        </rect>
        <rect x="101" y="96" width="18" height="0" fill="#8ec5ff">
        <title>18 h ago: 0 landed</title>
        </rect>
        <rect x="121" y="96" width="18" height="0" fill="#8ec5ff">
        <title>17 h ago: 0 landed</title>
        </rect>
        <rect x="141" y="96" width="18" height="0" fill="#8ec5ff">
        <title>16 h ago: 0 landed</title>
        </rect>
        <rect x="161" y="96" width="18" height="0" fill="#8ec5ff">
        <title>15 h ago: 0 landed</title>
        </rect>
        <rect x="181" y="96" width="18" height="0" fill="#8ec5ff">
        <title>14 h ago: 0 landed</title>
        </rect>
        <rect x="201" y="96" width="18" height="0" fill="#8ec5ff">
        <title>13 h ago: 0 landed</title>
        </rect>
        <rect x="221" y="96" width="18" height="0" fill="#8ec5ff">
        <title>12 h ago: 0 landed</title>
        </rect>
        <rect x="241" y="96" width="18" height="0" fill="#8ec5ff">
        <title>11 h ago: 0 landed</title>
        </rect>
        <rect x="261" y="96" width="18" height="0" fill="#8ec5ff">
        <title>10 h ago: 0 landed</title>
        </rect>
        <rect x="281" y="96" width="18" height="0" fill="#8ec5ff">
        <title>9 h ago: 0 landed</title>
        </rect>
        <rect x="301" y="96" width="18" height="0" fill="#8ec5ff">
        <title>8 h ago: 0 landed</title>
        </rect>
        <rect x="321" y="96" width="18" height="0" fill="#8ec5ff">
        <title>7 h ago: 0 landed</title>
        </rect>
        <rect x="341" y="96" width="18" height="0" fill="#8ec5ff">
        <title>6 h ago: 0 landed</title>
        </rect>
        <rect x="361" y="50" width="18" height="46" fill="#8ec5ff">
        <title>5 h ago: 1 landed</title>
        </rect>
        <rect x="381" y="96" width="18" height="0" fill="#8ec5ff">
        <title>4 h ago: 0 landed</title>
        </rect>
        <rect x="401" y="96" width="18" height="0" fill="#8ec5ff">
        <title>3 h ago: 0 landed</title>
        </rect>
        <rect x="421" y="96" width="18" height="0" fill="#8ec5ff">
        <title>2 h ago: 0 landed</title>
        </rect>
        <rect x="441" y="96" width="18" height="0" fill="#8ec5ff">
        <title>1 h ago: 0 landed</title>
        </rect>
        <rect x="461" y="4" width="18" height="92" fill="#8ec5ff">
        <title>0 h ago: 2 landed</title>
        </rect>
        <polyline points="370,64 470,2" fill="none" stroke="#bf3989" stroke-width="2"/>
        </svg>
        "##);
    }

    #[test]
    fn the_queue_section_shows_the_rows_and_the_last_day() {
        use crate::web::dashboard::{dashboard_view, render_dashboard, QueueRow};
        let mut view = dashboard_view(&[], "https://github.com", 0);
        let row = |position, issue, priority, doing: &str| QueueRow {
            repo: "acme/strategies".into(),
            position,
            issue,
            title: format!("Story {issue}"),
            shipped_by: "@octocat by command".into(),
            doing: doing.into(),
            pr: format!("#{}", issue + 1),
            priority,
            waiting: "4 min 10 s".into(),
        };
        view.queue = vec![
            row(
                1,
                3,
                "normal",
                "proving (round 1) on base bbbbbbb: testing mmmmmmm",
            ),
            row(2, 9, "high", "waiting its turn"),
        ];
        let hour = 3_600_000;
        let landed = StoryRecord {
            landed_at_ms: Some(10 * hour - 60_000),
            queue_wait_ms: Some(300_000),
            proof_runs: 1,
            ..StoryRecord::default()
        };
        view.queue_chart = queue_chart(&QueueFigures::of([&landed], 10 * hour));
        let html = render_dashboard(&view);
        let start = html.find(r#"<section class="queue">"#).unwrap();
        let end = start + html[start..].find("</section>").unwrap();
        let piece = html[start..end].replace(&view.queue_chart.svg, "<svg>…</svg>");
        insta::assert_snapshot!(piece, @r#"
        <section class="queue">
        <h2>Ship queue</h2>

        <table>
        <thead><tr><th>#</th><th>Repository</th><th>Story</th><th>PR</th><th>Priority</th><th>Shipped by</th><th>Waiting</th><th>Now</th></tr></thead>
        <tbody>

        <tr><td>1</td><td>acme/strategies</td><td>#3 Story 3</td><td>#4</td><td>normal</td><td>@octocat by command</td><td>4 min 10 s</td><td>proving (round 1) on base bbbbbbb: testing mmmmmmm</td></tr>

        <tr><td>2</td><td>acme/strategies</td><td>#9 Story 9</td><td>#10</td><td>high</td><td>@octocat by command</td><td>4 min 10 s</td><td>waiting its turn</td></tr>

        </tbody>
        </table>

        <div class="queue-day"><svg>…</svg>
        <p class="muted">1 landed in the last 24 h, 1 in all · wait from ship request to landing: p50 5 min 00 s, p95 5 min 00 s · 1.00 proof runs per landed story</p></div>
        "#);
    }
}
