//! HCL2 `dynamic` blocks, expanded as Nomad's `jobspec2` expands them
//! (`jobspec2/types.config.go:jobConfig.decodeJob` calls `dynblock.Expand` from
//! `hashicorp/hcl/v2/ext/dynblock` before decoding): a
//!
//! ```hcl
//! dynamic "volume" {
//!   for_each = var.disks          # a list, or a map
//!   iterator = disk               # optional: the block type by default
//!   labels   = [disk.value]       # the generated blocks' labels
//!   content { source = disk.value ... }
//! }
//! ```
//!
//! becomes one `volume` block per element, in the collection's order (a
//! list by index, a map by key), its body the `content` block with the
//! iterator's `key` and `value` put in. Dynamic blocks inside `content`
//! are expanded in turn, with the outer iterator already put in, as
//! dynblock's nested expansion does.
//!
//! Bounded: the blocks generated in one file count against
//! `HCL_MAX_FOR_ITERATIONS`, the bytes of content copied against
//! `HCL_MAX_EVAL_BYTES`, and what the copies hold (the content's
//! expression nodes, and the element's value at each reference to the
//! iterator) against `HCL_MAX_DYNAMIC_NODES`, before a copy is made: nested
//! blocks multiply, and an outer iterator's value is copied into every
//! inner copy. Simplification: a `for`
//! expression inside `content` that names its own variable like the
//! iterator is not told apart from the iterator (HCL would shadow it).

use std::cell::Cell;

use hcl::Value;
use hcl::edit::expr::Expression as EditExpr;
use hcl::edit::structure::{Block, BlockLabel, Body, Structure};
use hcl::edit::visit::{Visit, visit_expr};
use hcl::edit::visit_mut::{VisitMut, visit_expr_mut};
use hcl::edit::{Decorated, Ident, Span};

use super::file::HclFile;
use crate::scenario::error::LoadError;
use crate::scenario::limits::{HCL_MAX_DYNAMIC_NODES, HCL_MAX_EVAL_BYTES, HCL_MAX_FOR_ITERATIONS};

/// How deep `dynamic` blocks may nest inside each other's `content`.
const MAX_DYNAMIC_DEPTH: usize = 8;

/// What expanding a file's dynamic blocks has spent so far.
#[derive(Default)]
struct Spent {
    blocks: Cell<u64>,
    bytes: Cell<u64>,
    /// Expression nodes the copies hold (HCL_MAX_DYNAMIC_NODES).
    nodes: Cell<u64>,
}

/// Expands every `dynamic` block of a parsed job file (and of the blocks
/// inside them), in place, before any block is read.
pub(super) fn expand(hcl: &mut HclFile) -> Result<(), LoadError> {
    let mut body = std::mem::take(&mut hcl.body);
    let expanded = expand_at(hcl, &mut body, &Spent::default(), 0);
    hcl.body = body;
    expanded
}

fn expand_at(hcl: &HclFile, body: &mut Body, spent: &Spent, depth: usize) -> Result<(), LoadError> {
    let mut at = 0;
    while at < body.len() {
        let is_dynamic =
            matches!(body.get(at), Some(Structure::Block(b)) if b.ident.as_str() == "dynamic");
        if !is_dynamic {
            if let Some(Structure::Block(block)) = body.get_mut(at) {
                expand_at(hcl, &mut block.body, spent, depth)?;
            }
            at += 1;
            continue;
        }
        let Structure::Block(dynamic) = body.remove(at) else {
            unreachable!("checked above");
        };
        if depth >= MAX_DYNAMIC_DEPTH {
            return Err(hcl.error(
                dynamic.span(),
                format!(
                    "dynamic blocks nested more than {MAX_DYNAMIC_DEPTH} deep: expected at most {MAX_DYNAMIC_DEPTH}"
                ),
            ));
        }
        let generated = generate(hcl, &dynamic, spent)?;
        let count = generated.len();
        for (offset, mut block) in generated.into_iter().enumerate() {
            expand_at(hcl, &mut block.body, spent, depth + 1)?;
            body.insert(at + offset, block);
        }
        at += count;
    }
    Ok(())
}

/// The blocks one `dynamic` block stands for, not yet expanded inside.
fn generate(hcl: &HclFile, dynamic: &Block, spent: &Spent) -> Result<Vec<Block>, LoadError> {
    let kind = match dynamic.labels.as_slice() {
        [label] => label.as_str().to_string(),
        _ => {
            return Err(hcl.error(
                dynamic.span(),
                "a dynamic block needs one label, the type of the blocks it makes (dynamic \"volume\" { ... })".into(),
            ));
        }
    };
    let shown = crate::names::shown(&kind);
    let for_each = dynamic.body.get_attribute("for_each").ok_or_else(|| {
        hcl.error(
            dynamic.span(),
            format!("dynamic \"{shown}\": expected a for_each attribute"),
        )
    })?;
    let iterator = match dynamic.body.get_attribute("iterator") {
        None => kind.clone(),
        Some(attr) => match &attr.value {
            EditExpr::Variable(name) => name.as_str().to_string(),
            _ => {
                return Err(hcl.error(
                    attr.span(),
                    format!("dynamic \"{shown}\".iterator: expected a bare name (iterator = disk)"),
                ));
            }
        },
    };
    let content = dynamic.body.get_blocks("content").next().ok_or_else(|| {
        hcl.error(
            dynamic.span(),
            format!("dynamic \"{shown}\": expected a content block"),
        )
    })?;
    let elements: Vec<(Value, Value)> = match hcl.eval(&for_each.value)? {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Value::from(i as u64), v))
            .collect(),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| (Value::String(k), v))
            .collect(),
        other => {
            return Err(hcl.error(
                for_each.span(),
                format!(
                    "dynamic \"{shown}\".for_each: expected a list or a map, found {}",
                    kind_of(&other)
                ),
            ));
        }
    };
    let content_bytes = content.span().map_or(0, |s| s.len() as u64);
    let blocks = spent.blocks.get().saturating_add(elements.len() as u64);
    let bytes = spent
        .bytes
        .get()
        .saturating_add(content_bytes.saturating_mul(elements.len() as u64));
    // What the copies hold, counted before any is made: the content as it
    // is now (an outer dynamic block may have put a whole collection in
    // it, which the source span does not show), plus the element's value
    // at every reference to the iterator.
    let mut size = ContentSize {
        name: &iterator,
        nodes: 0,
        references: 0,
    };
    size.visit_body(&content.body);
    let built = elements.iter().fold(0u64, |sum, (_, value)| {
        let per_copy = size
            .nodes
            .saturating_add(size.references.saturating_mul(value_nodes(value)));
        sum.saturating_add(per_copy)
    });
    let nodes = spent.nodes.get().saturating_add(built);
    if blocks > HCL_MAX_FOR_ITERATIONS
        || bytes > HCL_MAX_EVAL_BYTES
        || nodes > HCL_MAX_DYNAMIC_NODES
    {
        return Err(hcl.error(
            for_each.span(),
            format!(
                "dynamic \"{shown}\": expanding would make {blocks} blocks of {bytes} bytes and {nodes} expression nodes in this file, more than {HCL_MAX_FOR_ITERATIONS} blocks (HCL_MAX_FOR_ITERATIONS), {HCL_MAX_EVAL_BYTES} bytes (HCL_MAX_EVAL_BYTES) or {HCL_MAX_DYNAMIC_NODES} nodes (HCL_MAX_DYNAMIC_NODES)"
            ),
        ));
    }
    spent.blocks.set(blocks);
    spent.bytes.set(bytes);
    spent.nodes.set(nodes);
    let labels = dynamic.body.get_attribute("labels");
    let mut generated = Vec::with_capacity(elements.len());
    for (key, value) in elements {
        let mut object = hcl::Map::new();
        object.insert("key".to_string(), key);
        object.insert("value".to_string(), value);
        let mut put_in = PutIn {
            name: &iterator,
            value: hcl::edit::expr::Expression::from(hcl::Expression::from(Value::Object(object))),
        };
        // The dynamic block itself is cloned so the generated block keeps
        // its position for every later message.
        let mut block = dynamic.clone();
        block.ident = Decorated::new(Ident::new(kind.clone()));
        block.body = content.body.clone();
        put_in.visit_body_mut(&mut block.body);
        block.labels = match labels {
            None => Vec::new(),
            Some(attr) => {
                let mut expr = attr.value.clone();
                put_in.visit_expr_mut(&mut expr);
                match hcl.eval(&expr)? {
                    Value::Array(items) => items
                        .iter()
                        .map(|item| match item {
                            Value::String(s) => Ok(BlockLabel::String(Decorated::new(s.clone()))),
                            other => Err(hcl.error(
                                attr.span(),
                                format!(
                                    "dynamic \"{shown}\".labels: expected strings, found {}",
                                    kind_of(other)
                                ),
                            )),
                        })
                        .collect::<Result<_, _>>()?,
                    other => {
                        return Err(hcl.error(
                            attr.span(),
                            format!(
                                "dynamic \"{shown}\".labels: expected a list of strings, found {}",
                                kind_of(&other)
                            ),
                        ));
                    }
                }
            }
        };
        generated.push(block);
    }
    Ok(generated)
}

/// Counts a content body's expression nodes and its references to the
/// iterator (each becomes a copy of the element's value).
struct ContentSize<'n> {
    name: &'n str,
    nodes: u64,
    references: u64,
}

impl Visit for ContentSize<'_> {
    fn visit_expr(&mut self, expr: &EditExpr) {
        self.nodes = self.nodes.saturating_add(1);
        match expr {
            EditExpr::Variable(var) if var.as_str() == self.name => {
                self.references = self.references.saturating_add(1);
            }
            _ => visit_expr(self, expr),
        }
    }
}

/// A value's nodes as an expression: one per value, entry and element.
fn value_nodes(value: &Value) -> u64 {
    match value {
        Value::Array(items) => items
            .iter()
            .fold(1u64, |sum, v| sum.saturating_add(value_nodes(v))),
        Value::Object(map) => map.values().fold(1u64, |sum, v| {
            sum.saturating_add(1).saturating_add(value_nodes(v))
        }),
        _ => 1,
    }
}

/// Puts the iterator's value in place of its name.
struct PutIn<'n> {
    name: &'n str,
    value: EditExpr,
}

impl VisitMut for PutIn<'_> {
    fn visit_expr_mut(&mut self, expr: &mut EditExpr) {
        match expr {
            EditExpr::Variable(var) if var.as_str() == self.name => {
                *expr = self.value.clone();
            }
            _ => visit_expr_mut(self, expr),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}
