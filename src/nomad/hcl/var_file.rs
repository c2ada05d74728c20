//! A var file, as `nomad job run -var-file` reads it (jobspec2 at v2.0.5:
//! `parseHCLOrJSON` decodes it; `collectInputVariableValues` turns its
//! attributes into values). Apart from vars.rs so that the values' types
//! never depend on the HCL file that parses them.

use hcl::edit::Span;
use hcl::edit::structure::Structure;

use super::file::HclFile;
use super::vars::{Assignment, VarInputs};
use crate::scenario::error::LoadError;

/// A var file's assignments (`name = value` lines; Nomad's
/// `parseHCLOrJSON`: JSON when the name ends in `.json`, an object of
/// values). A `variable` block is refused as Nomad refuses it ("Variable
/// declaration in a .var file"), and so is any other block.
pub fn parse_var_file(text: &str, file: &str) -> Result<Vec<Assignment>, LoadError> {
    if file.ends_with(".json") {
        return parse_json_var_file(text, file);
    }
    let hcl = HclFile::parse(text, file, &VarInputs::default())?;
    let mut assignments = Vec::new();
    for structure in hcl.body.iter() {
        match structure {
            Structure::Attribute(attr) => {
                let at = hcl
                    .position(attr.span())
                    .map_or(String::new(), |p| format!(":{}:{}", p.line, p.column));
                assignments.push(Assignment {
                    name: attr.key.as_str().to_string(),
                    value: hcl.eval(&attr.value)?,
                    from: format!("{file}{at}"),
                });
            }
            Structure::Block(block) if block.ident.as_str() == "variable" => {
                let name = block.labels.first().map_or("", |l| l.as_str());
                return Err(hcl.error(
                    block.span(),
                    format!(
                        "a variable declaration in a var file: a var file assigns values to variables the job file declares; write {name} = <value> here and declare variable \"{name}\" in the job file"
                    ),
                ));
            }
            Structure::Block(block) => {
                return Err(hcl.error(
                    block.span(),
                    format!(
                        "unexpected block {} in a var file: expected only NAME = VALUE lines",
                        block.ident.as_str()
                    ),
                ));
            }
        }
    }
    Ok(assignments)
}

fn parse_json_var_file(text: &str, file: &str) -> Result<Vec<Assignment>, LoadError> {
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|err| crate::nomad::json::json_error(&err, file))?;
    object
        .into_iter()
        .map(|(name, value)| {
            let value = hcl::to_value(value).map_err(|err| {
                crate::scenario::error::file_error(file, None, format!("{name}: {err}"))
            })?;
            Ok(Assignment {
                from: format!("{file} ({name})"),
                name,
                value,
            })
        })
        .collect()
}
