//! Nomad's HCL2 files (job files and volume specs), read with `hcl-edit`
//! (which keeps every block's position) and evaluated with `hcl-rs`:
//! variables with defaults, locals and the common functions. Nomad's runtime
//! interpolations (`${attr.*}`, `${node.*}`, `${meta.*}`, `${NOMAD_*}`, other
//! environment variables) are kept as written, as Nomad's own parser keeps
//! them for the client to fill in. Only the fields that plansim uses are
//! evaluated: task config, templates and the like are never looked at.

use hcl::Value;
use hcl::edit::Span;
use hcl::edit::expr::Expression as EditExpr;
use hcl::edit::structure::{Attribute, Block, Body, Structure};
use hcl::eval::{Context, Evaluate, FuncArgs, FuncDef, ParamType};

use super::error::{LoadError, Position};
use super::nomad_job::*;
use super::raw::{RawCount, RawDuration, RawUpdate};
use crate::model::time::{Millis, parse_duration};

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

/// The fields of one kind of block: those plansim reads, and those it
/// skips quietly because they cannot change placement. Every other field is
/// warned about: it could matter (spread, affinity, update, ...), or plansim
/// does not know it.
struct Schema {
    attributes: (&'static [&'static str], &'static [&'static str]),
    blocks: (&'static [&'static str], &'static [&'static str]),
}

/// Calls `read` for every field `schema` reads; returns the fields to warn
/// about, named after `prefix`.
fn walk<'b>(
    hcl: &HclFile,
    body: &'b Body,
    schema: &Schema,
    prefix: &str,
    mut read: impl FnMut(&'b Structure) -> Result<(), LoadError>,
) -> Result<Ignored, LoadError> {
    let mut warn = Vec::new();
    for structure in body.iter() {
        let (key, span, (reads, quiet)) = match structure {
            Structure::Attribute(a) => (a.key.as_str(), a.span(), schema.attributes),
            Structure::Block(b) => (b.ident.as_str(), b.span(), schema.blocks),
        };
        if reads.contains(&key) {
            read(structure)?;
        } else if !quiet.contains(&key) {
            warn.push((format!("{prefix}{key}"), hcl.position(span)));
        }
    }
    Ok(warn)
}

const JOB: Schema = Schema {
    attributes: (
        &["type", "priority", "datacenters", "id"],
        &[
            "name",
            "region",
            "namespace",
            "all_at_once",
            "meta",
            "consul_token",
            "vault_token",
            "ui",
        ],
    ),
    blocks: (
        &[
            "group",
            "constraint",
            "reschedule",
            "spread",
            "affinity",
            "update",
        ],
        &["meta", "vault", "consul", "ui", "parameterized", "periodic"],
    ),
};

const GROUP: Schema = Schema {
    attributes: (
        &[
            "count",
            "max_client_disconnect",
            "stop_after_client_disconnect",
        ],
        &["shutdown_delay", "meta"],
    ),
    blocks: (
        &[
            "task",
            "volume",
            "constraint",
            "reschedule",
            "network",
            "spread",
            "affinity",
            "update",
            "migrate",
            "disconnect",
        ],
        &["restart", "service", "scaling", "meta", "consul", "vault"],
    ),
};

const TASK: Schema = Schema {
    attributes: (
        &["driver"],
        &[
            "user",
            "kill_timeout",
            "kill_signal",
            "leader",
            "kind",
            "shutdown_delay",
            "meta",
            "env",
        ],
    ),
    blocks: (
        &["resources", "csi_plugin", "volume_mount", "constraint"],
        &[
            "config",
            "template",
            "artifact",
            "env",
            "service",
            "logs",
            "lifecycle",
            "vault",
            "identity",
            "restart",
            "dispatch_payload",
            "scaling",
            "meta",
            "kill",
            "consul",
            "secret",
            "action",
            "schedule",
            "volume",
        ],
    ),
};

/// Parses a job file.
pub fn parse_job(text: &str, file: &str) -> Result<NomadJob, LoadError> {
    let hcl = HclFile::parse(text, file)?;
    let jobs: Vec<&Block> = hcl
        .body
        .blocks()
        .filter(|b| b.ident.as_str() == "job")
        .collect();
    let job_block = match jobs.as_slice() {
        [one] => *one,
        [] => {
            let found = describe_top_level(&hcl.body);
            let hint = if hcl.body.has_attribute("plugin_id") {
                " (this looks like a volume spec: list it under volumes: as - file: ...)"
            } else {
                ""
            };
            return Err(file_error(
                file,
                Some(Position { line: 1, column: 1 }),
                format!(
                    "not a Nomad job file: expected a job \"NAME\" {{ ... }} block, found {found}{hint}"
                ),
            ));
        }
        [_, second, ..] => {
            return Err(hcl.error(
                second.span(),
                "a second job block: a job file holds one job".into(),
            ));
        }
    };
    for structure in hcl.body.iter() {
        if let Structure::Attribute(attr) = structure {
            return Err(hcl.error(
                attr.span(),
                format!(
                    "unexpected top-level attribute {}: a job file holds variable, variables, locals and one job block",
                    attr.key.as_str()
                ),
            ));
        }
    }
    let mut job = NomadJob {
        id: hcl.label(job_block, "job")?,
        at: hcl.position(job_block.span()),
        ..NomadJob::default()
    };
    let mut job_reschedule = None;
    let mut ignored = Vec::new();
    let warned = walk(&hcl, &job_block.body, &JOB, "", |structure| {
        match structure {
            Structure::Attribute(attr) => match attr.key.as_str() {
                "type" => job.job_type = hcl.string(attr)?,
                "priority" => job.priority = Some(hcl.int(attr)?),
                "datacenters" => job.datacenters = Some(hcl.strings(attr)?),
                _ => job.id = hcl.string(attr)?,
            },
            Structure::Block(block) => match block.ident.as_str() {
                "group" => job.groups.push(parse_group(&hcl, block, &mut ignored)?),
                "constraint" => job.constraints.push(parse_constraint(&hcl, block)?),
                "spread" => job.spreads.push(parse_spread(&hcl, block)?),
                "affinity" => job.affinities.push(parse_affinity(&hcl, block)?),
                "update" => job.update = Some(parse_update(&hcl, block)?),
                _ => job_reschedule = Some(parse_reschedule(&hcl, block)?),
            },
        }
        Ok(())
    })?;
    job.ignored = warned.into_iter().chain(ignored).collect();
    // A job-level reschedule block is every group's default.
    if let Some(default) = job_reschedule {
        for group in &mut job.groups {
            let own = group.reschedule.take().unwrap_or_default();
            group.reschedule = Some(NomadReschedule {
                attempts: own.attempts.or(default.attempts),
                interval: own.interval.or(default.interval),
                delay: own.delay.or(default.delay),
                delay_function: own.delay_function.or(default.delay_function.clone()),
                max_delay: own.max_delay.or(default.max_delay),
                unlimited: own.unlimited.or(default.unlimited),
            });
        }
    }
    Ok(job)
}

fn describe_top_level(body: &Body) -> String {
    let names: Vec<String> = body
        .iter()
        .take(4)
        .map(|s| match s {
            Structure::Attribute(a) => format!("attribute {}", a.key.as_str()),
            Structure::Block(b) => format!("block {}", b.ident.as_str()),
        })
        .collect();
    if names.is_empty() {
        "nothing".to_string()
    } else {
        names.join(", ")
    }
}

fn parse_group(
    hcl: &HclFile,
    block: &Block,
    ignored: &mut Ignored,
) -> Result<NomadGroup, LoadError> {
    let mut group = NomadGroup {
        name: hcl.label(block, "group")?,
        at: hcl.position(block.span()),
        ..NomadGroup::default()
    };
    let prefix = format!("group \"{}\" ", group.name);
    let mut nested = Vec::new();
    let warned = walk(hcl, &block.body, &GROUP, &prefix, |structure| {
        match structure {
            Structure::Attribute(attr) => match attr.key.as_str() {
                "max_client_disconnect" => group.max_client_disconnect = Some(hcl.duration(attr)?),
                "stop_after_client_disconnect" => {
                    group.stop_after_client_disconnect = Some(hcl.duration(attr)?)
                }
                _ => group.count = Some(hcl.int(attr)?),
            },
            Structure::Block(inner) => match inner.ident.as_str() {
                "task" => group.tasks.push(parse_task(
                    hcl,
                    inner,
                    &mut group.constraints,
                    &mut nested,
                    &prefix,
                )?),
                "volume" => group.volumes.push(parse_volume_request(hcl, inner)?),
                "constraint" => group.constraints.push(parse_constraint(hcl, inner)?),
                "spread" => group.spreads.push(parse_spread(hcl, inner)?),
                "affinity" => group.affinities.push(parse_affinity(hcl, inner)?),
                "update" => group.update = Some(parse_update(hcl, inner)?),
                "network" => {
                    // Dynamic ports are nearly always free; a static port
                    // must be free on the node: that is placement.
                    for port in inner.body.blocks().filter(|b| b.ident.as_str() == "port") {
                        if port.body.has_attribute("static") {
                            let label = port.labels.first().map_or("", |l| l.as_str());
                            nested.push((
                                format!("{prefix}static port \"{label}\""),
                                hcl.position(port.span()),
                            ));
                        }
                    }
                }
                "migrate" => group.migrate = Some(parse_migrate(hcl, inner)?),
                // Nomad 1.8+'s form of the two disconnect settings.
                "disconnect" => {
                    for attr in inner.body.attributes() {
                        match attr.key.as_str() {
                            "lost_after" => group.max_client_disconnect = Some(hcl.duration(attr)?),
                            "stop_on_client_after" => {
                                group.stop_after_client_disconnect = Some(hcl.duration(attr)?)
                            }
                            other => nested.push((
                                format!("{prefix}disconnect {other}"),
                                hcl.position(attr.span()),
                            )),
                        }
                    }
                }
                _ => group.reschedule = Some(parse_reschedule(hcl, inner)?),
            },
        }
        Ok(())
    })?;
    ignored.extend(warned);
    ignored.extend(nested);
    Ok(group)
}

fn parse_task(
    hcl: &HclFile,
    block: &Block,
    group_constraints: &mut Vec<NomadConstraint>,
    ignored: &mut Ignored,
    group_prefix: &str,
) -> Result<NomadTask, LoadError> {
    let mut task = NomadTask {
        name: hcl.label(block, "task")?,
        at: hcl.position(block.span()),
        ..NomadTask::default()
    };
    let prefix = format!("{group_prefix}task \"{}\" ", task.name);
    let mut nested = Vec::new();
    let warned = walk(hcl, &block.body, &TASK, &prefix, |structure| {
        match structure {
            Structure::Attribute(attr) => task.driver = Some(hcl.string(attr)?),
            Structure::Block(inner) => match inner.ident.as_str() {
                "resources" => parse_resources(hcl, inner, &mut task, &mut nested, &prefix)?,
                "csi_plugin" => {
                    let field = |name: &str| {
                        inner
                            .body
                            .get_attribute(name)
                            .map(|attr| hcl.string(attr))
                            .transpose()
                    };
                    let Some(id) = field("id")? else {
                        return Err(hcl.error(inner.span(), "csi_plugin: expected an id".into()));
                    };
                    task.csi_plugin = Some((id, field("type")?.unwrap_or_default()));
                }
                "volume_mount" => {
                    let field = |name: &str| {
                        inner
                            .body
                            .get_attribute(name)
                            .map_or(Ok(String::new()), |attr| hcl.string(attr))
                    };
                    // The destination is usually a runtime path: kept as written.
                    task.volume_mounts
                        .push((field("volume")?, field("destination")?));
                }
                // A task's constraints constrain its group's placement.
                _ => group_constraints.push(parse_constraint(hcl, inner)?),
            },
        }
        Ok(())
    })?;
    ignored.extend(warned);
    ignored.extend(nested);
    Ok(task)
}

fn parse_resources(
    hcl: &HclFile,
    block: &Block,
    task: &mut NomadTask,
    ignored: &mut Ignored,
    prefix: &str,
) -> Result<(), LoadError> {
    for structure in block.body.iter() {
        let (key, span) = match structure {
            Structure::Attribute(attr) => (attr.key.as_str(), attr.span()),
            Structure::Block(b) => (b.ident.as_str(), b.span()),
        };
        match (key, structure) {
            ("cpu", Structure::Attribute(attr)) => task.cpu = Some(hcl.int(attr)?),
            ("memory", Structure::Attribute(attr)) => task.memory = Some(hcl.int(attr)?),
            // Oversubscription and disk size do not decide where it runs.
            ("memory_max" | "disk" | "iops", _) => {}
            _ => ignored.push((format!("{prefix}resources {key}"), hcl.position(span))),
        }
    }
    Ok(())
}

fn parse_volume_request(hcl: &HclFile, block: &Block) -> Result<NomadVolumeRequest, LoadError> {
    let mut request = NomadVolumeRequest {
        alias: hcl.label(block, "volume")?,
        at: hcl.position(block.span()),
        volume_type: "host".to_string(),
        ..NomadVolumeRequest::default()
    };
    for attr in block.body.attributes() {
        match attr.key.as_str() {
            "type" => request.volume_type = hcl.string(attr)?,
            "source" => request.source = hcl.string(attr)?,
            "read_only" => request.read_only = hcl.boolean(attr)?,
            "per_alloc" => request.per_alloc = hcl.boolean(attr)?,
            "access_mode" => request.access_mode = Some(hcl.string(attr)?),
            "attachment_mode" => request.attachment_mode = Some(hcl.string(attr)?),
            _ => {}
        }
    }
    Ok(request)
}

fn parse_constraint(hcl: &HclFile, block: &Block) -> Result<NomadConstraint, LoadError> {
    let mut constraint = NomadConstraint {
        at: hcl.position(block.span()),
        ..NomadConstraint::default()
    };
    for attr in block.body.attributes() {
        let key = attr.key.as_str();
        match key {
            "attribute" => constraint.attribute = hcl.string(attr)?,
            "operator" => constraint.operator = hcl.string(attr)?,
            "value" => constraint.value = hcl.string(attr)?,
            // `distinct_property = "${meta.rack}"` names the attribute.
            "distinct_property" => {
                constraint.operator = "distinct_property".to_string();
                constraint.attribute = hcl.string(attr)?;
            }
            // Nomad's shorthands: `distinct_hosts = true`, `regexp = "..."`, ...
            other => {
                constraint.operator = other.to_string();
                constraint.value = hcl.string(attr)?;
            }
        }
    }
    Ok(constraint)
}

/// `spread { attribute = ... weight = ... target "dc1" { percent = 50 } }`
fn parse_spread(hcl: &HclFile, block: &Block) -> Result<NomadSpread, LoadError> {
    let mut spread = NomadSpread {
        at: hcl.position(block.span()),
        ..NomadSpread::default()
    };
    for attr in block.body.attributes() {
        match attr.key.as_str() {
            "attribute" => spread.attribute = hcl.string(attr)?,
            "weight" => spread.weight = Some(hcl.int(attr)?),
            _ => {}
        }
    }
    for target in block.body.blocks().filter(|b| b.ident.as_str() == "target") {
        let value = hcl.label(target, "target")?;
        let mut percent = 0;
        for attr in target.body.attributes() {
            if attr.key.as_str() == "percent" {
                percent = hcl.int(attr)?;
            }
        }
        spread.targets.push((value, percent));
    }
    Ok(spread)
}

/// `affinity { attribute = ... operator = ... value = ... weight = ... }`,
/// with Nomad's shorthands (`regexp = "..."`, `version = "..."`, ...).
fn parse_affinity(hcl: &HclFile, block: &Block) -> Result<NomadAffinity, LoadError> {
    let mut affinity = NomadAffinity {
        at: hcl.position(block.span()),
        ..NomadAffinity::default()
    };
    for attr in block.body.attributes() {
        match attr.key.as_str() {
            "attribute" => affinity.attribute = hcl.string(attr)?,
            "operator" => affinity.operator = hcl.string(attr)?,
            "value" => affinity.value = hcl.string(attr)?,
            "weight" => affinity.weight = Some(hcl.int(attr)?),
            other => {
                affinity.operator = other.to_string();
                affinity.value = hcl.string(attr)?;
            }
        }
    }
    Ok(affinity)
}

/// Nomad's `update` block (job or group level); `health_check` is not
/// modelled (health is `healthy_after`).
fn parse_update(hcl: &HclFile, block: &Block) -> Result<RawUpdate, LoadError> {
    let mut u = RawUpdate::default();
    for attr in block.body.attributes() {
        let count = || -> Result<RawCount, LoadError> {
            let n = hcl.int(attr)?;
            u32::try_from(n).map(RawCount).map_err(|_| {
                hcl.error(
                    attr.span(),
                    format!("{}: {n} is not a count of at least 0", attr.key.as_str()),
                )
            })
        };
        let duration = || hcl.duration(attr).map(RawDuration);
        match attr.key.as_str() {
            "max_parallel" => u.max_parallel = Some(count()?),
            "canary" => u.canary = Some(count()?),
            "min_healthy_time" => u.min_healthy_time = Some(duration()?),
            "healthy_deadline" => u.healthy_deadline = Some(duration()?),
            "progress_deadline" => u.progress_deadline = Some(duration()?),
            "stagger" => u.stagger = Some(duration()?),
            "auto_revert" => u.auto_revert = Some(hcl.boolean(attr)?),
            "auto_promote" => u.auto_promote = Some(hcl.boolean(attr)?),
            _ => {}
        }
    }
    Ok(u)
}

fn parse_migrate(hcl: &HclFile, block: &Block) -> Result<NomadMigrate, LoadError> {
    let mut m = NomadMigrate::default();
    for attr in block.body.attributes() {
        match attr.key.as_str() {
            "max_parallel" => m.max_parallel = Some(hcl.int(attr)?),
            "health_check" => m.health_check = Some(hcl.string(attr)?),
            "min_healthy_time" => m.min_healthy_time = Some(hcl.duration(attr)?),
            "healthy_deadline" => m.healthy_deadline = Some(hcl.duration(attr)?),
            _ => {}
        }
    }
    Ok(m)
}

fn parse_reschedule(hcl: &HclFile, block: &Block) -> Result<NomadReschedule, LoadError> {
    let mut r = NomadReschedule::default();
    for attr in block.body.attributes() {
        match attr.key.as_str() {
            "attempts" => r.attempts = Some(hcl.int(attr)?),
            "interval" => r.interval = Some(hcl.duration(attr)?),
            "delay" => r.delay = Some(hcl.duration(attr)?),
            "delay_function" => r.delay_function = Some(hcl.string(attr)?),
            "max_delay" => r.max_delay = Some(hcl.duration(attr)?),
            "unlimited" => r.unlimited = Some(hcl.boolean(attr)?),
            _ => {}
        }
    }
    Ok(r)
}

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
fn keep_runtime_interpolations(expr: &mut hcl::Expression) {
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

/// The functions plansim evaluates (a common subset of Nomad's HCL2 ones).
const FUNCTIONS: [&str; 22] = [
    "abs",
    "ceil",
    "coalesce",
    "concat",
    "contains",
    "element",
    "floor",
    "format",
    "join",
    "keys",
    "length",
    "lookup",
    "lower",
    "max",
    "merge",
    "min",
    "replace",
    "split",
    "tonumber",
    "tostring",
    "trimspace",
    "upper",
];

fn declare_functions(ctx: &mut Context) {
    let any = |f| FuncDef::builder().variadic_param(ParamType::Any).build(f);
    ctx.declare_func(
        "upper",
        FuncDef::new(
            |a| Ok(Value::from(str_arg(&a, 0)?.to_uppercase())),
            [ParamType::String],
        ),
    );
    ctx.declare_func(
        "lower",
        FuncDef::new(
            |a| Ok(Value::from(str_arg(&a, 0)?.to_lowercase())),
            [ParamType::String],
        ),
    );
    ctx.declare_func(
        "trimspace",
        FuncDef::new(
            |a| Ok(Value::from(str_arg(&a, 0)?.trim())),
            [ParamType::String],
        ),
    );
    ctx.declare_func(
        "tostring",
        FuncDef::new(|a| Ok(Value::from(scalar_text(&a[0])?)), [ParamType::Any]),
    );
    ctx.declare_func(
        "tonumber",
        FuncDef::new(
            |a| match &a[0] {
                Value::Number(_) => Ok(a[0].clone()),
                Value::String(s) => s
                    .trim()
                    .parse::<i64>()
                    .map(Value::from)
                    .or_else(|_| s.trim().parse::<f64>().map(Value::from))
                    .map_err(|_| format!("\"{s}\" is not a number")),
                other => Err(format!("cannot convert {other} to a number")),
            },
            [ParamType::Any],
        ),
    );
    ctx.declare_func(
        "join",
        FuncDef::new(
            |a| {
                let sep = str_arg(&a, 0)?;
                let parts: Result<Vec<String>, String> = a[1]
                    .as_array()
                    .ok_or("join: expected a list")?
                    .iter()
                    .map(scalar_text)
                    .collect();
                Ok(Value::from(parts?.join(sep)))
            },
            [ParamType::String, ParamType::Any],
        ),
    );
    ctx.declare_func(
        "split",
        FuncDef::new(
            |a| {
                let sep = str_arg(&a, 0)?;
                Ok(Value::Array(
                    str_arg(&a, 1)?.split(sep).map(Value::from).collect(),
                ))
            },
            [ParamType::String, ParamType::String],
        ),
    );
    ctx.declare_func(
        "replace",
        FuncDef::new(
            |a| {
                Ok(Value::from(
                    str_arg(&a, 0)?.replace(str_arg(&a, 1)?, str_arg(&a, 2)?),
                ))
            },
            [ParamType::String, ParamType::String, ParamType::String],
        ),
    );
    ctx.declare_func(
        "concat",
        any(|a| {
            let mut out = Vec::new();
            for list in a.iter() {
                out.extend(
                    list.as_array()
                        .ok_or("concat: expected lists")?
                        .iter()
                        .cloned(),
                );
            }
            Ok(Value::Array(out))
        }),
    );
    ctx.declare_func(
        "length",
        FuncDef::new(
            |a| match &a[0] {
                Value::Array(v) => Ok(Value::from(v.len() as u64)),
                Value::Object(m) => Ok(Value::from(m.len() as u64)),
                Value::String(s) => Ok(Value::from(s.chars().count() as u64)),
                other => Err(format!("length: cannot measure {other}")),
            },
            [ParamType::Any],
        ),
    );
    ctx.declare_func("min", any(|a| fold_numbers(&a, f64::min)));
    ctx.declare_func("max", any(|a| fold_numbers(&a, f64::max)));
    ctx.declare_func(
        "abs",
        FuncDef::new(|a| number_map(&a, f64::abs), [ParamType::Number]),
    );
    ctx.declare_func(
        "ceil",
        FuncDef::new(|a| number_map(&a, f64::ceil), [ParamType::Number]),
    );
    ctx.declare_func(
        "floor",
        FuncDef::new(|a| number_map(&a, f64::floor), [ParamType::Number]),
    );
    ctx.declare_func(
        "coalesce",
        any(|a| {
            a.iter()
                .find(|v| !v.is_null() && v.as_str() != Some(""))
                .cloned()
                .ok_or_else(|| "coalesce: every argument is null or empty".to_string())
        }),
    );
    ctx.declare_func(
        "contains",
        FuncDef::new(
            |a| {
                Ok(Value::from(
                    a[0].as_array()
                        .ok_or("contains: expected a list")?
                        .contains(&a[1]),
                ))
            },
            [ParamType::Any, ParamType::Any],
        ),
    );
    ctx.declare_func(
        "element",
        FuncDef::new(
            |a| {
                let list = a[0].as_array().ok_or("element: expected a list")?;
                let index = a[1].as_u64().ok_or("element: expected an index")? as usize;
                if list.is_empty() {
                    return Err("element: the list is empty".into());
                }
                Ok(list[index % list.len()].clone())
            },
            [ParamType::Any, ParamType::Number],
        ),
    );
    ctx.declare_func(
        "lookup",
        FuncDef::builder()
            .params([ParamType::Any, ParamType::String])
            .variadic_param(ParamType::Any)
            .build(|a| {
                let map = a[0].as_object().ok_or("lookup: expected a map")?;
                let key = str_arg(&a, 1)?;
                map.get(key)
                    .cloned()
                    .or_else(|| a.get(2).cloned())
                    .ok_or_else(|| format!("lookup: no key \"{key}\" and no default"))
            }),
    );
    ctx.declare_func(
        "keys",
        FuncDef::new(
            |a| {
                let mut keys: Vec<String> = a[0]
                    .as_object()
                    .ok_or("keys: expected a map")?
                    .keys()
                    .cloned()
                    .collect();
                keys.sort();
                Ok(Value::Array(keys.into_iter().map(Value::from).collect()))
            },
            [ParamType::Any],
        ),
    );
    ctx.declare_func(
        "merge",
        any(|a| {
            let mut out = hcl::Map::new();
            for map in a.iter() {
                for (k, v) in map.as_object().ok_or("merge: expected maps")? {
                    out.insert(k.clone(), v.clone());
                }
            }
            Ok(Value::Object(out))
        }),
    );
    ctx.declare_func(
        "format",
        FuncDef::builder()
            .param(ParamType::String)
            .variadic_param(ParamType::Any)
            .build(|a| {
                let spec = str_arg(&a, 0)?;
                let mut args = a[1..].iter();
                let mut out = String::new();
                let mut chars = spec.chars();
                while let Some(c) = chars.next() {
                    if c != '%' {
                        out.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('%') => out.push('%'),
                        Some('s' | 'd' | 'v') => out.push_str(&scalar_text(
                            args.next().ok_or("format: too few arguments")?,
                        )?),
                        other => {
                            return Err(format!(
                                "format: verb %{} is not supported (use %s, %d, %v)",
                                other.unwrap_or(' ')
                            ));
                        }
                    }
                }
                Ok(Value::from(out))
            }),
    );
}

fn str_arg(args: &FuncArgs, index: usize) -> Result<&str, String> {
    args.get(index)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("argument {index} must be a string"))
}

fn scalar_text(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!("{other} is not a string, number or bool")),
    }
}

fn fold_numbers(args: &FuncArgs, f: fn(f64, f64) -> f64) -> Result<Value, String> {
    let mut numbers = args.iter().map(|v| v.as_f64().ok_or("expected numbers"));
    let first = numbers.next().ok_or("expected at least one number")??;
    let result = numbers.try_fold(first, |acc, n| n.map(|n| f(acc, n)))?;
    Ok(number_value(result))
}

fn number_map(args: &FuncArgs, f: fn(f64) -> f64) -> Result<Value, String> {
    Ok(number_value(f(args[0]
        .as_f64()
        .ok_or("expected a number")?)))
}

fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
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
