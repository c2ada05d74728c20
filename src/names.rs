//! Names are data. Every name a user writes (scenario and experiment names,
//! ids of nodes, volumes, jobs, groups, tasks and plugins) is checked here
//! before it can reach a terminal, a Markdown file, a CSV cell or a path:
//!
//! - at most [`MAX_NAME_CHARS`] characters, not blank;
//! - no control characters (C0, DEL, C1: NUL, newline, the ESC that starts
//!   an ANSI sequence) and no bidirectional overrides (U+202A..U+202E,
//!   U+2066..U+2069), which could rewrite what a terminal shows.
//!
//! A name becomes part of a file name only through [`slug`]; CSV cells are
//! written through [`csv_cell`] so a spreadsheet never evaluates one.

use std::borrow::Cow;

/// Longest name or id, in characters: long enough for any sensible name,
/// short enough that `trace-<name>-<scheduler>-<seed>.csv` stays well under
/// the 255-byte file-name limit of common file systems.
pub const MAX_NAME_CHARS: usize = 100;

/// Longest slug, in bytes (a slug is ASCII).
pub const MAX_SLUG_BYTES: usize = 100;

/// Longest piece of user text quoted in a message, in characters.
const SHOWN_CHARS: usize = 60;

/// User text as quoted in a message: control characters escaped, cut to
/// 60 characters (a 100,000-character id is not repeated back in full).
pub fn shown(text: &str) -> String {
    let escaped: String = text.escape_debug().collect();
    match escaped.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}...", &escaped[..cut]),
        None => escaped,
    }
}

/// Text on one line of a terminal: every control character (C0, DEL, C1)
/// and bidirectional override written as an escape (`\n`, `\t`, `\r`,
/// `\u{1b}`), everything else as it is, nothing cut. Every message plansim
/// prints that may quote user data (a path, a name, a value, a label) goes
/// through this once, at its display ([`crate::scenario::LoadError`]), so a
/// newline in a file name cannot forge an output line and an ESC cannot
/// start a terminal sequence.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(forbidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if forbidden(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Text for a terminal that may span lines: as [`one_line`], except that a
/// newline stays a line break. The last guard on everything plansim prints
/// to stderr (`cli::output::err`): a message built from user data that
/// slipped past [`one_line`] can still break a line where the message does,
/// but never carries an ESC, a carriage return or a bidirectional override
/// to the terminal.
pub fn terminal_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && forbidden(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&one_line(line));
    }
    Cow::Owned(out)
}

/// A path as a message quotes it, through [`one_line`]: a directory or
/// file name the user gave is data like any other.
pub fn one_line_path(path: &std::path::Path) -> String {
    one_line(&path.display().to_string()).into_owned()
}

/// At most 40 ASCII letters, digits, `_`, `-` and `.`: the shape of every
/// field and column name plansim reads.
pub fn is_field_name(key: &str) -> bool {
    (1..=40).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A key found where a field or column name was expected, as a message
/// quotes it: itself in quotes when it has a name's shape, else only its
/// length, so a line of some other file given by mistake (a password hash,
/// an API key) is never repeated back.
pub fn echoed_key(key: &str) -> String {
    if is_field_name(key) {
        format!("\"{key}\"")
    } else {
        format!(
            "a key of {} characters that is no field name",
            key.chars().count()
        )
    }
}

/// Why `name` cannot be used, if it cannot: what was found, where in the
/// name, and what to write instead (callers prefix the field's path).
pub fn check(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("must not be empty".to_string());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "is {chars} characters long; the limit is {MAX_NAME_CHARS} (MAX_NAME_CHARS): use a shorter name"
        ));
    }
    check_text(name, false)
}

/// Refuses control characters and bidirectional overrides in any text a
/// user writes that plansim may print or write out; `multiline` allows the
/// newlines and tabs of a free-text `description`.
pub fn check_text(text: &str, multiline: bool) -> Result<(), String> {
    let allowed = |c: char| multiline && matches!(c, '\n' | '\t' | '\r');
    match text
        .chars()
        .enumerate()
        .find(|&(_, c)| forbidden(c) && !allowed(c))
    {
        Some((position, c)) => Err(format!(
            "contains the control character U+{:04X} at character {}; text is shown in terminals, Markdown and CSV: use letters, digits, spaces and punctuation only",
            u32::from(c),
            position + 1
        )),
        None => Ok(()),
    }
}

/// Control characters and bidirectional overrides.
fn forbidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The file-name form of a name: ASCII letters, digits, `-` and `_` are
/// kept, and `.` right after a letter or digit (`v1.2`); every other run of
/// characters becomes one `_`. So a slug never starts with a dot (no hidden
/// file, no `..`) and never holds a `/`. It is cut to [`MAX_SLUG_BYTES`],
/// and never empty: a name with nothing left is `_`.
/// Two names may share a slug ("my scenario", "my_scenario"): callers that
/// write one file per name refuse such pairs (see `slug_clashes`).
pub fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        let after_alphanumeric = slug.ends_with(|p: char| p.is_ascii_alphanumeric());
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') || (c == '.' && after_alphanumeric) {
            slug.push(c);
        } else if !slug.ends_with('_') {
            slug.push('_');
        }
    }
    slug.truncate(MAX_SLUG_BYTES);
    if slug.is_empty() {
        slug.push('_');
    }
    slug
}

/// The file-name form of a `vary` key, for chart names:
/// `jobs[example].groups[cache].count` -> `jobs-example-groups-cache-count`.
/// ASCII letters, digits and `_` are kept, every other run of characters
/// becomes one `-` (none leading or trailing), cut to [`MAX_SLUG_BYTES`].
pub fn key_slug(key: &str) -> String {
    let mut slug = String::new();
    for c in key.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    slug.truncate(MAX_SLUG_BYTES);
    slug.trim_end_matches('-').to_string()
}

/// The first pair of names (by position) that share a slug.
pub fn slug_clash<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<(usize, usize)> {
    let mut seen = std::collections::BTreeMap::new();
    for (index, name) in names.into_iter().enumerate() {
        if let Some(&first) = seen.get(&slug(name)) {
            return Some((first, index));
        }
        seen.insert(slug(name), index);
    }
    None
}

/// A CSV cell a spreadsheet will not evaluate: text starting with `=`, `+`,
/// `-`, `@`, a tab or a carriage return gets a leading `'` (the usual
/// guard), unless the whole cell is a number (`-7.000` stays a number).
pub fn csv_cell(cell: &str) -> Cow<'_, str> {
    let risky = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && cell.parse::<f64>().is_err() {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_what_could_forge_a_line_or_drive_a_terminal() {
        assert_eq!(one_line("plain text: ok"), "plain text: ok");
        assert_eq!(
            one_line("a\nFORGED\u{1b}[31m\t\r\u{7f}\u{202e}x"),
            "a\\nFORGED\\u{1b}[31m\\t\\r\\u{7f}\\u{202e}x"
        );
        assert!(!one_line("\u{85}\u{2066}").chars().any(forbidden));
    }

    #[test]
    fn a_key_with_no_name_shape_is_not_echoed() {
        assert_eq!(echoed_key("placed"), "\"placed\"");
        let secret = "API_KEY=sk-live-0123456789";
        assert!(
            !echoed_key(secret).contains("sk-live"),
            "{}",
            echoed_key(secret)
        );
        assert!(!echoed_key(&"a".repeat(41)).contains("aaa"));
    }

    #[test]
    fn refuses_control_characters_and_long_names() {
        assert!(check("my scenario: 2 writers").is_ok());
        assert_eq!(
            check("bad\u{1b}[31mred").unwrap_err(),
            "contains the control character U+001B at character 4; text is shown in terminals, Markdown and CSV: use letters, digits, spaces and punctuation only"
        );
        assert!(check("a\nb").is_err());
        assert!(check("a\0b").is_err());
        assert!(check("a\u{202E}b").is_err());
        assert!(check_text("two\nlines", true).is_ok());
        assert!(check_text("bell\u{7}", true).is_err());
        assert!(check("   ").is_err());
        assert!(check(&"x".repeat(MAX_NAME_CHARS)).is_ok());
        assert!(check(&"x".repeat(MAX_NAME_CHARS + 1)).is_err());
        assert_eq!(shown("a\u{1b}b"), "a\\u{1b}b");
        assert_eq!(shown(&"y".repeat(100)), format!("{}...", "y".repeat(60)));
    }

    #[test]
    fn slugs_are_safe_file_names() {
        assert_eq!(slug("my scenario"), "my_scenario");
        assert_eq!(slug("../../etc/passwd"), "_etc_passwd");
        assert_eq!(slug("v1.2 final"), "v1.2_final");
        assert_eq!(slug(".."), "_");
        assert_eq!(slug("a/b\\c"), "a_b_c");
        assert_eq!(slug("ünïcode"), "_n_code");
        assert_eq!(slug(&"x".repeat(300)).len(), MAX_SLUG_BYTES);
        for name in ["..", ".", "/", "../x", "a/../b", ""] {
            let s = slug(name);
            assert!(
                !s.contains('/') && !s.starts_with('.') && !s.is_empty(),
                "{name} -> {s}"
            );
        }
        assert_eq!(
            slug_clash(["my scenario", "other", "my_scenario"]),
            Some((0, 2))
        );
        assert_eq!(slug_clash(["a", "b"]), None);
        assert_eq!(
            key_slug("jobs[example].groups[cache].count"),
            "jobs-example-groups-cache-count"
        );
        assert_eq!(key_slug("../../x"), "x");
    }

    #[test]
    fn csv_cells_are_not_formulas() {
        assert_eq!(csv_cell("=1+1"), "'=1+1");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(
            csv_cell("-2+3+cmd|' /C calc'!A0"),
            "'-2+3+cmd|' /C calc'!A0"
        );
        assert_eq!(csv_cell("-7.000"), "-7.000");
        assert_eq!(csv_cell("+1"), "+1");
        assert_eq!(csv_cell("plain"), "plain");
    }
}
