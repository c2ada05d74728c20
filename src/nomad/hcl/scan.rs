//! A lexical pass over an HCL file before it is parsed: it counts the
//! file's tokens against [`HCL_MAX_TOKENS`] (the parser keeps every token
//! as a node: a 14 MB list takes more than 1 GiB to parse), and blanks the
//! body of every task's `config` block, which plansim never reads, so a
//! driver configuration of any size costs nothing but the file's bytes.
//!
//! Blanking replaces each byte but newlines with a space: every offset, and
//! so every line and column computed from the original text, stays right.
//! The pass knows HCL's lexical structure (comments, quoted strings with
//! their escapes and `${ }` interpolations, heredocs); where the text is
//! not valid HCL it only has to stay bounded: the parser reports the error.

use crate::scenario::limits::HCL_MAX_TOKENS;

/// What the pass found wrong: the byte offset, and why.
pub(super) struct TooLarge {
    pub offset: usize,
    pub message: String,
}

/// The text to parse: the original when there is no task `config` block.
pub(super) fn prepare(text: &str) -> Result<Option<String>, TooLarge> {
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        i: 0,
        tokens: 0,
        frames: vec![Frame::Body {
            name: "",
            statement: Statement::Start,
            skip: false,
        }],
        skipped: Vec::new(),
    };
    scanner.run()?;
    if scanner.skipped.is_empty() {
        return Ok(None);
    }
    let mut bytes = text.as_bytes().to_vec();
    for (start, end) in scanner.skipped {
        for byte in &mut bytes[start..end] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    }
    // Only whole characters were replaced, by ASCII: still UTF-8.
    Ok(String::from_utf8(bytes).ok())
}

/// Where a body statement is: at its start, after its name (and labels:
/// a block header, named here), or in an attribute's expression.
#[derive(Clone, Copy, PartialEq)]
enum Statement<'t> {
    Start,
    Header(&'t str),
    Expression,
}

enum Frame<'t> {
    /// A block body (the file's own is the first); `skip` for a task's
    /// `config`, blanked from its `{` to its `}`.
    Body {
        name: &'t str,
        statement: Statement<'t>,
        skip: bool,
    },
    /// Brackets of an expression, closed by this byte.
    Group(u8),
    /// `${ ... }` or `%{ ... }` inside a template.
    Interpolation,
    /// A quoted string.
    Quoted,
    /// A heredoc's template, ending at `end` (its closing marker's line),
    /// the text going on at `after`.
    Heredoc { end: usize, after: usize },
}

struct Scanner<'t> {
    bytes: &'t [u8],
    i: usize,
    tokens: usize,
    frames: Vec<Frame<'t>>,
    /// Blanked ranges: the bodies of task `config` blocks.
    skipped: Vec<(usize, usize)>,
}

impl<'t> Scanner<'t> {
    fn skipping(&self) -> bool {
        self.frames
            .iter()
            .any(|f| matches!(f, Frame::Body { skip: true, .. }))
    }

    fn count(&mut self) -> Result<(), TooLarge> {
        if self.skipping() {
            return Ok(());
        }
        self.tokens += 1;
        if self.tokens > HCL_MAX_TOKENS {
            return Err(TooLarge {
                offset: self.i,
                message: format!(
                    "expected at most {HCL_MAX_TOKENS} tokens in an HCL file, task config blocks aside (HCL_MAX_TOKENS): this one has more"
                ),
            });
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), TooLarge> {
        while self.i < self.bytes.len() {
            match self.frames.last() {
                Some(Frame::Quoted) => self.template(None)?,
                Some(&Frame::Heredoc { end, after }) => {
                    if self.i >= end {
                        self.frames.pop();
                        self.i = after;
                    } else {
                        self.template(Some(end))?;
                    }
                }
                _ => self.expression()?,
            }
        }
        Ok(())
    }

    fn set_statement(&mut self, to: Statement<'t>) {
        if let Some(Frame::Body { statement, .. }) = self.frames.last_mut() {
            *statement = to;
        }
    }

    fn statement(&self) -> Option<Statement<'t>> {
        match self.frames.last() {
            Some(Frame::Body { statement, .. }) => Some(*statement),
            _ => None,
        }
    }

    /// One token (or comment, or blank) of an expression or a body.
    fn expression(&mut self) -> Result<(), TooLarge> {
        let bytes = self.bytes;
        let c = bytes[self.i];
        let next = bytes.get(self.i + 1).copied();
        match c {
            b'\n' => {
                self.set_statement(Statement::Start);
                self.i += 1;
            }
            b' ' | b'\t' | b'\r' => self.i += 1,
            b'#' => self.skip_line(),
            b'/' if next == Some(b'/') => self.skip_line(),
            b'/' if next == Some(b'*') => {
                self.i = find(bytes, self.i + 2, b"*/").map_or(bytes.len(), |end| end + 2);
            }
            b'"' => {
                self.count()?;
                // A label keeps the header; anything else is an expression.
                if !matches!(self.statement(), Some(Statement::Header(_)) | None) {
                    self.set_statement(Statement::Expression);
                }
                self.frames.push(Frame::Quoted);
                self.i += 1;
            }
            b'<' if next == Some(b'<') && self.heredoc()? => {}
            b'{' => {
                self.count()?;
                self.open_brace();
                self.i += 1;
            }
            b'[' | b'(' => {
                self.count()?;
                self.set_statement(Statement::Expression);
                self.frames
                    .push(Frame::Group(if c == b'[' { b']' } else { b')' }));
                self.i += 1;
            }
            b'}' | b']' | b')' => {
                self.count()?;
                self.close(c);
                self.i += 1;
            }
            c if is_word(c) => {
                self.count()?;
                let start = self.i;
                while self.i < bytes.len() && (is_word(bytes[self.i]) || bytes[self.i] == b'-') {
                    self.i += 1;
                }
                if self.statement() == Some(Statement::Start) {
                    let name = std::str::from_utf8(&bytes[start..self.i]).unwrap_or("");
                    self.set_statement(Statement::Header(name));
                }
            }
            _ => {
                self.count()?;
                self.set_statement(Statement::Expression);
                self.i += 1;
            }
        }
        Ok(())
    }

    fn skip_line(&mut self) {
        self.i = find(self.bytes, self.i, b"\n").unwrap_or(self.bytes.len());
    }

    /// `{`: a block's body after a header, else an object.
    fn open_brace(&mut self) {
        let parent = match self.frames.last() {
            Some(Frame::Body { name, .. }) => Some(*name),
            _ => None,
        };
        match (self.statement(), parent) {
            (Some(Statement::Header(name)), Some(parent)) => {
                let skip = name == "config" && parent == "task" && !self.skipping();
                if skip {
                    self.skipped.push((self.i + 1, self.i + 1));
                }
                self.set_statement(Statement::Expression);
                self.frames.push(Frame::Body {
                    name,
                    statement: Statement::Start,
                    skip,
                });
            }
            _ => {
                self.set_statement(Statement::Expression);
                self.frames.push(Frame::Group(b'}'));
            }
        }
    }

    /// A closing bracket: ends the innermost frame it matches (a stray one
    /// is left for the parser to report).
    fn close(&mut self, c: u8) {
        let matches = match self.frames.last() {
            Some(Frame::Group(close)) => *close == c,
            Some(Frame::Interpolation) => c == b'}',
            Some(Frame::Body { .. }) => c == b'}' && self.frames.len() > 1,
            _ => false,
        };
        if !matches {
            return;
        }
        if let Some(Frame::Body { skip: true, .. }) = self.frames.pop()
            && let Some(range) = self.skipped.last_mut()
        {
            range.1 = self.i;
        }
    }

    /// `<<EOF` or `<<-EOF` and a newline: a heredoc, whose template runs to
    /// the line holding only `EOF`. Returns false if this is not one.
    fn heredoc(&mut self) -> Result<bool, TooLarge> {
        let bytes = self.bytes;
        let mut j = self.i + 2;
        if bytes.get(j) == Some(&b'-') {
            j += 1;
        }
        let start = j;
        while j < bytes.len() && (is_word(bytes[j]) || bytes[j] == b'-') {
            j += 1;
        }
        let marker = &bytes[start..j];
        let newline = match bytes[j..].iter().position(|&b| b == b'\n') {
            Some(n) if !marker.is_empty() && bytes[j..j + n].iter().all(|b| *b == b'\r') => j + n,
            _ => return Ok(false),
        };
        self.count()?;
        let content = newline + 1;
        let mut line = content;
        let (end, after) = loop {
            if line >= bytes.len() {
                break (bytes.len(), bytes.len());
            }
            let line_end = find(bytes, line, b"\n").unwrap_or(bytes.len());
            if trim(&bytes[line..line_end]) == marker {
                break (line, line_end);
            }
            line = line_end + 1;
        };
        self.set_statement(Statement::Expression);
        self.frames.push(Frame::Heredoc { end, after });
        self.i = content;
        Ok(true)
    }

    /// Template text, quoted (`end` None) or a heredoc's (up to `end`):
    /// interpolations and directives are expressions.
    fn template(&mut self, end: Option<usize>) -> Result<(), TooLarge> {
        let bytes = self.bytes;
        let limit = end.unwrap_or(bytes.len());
        while self.i < limit {
            let c = bytes[self.i];
            let next = bytes.get(self.i + 1).copied();
            match c {
                b'\\' if end.is_none() => self.i += 2,
                b'"' if end.is_none() => {
                    self.frames.pop();
                    self.i += 1;
                    return Ok(());
                }
                // Invalid in a quoted string: the parser reports it.
                b'\n' if end.is_none() => {
                    self.frames.pop();
                    return Ok(());
                }
                b'$' | b'%' if next == Some(c) && bytes.get(self.i + 2) == Some(&b'{') => {
                    self.i += 3;
                }
                b'$' | b'%' if next == Some(b'{') => {
                    self.count()?;
                    self.frames.push(Frame::Interpolation);
                    self.i += 2;
                    return Ok(());
                }
                _ => self.i += 1,
            }
        }
        self.i = self.i.min(limit);
        Ok(())
    }
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace());
    match (start, end) {
        (Some(s), Some(e)) => &bytes[s..=e],
        _ => &[],
    }
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_config_is_blanked_and_positions_kept() {
        let text = "job \"j\" {\n  group \"g\" {\n    task \"t\" {\n      config {\n        args = [\"}\", <<EOF\n}\nEOF\n        ]\n      }\n      driver = \"docker\"\n    }\n  }\n}\n";
        let out = prepare(text).ok().flatten().expect("blanked");
        assert_eq!(out.len(), text.len());
        assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        assert!(!out.contains("args"));
        assert!(out.contains("driver = \"docker\""));
        assert_eq!(out.find("driver"), text.find("driver"));
    }

    #[test]
    fn config_outside_a_task_is_kept() {
        assert!(matches!(prepare("config {\n  a = 1\n}\n"), Ok(None)));
        assert!(matches!(prepare("x = { config = { a = 1 } }\n"), Ok(None)));
    }

    #[test]
    fn tokens_past_the_limit_are_refused_where_they_start() {
        let text = format!("x = [{}]\n", "1,".repeat(HCL_MAX_TOKENS));
        let err = prepare(&text).expect_err("too many tokens");
        assert!(err.offset > HCL_MAX_TOKENS && err.offset < text.len());
        assert!(err.message.contains("HCL_MAX_TOKENS"));
    }

    #[test]
    fn strings_comments_and_heredocs_are_one_token_each() {
        let big = "a,".repeat(HCL_MAX_TOKENS);
        for text in [
            format!("x = \"{big}\"\n"),
            format!("# {big}\n"),
            format!("/* {big} */\n"),
            format!("x = <<EOT\n{big}\nEOT\n"),
        ] {
            assert!(prepare(&text).is_ok());
        }
    }
}
