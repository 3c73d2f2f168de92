//! Reports are outside input: hostile XML is refused, huge files are read
//! to the cap from a stream (never held whole), invalid UTF-8 is replaced,
//! and no bytes make a parser panic.

use std::io::{self, Read};

use proptest::prelude::*;

use super::testing::path;
use super::{parse_report, Limits, Outcome, ReportError, ReportFormat, Truncated};

const FORMATS: [ReportFormat; 4] = [
    ReportFormat::Junit,
    ReportFormat::Tap,
    ReportFormat::LibtestJson,
    ReportFormat::GoTestJson,
];

fn junit(xml: &str) -> Result<super::TestResults, ReportError> {
    parse_report(
        ReportFormat::Junit,
        xml.as_bytes(),
        "evil.xml",
        &Limits::default(),
    )
}

#[test]
fn billion_laughs_is_refused_without_expanding_anything() {
    let mut xml =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_owned()
        } else {
            format!("lol{}", i - 1)
        };
        xml.push_str(&format!(
            " <!ENTITY lol{i} \"{}\">\n",
            format!("&{prev};").repeat(10)
        ));
    }
    xml.push_str("]>\n<testsuite name=\"s\"><testcase name=\"&lol9;\"/></testsuite>\n");
    let err = junit(&xml).unwrap_err();
    insta::assert_snapshot!(err, @"evil.xml: byte 763: entity declarations are refused: the DOCTYPE declares entities (`<!ENTITY`), which could expand without bound or read local files; test reports never need one");
}

#[test]
fn an_external_entity_is_refused_and_no_file_is_read() {
    let xml = r#"<?xml version="1.0"?>
<!DOCTYPE testsuite [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<testsuite name="s"><testcase name="t"><failure>&xxe;</failure></testcase></testsuite>"#;
    let err = junit(xml).unwrap_err();
    assert!(
        matches!(err, ReportError::EntityDeclarations { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("entity declarations are refused"));
}

#[test]
fn an_external_dtd_is_refused_and_a_bare_doctype_is_read() {
    let err = junit(r#"<!DOCTYPE testsuite SYSTEM "http://example.invalid/x.dtd"><testsuite/>"#)
        .unwrap_err();
    insta::assert_snapshot!(err, @"evil.xml: byte 58: a DOCTYPE with an internal subset or an external DTD is refused (entity declarations are refused); test reports never need one");
    let results =
        junit("<!DOCTYPE testsuite><testsuite name=\"s\"><testcase name=\"t\"/></testsuite>")
            .unwrap();
    assert_eq!(results.cases.len(), 1);
}

#[test]
fn an_undeclared_entity_is_an_error_in_text_and_in_attributes() {
    let in_text =
        junit(r#"<testsuite><testcase name="t"><failure>&xxe;</failure></testcase></testsuite>"#);
    insta::assert_snapshot!(in_text.unwrap_err(), @"evil.xml: byte 44: unknown entity `&xxe;` is not expanded: only &lt; &gt; &amp; &apos; &quot; and character references like &#38; are read");
    let in_attr = junit(r#"<testsuite><testcase name="a&xxe;b"/></testsuite>"#).unwrap_err();
    assert!(
        matches!(in_attr, ReportError::UnknownEntity { ref name, .. } if name == "xxe"),
        "{in_attr}"
    );
    let known = junit(r#"<testsuite><testcase name="a&lt;&#38;&#x41;"/></testsuite>"#).unwrap();
    assert_eq!(known.cases[0].name, "a<&A");
}

#[test]
fn nesting_beyond_the_depth_bound_is_refused() {
    let xml = format!(
        "<testsuite>{}{}</testsuite>",
        "<a>".repeat(100),
        "</a>".repeat(100)
    );
    let err = junit(&xml).unwrap_err();
    assert!(
        matches!(err, ReportError::TooDeep { max_depth: 64, .. }),
        "{err}"
    );
}

/// A report of `total` bytes made on the fly: a header, the same chunk
/// over and over, never held whole.
struct Generated {
    header: Vec<u8>,
    chunk: Vec<u8>,
    total: u64,
    produced: u64,
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.produced >= self.total || buf.is_empty() {
            return Ok(0);
        }
        let pos = usize::try_from(self.produced).unwrap();
        let (source, at) = if pos < self.header.len() {
            (&self.header, pos)
        } else {
            (&self.chunk, (pos - self.header.len()) % self.chunk.len())
        };
        let n = (source.len() - at).min(buf.len());
        buf[..n].copy_from_slice(&source[at..at + n]);
        self.produced += n as u64;
        Ok(n)
    }
}

const FIFTY_MB: u64 = 50 * 1024 * 1024;

#[test]
fn a_50_mb_junit_file_is_read_to_the_cap_from_a_stream() {
    let mut input = Generated {
        header: b"<?xml version=\"1.0\"?><testsuites><testsuite name=\"big\">".to_vec(),
        chunk: b"<testcase classname=\"pkg.Big\" name=\"t\" time=\"0.001\"><failure message=\"boom\">trace</failure></testcase>\n".to_vec(),
        total: FIFTY_MB,
        produced: 0,
    };
    let limits = Limits {
        max_bytes: 4 * 1024 * 1024,
        ..Limits::default()
    };
    let results = parse_report(ReportFormat::Junit, &mut input, "big.xml", &limits).unwrap();
    assert_eq!(
        results.truncated,
        Some(Truncated::ByteCap {
            max_bytes: limits.max_bytes
        })
    );
    // Read up to the cap and one byte to see there was more: never the file.
    assert_eq!(input.produced, limits.max_bytes + 1);
    assert!(results.cases.len() > 30_000, "{}", results.cases.len());
    assert!(
        matches!(&results.cases[0].outcome, Outcome::Failed { message, .. } if message == "boom")
    );
}

#[test]
fn a_50_mb_line_stream_is_read_to_the_cap_in_every_line_format() {
    let streams: [(ReportFormat, &[u8]); 3] = [
        (ReportFormat::Tap, b"ok 1 - a test with a name\n"),
        (
            ReportFormat::LibtestJson,
            b"{ \"type\": \"test\", \"name\": \"a::b\", \"event\": \"ok\" }\n",
        ),
        (
            ReportFormat::GoTestJson,
            b"{\"Action\":\"pass\",\"Package\":\"m\",\"Test\":\"TestA\"}\n",
        ),
    ];
    for (format, line) in streams {
        let mut input = Generated {
            header: Vec::new(),
            chunk: line.to_vec(),
            total: FIFTY_MB,
            produced: 0,
        };
        let limits = Limits {
            max_bytes: 2 * 1024 * 1024,
            max_cases: 10_000,
            ..Limits::default()
        };
        let results = parse_report(format, &mut input, "big", &limits).unwrap();
        assert_eq!(input.produced, limits.max_bytes + 1, "{format}");
        assert_eq!(results.cases.len(), 10_000, "{format}");
        assert!(results.truncated.is_some(), "{format}");
    }
}

#[test]
fn invalid_utf8_is_replaced_not_refused_in_every_format() {
    let inputs: [(ReportFormat, &[u8]); 4] = [
        (ReportFormat::Junit, b"<testsuite><testcase name=\"t\xff\"><failure message=\"bad \xc3\x28\">\xfe</failure></testcase></testsuite>"),
        (ReportFormat::Tap, b"not ok 1 - t\xff\n"),
        (ReportFormat::LibtestJson, b"{ \"type\": \"test\", \"name\": \"t\xff\", \"event\": \"failed\" }\n"),
        (ReportFormat::GoTestJson, b"{\"Action\":\"run\",\"Package\":\"m\",\"Test\":\"T\xff\"}\n{\"Action\":\"fail\",\"Package\":\"m\",\"Test\":\"T\xff\"}\n"),
    ];
    for (format, bytes) in inputs {
        let results = parse_report(format, bytes, "bad", &Limits::default()).unwrap();
        assert_eq!(results.cases.len(), 1, "{format}");
        assert!(
            results.cases[0].name.contains('\u{fffd}'),
            "{format}: {}",
            results.cases[0].name
        );
        assert!(results.cases[0].outcome.is_failure(), "{format}");
    }
}

#[test]
fn an_empty_report_is_an_error_that_points_at_the_log() {
    for format in FORMATS {
        let err = parse_report(format, &b""[..], "junit.xml", &Limits::default()).unwrap_err();
        assert!(matches!(err, ReportError::Empty { .. }), "{format}: {err}");
    }
    let err = parse_report(
        ReportFormat::Junit,
        &b""[..],
        "junit.xml",
        &Limits::default(),
    )
    .unwrap_err();
    insta::assert_snapshot!(err, @"junit.xml: the report is empty (the test tool may have stopped before writing it; its log says why)");
    let err = junit("<?xml version=\"1.0\"?>\n<!-- nothing -->\n").unwrap_err();
    insta::assert_snapshot!(err, @"evil.xml: not a JUnit report: no <testsuites> or <testsuite> element (only a declaration, comments or text)");
}

#[test]
fn a_read_error_names_the_file() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("disk on fire"))
        }
    }
    for format in FORMATS {
        let err = parse_report(format, Broken, "r.out", &Limits::default()).unwrap_err();
        assert!(err.to_string().starts_with("r.out: "), "{format}: {err}");
        assert!(err.to_string().contains("disk on fire"), "{format}: {err}");
    }
}

/// Every fixture, for the mutation property below.
fn fixtures() -> Vec<(ReportFormat, Vec<u8>)> {
    [
        (ReportFormat::Junit, "pytest/junit-xunit1.xml"),
        (ReportFormat::Junit, "node/junit.xml"),
        (ReportFormat::Junit, "prove/junit.xml"),
        (ReportFormat::Tap, "node/math.tap"),
        (ReportFormat::LibtestJson, "libtest/libtest.json"),
        (
            ReportFormat::GoTestJson,
            "go/build-failure-with-stderr.json",
        ),
    ]
    .into_iter()
    .map(|(f, p)| (f, std::fs::read(path(p)).unwrap()))
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_bytes_make_a_parser_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        for format in FORMATS {
            let _ = parse_report(format, &data[..], "fuzz", &Limits::default());
        }
    }

    #[test]
    fn cut_or_flipped_real_reports_never_panic_and_keep_the_caps(
        which in 0usize..6, cut in 0.0f64..1.0, flip in any::<(usize, u8)>(),
    ) {
        let (format, mut bytes) = fixtures().swap_remove(which);
        let at = flip.0 % bytes.len();
        bytes[at] = flip.1;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
        let end = (bytes.len() as f64 * cut) as usize;
        let limits = Limits { max_text: 64, ..Limits::default() };
        if let Ok(results) = parse_report(format, &bytes[..end], "fuzz", &limits) {
            for case in &results.cases {
                if let Outcome::Failed { message, details } | Outcome::Errored { message, details } = &case.outcome {
                    prop_assert!(message.len() <= 64 + 40 && details.len() <= 64 + 40);
                }
            }
        }
    }
}
