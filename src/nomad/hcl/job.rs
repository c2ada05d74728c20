//! A job file's blocks (job, group, task and the blocks inside them) into
//! the [`NomadJob`] that `nomad::job` turns into raw types, following
//! Nomad's jobspec2 parser.

use hcl::edit::Span;
use hcl::edit::structure::{Attribute, Block, Body, Structure};

use super::file::HclFile;
use super::schema::{GROUP, JOB, TASK, walk};
use super::vars::VarInputs;
use crate::model::time::{Millis, parse_duration};
use crate::nomad::job::*;
use crate::scenario::error::{LoadError, Position, file_error};
use crate::scenario::raw::{RawCount, RawDuration, RawEphemeralDisk, RawUpdate};

/// Parses a job file, its variables given `inputs`.
pub fn parse_job(text: &str, file: &str, inputs: &VarInputs) -> Result<NomadJob, LoadError> {
    let mut hcl = HclFile::parse(text, file, inputs)?;
    super::dynamic::expand(&mut hcl)?;
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
        variables: hcl.declared.clone(),
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
                "node_pool" => job.node_pool = Some(hcl.string(attr)?),
                "namespace" => job.namespace = Some(hcl.string(attr)?),
                _ => job.id = hcl.string(attr)?,
            },
            Structure::Block(block) => match block.ident.as_str() {
                "group" => job.groups.push(parse_group(&hcl, block, &mut ignored)?),
                "constraint" => job.constraints.push(parse_constraint(&hcl, block)?),
                "spread" => job.spreads.push(parse_spread(&hcl, block)?),
                "affinity" => job.affinities.push(parse_affinity(&hcl, block)?),
                "update" => job.update = Some(parse_update(&hcl, block)?),
                "migrate" => job.migrate = Some(parse_migrate(&hcl, block)?),
                "periodic" => job.periodic = Some(super::periodic::parse_periodic(&hcl, block)?),
                "parameterized" => {
                    job.parameterized = Some(super::periodic::parse_parameterized(&hcl, block)?);
                }
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
                "shutdown_delay" => group.shutdown_delay = Some(hcl.duration(attr)?),
                "max_run_duration" => {
                    let limit = max_run_duration(hcl, attr, &group.name)?;
                    group.max_run_duration = Some((limit, hcl.position(attr.span())));
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
                "network" => parse_network(hcl, inner, &mut group, &mut nested, &prefix)?,
                "migrate" => group.migrate = Some(parse_migrate(hcl, inner)?),
                "ephemeral_disk" => {
                    let mut disk = RawEphemeralDisk::default();
                    for attr in inner.body.attributes() {
                        match attr.key.as_str() {
                            "size" => disk.size = Some(hcl.int(attr)?),
                            "sticky" => disk.sticky = Some(hcl.boolean(attr)?),
                            "migrate" => disk.migrate = Some(hcl.boolean(attr)?),
                            other => nested.push((
                                format!("{prefix}ephemeral_disk {other}"),
                                hcl.position(attr.span()),
                            )),
                        }
                    }
                    group.ephemeral_disk = Some(disk);
                }
                // Nomad 1.8+'s form of the two disconnect settings.
                "disconnect" => {
                    for attr in inner.body.attributes() {
                        match attr.key.as_str() {
                            "lost_after" => group.lost_after = Some(hcl.duration(attr)?),
                            "stop_on_client_after" => {
                                group.stop_on_client_after = Some(hcl.duration(attr)?)
                            }
                            // api.DisconnectStrategy.Canonicalize's defaults
                            // are what plansim models; another value is not.
                            "replace" if hcl.boolean(attr)? => {}
                            "reconcile" if hcl.string(attr)? == "best_score" => {}
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
    let task_affinities: Vec<NomadAffinity> = group
        .tasks
        .iter()
        .flat_map(|t| t.affinities.iter().cloned())
        .collect();
    group.affinities.extend(task_affinities);
    ignored.extend(warned);
    ignored.extend(nested);
    Ok(group)
}

/// A group's `max_run_duration`: Go's `time.ParseDuration` takes "0s" and
/// "-1m", which Nomad's job validation then refuses in its own words
/// (`structs.go:TaskGroup.Validate`, v2.0.5).
fn max_run_duration(hcl: &HclFile, attr: &Attribute, group: &str) -> Result<Millis, LoadError> {
    let text = hcl.string(attr)?;
    let refuse = |message: &str| {
        hcl.error(
            attr.span(),
            format!("group \"{group}\": max_run_duration: {message}"),
        )
    };
    let positive = "MaxRunDuration must be greater than zero";
    if text.trim_start().starts_with('-') {
        return Err(refuse(positive));
    }
    match parse_duration(&text).map_err(|message| refuse(&message))? {
        Millis::ZERO => Err(refuse(positive)),
        duration => Ok(duration),
    }
}

/// A group `network` block: its ports (jobspec2's
/// `normalizeNetworkPorts`: a port with `static` above 0 is reserved,
/// the others dynamic), reserved ones first as Nomad's API lists them.
/// Nomad's scheduler reads the first network block only
/// (`BinPackIterator.Next`: `taskGroup.Networks[0]`).
fn parse_network(
    hcl: &HclFile,
    block: &Block,
    group: &mut NomadGroup,
    ignored: &mut Ignored,
    prefix: &str,
) -> Result<(), LoadError> {
    if group.networks_seen > 0 {
        ignored.push((
            format!("{prefix}network (a second network block)"),
            hcl.position(block.span()),
        ));
        return Ok(());
    }
    group.networks_seen += 1;
    group.ports = parse_ports(hcl, block, ignored, &format!("{prefix}network "))?;
    Ok(())
}

/// A `network` block's ports, the group's or a task's: label and static
/// value (`None`: dynamic), static ones first as Nomad's API lists them;
/// `at` names the block in warnings.
fn parse_ports(
    hcl: &HclFile,
    block: &Block,
    ignored: &mut Ignored,
    at: &str,
) -> Result<Vec<(String, Option<i64>)>, LoadError> {
    let (mut ports, mut dynamic) = (Vec::new(), Vec::new());
    for port in block.body.blocks().filter(|b| b.ident.as_str() == "port") {
        let label = hcl.label(port, "port")?;
        let mut value = None;
        for attr in port.body.attributes() {
            match attr.key.as_str() {
                "static" => value = Some(hcl.int(attr)?).filter(|&v| v > 0),
                // Where the port maps inside the task: not placement.
                "to" => {}
                other => ignored.push((
                    format!("{at}port \"{label}\" {other}"),
                    hcl.position(attr.span()),
                )),
            }
        }
        match value {
            Some(_) => ports.push((label, value)),
            None => dynamic.push((label, None)),
        }
    }
    ports.extend(dynamic);
    Ok(ports)
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
            Structure::Attribute(attr) => match attr.key.as_str() {
                "kill_timeout" => task.kill_timeout = Some(hcl.duration(attr)?),
                "shutdown_delay" => task.shutdown_delay = Some(hcl.duration(attr)?),
                _ => task.driver = Some(hcl.string(attr)?),
            },
            Structure::Block(inner) => match inner.ident.as_str() {
                "lifecycle" => {
                    let hook = match inner.body.get_attribute("hook") {
                        Some(attr) => hcl.string(attr)?,
                        None => String::new(),
                    };
                    let sidecar = match inner.body.get_attribute("sidecar") {
                        Some(attr) => hcl.boolean(attr)?,
                        None => false,
                    };
                    task.lifecycle = Some((hook, sidecar));
                }
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
                "affinity" => task.affinities.push(parse_affinity(hcl, inner)?),
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
            // A task-level network (deprecated since 0.12): the scheduler
            // still assigns its ports on the node, its first block only
            // (rank.go BinPackIterator.Next, `task.Resources.Networks[0]`).
            ("network", Structure::Block(network)) if task.networks_seen == 0 => {
                task.networks_seen += 1;
                let at = format!("{prefix}resources network ");
                for attr in network.body.attributes() {
                    // Bandwidth is not modelled; the mode is the host's.
                    if attr.key.as_str() != "mode" {
                        ignored.push((
                            format!("{at}{}", attr.key.as_str()),
                            hcl.position(attr.span()),
                        ));
                    }
                }
                task.ports = parse_ports(hcl, network, ignored, &at)?;
            }
            ("network", _) => ignored.push((
                format!("{prefix}resources network (a second network block)"),
                hcl.position(span),
            )),
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
            "sticky" => request.sticky = hcl.boolean(attr)?,
            _ => {}
        }
    }
    Ok(request)
}

pub(crate) fn parse_constraint(hcl: &HclFile, block: &Block) -> Result<NomadConstraint, LoadError> {
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
