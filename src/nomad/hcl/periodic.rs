//! A job file's `periodic` and `parameterized` blocks, read into the
//! scenario's raw forms (api/jobs.go PeriodicConfig, ParameterizedJobConfig:
//! their `hcl` tags are the keys read). Any other key is refused, as
//! jobspec2's decoder refuses an unsupported argument.

use hcl::edit::Span;
use hcl::edit::structure::{Block, Structure};

use super::file::HclFile;
use crate::scenario::error::LoadError;
use crate::scenario::raw::{RawParameterized, RawPeriodic};

pub(super) fn parse_periodic(hcl: &HclFile, block: &Block) -> Result<RawPeriodic, LoadError> {
    let mut p = RawPeriodic::default();
    for structure in block.body.iter() {
        let attr = match structure {
            Structure::Attribute(attr) => attr,
            Structure::Block(inner) => {
                return Err(unsupported(
                    hcl,
                    "periodic",
                    inner.span(),
                    inner.ident.as_str(),
                    KEYS_PERIODIC,
                ));
            }
        };
        match attr.key.as_str() {
            "cron" => p.cron = Some(hcl.string(attr)?),
            "crons" => p.crons = Some(hcl.strings(attr)?),
            "prohibit_overlap" => p.prohibit_overlap = Some(hcl.boolean(attr)?),
            "time_zone" => p.time_zone = Some(hcl.string(attr)?),
            "enabled" => p.enabled = Some(hcl.boolean(attr)?),
            other => {
                return Err(unsupported(
                    hcl,
                    "periodic",
                    attr.span(),
                    other,
                    KEYS_PERIODIC,
                ));
            }
        }
    }
    Ok(p)
}

pub(super) fn parse_parameterized(
    hcl: &HclFile,
    block: &Block,
) -> Result<RawParameterized, LoadError> {
    let mut p = RawParameterized::default();
    for structure in block.body.iter() {
        let attr = match structure {
            Structure::Attribute(attr) => attr,
            Structure::Block(inner) => {
                return Err(unsupported(
                    hcl,
                    "parameterized",
                    inner.span(),
                    inner.ident.as_str(),
                    KEYS_PARAMETERIZED,
                ));
            }
        };
        match attr.key.as_str() {
            "payload" => p.payload = Some(hcl.string(attr)?),
            "meta_required" => p.meta_required = Some(hcl.strings(attr)?),
            "meta_optional" => p.meta_optional = Some(hcl.strings(attr)?),
            other => {
                return Err(unsupported(
                    hcl,
                    "parameterized",
                    attr.span(),
                    other,
                    KEYS_PARAMETERIZED,
                ));
            }
        }
    }
    Ok(p)
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
