//! One HCL2 file as plansim reads it: parsed with `hcl-edit` (which keeps
//! every block's position), its variables and locals evaluated with
//! `hcl-rs`, and typed reads of attributes that report `file:line:column`.

use hcl::Value;
use hcl::edit::Span;
use hcl::edit::expr::Expression as EditExpr;
use hcl::edit::structure::{Attribute, Block, Body};
use hcl::eval::{Context, Evaluate};

use super::functions::{FUNCTIONS, declare_functions};
use super::runtime::keep_runtime_interpolations;
use crate::model::time::{Millis, parse_duration};
use crate::scenario::error::{LoadError, Position, file_error};

/// A parsed HCL file: its text (for positions) and its evaluation context.
pub struct HclFile<'t> {
    pub file: &'t str,
    text: &'t str,
    line_starts: Vec<usize>,
    ctx: Context<'static>,
    /// Locals that could not be evaluated, with why: reported only if a
    /// field plansim needs refers to one.
    broken_locals: Vec<(String, LoadError)>,
    /// Variables declared without a default (plansim has no `-var`).
    no_default: Vec<String>,
    pub body: Body,
}

impl<'t> HclFile<'t> {
    /// Parses `text` and evaluates its variables and locals.
    pub fn parse(text: &'t str, file: &'t str) -> Result<Self, LoadError> {
        let body = hcl::edit::parser::parse_body(text).map_err(|err| {
            let location = err.location();
            LoadError {
                file: file.to_string(),
                position: Some(Position {
                    line: location.line() as u64,
                    column: location.column() as u64,
                }),
                message: format!("malformed HCL: {}", err.message()),
            }
        })?;
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut ctx = Context::new();
        declare_functions(&mut ctx);
        let mut hcl = HclFile {
            file,
            text,
            line_starts,
            ctx,
            broken_locals: Vec::new(),
            no_default: Vec::new(),
            body,
        };
        hcl.declare_variables()?;
        hcl.declare_locals();
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

    /// `variable "x" { default = ... }` and `variables { x = ... }`. A
    /// variable without a default is left undeclared: using it is an error.
    fn declare_variables(&mut self) -> Result<(), LoadError> {
        let mut vars = hcl::Map::new();
        let mut without_default = Vec::new();
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
                    match block.body.get_attribute("default") {
                        Some(attr) => {
                            let value = self.eval(&attr.value)?;
                            vars.insert(name, value);
                        }
                        None => without_default.push(name),
                    }
                }
                "variables" => {
                    for attr in block.body.attributes() {
                        let value = self.eval(&attr.value)?;
                        vars.insert(attr.key.as_str().to_string(), value);
                    }
                }
                _ => {}
            }
        }
        self.ctx.declare_var("var", Value::Object(vars));
        self.no_default = without_default;
        Ok(())
    }

    /// `locals { ... }`, which may refer to each other: evaluated in rounds
    /// until no more can be.
    fn declare_locals(&mut self) {
        let mut pending: Vec<Attribute> = self
            .body
            .blocks()
            .filter(|b| b.ident.as_str() == "locals")
            .flat_map(|b| b.body.attributes().cloned().collect::<Vec<_>>())
            .collect();
        let mut locals = hcl::Map::new();
        loop {
            self.ctx.declare_var("local", Value::Object(locals.clone()));
            let mut failed = Vec::new();
            let mut progress = false;
            for attr in pending {
                match self.eval(&attr.value) {
                    Ok(value) => {
                        locals.insert(attr.key.as_str().to_string(), value);
                        progress = true;
                    }
                    Err(err) => failed.push((attr, err)),
                }
            }
            if !progress || failed.is_empty() {
                self.ctx.declare_var("local", Value::Object(locals));
                self.broken_locals = failed
                    .into_iter()
                    .map(|(attr, err)| (attr.key.as_str().to_string(), err))
                    .collect();
                return;
            }
            pending = failed.into_iter().map(|(attr, _)| attr).collect();
        }
    }

    /// Evaluates one expression; runtime interpolations stay as written.
    pub fn eval(&self, expr: &EditExpr) -> Result<Value, LoadError> {
        let mut converted: hcl::Expression = expr.clone().into();
        keep_runtime_interpolations(&mut converted);
        converted.evaluate(&self.ctx).map_err(|err| {
            let kind = err.kind();
            let message = match kind {
                hcl::eval::ErrorKind::UndefinedVar(name) => format!(
                    "unknown variable `{name}` outside a string template: plansim knows var.NAME (variables with a default) and local.NAME; Nomad's runtime values are written in a template, \"${{attr.NAME}}\""
                ),
                hcl::eval::ErrorKind::NoSuchKey(key) => {
                    if let Some((_, cause)) = self.broken_locals.iter().find(|(n, _)| n == key) {
                        format!("local.{key} cannot be evaluated: {cause}")
                    } else if self.no_default.contains(key) {
                        format!(
                            "variable \"{key}\" has no default: plansim takes no -var, so give it a default in the file"
                        )
                    } else {
                        format!(
                            "unknown variable or local `{key}`: declare it (variable \"{key}\" {{ default = ... }}, or in a locals block)"
                        )
                    }
                }
                hcl::eval::ErrorKind::UndefinedFunc(name) => format!(
                    "function `{name}` is not one plansim evaluates (it knows {})",
                    FUNCTIONS.join(", ")
                ),
                other => format!("cannot evaluate this expression: {other}"),
            };
            self.error(expr.span(), message)
        })
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
