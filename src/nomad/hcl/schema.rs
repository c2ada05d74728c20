//! Which fields of a job, group and task block plansim reads, which it
//! skips quietly, and the walk that warns about the rest.

use hcl::edit::Span;
use hcl::edit::structure::{Body, Structure};

use super::file::HclFile;
use crate::nomad::job::Ignored;
use crate::scenario::error::LoadError;

/// The fields of one kind of block: those plansim reads, and those it
/// skips quietly because they cannot change placement. Every other field is
/// warned about: it could matter (spread, affinity, update, ...), or plansim
/// does not know it.
pub(super) struct Schema {
    attributes: (&'static [&'static str], &'static [&'static str]),
    blocks: (&'static [&'static str], &'static [&'static str]),
}

/// Calls `read` for every field `schema` reads; returns the fields to warn
/// about, named after `prefix`.
pub(super) fn walk<'b>(
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

pub(super) const JOB: Schema = Schema {
    attributes: (
        &[
            "type",
            "priority",
            "datacenters",
            "id",
            "node_pool",
            "namespace",
        ],
        &[
            "name",
            "region",
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
            "migrate",
            "periodic",
            "parameterized",
        ],
        &["meta", "vault", "consul", "ui"],
    ),
};

pub(super) const GROUP: Schema = Schema {
    attributes: (
        &[
            "count",
            "max_client_disconnect",
            "stop_after_client_disconnect",
            "shutdown_delay",
            "max_run_duration",
        ],
        // prevent_reschedule_on_lost is deprecated and ignored at 2.0.5
        // (structs.go TaskGroup.Warnings) and absent from 1.2.6.
        &["meta", "prevent_reschedule_on_lost"],
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
            "ephemeral_disk",
        ],
        &["restart", "service", "scaling", "meta", "consul", "vault"],
    ),
};

pub(super) const TASK: Schema = Schema {
    attributes: (
        &["driver", "kill_timeout", "shutdown_delay"],
        &["user", "kill_signal", "leader", "kind", "meta", "env"],
    ),
    blocks: (
        &[
            "resources",
            "csi_plugin",
            "volume_mount",
            "constraint",
            "affinity",
            "lifecycle",
        ],
        &[
            "config",
            "template",
            "artifact",
            "env",
            "service",
            "logs",
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
