//! Nomad's runtime interpolations (`${attr.*}`, `${node.*}`, `${meta.*}`,
//! `${NOMAD_*}`, other environment variables), kept as written for the
//! client to fill in, as Nomad's own parser keeps them.

/// Whether `${inner}` is left for Nomad's client to fill in. Nomad's parser
/// keeps a template interpolation whose variable it does not know (any root
/// but `var` and `local`) exactly as written: `${attr.kernel.name}`,
/// `${NOMAD_ALLOC_INDEX}`, `${env["HOME"]}`, `${volume_id}` of a file that
/// another tool fills in. Anything else (functions, operators, a missing
/// `var.x`) is evaluated, and an error if it cannot be.
fn is_runtime_reference(inner: &str) -> bool {
    let inner = inner.trim();
    let root: &str = inner.split(['.', '[', ' ']).next().unwrap_or("");
    let simple = !root.is_empty()
        && root
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        && inner.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '[' | ']' | '"' | ' ')
        });
    simple && !matches!(root, "var" | "local")
}

/// Rewrites `${attr.x}`-style runtime interpolations in templates to the
/// escaped `$${attr.x}`, so evaluation leaves them as written.
pub(super) fn keep_runtime_interpolations(expr: &mut hcl::Expression) {
    use hcl::expr::TemplateExpr;
    match expr {
        hcl::Expression::Array(items) => items.iter_mut().for_each(keep_runtime_interpolations),
        hcl::Expression::Object(object) => {
            for (_, value) in object.iter_mut() {
                keep_runtime_interpolations(value);
            }
        }
        hcl::Expression::Parenthesis(inner) => keep_runtime_interpolations(inner),
        hcl::Expression::TemplateExpr(template) => match template.as_mut() {
            TemplateExpr::QuotedString(text) => *text = escape_runtime(text),
            TemplateExpr::Heredoc(heredoc) => heredoc.template = escape_runtime(&heredoc.template),
        },
        _ => {}
    }
}

fn escape_runtime(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let escaped = start > 0 && rest[..start].ends_with('$');
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if !escaped && is_runtime_reference(&after[..end]) => {
                out.push_str("$${");
                out.push_str(&after[..=end]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_interpolations_are_escaped_and_others_kept() {
        assert_eq!(
            escape_runtime("${attr.kernel.name}"),
            "$${attr.kernel.name}"
        );
        assert_eq!(
            escape_runtime("node-${NOMAD_ALLOC_INDEX}"),
            "node-$${NOMAD_ALLOC_INDEX}"
        );
        assert_eq!(escape_runtime("${var.dc}-x"), "${var.dc}-x");
        assert_eq!(escape_runtime("${upper(var.dc)}"), "${upper(var.dc)}");
        assert_eq!(escape_runtime("${volume_id}"), "$${volume_id}");
        assert_eq!(escape_runtime("$${attr.x}"), "$${attr.x}");
    }
}
