//! A job file's `periodic` and `parameterized` blocks, read into the
//! scenario's raw forms (api/jobs.go PeriodicConfig, ParameterizedJobConfig:
//! their `hcl` tags are the keys read). Any other key is refused, as
//! jobspec2's decoder refuses an unsupported argument.

use hcl::edit::Span;
use hcl::edit::structure::{Attribute, Block, Structure};

use super::file::HclFile;
use crate::scenario::error::LoadError;
use crate::scenario::raw::{RawParameterized, RawPeriodic};

pub(super) fn parse_periodic(hcl: &HclFile, block: &Block) -> Result<RawPeriodic, LoadError> {
    let mut p = RawPeriodic::default();
    read_attributes(hcl, block, "periodic", KEYS_PERIODIC, |attr| {
        match attr.key.as_str() {
            "cron" => p.cron = Some(checked_specs(hcl, attr, vec![hcl.string(attr)?])?.remove(0)),
            "crons" => p.crons = Some(checked_specs(hcl, attr, hcl.strings(attr)?)?),
            "prohibit_overlap" => p.prohibit_overlap = Some(hcl.boolean(attr)?),
            "time_zone" => p.time_zone = Some(hcl.string(attr)?),
            "enabled" => p.enabled = Some(hcl.boolean(attr)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(p)
}

/// Cron specs refused where the file writes them, in the words the
/// scenario's resolver uses (`scenario::load::periodic`).
fn checked_specs(
    hcl: &HclFile,
    attr: &Attribute,
    specs: Vec<String>,
) -> Result<Vec<String>, LoadError> {
    for spec in &specs {
        if let Err(err) = crate::model::cron::CronExpr::parse(spec) {
            return Err(hcl.error(
                attr.span(),
                format!("periodic: {}", crate::model::cron::invalid_spec(spec, &err)),
            ));
        }
    }
    Ok(specs)
}

pub(super) fn parse_parameterized(
    hcl: &HclFile,
    block: &Block,
) -> Result<RawParameterized, LoadError> {
    let mut p = RawParameterized::default();
    read_attributes(hcl, block, "parameterized", KEYS_PARAMETERIZED, |attr| {
        match attr.key.as_str() {
            "payload" => p.payload = Some(hcl.string(attr)?),
            "meta_required" => p.meta_required = Some(hcl.strings(attr)?),
            "meta_optional" => p.meta_optional = Some(hcl.strings(attr)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(p)
}

/// Reads each attribute of `block` with `read`, which says whether it knew
/// the key; a nested block or an unknown key is refused as an unsupported
/// argument (`expected`: the keys `read` knows).
fn read_attributes(
    hcl: &HclFile,
    block: &Block,
    name: &str,
    expected: &str,
    mut read: impl FnMut(&Attribute) -> Result<bool, LoadError>,
) -> Result<(), LoadError> {
    for structure in block.body.iter() {
        match structure {
            Structure::Block(inner) => {
                return Err(unsupported(
                    hcl,
                    name,
                    inner.span(),
                    inner.ident.as_str(),
                    expected,
                ));
            }
            Structure::Attribute(attr) => {
                if !read(attr)? {
                    return Err(unsupported(
                        hcl,
                        name,
                        attr.span(),
                        attr.key.as_str(),
                        expected,
                    ));
                }
            }
        }
    }
    Ok(())
}

const KEYS_PERIODIC: &str = "cron, crons, prohibit_overlap, time_zone, enabled";
const KEYS_PARAMETERIZED: &str = "payload, meta_required, meta_optional";

fn unsupported(
    hcl: &HclFile,
    block: &str,
    span: Option<std::ops::Range<usize>>,
    key: &str,
    expected: &str,
) -> LoadError {
    hcl.error(
        span,
        format!(
            "{block}: Unsupported argument {}: expected one of {expected}",
            crate::names::echoed_key(key)
        ),
    )
}
