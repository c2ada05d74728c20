//! CSV bytes without a `String` per cell, for the outputs written once per
//! run (the sweep journal, runs.csv) and per trace row: numbers are pushed
//! digit by digit, and text cells are quoted here by the csv crate's rule.
//! The bytes are the ones the csv crate writes for the same cells (tested
//! below against the crate itself), so the outputs did not change when they
//! moved here.

use crate::model::metrics::{Metric, MetricValue, Metrics};
use crate::model::time::Millis;

/// Appends `n` in decimal.
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    // Most metrics of most runs are one digit.
    if n < 10 {
        out.push(b'0' + n as u8);
        return;
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends a time as `Millis` displays it: seconds with three decimals.
pub fn push_millis(out: &mut Vec<u8>, t: Millis) {
    push_u64(out, t.0 / 1000);
    let frac = t.0 % 1000;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// Appends a metric value as `MetricValue::render` writes it.
pub fn push_metric(out: &mut Vec<u8>, value: MetricValue) {
    match value {
        MetricValue::Count(n) => push_u64(out, n),
        MetricValue::Seconds(t) => push_millis(out, t),
        MetricValue::Never => {}
    }
}

/// Appends every metric, in column order, separated by commas. The values
/// are digits, `.` or empty: no cell needs quoting or the formula guard.
pub fn push_metrics(out: &mut Vec<u8>, metrics: &Metrics) {
    for (i, metric) in Metric::ALL.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_metric(out, metrics.get(metric));
    }
}

/// Whether the csv crate (`QuoteStyle::Necessary`, terminator `\n`) quotes
/// a cell: it holds the delimiter, the quote or a line break (`\r` too,
/// which readers take for one).
fn needs_quotes(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
}

/// Appends `bytes` as one cell inside a record, as the csv crate writes it:
/// quoted when [`needs_quotes`] says so, each quote inside doubled. An empty
/// cell stays empty (the crate writes `""` only for a record of one empty
/// cell, which no output here has).
pub fn push_quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    if !needs_quotes(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    out.push(b'"');
    for &b in bytes {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// Appends one text cell: the formula guard, then [`push_quoted`].
pub fn push_cell(out: &mut Vec<u8>, text: &str) {
    push_quoted(out, crate::names::csv_cell(text).as_bytes());
}

/// One cell as [`push_cell`] writes it.
pub fn cell(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    push_cell(&mut out, text);
    out
}

/// Cells joined by commas, each as [`cell`] writes it.
pub fn cells<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, text) in texts.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&cell(text));
    }
    out
}

/// `head`, then one row per item (`row(out, index, item)`), as blocks of
/// bytes to be written in order: the blocks of rows are rendered on the
/// current rayon pool and never joined (a file takes them one after another).
pub fn par_blocks<T: Sync>(
    head: Vec<u8>,
    items: &[T],
    row: impl Fn(&mut Vec<u8>, usize, &T) + Sync,
) -> Vec<Vec<u8>> {
    use rayon::prelude::*;
    const BLOCK: usize = 4096;
    let mut blocks = vec![head];
    blocks.par_extend(items.par_chunks(BLOCK).enumerate().map(|(block, chunk)| {
        let mut bytes = Vec::with_capacity(chunk.len() * 64);
        for (offset, item) in chunk.iter().enumerate() {
            row(&mut bytes, block * BLOCK + offset, item);
        }
        bytes
    }));
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_crate(cells: &[&str]) -> Vec<u8> {
        let mut writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        writer
            .write_record(cells.iter().map(|c| crate::names::csv_cell(c).into_owned()))
            .unwrap();
        let mut bytes = writer.into_inner().unwrap();
        bytes.pop();
        bytes
    }

    #[test]
    fn cells_are_the_csv_crates_bytes() {
        let tricky = [
            "plain",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\rhere",
            "=1+1",
            "-7.000",
            "@x",
            " spaced ",
            "#comment",
            "'quoted'",
            "ünïcode, too",
        ];
        for text in tricky {
            assert_eq!(
                cells(["x", text, "y"]),
                csv_crate(&["x", text, "y"]),
                "{text:?}"
            );
        }
        // An empty cell inside a record is empty.
        assert_eq!(cells(["a", "", "b"]), csv_crate(&["a", "", "b"]));
        assert_eq!(cells(["", "b"]), b",b");
    }

    proptest::proptest! {
        /// Any cells, tricky bytes over-represented: line breaks, quotes,
        /// commas, formula starts, numbers, unicode, empty cells.
        #[test]
        fn any_cells_are_the_csv_crates_bytes(
            texts in proptest::collection::vec(
                proptest::prop_oneof![
                    "[a-z,\"\r\n=+@\t'. 0-9eé€-]{0,8}",
                    "[-+=@]?(inf|nan|[0-9]{1,3}(\\.[0-9])?(e[0-9])?)",
                    proptest::prelude::any::<String>(),
                ],
                2..6,
            )
        ) {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            proptest::prop_assert_eq!(cells(texts.iter().copied()), csv_crate(&texts));
        }
    }

    #[test]
    fn numbers_are_renders_bytes() {
        for n in [0, 7, 10, 99, 1000, 123_456_789, u64::MAX] {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
            for value in [MetricValue::Count(n), MetricValue::Seconds(Millis(n))] {
                let mut out = Vec::new();
                push_metric(&mut out, value);
                assert_eq!(out, value.render().into_bytes());
            }
        }
        let mut out = Vec::new();
        push_metric(&mut out, MetricValue::Never);
        assert!(out.is_empty());
        let metrics = Metrics {
            placed: 3,
            first_full: Some(Millis(1_500)),
            violation_time: Millis(7),
            events: 42,
            ..Metrics::default()
        };
        let mut out = Vec::new();
        push_metrics(&mut out, &metrics);
        let expected: Vec<String> = Metric::ALL
            .iter()
            .map(|&m| metrics.get(m).render())
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), expected.join(","));
    }
}
