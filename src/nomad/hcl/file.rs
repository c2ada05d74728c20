//! One HCL2 file as plansim reads it: parsed with `hcl-edit` (which keeps
//! every block's position), its variables and locals evaluated with
//! `hcl-rs`, and typed reads of attributes that report `file:line:column`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use hcl::Value;
use hcl::edit::Span;
use hcl::edit::expr::Expression as EditExpr;
use hcl::edit::structure::{Attribute, Block, Body};
use hcl::eval::{Context, Evaluate};

use super::budget::{self, Bound, Known, Refs};
use super::functions::{FUNCTIONS, declare_functions};
use super::runtime::keep_runtime_interpolations;
use super::scan;
use super::vars::{VarInputs, VarType};
use crate::model::time::{Millis, parse_duration};
use crate::scenario::error::{LoadError, Position, file_error};

/// The first `[[ ... ]]` directive of a nomad-pack or Levant template
/// (`[[ .my.count ]]`, `[[ template "region" . ]]`, `[[- if ... ]]`), shown
/// escaped and cut short, if the text has one: such a file is not HCL until
/// it is rendered. Looked for only when the text fails to parse, so a job
/// whose strings hold `[[` is read as it is.
fn template_directive(text: &str) -> Option<String> {
    let start = text.find("[[")?;
    let rest = &text[start + 2..];
    let inner = rest.trim_start_matches('-').trim_start();
    let first = inner.chars().next()?;
    if !(first == '.' || first == '$' || first.is_ascii_alphabetic()) {
        return None;
    }
    let end = rest.find("]]")?;
    let directive: String = text[start..start + 2 + end + 2].chars().take(60).collect();
    Some(format!("\"{}\"", crate::names::one_line(&directive)))
}

/// A local's state: written, being evaluated (its dependencies first),
/// evaluated (with its measured bound), or failed.
enum Local {
    Pending(EditExpr),
    InProgress(EditExpr),
    Done(Value, Bound),
    Failed(LoadError),
}

/// A parsed HCL file: its text (for positions) and its evaluation context.
pub struct HclFile<'t> {
    pub file: &'t str,
    text: &'t str,
    line_starts: Vec<usize>,
    /// The functions; each evaluation declares, in a copy, the variables
    /// and locals it refers to.
    ctx: Context<'static>,
    vars: BTreeMap<String, (Value, Bound)>,
    /// Locals by name, each evaluated once, when a field plansim reads
    /// first needs it (after the locals it needs, in dependency order).
    locals: RefCell<BTreeMap<String, Local>>,
    /// Where each local is written, for cycle errors.
    local_spans: BTreeMap<String, Option<std::ops::Range<usize>>>,
    /// The evaluation work spent so far, against HCL_MAX_EVAL_BYTES.
    spent: Cell<u64>,
    /// The variables the file declares, in file order.
    pub declared: Vec<String>,
    pub body: Body,
}

impl<'t> HclFile<'t> {
    /// Parses `text` (task `config` blocks blanked, tokens counted first)
    /// and evaluates its variables, each from the last of `inputs` that
    /// names it, else its default; locals are evaluated when first used.
    pub fn parse(text: &'t str, file: &'t str, inputs: &VarInputs) -> Result<Self, LoadError> {
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut hcl = HclFile {
            file,
            text,
            line_starts,
            ctx: Context::new(),
            vars: BTreeMap::new(),
            locals: RefCell::new(BTreeMap::new()),
            local_spans: BTreeMap::new(),
            spent: Cell::new(0),
            declared: Vec::new(),
            body: Body::default(),
        };
        let blanked = scan::prepare(text)
            .map_err(|over| hcl.error(Some(over.offset..over.offset), over.message))?;
        let parsed = hcl::edit::parser::parse_body(blanked.as_deref().unwrap_or(text));
        hcl.body = parsed.map_err(|err| {
            let location = err.location();
            LoadError {
                file: file.to_string(),
                position: Some(Position {
                    line: location.line() as u64,
                    column: location.column() as u64,
                }),
                message: match template_directive(text) {
                    Some(directive) => format!(
                        "this is a template, not a job file: it holds {directive}, a nomad-pack (or Levant) directive; render it first (`nomad-pack render PACK`, `levant render`) and list the rendered file"
                    ),
                    None => format!("malformed HCL: {}", err.message()),
                },
            }
        })?;
        declare_functions(&mut hcl.ctx);
        hcl.declare_variables(inputs)?;
        hcl.declare_locals()?;
        Ok(hcl)
    }

    pub fn position(&self, span: Option<std::ops::Range<usize>>) -> Option<Position> {
        let offset = span?.start.min(self.text.len());
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let column = self.text[self.line_starts[line - 1]..offset]
            .chars()
            .count()
            + 1;
        Some(Position {
            line: line as u64,
            column: column as u64,
        })
    }

    pub fn error(&self, span: Option<std::ops::Range<usize>>, message: String) -> LoadError {
        file_error(self.file, self.position(span), message)
    }

    /// `variable "x" { default = ... }` and `variables { x = ... }`, each
    /// taking the value given in `inputs` over its default and converted to
    /// its `type` (jobspec2 `Variable.Value`, `collectInputVariableValues`).
    /// A variable with neither is refused, used or not, as Nomad refuses it
    /// ("Unset variable").
    fn declare_variables(&mut self, inputs: &VarInputs) -> Result<(), LoadError> {
        let mut vars = BTreeMap::new();
        let mut declared = Vec::new();
        for block in self.body.blocks() {
            match block.ident.as_str() {
                "variable" => {
                    let name = block.labels.first().map(|l| l.as_str().to_string());
                    let Some(name) = name else {
                        return Err(self.error(
                            block.span(),
                            "a variable block needs a name: variable \"NAME\" { default = ... }"
                                .into(),
                        ));
                    };
                    let var_type = block
                        .body
                        .get_attribute("type")
                        .map_or(VarType::Other, |attr| VarType::of(&attr.value));
                    let value = match (inputs.last_for(&name), block.body.get_attribute("default")) {
                        (Some(given), _) => var_type.convert(given.value.clone()).map_err(|why| {
                            self.error(
                                block.span(),
                                format!(
                                    "variable \"{name}\": the value from {} does not fit its type: {why}",
                                    given.from
                                ),
                            )
                        })?,
                        (None, Some(attr)) => {
                            let value = self.eval(&attr.value)?;
                            var_type.convert(value).map_err(|why| {
                                self.error(
                                    attr.span(),
                                    format!("variable \"{name}\": its default does not fit its type: {why}"),
                                )
                            })?
                        }
                        (None, None) => {
                            return Err(self.error(
                                block.span(),
                                format!(
                                    "unset variable \"{name}\": it has no default, so it needs a value, as `nomad job run -var` gives one: beside `file:`, vars: {{{name}: ...}} or a var_files file"
                                ),
                            ));
                        }
                    };
                    declared.push(name.clone());
                    vars.insert(name, value);
                }
                "variables" => {
                    for attr in block.body.attributes() {
                        let name = attr.key.as_str().to_string();
                        let value = match inputs.last_for(&name) {
                            Some(given) => given.value.clone(),
                            None => self.eval(&attr.value)?,
                        };
                        declared.push(name.clone());
                        vars.insert(name, value);
                    }
                }
                _ => {}
            }
        }
        self.vars = vars
            .into_iter()
            .map(|(name, value)| {
                let bound = budget::measure(&value);
                (name, (value, bound))
            })
            .collect();
        self.declared = declared;
        Ok(())
    }

    /// `locals { ... }`: recorded, each to be evaluated when first used. A
    /// name defined twice is refused, as HCL does.
    fn declare_locals(&mut self) -> Result<(), LoadError> {
        let mut locals = BTreeMap::new();
        for block in self.body.blocks().filter(|b| b.ident.as_str() == "locals") {
            for attr in block.body.attributes() {
                let name = attr.key.as_str().to_string();
                if let Some(first) = self.local_spans.get(&name) {
                    let at = self.position(first.clone()).map_or(String::new(), |p| {
                        format!(" (first at line {}, column {})", p.line, p.column)
                    });
                    return Err(self.error(
                        attr.span(),
                        format!("local.{name} is defined twice{at}: expected each local once"),
                    ));
                }
                self.local_spans.insert(name.clone(), attr.span());
                locals.insert(name, Local::Pending(attr.value.clone()));
            }
        }
        self.locals = RefCell::new(locals);
        Ok(())
    }

    /// Evaluates `root` and, before it, the locals it needs (depth first,
    /// without recursion: a chain of any length costs its length). A cycle
    /// fails every local on it, naming the chain.
    fn resolve_local(&self, root: &str) {
        let pending = matches!(self.locals.borrow().get(root), Some(Local::Pending(_)));
        if !pending {
            return;
        }
        let mut stack: Vec<(String, Vec<String>, usize)> = Vec::new();
        stack.push(self.start_local(root));
        while let Some((name, deps, next)) = stack.last_mut() {
            if let Some(dep) = deps.get(*next).cloned() {
                *next += 1;
                let state = match self.locals.borrow().get(&dep) {
                    Some(Local::Pending(_)) => 0,
                    Some(Local::InProgress(_)) => 1,
                    _ => 2,
                };
                match state {
                    0 => stack.push(self.start_local(&dep)),
                    1 => self.fail_cycle(&stack, &dep),
                    _ => {}
                }
                continue;
            }
            let name = name.clone();
            stack.pop();
            let removed = self.locals.borrow_mut().remove(&name);
            let expr = match removed {
                Some(Local::InProgress(expr)) => expr,
                Some(other) => {
                    self.locals.borrow_mut().insert(name, other);
                    continue;
                }
                None => continue,
            };
            // A local whose dependency failed fails with that cause.
            let failed_dep = self.failed_dependency(&expr);
            let state = match failed_dep.map_or_else(|| self.eval(&expr), Err) {
                Ok(value) => {
                    let bound = budget::measure(&value);
                    Local::Done(value, bound)
                }
                Err(err) => Local::Failed(err),
            };
            self.locals.borrow_mut().insert(name, state);
        }
    }

    /// The first failure among the locals `expr` refers to.
    fn failed_dependency(&self, expr: &EditExpr) -> Option<LoadError> {
        let mut refs = Refs::default();
        budget::references(expr, &mut refs);
        let locals = self.locals.borrow();
        refs.locals.iter().find_map(|name| match locals.get(name) {
            Some(Local::Failed(err)) => Some(err.clone()),
            _ => None,
        })
    }

    /// Marks `name` in progress; returns it with the locals it refers to.
    fn start_local(&self, name: &str) -> (String, Vec<String>, usize) {
        let mut locals = self.locals.borrow_mut();
        let mut refs = Refs::default();
        if let Some(Local::Pending(expr)) = locals.remove(name) {
            budget::references(&expr, &mut refs);
            locals.insert(name.to_string(), Local::InProgress(expr));
        }
        (name.to_string(), refs.locals, 0)
    }

    /// `dep` is on the stack: every local from it to the top refers to
    /// the next, and the top to `dep`.
    fn fail_cycle(&self, stack: &[(String, Vec<String>, usize)], dep: &str) {
        let from = stack.iter().position(|(n, _, _)| n == dep).unwrap_or(0);
        let chain: Vec<String> = stack[from..]
            .iter()
            .map(|(n, _, _)| format!("local.{n}"))
            .chain(std::iter::once(format!("local.{dep}")))
            .collect();
        let mut locals = self.locals.borrow_mut();
        for (name, _, _) in &stack[from..] {
            let span = self.local_spans.get(name).cloned().flatten();
            let err = self.error(
                span,
                format!(
                    "local.{name} depends on itself: {}; expected locals that refer to each other without a cycle",
                    chain.join(" -> ")
                ),
            );
            locals.insert(name.clone(), Local::Failed(err));
        }
    }

    /// Evaluates one expression; runtime interpolations stay as written.
    /// The locals it refers to are evaluated first, then the expression is
    /// bounded (`budget`) and only then evaluated.
    pub fn eval(&self, expr: &EditExpr) -> Result<Value, LoadError> {
        let mut refs = Refs::default();
        budget::references(expr, &mut refs);
        for name in &refs.locals {
            self.resolve_local(name);
        }
        let mut ctx = self.ctx.clone();
        let mut var_bounds = BTreeMap::new();
        let mut vars = hcl::Map::new();
        for name in &refs.vars {
            if let Some((value, bound)) = self.vars.get(name) {
                var_bounds.insert(name.clone(), *bound);
                vars.insert(name.clone(), value.clone());
            }
        }
        let mut local_bounds = BTreeMap::new();
        let mut locals = hcl::Map::new();
        for name in &refs.locals {
            if let Some(Local::Done(value, bound)) = self.locals.borrow().get(name) {
                local_bounds.insert(name.clone(), *bound);
                locals.insert(name.clone(), value.clone());
            }
        }
        let known = Known {
            vars: &var_bounds,
            locals: &local_bounds,
        };
        let over = |o: budget::Over| self.error(o.span.or(expr.span()), o.message);
        let bound = budget::bound(expr, &known).map_err(over)?;
        let spent = self.spent.get().saturating_add(bound.work);
        if spent > crate::scenario::limits::HCL_MAX_EVAL_BYTES {
            return Err(over(budget::over_work(expr.span(), spent)));
        }
        self.spent.set(spent);
        ctx.declare_var("var", Value::Object(vars));
        ctx.declare_var("local", Value::Object(locals));
        let mut converted: hcl::Expression = expr.clone().into();
        keep_runtime_interpolations(&mut converted);
        converted.evaluate(&ctx).map_err(|err| {
            let kind = err.kind();
            let message = match kind {
                hcl::eval::ErrorKind::UndefinedVar(name) => format!(
                    "unknown variable `{name}` outside a string template: plansim knows var.NAME and local.NAME; Nomad's runtime values are written in a template, \"${{attr.NAME}}\""
                ),
                hcl::eval::ErrorKind::NoSuchKey(key) => self.no_such_key(key),
                hcl::eval::ErrorKind::UndefinedFunc(name) => format!(
                    "function `{name}` is not one plansim evaluates (it knows {})",
                    FUNCTIONS.join(", ")
                ),
                other => format!("cannot evaluate this expression: {other}"),
            };
            self.error(expr.span(), message)
        })
    }

    fn no_such_key(&self, key: &str) -> String {
        if let Some(Local::Failed(cause)) = self.locals.borrow().get(key) {
            format!("local.{key} cannot be evaluated: {cause}")
        } else {
            format!(
                "unknown variable or local `{key}`: declare it (variable \"{key}\" {{ default = ... }}, or in a locals block)"
            )
        }
    }

    pub fn string(&self, attr: &Attribute) -> Result<String, LoadError> {
        match self.eval(&attr.value)? {
            Value::String(s) => Ok(s),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => Err(self.expected(attr, "a string", &other)),
        }
    }

    pub fn int(&self, attr: &Attribute) -> Result<i64, LoadError> {
        let value = self.eval(&attr.value)?;
        let number = match &value {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        number.ok_or_else(|| self.expected(attr, "a whole number", &value))
    }

    pub fn boolean(&self, attr: &Attribute) -> Result<bool, LoadError> {
        match self.eval(&attr.value)? {
            Value::Bool(b) => Ok(b),
            Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
            other => Err(self.expected(attr, "true or false", &other)),
        }
    }

    pub fn strings(&self, attr: &Attribute) -> Result<Vec<String>, LoadError> {
        match self.eval(&attr.value)? {
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    other => Err(self.expected(attr, "a list of strings", &other)),
                })
                .collect(),
            other => Err(self.expected(attr, "a list of strings", &other)),
        }
    }

    pub fn duration(&self, attr: &Attribute) -> Result<Millis, LoadError> {
        let text = self.string(attr)?;
        parse_duration(&text)
            .map_err(|message| self.error(attr.span(), format!("{}: {message}", attr.key.as_str())))
    }

    /// A map of strings (`segments { zone = "a" }` written as attributes).
    pub fn string_map(&self, body: &Body) -> Result<Vec<(String, String)>, LoadError> {
        body.attributes()
            .map(|attr| Ok((attr.key.as_str().to_string(), self.string(attr)?)))
            .collect()
    }

    fn expected(&self, attr: &Attribute, what: &str, found: &Value) -> LoadError {
        self.error(
            attr.span(),
            format!("{}: expected {what}, found {found}", attr.key.as_str()),
        )
    }

    pub fn label(&self, block: &Block, what: &str) -> Result<String, LoadError> {
        match block.labels.first() {
            Some(label) if !label.as_str().is_empty() => Ok(label.as_str().to_string()),
            _ => Err(self.error(
                block.span(),
                format!("a {what} block needs a name: {what} \"NAME\" {{ ... }}",),
            )),
        }
    }
}
