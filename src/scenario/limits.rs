//! Input limits. Each is named in the error that enforces it and listed in
//! the README, so a scenario that hits one knows what to change.
//!
//! They are chosen so that any scenario they accept loads and runs (one
//! policy, one seed) within 1 GiB (see ARCHITECTURE.md, "Memory"). Measured
//! peaks of one run (#16, 64-byte allocation records): C1M (1,000,000
//! allocations on 5,000 nodes) 147 MB, 132 bytes per allocation over a
//! fixed 15 MB; 4,000,000 allocations on 5,000 nodes 538 MB; on 100,000
//! nodes 600 MB; in one job of 4,000,000 (a plan holds every placement)
//! on 100,000 nodes 778 MB, the largest accepted shape without volumes
//! (about 190 bytes per allocation). An allocation with one volume costs
//! about 360 bytes (1,000,000 of C1M's CSI shape: 376 MB; 2,000,000:
//! 683 MB), so MAX_ALLOCATIONS counts an allocation once and once more per
//! volume it mounts: 4,000,000 such units stay within about 850 MB
//! whatever the mix.

use crate::model::time::Millis;

/// YAML budget: nodes (scalars, lists, maps) once aliases are expanded.
pub const YAML_MAX_NODES: usize = 500_000;
/// YAML budget: parser events (every node start and end, aliases expanded).
pub const YAML_MAX_EVENTS: usize = 2_000_000;
/// YAML budget: alias uses (`*name`).
pub const YAML_MAX_ALIASES: usize = 10_000;
/// YAML budget: anchors (`&name`).
pub const YAML_MAX_ANCHORS: usize = 10_000;
/// YAML budget: nesting depth.
pub const YAML_MAX_DEPTH: usize = 64;

/// Largest scenario file read, in bytes.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;
/// Nodes after templates are stamped out.
pub const MAX_NODES: usize = 100_000;
/// Volumes after templates are stamped out (CSI and dynamic host volumes).
pub const MAX_VOLUMES: usize = 200_000;
/// Most static host volumes one node lists (Nomad sets none; each costs
/// its name and a few bytes on the node).
pub const MAX_HOST_VOLUMES_PER_NODE: usize = 64;
/// Jobs after replicas are stamped out.
pub const MAX_JOBS: usize = 100_000;
/// Desired allocations summed over every group (and every `scale` event),
/// each counted once plus once per volume it mounts.
pub const MAX_ALLOCATIONS: u64 = 4_000_000;
/// Periodic launches (child jobs of every periodic job) within one
/// scenario's horizon; a scenario with more is refused at load.
pub const MAX_PERIODIC_LAUNCHES: usize = 50_000;
/// Timeline events.
pub const MAX_EVENTS: usize = 100_000;
/// Longest simulated horizon.
pub const MAX_HORIZON: Millis = Millis(30 * 24 * 3600 * 1000);
/// Most concurrent scheduler workers.
pub const MAX_SCHEDULER_WORKERS: u32 = 64;
/// Bytes every template (`count`, `replicas`) of a scenario may expand to,
/// estimated before expanding: copies x (the entry's text + overhead).
pub const MAX_TEMPLATE_BYTES: u64 = 128 * 1024 * 1024;
/// Most reschedule `attempts` a policy may allow within its interval: the
/// reschedule history an allocation keeps is at most this long.
pub const MAX_RESCHEDULE_ATTEMPTS: u32 = 1000;
/// Most ports (static and dynamic) in one group's `network` block (Nomad
/// sets none; a port an allocation holds costs 8 bytes of its node's port
/// list, and MAX_ALLOCATIONS counts every 8 ports once more).
pub const MAX_PORTS_PER_GROUP: usize = 128;
/// Most comma-separated parts of a node's `reserved_ports`, each a port
/// or a range (4 bytes per range kept per node; Nomad's own limit of
/// 65536 reserved ports holds too).
pub const MAX_RESERVED_PORT_RANGES: usize = 1024;
/// Longest `regexp` constraint or affinity value, in bytes.
pub const MAX_REGEXP_BYTES: usize = 4096;
/// Most memory one compiled regexp (and its lazy DFA) may take.
pub const MAX_REGEXP_COMPILED_BYTES: usize = 1 << 20;

/// HCL job files and volume specs: tokens in a file (the parser keeps each
/// as a node, about 80 bytes), task `config` blocks aside (never parsed).
pub const HCL_MAX_TOKENS: usize = 1_000_000;
/// HCL evaluation: the largest value any expression may build, in bytes of
/// memory as counted by `nomad::hcl::budget` (a string's bytes, 32 per
/// value, 96 per object entry), bounded before it is evaluated.
pub const HCL_MAX_VALUE_BYTES: u64 = 8 * 1024 * 1024;
/// HCL evaluation: iterations of one `for` expression or directive.
pub const HCL_MAX_FOR_ITERATIONS: u64 = 100_000;
/// HCL evaluation: the work of evaluating every expression of a file, in
/// the same bytes (each value built or copied counted once).
pub const HCL_MAX_EVAL_BYTES: u64 = 64 * 1024 * 1024;
/// HCL `dynamic` blocks: expression nodes the blocks generated in one file
/// may hold (each about 100 bytes in the parser's tree), counted before
/// they are built.
pub const HCL_MAX_DYNAMIC_NODES: u64 = 1_000_000;
/// Most `var_files` one `file:` entry names (each read once per load, at
/// most MAX_FILE_BYTES).
pub const HCL_MAX_VAR_FILES: usize = 64;

/// Most bytes `plansim import nomad` reads across every file of an export
/// (each file also at most MAX_FILE_BYTES): only the files it uses are read.
pub const IMPORT_MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;
/// Most entries an export's directories (DIR and its node/, plugin/,
/// volume/ and job/) may list together: the listing is refused past it.
pub const IMPORT_MAX_ENTRIES: usize = 500_000;
/// Most running or pending allocations `plansim import nomad` keeps from
/// allocations.json (streamed, within IMPORT_MAX_TOTAL_BYTES: the others
/// are parsed and dropped): each becomes an initial allocation of the
/// scenario, about 40 bytes of it, so the scenario stays a loadable file.
pub const IMPORT_MAX_ALLOCATIONS: usize = 300_000;
/// `plansim import nomad --address`: the seconds one request to Nomad's
/// HTTP API may take, answer and body included.
pub const IMPORT_REQUEST_TIMEOUT_SECS: u64 = 30;
/// `plansim import nomad --address`: entries asked for per page of a list
/// (`per_page`); each page is one response, within MAX_FILE_BYTES (a node
/// with its resources is about 5 KiB, an allocation stub about 3 KiB).
pub const IMPORT_PER_PAGE: u32 = 1000;
