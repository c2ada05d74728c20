//! The keys of Nomad's job JSON: duplicates refused as the text is parsed,
//! keys matched as Go's `encoding/json` matches them (an exact name first,
//! else any case: `nomad job run -json` decodes with `json.NewDecoder` in
//! `command/helpers.go:JobGetter.Get`, which ignores a key no field takes),
//! and the keys no field of the `api` structs takes (`api/jobs.go`,
//! `api/tasks.go`, `api/resources.go`, ... at v2.0.5, with 1.2.6's) warned
//! about, as HCL's unknown blocks and attributes are: a misspelt
//! `"Constraint"` would otherwise drop a constraint without a word.

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::job::Ignored;
use crate::scenario::error::Position;

/// Parses JSON text into a value, refusing an object that repeats a key
/// (Go would keep the last; a repeated key is a mistake either way).
pub(super) fn parse_unique(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Unique>(text).map(|u| u.0)
}

struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {}: expected each key once in an object",
                    if crate::names::is_field_name(&key) {
                        crate::names::echoed_key(&key)
                    } else {
                        format!("({})", crate::names::echoed_key(&key))
                    }
                )));
            }
            let Unique(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// The value of `key` in `map`, matched as Go matches a field: the exact
/// name, else the first key equal but for case.
pub(super) fn get<'v>(map: &'v Map<String, Value>, key: &str) -> Option<(&'v str, &'v Value)> {
    map.get_key_value(key)
        .or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)))
        .map(|(k, v)| (k.as_str(), v))
}

/// One `api` struct: its JSON keys, and the fields plansim descends into.
struct Schema {
    name: &'static str,
    keys: &'static [&'static str],
    children: &'static [(&'static str, Child)],
}

enum Child {
    One(&'static Schema),
    List(&'static Schema),
    /// An object of these, by name (a group's `Volumes`).
    Map(&'static Schema),
}

static JOB: Schema = Schema {
    name: "api.Job",
    keys: &[
        "Region",
        "Namespace",
        "ID",
        "Name",
        "Type",
        "Priority",
        "AllAtOnce",
        "Datacenters",
        "NodePool",
        "Constraints",
        "Affinities",
        "TaskGroups",
        "Update",
        "Multiregion",
        "Spreads",
        "Periodic",
        "ParameterizedJob",
        "Reschedule",
        "Migrate",
        "Meta",
        "UI",
        "Stop",
        "ParentID",
        "Dispatched",
        "DispatchIdempotencyToken",
        "Payload",
        "ConsulNamespace",
        "VaultNamespace",
        "NomadTokenID",
        "Status",
        "StatusDescription",
        "Stable",
        "Version",
        "SubmitTime",
        "CreateIndex",
        "ModifyIndex",
        "JobModifyIndex",
        "VersionTag",
        "ConsulToken",
        "VaultToken",
    ],
    children: &[
        ("TaskGroups", Child::List(&TASK_GROUP)),
        ("Constraints", Child::List(&CONSTRAINT)),
        ("Affinities", Child::List(&AFFINITY)),
        ("Spreads", Child::List(&SPREAD)),
        ("Update", Child::One(&UPDATE)),
        ("Reschedule", Child::One(&RESCHEDULE)),
        ("Migrate", Child::One(&MIGRATE)),
    ],
};

static TASK_GROUP: Schema = Schema {
    name: "api.TaskGroup",
    keys: &[
        "Name",
        "Count",
        "Constraints",
        "Affinities",
        "Tasks",
        "Spreads",
        "Volumes",
        "RestartPolicy",
        "Disconnect",
        "ReschedulePolicy",
        "EphemeralDisk",
        "Update",
        "Migrate",
        "Networks",
        "Meta",
        "Services",
        "ShutdownDelay",
        "MaxRunDuration",
        "StopAfterClientDisconnect",
        "MaxClientDisconnect",
        "Scaling",
        "Consul",
        "PreventRescheduleOnLost",
    ],
    children: &[
        ("Tasks", Child::List(&TASK)),
        ("Constraints", Child::List(&CONSTRAINT)),
        ("Affinities", Child::List(&AFFINITY)),
        ("Spreads", Child::List(&SPREAD)),
        ("Volumes", Child::Map(&VOLUME_REQUEST)),
        ("ReschedulePolicy", Child::One(&RESCHEDULE)),
        ("EphemeralDisk", Child::One(&EPHEMERAL_DISK)),
        ("Update", Child::One(&UPDATE)),
        ("Migrate", Child::One(&MIGRATE)),
        ("Disconnect", Child::One(&DISCONNECT)),
    ],
};

static TASK: Schema = Schema {
    name: "api.Task",
    keys: &[
        "Name",
        "Driver",
        "User",
        "Lifecycle",
        "Config",
        "Constraints",
        "Affinities",
        "Env",
        "Services",
        "Resources",
        "RestartPolicy",
        "Meta",
        "KillTimeout",
        "LogConfig",
        "Artifacts",
        "Vault",
        "Consul",
        "Templates",
        "DispatchPayload",
        "VolumeMounts",
        "CSIPluginConfig",
        "Leader",
        "ShutdownDelay",
        "KillSignal",
        "Kind",
        "ScalingPolicies",
        "Secrets",
        "Identity",
        "Identities",
        "Actions",
        "Schedule",
    ],
    children: &[
        ("Constraints", Child::List(&CONSTRAINT)),
        ("Affinities", Child::List(&AFFINITY)),
        ("Resources", Child::One(&RESOURCES)),
        ("VolumeMounts", Child::List(&VOLUME_MOUNT)),
        ("CSIPluginConfig", Child::One(&CSI_PLUGIN)),
    ],
};

static RESOURCES: Schema = leaf(
    "api.Resources",
    &[
        "CPU",
        "Cores",
        "MemoryMB",
        "MemoryMaxMB",
        "DiskMB",
        "Networks",
        "Devices",
        "NUMA",
        "SecretsMB",
        "IOPS",
    ],
);
static CONSTRAINT: Schema = leaf("api.Constraint", &["LTarget", "RTarget", "Operand"]);
static AFFINITY: Schema = leaf("api.Affinity", &["LTarget", "RTarget", "Operand", "Weight"]);
static SPREAD: Schema = Schema {
    name: "api.Spread",
    keys: &["Attribute", "Weight", "SpreadTarget"],
    children: &[("SpreadTarget", Child::List(&SPREAD_TARGET))],
};
static SPREAD_TARGET: Schema = leaf("api.SpreadTarget", &["Value", "Percent"]);
static RESCHEDULE: Schema = leaf(
    "api.ReschedulePolicy",
    &[
        "Attempts",
        "Interval",
        "Delay",
        "DelayFunction",
        "MaxDelay",
        "Unlimited",
    ],
);
static UPDATE: Schema = leaf(
    "api.UpdateStrategy",
    &[
        "Stagger",
        "MaxParallel",
        "HealthCheck",
        "MinHealthyTime",
        "HealthyDeadline",
        "ProgressDeadline",
        "Canary",
        "AutoRevert",
        "AutoPromote",
    ],
);
static MIGRATE: Schema = leaf(
    "api.MigrateStrategy",
    &[
        "MaxParallel",
        "HealthCheck",
        "MinHealthyTime",
        "HealthyDeadline",
    ],
);
static VOLUME_REQUEST: Schema = leaf(
    "api.VolumeRequest",
    &[
        "Name",
        "Type",
        "Source",
        "ReadOnly",
        "Sticky",
        "AccessMode",
        "AttachmentMode",
        "MountOptions",
        "PerAlloc",
    ],
);
static VOLUME_MOUNT: Schema = leaf(
    "api.VolumeMount",
    &[
        "Volume",
        "Destination",
        "ReadOnly",
        "PropagationMode",
        "SELinuxLabel",
    ],
);
static CSI_PLUGIN: Schema = leaf(
    "api.TaskCSIPluginConfig",
    &[
        "ID",
        "Type",
        "MountDir",
        "StagePublishBaseDir",
        "HealthTimeout",
    ],
);
static EPHEMERAL_DISK: Schema = leaf("api.EphemeralDisk", &["Sticky", "Migrate", "SizeMB"]);
static DISCONNECT: Schema = leaf(
    "api.DisconnectStrategy",
    &["LostAfter", "StopOnClientAfter", "Replace", "Reconcile"],
);

const fn leaf(name: &'static str, keys: &'static [&'static str]) -> Schema {
    Schema {
        name,
        keys,
        children: &[],
    }
}

/// Adds to `ignored` every key of the job (and of the objects plansim
/// reads inside it) that no field of Nomad's structs takes, at the line
/// where the key first appears (`position` finds it).
/// The first [`MAX_UNKNOWN_KEYS`] are named (finding each one's line scans
/// the text); the rest are counted.
pub(super) fn unknown_keys(
    job: &Value,
    ignored: &mut Ignored,
    position: &dyn Fn(&str) -> Option<Position>,
) {
    let mut unknown = Unknown {
        ignored,
        position,
        named: 0,
        more: 0,
    };
    walk(job, &JOB, "job", &mut unknown);
    if unknown.more > 0 {
        let more = unknown.more;
        unknown.ignored.push((
            format!("{more} more keys Nomad's structs do not take"),
            None,
        ));
    }
}

/// Unknown keys named in one file's warning, at most.
const MAX_UNKNOWN_KEYS: usize = 100;

struct Unknown<'u> {
    ignored: &'u mut Ignored,
    position: &'u dyn Fn(&str) -> Option<Position>,
    named: usize,
    more: u64,
}

fn walk(value: &Value, schema: &Schema, path: &str, unknown: &mut Unknown) {
    let Value::Object(map) = value else {
        return;
    };
    for key in map.keys() {
        if schema.keys.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            continue;
        }
        if unknown.named == MAX_UNKNOWN_KEYS {
            unknown.more += 1;
            continue;
        }
        unknown.named += 1;
        let hint = schema
            .keys
            .iter()
            .find(|k| {
                let (k, key) = (k.to_ascii_lowercase(), key.to_ascii_lowercase());
                k == format!("{key}s") || key == format!("{k}s") || k == key.replace('_', "")
            })
            .map_or(String::new(), |k| format!("; did you mean {k}?"));
        // A key is repeated only if it has a name's shape: a JSON job
        // holding a line of some other file (a connection string with its
        // password) never has it echoed.
        let named = if crate::names::is_field_name(key) {
            format!("{path}.{key}")
        } else {
            format!("{path}: {}", crate::names::echoed_key(key))
        };
        unknown.ignored.push((
            format!(
                "{named} (not a field of Nomad's {}: Nomad ignores it{hint})",
                schema.name
            ),
            (unknown.position)(key),
        ));
    }
    for (key, child) in schema.children {
        let Some((actual, inner)) = get(map, key) else {
            continue;
        };
        let path = format!("{path}.{actual}");
        match (child, inner) {
            (Child::One(s), _) => walk(inner, s, &path, unknown),
            (Child::List(s), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, s, &format!("{path}[{i}]"), unknown);
                }
            }
            (Child::Map(s), Value::Object(entries)) => {
                for (name, item) in entries {
                    let name = crate::names::one_line(name);
                    walk(item, s, &format!("{path}[{name}]"), unknown);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_refused_where_it_is() {
        let err = parse_unique("{\n  \"ID\": \"a\",\n  \"ID\": \"b\"\n}").unwrap_err();
        assert!(err.to_string().contains("duplicate key \"ID\""), "{err}");
        assert_eq!(err.line(), 3);
        assert!(parse_unique("{\"a\": {\"ID\": 1}, \"b\": {\"ID\": 2}}").is_ok());
    }

    #[test]
    fn keys_match_in_any_case_and_unknown_ones_are_named() {
        let job: Value = serde_json::from_str(
            r#"{"id": "x", "TaskGroups": [{"Name": "g", "Constraint": [], "tasks": [{"Drivr": "d"}]}]}"#,
        )
        .unwrap();
        let mut ignored = Vec::new();
        unknown_keys(&job, &mut ignored, &|_| None);
        let names: Vec<&str> = ignored.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(
            names[0].starts_with("job.TaskGroups[0].Constraint ")
                && names[0].contains("did you mean Constraints?")
        );
        assert!(names[1].starts_with("job.TaskGroups[0].tasks[0].Drivr "));
        assert_eq!(
            get(job.as_object().unwrap(), "ID").map(|(k, _)| k),
            Some("id")
        );
    }
}
