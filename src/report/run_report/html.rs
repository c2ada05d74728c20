//! HTML text of the run report: escaping data, and the page file names.

use std::collections::BTreeMap;

use crate::names::slug;

/// Escapes text for HTML element content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A file name per scenario, in order: `scenario-<slug>.html`, with a
/// number added when two names slug alike.
pub fn page_file_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut used: BTreeMap<String, u32> = BTreeMap::new();
    names
        .map(|name| {
            let slug = slug(name);
            let n = used.entry(slug.clone()).or_default();
            *n += 1;
            if *n == 1 {
                format!("scenario-{slug}.html")
            } else {
                format!("scenario-{slug}-{n}.html")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_are_safe_and_distinct() {
        let names = page_file_names(["a b", "a_b", "../x", "index"].into_iter());
        assert_eq!(
            names,
            [
                "scenario-a_b.html",
                "scenario-a_b-2.html",
                "scenario-_x.html",
                "scenario-index.html"
            ]
        );
    }
}
