//! The evaluation budget of an HCL file. `hcl-rs` evaluates an expression
//! with no limit of its own (a local squaring a string with `replace`, a
//! chain of `concat`s doubling a list, nested `for`s over `split`: each
//! fills memory in seconds), so every expression is bounded *before* it is
//! evaluated: from the sizes of the values it refers to (measured, each
//! local evaluated once) and the shape of the expression, an upper bound on
//! the size of every value it may build and on the work of building them.
//! A bound past a limit is an error at the sub-expression that passes it;
//! nothing is built.
//!
//! Sizes are bytes of memory as counted here: a string's bytes, plus
//! [`VALUE`] per value and [`ENTRY`] per object entry. The limits:
//! [`HCL_MAX_VALUE_BYTES`] for any one value, [`HCL_MAX_FOR_ITERATIONS`]
//! for one `for`, and [`HCL_MAX_EVAL_BYTES`] for the work of the whole file
//! (each value built or copied counted once: `hcl-rs` copies a variable's
//! value at every reference).

use std::collections::BTreeMap;
use std::ops::Range;

use hcl::Value;
use hcl::edit::Span;
use hcl::edit::expr::{BinaryOperator, Expression, ObjectKey, TraversalOperator};
use hcl::edit::template::{Directive, Element, Template};

use crate::scenario::limits::{HCL_MAX_EVAL_BYTES, HCL_MAX_FOR_ITERATIONS, HCL_MAX_VALUE_BYTES};

/// Bytes counted per value (the size of `hcl::Value`, rounded up).
pub(super) const VALUE: u64 = 32;
/// Bytes counted per object entry (the key's string and the map's slot).
const ENTRY: u64 = 96;
/// Bytes counted for a computed number or bool: a value, and the longest
/// text of a number (`ryu` writes at most 24 characters).
const SCALAR: u64 = VALUE + 24;

/// An upper bound on a value: its size, the size of any one of its
/// elements (a collection's), whether it is surely a string, and the work
/// of building it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bound {
    pub size: u64,
    pub elem: u64,
    pub string: bool,
    pub work: u64,
}

impl Bound {
    fn scalar() -> Bound {
        Bound::value(SCALAR, SCALAR, false)
    }

    fn value(size: u64, elem: u64, string: bool) -> Bound {
        Bound {
            size,
            elem,
            string,
            work: size,
        }
    }

    fn string(len: u64) -> Bound {
        Bound::value(VALUE.saturating_add(len), 0, true)
    }

    /// The length of its text in a template or `join`: a string's own, or
    /// at most six bytes per byte for anything else (`\u0000` escapes).
    fn text(&self) -> u64 {
        if self.string {
            self.size.saturating_sub(VALUE)
        } else {
            self.size.saturating_mul(6)
        }
    }

    /// Elements a collection of this size may hold.
    fn count(&self) -> u64 {
        self.size / VALUE
    }

    fn plus_work(mut self, work: u64) -> Bound {
        self.work = self.work.saturating_add(work);
        self
    }
}

/// The bound of an actual value, as measured.
pub(super) fn measure(value: &Value) -> Bound {
    /// The size of `value`; `elem` becomes the largest of its elements'.
    fn size(value: &Value, elem: &mut u64) -> u64 {
        let mut inner = 0;
        match value {
            Value::Null | Value::Bool(_) => VALUE,
            Value::Number(_) => SCALAR,
            Value::String(s) => VALUE + s.len() as u64,
            Value::Array(items) => items.iter().fold(VALUE, |sum, item| {
                let s = size(item, &mut inner);
                *elem = (*elem).max(s);
                sum.saturating_add(s)
            }),
            Value::Object(map) => map.iter().fold(VALUE, |sum, (key, item)| {
                let s = size(item, &mut inner).max(VALUE + key.len() as u64);
                *elem = (*elem).max(s);
                sum.saturating_add(ENTRY + key.len() as u64 + s)
            }),
        }
    }
    let mut elem = 0;
    let total = size(value, &mut elem);
    Bound::value(
        total,
        if elem == 0 { total } else { elem },
        value.is_string(),
    )
}

/// A limit an expression would pass: where, and why.
pub(super) struct Over {
    pub span: Option<Range<usize>>,
    pub message: String,
}

/// The `var.NAME` and `local.NAME` an expression refers to.
#[derive(Default)]
pub(super) struct Refs {
    pub vars: Vec<String>,
    pub locals: Vec<String>,
}

/// Collects `var.NAME`, `var["NAME"]`, `local.NAME` and `local["NAME"]`.
pub(super) fn references(expr: &Expression, refs: &mut Refs) {
    if let Expression::Traversal(t) = expr
        && let Expression::Variable(root) = &t.expr
        && let Some(first) = t.operators.first()
    {
        let name = match first.value() {
            TraversalOperator::GetAttr(name) => Some(name.as_str().to_string()),
            TraversalOperator::Index(Expression::String(s)) => Some(s.value().clone()),
            _ => None,
        };
        if let Some(name) = name {
            match root.as_str() {
                "var" => refs.vars.push(name),
                "local" => refs.locals.push(name),
                _ => {}
            }
        }
    }
    children(expr, &mut |child| references(child, refs));
}

/// Calls `f` for every expression directly inside `expr`.
fn children<'e>(expr: &'e Expression, f: &mut dyn FnMut(&'e Expression)) {
    match expr {
        Expression::Array(items) => items.iter().for_each(f),
        Expression::Object(object) => {
            for (key, value) in object.iter() {
                if let ObjectKey::Expression(key) = key {
                    f(key);
                }
                f(value.expr());
            }
        }
        Expression::StringTemplate(t) => template_children(t, f),
        Expression::HeredocTemplate(h) => template_children(&h.template, f),
        Expression::Parenthesis(p) => f(p.inner()),
        Expression::Conditional(c) => {
            f(&c.cond_expr);
            f(&c.true_expr);
            f(&c.false_expr);
        }
        Expression::FuncCall(call) => call.args.iter().for_each(f),
        Expression::Traversal(t) => {
            f(&t.expr);
            for op in &t.operators {
                if let TraversalOperator::Index(index) = op.value() {
                    f(index);
                }
            }
        }
        Expression::UnaryOp(op) => f(&op.expr),
        Expression::BinaryOp(op) => {
            f(&op.lhs_expr);
            f(&op.rhs_expr);
        }
        Expression::ForExpr(e) => {
            f(&e.intro.collection_expr);
            if let Some(key) = &e.key_expr {
                f(key);
            }
            f(&e.value_expr);
            if let Some(cond) = &e.cond {
                f(&cond.expr);
            }
        }
        _ => {}
    }
}

fn template_children<'e>(template: &'e Template, f: &mut dyn FnMut(&'e Expression)) {
    for element in template.iter() {
        match element {
            Element::Literal(_) => {}
            Element::Interpolation(i) => f(&i.expr),
            Element::Directive(d) => match d.as_ref() {
                Directive::If(d) => {
                    f(&d.if_expr.cond_expr);
                    template_children(&d.if_expr.template, f);
                    if let Some(e) = &d.else_expr {
                        template_children(&e.template, f);
                    }
                }
                Directive::For(d) => {
                    f(&d.for_expr.collection_expr);
                    template_children(&d.for_expr.template, f);
                }
            },
        }
    }
}

/// What an expression may refer to: the bounds of the variables and
/// locals it names (others are unknown: their use is an error, or a
/// runtime interpolation kept as written).
pub(super) struct Known<'k> {
    pub vars: &'k BTreeMap<String, Bound>,
    pub locals: &'k BTreeMap<String, Bound>,
}

/// Bounds `expr`, or says which limit a part of it would pass.
pub(super) fn bound(expr: &Expression, known: &Known) -> Result<Bound, Over> {
    Bounder {
        known,
        scope: Vec::new(),
    }
    .expr(expr)
}

struct Bounder<'k> {
    known: &'k Known<'k>,
    /// `for` variables in scope, innermost last.
    scope: Vec<(String, Bound)>,
}

impl Bounder<'_> {
    fn expr(&mut self, expr: &Expression) -> Result<Bound, Over> {
        let bound = self.unchecked(expr)?;
        check(bound, expr.span())
    }

    fn unchecked(&mut self, expr: &Expression) -> Result<Bound, Over> {
        Ok(match expr {
            Expression::Null(_) | Expression::Bool(_) => Bound::value(VALUE, VALUE, false),
            Expression::Number(_) => Bound::scalar(),
            Expression::String(s) => Bound::string(s.value().len() as u64),
            Expression::Array(items) => {
                let mut out = Bound::value(VALUE, VALUE, false);
                for item in items.iter() {
                    let b = self.expr(item)?;
                    out.size = out.size.saturating_add(b.size);
                    out.elem = out.elem.max(b.size);
                    out.work = out.work.saturating_add(b.work).saturating_add(b.size);
                }
                out
            }
            Expression::Object(object) => {
                let mut out = Bound::value(VALUE, VALUE, false);
                for (key, value) in object.iter() {
                    let key = match key {
                        ObjectKey::Ident(ident) => Bound::string(ident.as_str().len() as u64),
                        ObjectKey::Expression(key) => {
                            let b = self.expr(key)?;
                            Bound::string(b.text()).plus_work(b.work)
                        }
                    };
                    let b = self.expr(value.expr())?;
                    let entry = ENTRY.saturating_add(key.size).saturating_add(b.size);
                    out.size = out.size.saturating_add(entry);
                    out.elem = out.elem.max(b.size).max(key.size);
                    out.work = out
                        .work
                        .saturating_add(key.work)
                        .saturating_add(b.work)
                        .saturating_add(entry);
                }
                out
            }
            Expression::StringTemplate(t) => self.template_expr(t, expr.span())?,
            Expression::HeredocTemplate(h) => self.template_expr(&h.template, expr.span())?,
            Expression::Parenthesis(p) => self.expr(p.inner())?,
            Expression::Variable(name) => self.variable(name.as_str(), expr),
            Expression::Conditional(c) => {
                let cond = self.expr(&c.cond_expr)?;
                let (t, f) = (self.expr(&c.true_expr)?, self.expr(&c.false_expr)?);
                Bound {
                    size: t.size.max(f.size),
                    elem: t.elem.max(f.elem),
                    string: t.string && f.string,
                    work: cond.work.saturating_add(t.work.max(f.work)),
                }
            }
            Expression::FuncCall(call) => {
                let mut args = Vec::new();
                for arg in call.args.iter() {
                    args.push(self.expr(arg)?);
                }
                let work = args.iter().fold(0u64, |w, a| w.saturating_add(a.work));
                let out = function(call.name.name.as_str(), &args, call.args.expand_final());
                // Comparisons and copies read every argument once more.
                let read = args.iter().fold(0u64, |w, a| w.saturating_add(a.size));
                out.plus_work(work.saturating_add(read))
            }
            Expression::Traversal(t) => {
                let root = match (&t.expr, t.operators.first().map(|o| o.value())) {
                    (Expression::Variable(root), Some(TraversalOperator::GetAttr(name))) => {
                        self.named(root.as_str(), name.as_str())
                    }
                    (
                        Expression::Variable(root),
                        Some(TraversalOperator::Index(Expression::String(s))),
                    ) => self.named(root.as_str(), s.value()),
                    _ => None,
                };
                let named = root.is_some();
                let mut out = match root {
                    Some(b) => b,
                    None => self.expr(&t.expr)?,
                };
                for op in t.operators.iter().skip(usize::from(named)) {
                    match op.value() {
                        TraversalOperator::Index(index) => {
                            let b = self.expr(index)?;
                            out.work = out.work.saturating_add(b.work);
                        }
                        TraversalOperator::AttrSplat(_) | TraversalOperator::FullSplat(_) => {
                            out.size = out.size.saturating_add(VALUE);
                            out.string = false;
                        }
                        _ => out.string = false,
                    }
                }
                out.work = out.work.saturating_add(out.size);
                out
            }
            Expression::UnaryOp(op) => self.expr(&op.expr)?.plus_work(SCALAR).scalar_result(),
            Expression::BinaryOp(op) => {
                let (l, r) = (self.expr(&op.lhs_expr)?, self.expr(&op.rhs_expr)?);
                let compare = matches!(
                    op.operator.value(),
                    BinaryOperator::Eq | BinaryOperator::NotEq
                );
                let read = if compare {
                    l.size.saturating_add(r.size)
                } else {
                    0
                };
                Bound::scalar().plus_work(l.work.saturating_add(r.work).saturating_add(read))
            }
            Expression::ForExpr(e) => self.for_expr(e, expr.span())?,
        })
    }

    /// A variable alone: a `for` variable, or (unknown) an error or a
    /// runtime value kept as written.
    fn variable(&self, name: &str, expr: &Expression) -> Bound {
        if let Some((_, b)) = self.scope.iter().rev().find(|(n, _)| n == name) {
            return b.plus_work(b.size);
        }
        let all = |map: &BTreeMap<String, Bound>| {
            map.values()
                .fold(Bound::value(VALUE, VALUE, false), |acc, b| Bound {
                    size: acc.size.saturating_add(ENTRY).saturating_add(b.size),
                    elem: acc.elem.max(b.size),
                    string: false,
                    work: acc.work.saturating_add(b.size),
                })
        };
        match name {
            "var" => all(self.known.vars),
            "local" => all(self.known.locals),
            _ => {
                let text = expr.span().map_or(VALUE, |s| s.len() as u64);
                Bound::string(text)
            }
        }
    }

    /// `var.NAME` or `local.NAME`, unless a `for` variable hides the root.
    fn named(&self, root: &str, name: &str) -> Option<Bound> {
        if self.scope.iter().any(|(n, _)| n == root) {
            return None;
        }
        let map = match root {
            "var" => self.known.vars,
            "local" => self.known.locals,
            _ => return None,
        };
        Some(
            map.get(name)
                .copied()
                .unwrap_or(Bound::value(VALUE, VALUE, false)),
        )
    }

    fn template_expr(
        &mut self,
        template: &Template,
        span: Option<Range<usize>>,
    ) -> Result<Bound, Over> {
        // A template of one interpolation is that value, unconverted.
        if let [Element::Interpolation(only)] = template.iter().collect::<Vec<_>>().as_slice() {
            let b = self.expr(&only.expr)?;
            let text = Bound::string(b.text());
            return Ok(Bound {
                size: b.size.max(text.size),
                elem: b.elem,
                string: b.string,
                work: b.work.saturating_add(text.size),
            });
        }
        let b = self.template(template)?;
        check(b, span)
    }

    /// A template's text: its literals, interpolations and directives.
    fn template(&mut self, template: &Template) -> Result<Bound, Over> {
        let mut len = 0u64;
        let mut work = 0u64;
        for element in template.iter() {
            let (l, w) = match element {
                Element::Literal(text) => (text.value().len() as u64, 0),
                Element::Interpolation(i) => {
                    let b = self.expr(&i.expr)?;
                    (b.text(), b.work)
                }
                Element::Directive(d) => match d.as_ref() {
                    Directive::If(d) => {
                        let cond = self.expr(&d.if_expr.cond_expr)?;
                        let t = self.template(&d.if_expr.template)?;
                        let f = match &d.else_expr {
                            Some(e) => self.template(&e.template)?,
                            None => Bound::string(0),
                        };
                        (
                            t.text().max(f.text()),
                            cond.work.saturating_add(t.work.max(f.work)),
                        )
                    }
                    Directive::For(d) => {
                        let f = &d.for_expr;
                        let collection = self.expr(&f.collection_expr)?;
                        let n = iterations(&collection, f.collection_expr.span())?;
                        let body = self.with_vars(
                            f.key_var.as_ref().map(|k| k.as_str()),
                            f.value_var.as_str(),
                            &collection,
                            |b| b.template(&f.template),
                        )?;
                        (
                            n.saturating_mul(body.text()),
                            collection.work.saturating_add(n.saturating_mul(body.work)),
                        )
                    }
                },
            };
            len = len.saturating_add(l);
            work = work.saturating_add(w).saturating_add(l);
        }
        let mut out = Bound::string(len);
        out.work = out.work.saturating_add(work);
        check(out, None)
    }

    fn for_expr(
        &mut self,
        e: &hcl::edit::expr::ForExpr,
        span: Option<Range<usize>>,
    ) -> Result<Bound, Over> {
        let intro = &e.intro;
        let collection = self.expr(&intro.collection_expr)?;
        let n = iterations(&collection, span.clone())?;
        let (key, value, cond) = self.with_vars(
            intro.key_var.as_ref().map(|k| k.as_str()),
            intro.value_var.as_str(),
            &collection,
            |b| {
                let key = match &e.key_expr {
                    Some(k) => Some(b.expr(k)?),
                    None => None,
                };
                let cond = match &e.cond {
                    Some(c) => b.expr(&c.expr)?.work,
                    None => 0,
                };
                Ok((key, b.expr(&e.value_expr)?, cond))
            },
        )?;
        let per_item = match key {
            None => value.size,
            Some(k) => ENTRY
                .saturating_add(k.text())
                .saturating_add(value.size)
                .saturating_add(if e.grouping { VALUE } else { 0 }),
        };
        let item_work = value
            .work
            .saturating_add(key.map_or(0, |k| k.work))
            .saturating_add(cond)
            .saturating_add(VALUE);
        let size = VALUE.saturating_add(n.saturating_mul(per_item));
        let elem = if e.grouping {
            size
        } else {
            value.size.max(key.map_or(0, |k| k.size))
        };
        Ok(Bound {
            size,
            elem,
            string: false,
            work: collection
                .work
                .saturating_add(n.saturating_mul(item_work))
                .saturating_add(size),
        })
    }

    /// Runs `f` with a `for`'s variables in scope, each bounded by one
    /// element of `collection`.
    fn with_vars<T>(
        &mut self,
        key: Option<&str>,
        value: &str,
        collection: &Bound,
        f: impl FnOnce(&mut Self) -> Result<T, Over>,
    ) -> Result<T, Over> {
        let element = Bound::value(collection.elem, collection.elem, false);
        let depth = self.scope.len();
        if let Some(key) = key {
            self.scope.push((key.to_string(), element));
        }
        self.scope.push((value.to_string(), element));
        let out = f(self);
        self.scope.truncate(depth);
        out
    }
}

impl Bound {
    /// A number or bool computed from this.
    fn scalar_result(self) -> Bound {
        Bound::scalar().plus_work(self.work)
    }
}

/// How many times a `for` over `collection` may run.
fn iterations(collection: &Bound, span: Option<Range<usize>>) -> Result<u64, Over> {
    let n = collection.count();
    if n > HCL_MAX_FOR_ITERATIONS {
        return Err(Over {
            span,
            message: format!(
                "expected a for over at most {HCL_MAX_FOR_ITERATIONS} elements (HCL_MAX_FOR_ITERATIONS): this collection may hold up to {n}"
            ),
        });
    }
    Ok(n)
}

/// Refuses a bound past the value or work limit.
fn check(bound: Bound, span: Option<Range<usize>>) -> Result<Bound, Over> {
    if bound.size > HCL_MAX_VALUE_BYTES {
        return Err(Over {
            span,
            message: format!(
                "expected a value of at most {HCL_MAX_VALUE_BYTES} bytes (HCL_MAX_VALUE_BYTES): this expression may build {}",
                shown(bound.size)
            ),
        });
    }
    if bound.work > HCL_MAX_EVAL_BYTES {
        return Err(over_work(span, bound.work));
    }
    Ok(bound)
}

pub(super) fn over_work(span: Option<Range<usize>>, work: u64) -> Over {
    Over {
        span,
        message: format!(
            "expected the file's expressions to build at most {HCL_MAX_EVAL_BYTES} bytes in all (HCL_MAX_EVAL_BYTES): evaluating this one may take {}",
            shown(work)
        ),
    }
}

fn shown(n: u64) -> String {
    if n == u64::MAX {
        "more than 2^64".to_string()
    } else {
        n.to_string()
    }
}

/// The bound of a function's result from its arguments' (`expand` when
/// the last argument is a `...` list expansion). Functions plansim does
/// not know fail when called.
fn function(name: &str, args: &[Bound], expand: bool) -> Bound {
    let arg = |i: usize| -> Bound {
        match args.get(i) {
            Some(a) if !(expand && i + 1 >= args.len()) => *a,
            _ => args.last().map_or(Bound::string(0), |last| {
                Bound::value(last.elem, last.elem, false)
            }),
        }
    };
    let len = |b: Bound| b.size.saturating_sub(VALUE);
    let sum = || args.iter().fold(VALUE, |s, a| s.saturating_add(a.size));
    let elem = || args.iter().fold(0, |e, a| e.max(a.elem));
    match name {
        "upper" | "lower" => Bound::string(len(arg(0)).saturating_mul(3)),
        "trimspace" => Bound::string(len(arg(0))),
        "tostring" => Bound::string(arg(0).text()),
        "join" => {
            let (sep, list) = (len(arg(0)), arg(1));
            Bound::string(
                list.size
                    .saturating_add(list.count().saturating_add(1).saturating_mul(sep)),
            )
        }
        "split" => {
            let text = len(arg(1));
            let pieces = text.saturating_add(2);
            Bound::value(
                VALUE
                    .saturating_add(pieces.saturating_mul(VALUE))
                    .saturating_add(text),
                VALUE.saturating_add(text),
                false,
            )
        }
        "replace" => Bound::string(
            len(arg(0))
                .saturating_add(1)
                .saturating_mul(len(arg(2)).saturating_add(1)),
        ),
        "format" => Bound::string(args.iter().fold(0u64, |s, a| s.saturating_add(a.text()))),
        "concat" | "merge" => Bound::value(sum(), elem(), false),
        "coalesce" => args
            .iter()
            .fold(Bound::value(VALUE, VALUE, false), |acc, a| Bound {
                size: acc.size.max(a.size),
                elem: acc.elem.max(a.elem),
                string: false,
                work: acc.size.max(a.size),
            }),
        "element" => Bound::value(arg(0).elem, arg(0).elem, false),
        "lookup" => {
            let found = arg(0).elem.max(args.get(2).map_or(0, |d| d.size));
            Bound::value(found, found, false)
        }
        "keys" => Bound::value(arg(0).size, arg(0).elem, false),
        _ => Bound::scalar(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound_of(text: &str, locals: &[(&str, Value)]) -> Result<Bound, Over> {
        let body = hcl::edit::parser::parse_body(&format!("x = {text}\n")).unwrap();
        let attr = body.get_attribute("x").unwrap();
        let locals = locals
            .iter()
            .map(|(n, v)| (n.to_string(), measure(v)))
            .collect();
        let known = Known {
            vars: &BTreeMap::new(),
            locals: &locals,
        };
        bound(&attr.value, &known)
    }

    #[test]
    fn small_expressions_are_bounded_close_to_their_size() {
        let b = bound_of("\"abc\"", &[]).ok().unwrap();
        assert_eq!(b.size, VALUE + 3);
        let b = bound_of("upper(\"abc\")", &[]).ok().unwrap();
        assert!(b.size >= VALUE + 3 && b.size <= VALUE + 9);
        let b = bound_of("[for s in split(\",\", \"a,b\"): upper(s)]", &[])
            .ok()
            .unwrap();
        assert!(b.size < 2000, "{b:?}");
    }

    #[test]
    fn squaring_doubling_and_nesting_are_refused_before_evaluation() {
        let s = Value::from("a".repeat(4000));
        let over = bound_of("replace(local.s, \"a\", local.s)", &[("s", s.clone())]);
        assert!(over.err().unwrap().message.contains("HCL_MAX_VALUE_BYTES"));
        let nested = "[for a in split(\"\", local.s): [for b in split(\"\", local.s): a]]";
        assert!(bound_of(nested, &[("s", s)]).is_err());
    }

    #[test]
    fn a_measured_value_counts_its_bytes_and_elements() {
        let v: Value = hcl::value!({ a = ["xy", "z"] });
        let b = measure(&v);
        // object + entry "a" + list + two strings
        assert_eq!(
            b.size,
            VALUE + ENTRY + 1 + VALUE + (VALUE + 2) + (VALUE + 1)
        );
    }
}
