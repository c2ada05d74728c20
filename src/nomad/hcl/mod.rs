//! Nomad's HCL2 files (job files and volume specs; Nomad's `jobspec2`
//! package), read with `hcl-edit` (which keeps every block's position) and
//! evaluated with `hcl-rs`: variables with defaults, locals and the common
//! functions. Nomad's runtime interpolations (`${attr.*}`, `${node.*}`,
//! `${meta.*}`, `${NOMAD_*}`, other environment variables) are kept as
//! written, as Nomad's own parser keeps them for the client to fill in. Only
//! the fields that plansim uses are evaluated: task config, templates and
//! the like are never looked at.
//!
//! A job file's `dynamic` blocks are expanded (`dynamic`) right after it is
//! parsed, as Nomad expands them before decoding.
//!
//! `file` holds one parsed file and its typed reads, `functions` and
//! `runtime` the evaluation context, `schema` the fields read per block and
//! `job` the job file's blocks, `vars` the values given to its variables
//! (`vars:` and `var_files:`, Nomad's `-var` and `-var-file`). Volume specs are read in `nomad::volume`.

mod budget;
mod dynamic;
pub mod file;
mod functions;
pub mod job;
mod periodic;
mod runtime;
mod scan;
mod schema;
pub mod var_file;
pub mod vars;

pub use file::HclFile;
pub use job::parse_job;
