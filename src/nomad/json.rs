//! Nomad's JSON: a job in the shape of `nomad job run -output` and of
//! `GET /v1/job/:id` (with or without the top-level `Job` wrapper), and a
//! CSI volume as `GET /v1/volume/csi/:id` returns it or as the JSON form of
//! a volume spec. Both fill the same types as the HCL front end.
//!
//! `serde_json` gives no positions for values, so a warning's line is the
//! line where the field's key first appears in the file: right for the
//! files Nomad writes, which hold one job.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::job::*;
use super::volume::NomadVolume;
use crate::model::time::Millis;
use crate::scenario::error::{LoadError, Position, file_error};
use crate::scenario::raw::{RawEphemeralDisk, RawParameterized, RawPeriodic};

/// Parses JSON text, with Nomad-shaped errors; a key repeated in one
/// object is refused (json_keys::parse_unique).
pub fn parse_value(text: &str, file: &str) -> Result<Value, LoadError> {
    refuse_bom(text, file)?;
    super::json_keys::parse_unique(text).map_err(|err| json_error(&err, file))
}

/// Parses JSON straight into `T` (only the fields `T` has are kept), with
/// a malformed file reported at its line and column.
pub fn parse_typed<'t, T: serde::Deserialize<'t>>(
    text: &'t str,
    file: &str,
) -> Result<T, LoadError> {
    refuse_bom(text, file)?;
    serde_json::from_str(text).map_err(|err| json_error(&err, file))
}

/// A UTF-8 byte order mark first is refused by name: Go's `encoding/json`
/// refuses it too ("invalid character 'ï' looking for beginning of
/// value"), and "malformed JSON" would not say what to remove.
pub(crate) fn refuse_bom(text: &str, file: &str) -> Result<(), LoadError> {
    if text.starts_with('\u{feff}') {
        return Err(file_error(
            file,
            Some(Position { line: 1, column: 1 }),
            "expected JSON, found a UTF-8 byte order mark (EF BB BF) first, which Go's JSON decoder refuses too: save the file without it",
        ));
    }
    Ok(())
}

/// A serde_json error at its line and column.
pub(crate) fn json_error(err: &serde_json::Error, file: &str) -> LoadError {
    let message = err.to_string();
    let message = message
        .rfind(" at line ")
        .map_or(message.as_str(), |i| &message[..i]);
    file_error(
        file,
        Some(Position {
            line: err.line() as u64,
            // serde_json counts the column before the first character as 0.
            column: err.column().max(1) as u64,
        }),
        // Well-formed JSON of the wrong shape (a name that is a number).
        if err.is_data() {
            format!("unexpected JSON: {message}")
        } else {
            format!("malformed JSON: {message}")
        },
    )
}

/// Where `"key"` first appears in the text.
fn key_position(text: &str, key: &str) -> Option<Position> {
    let offset = text.find(&format!("\"{key}\""))?;
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Some(Position {
        line: line as u64,
        column: column as u64,
    })
}

fn start(text: &str) -> Option<Position> {
    let offset = text.find(['{', '['])?;
    let before = &text[..offset];
    Some(Position {
        line: before.matches('\n').count() as u64 + 1,
        column: (before.len() - before.rfind('\n').map_or(0, |i| i + 1)) as u64 + 1,
    })
}

/// Refuses two keys of one struct's object that differ only in case
/// (`"Count"` and `"count"`): Go's `encoding/json` matches a field in any
/// case and assigns both in document order, so the last one written wins,
/// while the parsed object keeps no order to know which that is.
fn refuse_case_variants(
    map: &Map<String, Value>,
    text: &str,
    file: &str,
    what: &str,
) -> Result<(), LoadError> {
    let mut folded: BTreeMap<String, &str> = BTreeMap::new();
    for key in map.keys() {
        if let Some(first) = folded.insert(key.to_ascii_lowercase(), key) {
            return Err(file_error(
                file,
                key_position(text, key).or(key_position(text, first)),
                format!(
                    "{what}: keys {} and {} differ only in case: Go's decoder reads both into one field and keeps the one written last; write the key once",
                    crate::names::echoed_key(first),
                    crate::names::echoed_key(key)
                ),
            ));
        }
    }
    Ok(())
}

/// Reads typed fields of one JSON object, naming the field in errors.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    text: &'a str,
    file: &'a str,
    what: String,
}

impl<'a> Fields<'a> {
    fn new(
        value: &'a Value,
        text: &'a str,
        file: &'a str,
        what: String,
    ) -> Result<Self, LoadError> {
        match value {
            Value::Object(map) => {
                refuse_case_variants(map, text, file, &what)?;
                Ok(Fields {
                    map,
                    text,
                    file,
                    what,
                })
            }
            other => Err(file_error(
                file,
                start(text),
                format!("{what}: expected a JSON object, found {}", kind(other)),
            )),
        }
    }

    /// The value, absent when missing or null; its key matched as Go's
    /// `encoding/json` matches a field (exact, else in any case).
    fn get(&self, key: &str) -> Option<&'a Value> {
        super::json_keys::get(self.map, key)
            .map(|(_, v)| v)
            .filter(|v| !v.is_null())
    }

    /// Where the key that `key` matches first appears.
    fn at(&self, key: &str) -> Option<Position> {
        let actual = super::json_keys::get(self.map, key).map_or(key, |(k, _)| k);
        key_position(self.text, actual)
    }

    fn wrong(&self, key: &str, expected: &str, found: &Value) -> LoadError {
        file_error(
            self.file,
            self.at(key),
            format!(
                "{}.{key}: expected {expected}, found {}",
                self.what,
                kind(found)
            ),
        )
    }

    fn string(&self, key: &str) -> Result<Option<String>, LoadError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    fn int(&self, key: &str) -> Result<Option<i64>, LoadError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| match v {
                // A fraction or an exponent (`1e2`): serde_json reads it as a
                // float, and Go's decoder refuses it for an integer field
                // (`strconv.ParseInt` of the literal), whole or not.
                Value::Number(n) if n.is_f64() => self.wrong(
                    key,
                    "a whole number written in digits only (Go's decoder refuses a fraction or an exponent such as 1e2 here)",
                    v,
                ),
                Value::Number(_) => self.wrong(key, "a whole number of at most 9223372036854775807", v),
                _ => self.wrong(key, "a whole number", v),
            }),
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, LoadError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong(key, "true or false", other)),
        }
    }

    fn list(&self, key: &str) -> Result<&'a [Value], LoadError> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.wrong(key, "a list", other)),
        }
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, LoadError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| self.wrong(key, "a list of strings", v))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.wrong(key, "a list of strings", other)),
        }
    }

    /// Durations in Nomad's JSON are nanoseconds.
    fn nanos(&self, key: &str) -> Result<Option<Millis>, LoadError> {
        match self.int(key)? {
            None => Ok(None),
            Some(n) if n >= 0 => Ok(Some(Millis(n.unsigned_abs() / 1_000_000))),
            Some(n) => Err(file_error(
                self.file,
                self.at(key),
                format!("{}.{key}: duration {n} ns is negative", self.what),
            )),
        }
    }

    /// A field present with a value that is not Nomad's "unset".
    fn set(&self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(m)) => !m.is_empty(),
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Null) => false,
        }
    }

    fn ignore_if_set(&self, keys: &[&str], prefix: &str, ignored: &mut Ignored) {
        for key in keys {
            if self.set(key) {
                ignored.push((format!("{prefix}{key}"), self.at(key)));
            }
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Parses a JSON job, with or without the `{"Job": ...}` wrapper.
pub fn parse_job(text: &str, file: &str) -> Result<NomadJob, LoadError> {
    let value = parse_value(text, file)?;
    let job = match value.get("Job") {
        Some(inner) if value.as_object().is_some_and(|m| m.len() <= 2) => inner,
        _ => &value,
    };
    let fields = Fields::new(job, text, file, "job".to_string())?;
    let looks_like_job = fields.get("TaskGroups").is_some()
        || (fields.get("ID").is_some() && fields.get("Type").is_some());
    if !looks_like_job {
        let keys: Vec<&str> = fields.map.keys().take(5).map(String::as_str).collect();
        let hint = if fields.get("PluginID").is_some() {
            " (this looks like a CSI volume: list it under volumes: as - file: ...)"
        } else if fields.get("NodeClass").is_some() || fields.get("Drivers").is_some() {
            " (this looks like a node)"
        } else {
            ""
        };
        return Err(file_error(
            file,
            start(text),
            format!(
                "not a Nomad job: expected an object with ID and TaskGroups (GET /v1/job/:id), or {{\"Job\": {{...}}}} (nomad job run -output); found keys {}{hint}",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ),
        ));
    }
    let id = fields
        .string("ID")?
        .or(fields.string("Name")?)
        .unwrap_or_default();
    let mut out = NomadJob {
        id: id.clone(),
        at: key_position(text, "ID").or(start(text)),
        job_type: fields.string("Type")?.unwrap_or_default(),
        priority: fields.int("Priority")?,
        datacenters: fields.strings("Datacenters")?,
        ..NomadJob::default()
    };
    super::json_keys::unknown_keys(job, &mut out.ignored, &|key| key_position(text, key));
    fields.ignore_if_set(&["Multiregion"], "", &mut out.ignored);
    out.migrate = migrate_block(&fields, text, file)?;
    // GET /v1/job gives every job its pool; "" is Nomad's unset.
    out.node_pool = fields.string("NodePool")?.filter(|p| !p.is_empty());
    out.namespace = fields.string("Namespace")?.filter(|n| !n.is_empty());
    out.constraints = constraints(&fields, text, file)?;
    out.spreads = spreads(&fields, text, file)?;
    out.affinities = affinities(&fields, text, file)?;
    let job_reschedule = fields.get("Reschedule");
    out.update = update(&fields, text, file, "Update")?;
    (out.periodic, out.parameterized) = launch_blocks(&fields, text, file)?;
    for (index, group) in fields.list("TaskGroups")?.iter().enumerate() {
        let g = Fields::new(group, text, file, format!("job.TaskGroups[{index}]"))?;
        let group = parse_group(&g, job_reschedule, text, file, &mut out.ignored)?;
        out.groups.push(group);
    }
    Ok(out)
}

/// The job's `Periodic` and `ParameterizedJob` (api.PeriodicConfig,
/// api.ParameterizedJobConfig); null or absent is none. An exported job
/// carries both `Spec` and `Specs`, the unused one empty.
fn launch_blocks(
    fields: &Fields,
    text: &str,
    file: &str,
) -> Result<(Option<RawPeriodic>, Option<RawParameterized>), LoadError> {
    let periodic = match fields.get("Periodic") {
        None => None,
        Some(value) => {
            let p = Fields::new(value, text, file, format!("{}.Periodic", fields.what))?;
            if let Some(kind) = p
                .string("SpecType")?
                .filter(|k| !k.is_empty() && k != "cron")
            {
                return Err(file_error(
                    file,
                    p.at("SpecType"),
                    format!(
                        "{}.SpecType: {kind:?} is not modelled (expected \"cron\")",
                        p.what
                    ),
                ));
            }
            Some(RawPeriodic {
                cron: p.string("Spec")?.filter(|s| !s.is_empty()),
                crons: p.strings("Specs")?.filter(|s| !s.is_empty()),
                prohibit_overlap: p.boolean("ProhibitOverlap")?,
                time_zone: p.string("TimeZone")?,
                enabled: p.boolean("Enabled")?,
            })
        }
    };
    let parameterized = match fields.get("ParameterizedJob") {
        None => None,
        Some(value) => {
            let p = Fields::new(
                value,
                text,
                file,
                format!("{}.ParameterizedJob", fields.what),
            )?;
            Some(RawParameterized {
                payload: p.string("Payload")?,
                meta_required: p.strings("MetaRequired")?,
                meta_optional: p.strings("MetaOptional")?,
            })
        }
    };
    Ok((periodic, parameterized))
}

/// One of the job's TaskGroups; `job_reschedule` is the job's
/// ReschedulePolicy, every group's default.
fn parse_group(
    g: &Fields,
    job_reschedule: Option<&Value>,
    text: &str,
    file: &str,
    ignored: &mut Ignored,
) -> Result<NomadGroup, LoadError> {
    let name = g.string("Name")?.unwrap_or_default();
    let prefix = format!("group \"{name}\" ");
    let mut tasks = Vec::new();
    let mut group_constraints = constraints(g, text, file)?;
    let mut group_affinities = affinities(g, text, file)?;
    // PreventRescheduleOnLost is deprecated and ignored at 2.0.5
    // (structs.go TaskGroup.Warnings) and absent from 1.2.6: nothing to
    // model (json_keys.rs knows it, so it is skipped quietly).
    let ephemeral_disk = match g.get("EphemeralDisk") {
        Some(disk) => {
            let d = Fields::new(disk, text, file, format!("{}.EphemeralDisk", g.what))?;
            Some(RawEphemeralDisk {
                size: d.int("SizeMB")?,
                sticky: d.boolean("Sticky")?,
                migrate: d.boolean("Migrate")?,
            })
        }
        None => None,
    };
    let at = format!("{prefix}network ");
    let ports = network_ports(g, (&at, false), (text, file), ignored)?;
    let volumes = group_volumes(g, text, file)?;
    for (t, task) in g.list("Tasks")?.iter().enumerate() {
        tasks.push(parse_task(
            g,
            t,
            task,
            (text, file),
            &prefix,
            (&mut group_constraints, &mut group_affinities),
            ignored,
        )?);
    }
    let reschedule = match g.get("ReschedulePolicy").or(job_reschedule) {
        None => None,
        Some(policy) => {
            let r = Fields::new(policy, text, file, format!("{}.ReschedulePolicy", g.what))?;
            Some(NomadReschedule {
                attempts: r.int("Attempts")?,
                interval: r.nanos("Interval")?,
                delay: r.nanos("Delay")?,
                delay_function: r.string("DelayFunction")?.filter(|s| !s.is_empty()),
                max_delay: r.nanos("MaxDelay")?,
                unlimited: r.boolean("Unlimited")?,
            })
        }
    };
    let group_update = update(g, text, file, "Update")?;
    let migrate = migrate_block(g, text, file)?;
    // The group fields (deprecated in 1.8, ignored from 1.10) and Nomad
    // 1.8+'s Disconnect block, each kept apart: the release decides which
    // counts.
    let (mut lost_after, mut stop_on_client_after) = (None, None);
    if let Some(block) = g.get("Disconnect").filter(|b| !b.is_null()) {
        let d = Fields::new(block, text, file, format!("{}.Disconnect", g.what))?;
        lost_after = d.nanos("LostAfter")?.filter(|&t| t > Millis::ZERO);
        stop_on_client_after = d.nanos("StopOnClientAfter")?;
        // The API fills in Canonicalize's defaults (replace, best_score),
        // which are what plansim models; another value is not.
        if d.boolean("Replace")? == Some(false) {
            ignored.push((
                format!("{prefix}disconnect replace"),
                key_position(text, "Replace"),
            ));
        }
        if d.string("Reconcile")?
            .is_some_and(|r| !r.is_empty() && r != "best_score")
        {
            ignored.push((
                format!("{prefix}disconnect reconcile"),
                key_position(text, "Reconcile"),
            ));
        }
    }
    let run_limit = max_run_duration(g, &name)?;
    Ok(NomadGroup {
        update: group_update,
        at: key_position(text, &name),
        name,
        count: g.int("Count")?,
        volumes,
        reschedule,
        constraints: group_constraints,
        tasks,
        spreads: spreads(g, text, file)?,
        affinities: group_affinities,
        migrate,
        max_client_disconnect: g.nanos("MaxClientDisconnect")?,
        stop_after_client_disconnect: g.nanos("StopAfterClientDisconnect")?,
        lost_after,
        stop_on_client_after,
        shutdown_delay: g.nanos("ShutdownDelay")?,
        max_run_duration: run_limit,
        ports,
        networks_seen: 0,
        ephemeral_disk,
    })
}

/// The ports of the first of `owner`'s Networks (a group's, or a task's
/// Resources'): the scheduler reads only that one (BinPackIterator.Next);
/// `at` names the block in warnings. A task network's bandwidth counts
/// against the node's (`AssignTaskNetwork`), a group network's does not.
fn network_ports(
    owner: &Fields,
    (at, task): (&str, bool),
    (text, file): (&str, &str),
    ignored: &mut Ignored,
) -> Result<Vec<(String, Option<i64>)>, LoadError> {
    let mut ports = Vec::new();
    for (n, network) in owner.list("Networks")?.iter().enumerate() {
        let net = Fields::new(network, text, file, format!("{}.Networks[{n}]", owner.what))?;
        if n > 0 {
            ignored.push((
                format!("{at}(a second network block)"),
                key_position(text, "Networks"),
            ));
            continue;
        }
        // Bandwidth is not modelled.
        if task && net.int("MBits")?.is_some_and(|m| m > 0) {
            ignored.push((format!("{at}mbits"), key_position(text, "MBits")));
        }
        for (key, reserved) in [("ReservedPorts", true), ("DynamicPorts", false)] {
            for (i, port) in net.list(key)?.iter().enumerate() {
                let p = Fields::new(port, text, file, format!("{}.{key}[{i}]", net.what))?;
                let label = p.string("Label")?.unwrap_or_default();
                for unmodelled in ["HostNetwork", "IgnoreCollision"] {
                    if p.get(unmodelled)
                        .is_some_and(|v| !v.is_null() && v != "" && v != false)
                    {
                        ignored.push((
                            format!("{at}port \"{label}\" {unmodelled}"),
                            key_position(text, unmodelled),
                        ));
                    }
                }
                let value = if reserved {
                    Some(p.int("Value")?.unwrap_or(0))
                } else {
                    None
                };
                ports.push((label, value));
            }
        }
    }
    Ok(ports)
}

/// A group's `MaxRunDuration` (nanoseconds), with where it was written:
/// 0 and less refused as Nomad's job validation refuses them
/// (`structs.go:TaskGroup.Validate`, v2.0.5); a positive one below a
/// millisecond, which rounding down would make 0s, is 1ms (plansim's clock
/// ticks in milliseconds).
fn max_run_duration(
    g: &Fields,
    group: &str,
) -> Result<Option<(Millis, Option<Position>)>, LoadError> {
    const KEY: &str = "MaxRunDuration";
    match g.int(KEY)? {
        None => Ok(None),
        Some(n) if n > 0 => {
            let millis = (n.unsigned_abs() / 1_000_000).max(1);
            Ok(Some((Millis(millis), g.at(KEY))))
        }
        Some(_) => Err(file_error(
            g.file,
            g.at(KEY),
            format!(
                "group \"{group}\": max_run_duration: MaxRunDuration must be greater than zero"
            ),
        )),
    }
}

/// A group's Volumes: its volume requests by alias.
fn group_volumes(g: &Fields, text: &str, file: &str) -> Result<Vec<NomadVolumeRequest>, LoadError> {
    let mut volumes = Vec::new();
    if let Some(map) = g.get("Volumes") {
        let Value::Object(map) = map else {
            return Err(g.wrong("Volumes", "an object of volume requests", map));
        };
        for (alias, request) in map {
            let r = Fields::new(request, text, file, format!("{}.Volumes[{alias}]", g.what))?;
            volumes.push(NomadVolumeRequest {
                alias: alias.clone(),
                at: key_position(text, alias),
                volume_type: r.string("Type")?.unwrap_or_else(|| "host".into()),
                source: r.string("Source")?.unwrap_or_default(),
                read_only: r.boolean("ReadOnly")?.unwrap_or(false),
                per_alloc: r.boolean("PerAlloc")?.unwrap_or(false),
                access_mode: r.string("AccessMode")?.filter(|s| !s.is_empty()),
                attachment_mode: r.string("AttachmentMode")?.filter(|s| !s.is_empty()),
                sticky: r.boolean("Sticky")?.unwrap_or(false),
            });
        }
    }
    Ok(volumes)
}

/// One of a group's Tasks. Its constraints and affinities count as the
/// group's (pushed onto `group_placement`).
fn parse_task(
    g: &Fields,
    t: usize,
    task: &Value,
    (text, file): (&str, &str),
    prefix: &str,
    group_placement: (&mut Vec<NomadConstraint>, &mut Vec<NomadAffinity>),
    ignored: &mut Ignored,
) -> Result<NomadTask, LoadError> {
    let (group_constraints, group_affinities) = group_placement;
    let tf = Fields::new(task, text, file, format!("{}.Tasks[{t}]", g.what))?;
    let task_name = tf.string("Name")?.unwrap_or_default();
    let task_prefix = format!("{prefix}task \"{task_name}\" ");
    group_constraints.extend(constraints(&tf, text, file)?);
    // A task's affinities score its group's placement (rank.go).
    group_affinities.extend(affinities(&tf, text, file)?);
    let mut parsed = NomadTask {
        name: task_name,
        at: None,
        driver: tf.string("Driver")?,
        kill_timeout: tf.nanos("KillTimeout")?,
        shutdown_delay: tf.nanos("ShutdownDelay")?,
        ..NomadTask::default()
    };
    // `api.TaskLifecycle`; `null` is a main task.
    if let Some(lifecycle) = tf.get("Lifecycle") {
        let l = Fields::new(lifecycle, text, file, format!("{}.Lifecycle", tf.what))?;
        parsed.lifecycle = Some((
            l.string("Hook")?.unwrap_or_default(),
            l.boolean("Sidecar")?.unwrap_or(false),
        ));
    }
    if let Some(resources) = tf.get("Resources") {
        let r = Fields::new(resources, text, file, format!("{}.Resources", tf.what))?;
        parsed.cpu = r.int("CPU")?;
        parsed.memory = r.int("MemoryMB")?;
        r.ignore_if_set(
            &["Cores", "Devices", "NUMA"],
            &format!("{task_prefix}resources "),
            ignored,
        );
        // A task-level network (deprecated since 0.12) is still placed.
        let at = format!("{task_prefix}resources network ");
        parsed.ports = network_ports(&r, (&at, true), (text, file), ignored)?;
    }
    if let Some(plugin) = tf.get("CSIPluginConfig") {
        let p = Fields::new(plugin, text, file, format!("{}.CSIPluginConfig", tf.what))?;
        parsed.csi_plugin = Some((
            p.string("ID")?.unwrap_or_default(),
            p.string("Type")?.unwrap_or_default(),
        ));
    }
    for mount in tf.list("VolumeMounts")? {
        let m = Fields::new(mount, text, file, format!("{}.VolumeMounts", tf.what))?;
        parsed.volume_mounts.push((
            m.string("Volume")?.unwrap_or_default(),
            m.string("Destination")?.unwrap_or_default(),
        ));
    }
    Ok(parsed)
}

fn constraints(fields: &Fields, text: &str, file: &str) -> Result<Vec<NomadConstraint>, LoadError> {
    fields
        .list("Constraints")?
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let c = Fields::new(c, text, file, format!("{}.Constraints[{i}]", fields.what))?;
            Ok(NomadConstraint {
                attribute: c.string("LTarget")?.unwrap_or_default(),
                operator: c.string("Operand")?.unwrap_or_default(),
                value: c.string("RTarget")?.unwrap_or_default(),
                at: key_position(text, "Constraints"),
            })
        })
        .collect()
}

fn spreads(fields: &Fields, text: &str, file: &str) -> Result<Vec<NomadSpread>, LoadError> {
    fields
        .list("Spreads")?
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let s = Fields::new(s, text, file, format!("{}.Spreads[{i}]", fields.what))?;
            let mut targets = Vec::new();
            for (j, t) in s.list("SpreadTarget")?.iter().enumerate() {
                let t = Fields::new(t, text, file, format!("{}.SpreadTarget[{j}]", s.what))?;
                targets.push((
                    t.string("Value")?.unwrap_or_default(),
                    t.int("Percent")?.unwrap_or(0),
                ));
            }
            Ok(NomadSpread {
                attribute: s.string("Attribute")?.unwrap_or_default(),
                weight: s.int("Weight")?,
                targets,
                at: key_position(text, "Spreads"),
            })
        })
        .collect()
}

fn affinities(fields: &Fields, text: &str, file: &str) -> Result<Vec<NomadAffinity>, LoadError> {
    fields
        .list("Affinities")?
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let a = Fields::new(a, text, file, format!("{}.Affinities[{i}]", fields.what))?;
            Ok(NomadAffinity {
                attribute: a.string("LTarget")?.unwrap_or_default(),
                operator: a.string("Operand")?.unwrap_or_default(),
                value: a.string("RTarget")?.unwrap_or_default(),
                weight: a.int("Weight")?,
                at: key_position(text, "Affinities"),
            })
        })
        .collect()
}

/// Parses a JSON volume: the API's shape (`ID`, `PluginID`,
/// `RequestedCapabilities`, ...) or the spec's (`id`, `plugin_id`,
/// `capability`, ...), optionally wrapped as `{"Volume": ...}` or
/// `{"Volumes": [one]}`.
pub fn parse_volume(text: &str, file: &str) -> Result<NomadVolume, LoadError> {
    let value = parse_value(text, file)?;
    let inner = match (
        &value.get("Volume"),
        value.get("Volumes").and_then(Value::as_array),
    ) {
        (Some(v), _) => (*v).clone(),
        (None, Some(list)) if list.len() == 1 => list[0].clone(),
        _ => value.clone(),
    };
    volume_from_value(&inner, text, file)
}

/// A volume from its JSON object (`text` is the file it came from, for
/// positions).
pub fn volume_from_value(inner: &Value, text: &str, file: &str) -> Result<NomadVolume, LoadError> {
    let Value::Object(map) = inner else {
        return Err(file_error(
            file,
            start(text),
            format!(
                "not a volume: expected a JSON object, found {}",
                kind(inner)
            ),
        ));
    };
    // The API writes CamelCase, the spec snake_case: compare keys folded.
    let fold = super::volume::fold_key;
    let folded: BTreeMap<String, &Value> = map.iter().map(|(k, v)| (fold(k), v)).collect();
    let get = |key: &str| folded.get(&fold(key)).copied().filter(|v| !v.is_null());
    let text_of = |key: &str| get(key).and_then(Value::as_str).map(str::to_string);
    if get("plugin_id").is_none() {
        let keys: Vec<&str> = map.keys().take(5).map(String::as_str).collect();
        let hint = if get("TaskGroups").is_some() {
            " (this looks like a job: list it under jobs: as - file: ...)"
        } else {
            ""
        };
        return Err(file_error(
            file,
            start(text),
            format!(
                "not a CSI volume: expected an object with ID, PluginID and capabilities (GET /v1/volume/csi/:id) or id, plugin_id and capability (a volume spec); found keys {}{hint}",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ),
        ));
    }
    let mut ignored = Vec::new();
    super::volume::unknown_json_keys(map, &|key| key_position(text, key), &mut ignored);
    let mut volume = NomadVolume {
        ignored,
        id: text_of("id").unwrap_or_default(),
        at: start(text),
        volume_type: text_of("type").unwrap_or_else(|| "csi".into()),
        plugin_id: text_of("plugin_id").unwrap_or_default(),
        // The API gives every volume its namespace; "" is Nomad's unset.
        namespace: text_of("namespace").filter(|n| !n.is_empty()),
        name: text_of("name").unwrap_or_default(),
        node_id: text_of("node_id").filter(|n| !n.is_empty()),
        node_pool: text_of("node_pool").filter(|n| !n.is_empty()),
        ..NomadVolume::default()
    };
    let capability_list = get("RequestedCapabilities").or(get("capability"));
    let capability_list: Vec<&Value> = match capability_list {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one @ Value::Object(_)) => vec![one],
        _ => Vec::new(),
    };
    for capability in capability_list {
        let access = capability
            .get("AccessMode")
            .or(capability.get("access_mode"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let attachment = capability
            .get("AttachmentMode")
            .or(capability.get("attachment_mode"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        volume
            .capabilities
            .push((access.to_string(), attachment.to_string()));
    }
    // The API's current mode, when no capability list came with it.
    if volume.capabilities.is_empty()
        && let Some(access) = text_of("AccessMode").filter(|s| !s.is_empty())
    {
        volume
            .capabilities
            .push((access, text_of("AttachmentMode").unwrap_or_default()));
    }
    // Topologies: where a registered volume is accessible (the API's
    // `Topologies[].Segments`), else what its spec requires.
    volume.topologies = segments_of(get("Topologies"));
    let accessible_known = !volume.topologies.is_empty();
    // The spec's `RequestedTopologies.Required[].Segments`.
    if let Some(requested) = get("RequestedTopologies").and_then(Value::as_object) {
        if !accessible_known {
            volume.topologies = segments_of(requested.get("Required"));
        }
        if requested.get("Preferred").is_some_and(|p| !p.is_null()) {
            volume.ignored.push((
                "RequestedTopologies.Preferred".into(),
                key_position(text, "Preferred"),
            ));
        }
    }
    Ok(volume)
}

/// `[{"Segments": {...}}, ...]` (Nomad's `CSITopology` list) as maps.
pub fn segments_of(list: Option<&Value>) -> Vec<BTreeMap<String, String>> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|topology| topology.get("Segments").and_then(Value::as_object))
        .map(|segments| {
            segments
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .collect()
}

/// An `Update` object (job or group), durations in nanoseconds; `null` is none.
fn update(
    fields: &Fields,
    text: &str,
    file: &str,
    key: &str,
) -> Result<Option<crate::scenario::raw::RawUpdate>, LoadError> {
    use crate::scenario::raw::{RawCount, RawDuration, RawUpdate};
    let Some(value) = fields.get(key).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let u = Fields::new(value, text, file, format!("{}.{key}", fields.what))?;
    let count = |name: &str| -> Result<Option<RawCount>, LoadError> {
        match u.int(name)? {
            None => Ok(None),
            Some(n) => u32::try_from(n).map(|n| Some(RawCount(n))).map_err(|_| {
                u.wrong(
                    name,
                    "a count of at least 0",
                    &u.get(name).cloned().unwrap_or_default(),
                )
            }),
        }
    };
    let duration = |name: &str| u.nanos(name).map(|d| d.map(RawDuration));
    Ok(Some(RawUpdate {
        max_parallel: count("MaxParallel")?,
        canary: count("Canary")?,
        min_healthy_time: duration("MinHealthyTime")?,
        healthy_deadline: duration("HealthyDeadline")?,
        progress_deadline: duration("ProgressDeadline")?,
        auto_revert: u.boolean("AutoRevert")?,
        auto_promote: u.boolean("AutoPromote")?,
        stagger: duration("Stagger")?,
    }))
}

/// A job's or group's `Migrate` block.
fn migrate_block(g: &Fields, text: &str, file: &str) -> Result<Option<NomadMigrate>, LoadError> {
    match g.get("Migrate") {
        None | Some(Value::Null) => Ok(None),
        Some(block) => {
            let m = Fields::new(block, text, file, format!("{}.Migrate", g.what))?;
            Ok(Some(NomadMigrate {
                max_parallel: m.int("MaxParallel")?,
                health_check: m.string("HealthCheck")?,
                min_healthy_time: m.nanos("MinHealthyTime")?,
                healthy_deadline: m.nanos("HealthyDeadline")?,
            }))
        }
    }
}
