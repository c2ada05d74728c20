//! Experiment files: a scenario, seeds, policies and a grid of variations.
//! Loading stamps out one resolved scenario per grid point, so every bad
//! path or value is found before anything runs.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::path::{self, Segment, render_value};
use crate::model::metrics::Metric;
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::scenario::LoadError;
use crate::scenario::load::load_variant;
use crate::scenario::load::{yaml_error, yaml_options};

/// The metrics plots and headlines focus on: what an experiment charts
/// when it lists no `metrics:`.
pub const MAIN_METRICS: [Metric; 6] = [
    Metric::ClaimFailures,
    Metric::Reschedules,
    Metric::Violations,
    Metric::ViolationSeconds,
    Metric::Infeasible,
    Metric::FirstFullS,
];

/// Most grid points and runs an experiment may ask for. A sweep holds every
/// run's metrics (a few hundred bytes each) until it writes its tables, and
/// every grid point's resolved scenario: these keep both within 1 GiB.
pub const MAX_POINTS: usize = 10_000;
pub const MAX_RUNS: usize = 1_000_000;
/// Most `vary` keys (grid dimensions) an experiment may have.
pub const MAX_VARY_KEYS: usize = 16;
/// Bytes the resolved scenarios of every grid point may take together,
/// estimated per point (MAX_GRID_BYTES): a grid of large clusters is
/// refused while it is being built, not when memory runs out.
pub const MAX_GRID_BYTES: u64 = 256 * 1024 * 1024;

/// A generous estimate of the memory a resolved scenario holds.
fn resolved_bytes(scenario: &Scenario) -> u64 {
    let groups: usize = scenario.jobs.iter().map(|job| job.groups.len()).sum();
    4096 + 512 * scenario.nodes.len() as u64
        + 256 * scenario.volumes.len() as u64
        + 512 * (scenario.jobs.len() + groups) as u64
        + 128 * scenario.events.len() as u64
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExperiment {
    name: Option<String>,
    description: Option<String>,
    scenario: String,
    seeds: Option<RawSeeds>,
    schedulers: Option<Vec<Policy>>,
    vary: Option<OrderedMap>,
    /// The metrics to chart (default: the main ones).
    metrics: Option<Vec<Metric>>,
}

/// `seeds: 100` (seeds 0..99) or `seeds: [1, 5, 9]`.
#[derive(Debug)]
enum RawSeeds {
    Count(u64),
    List(Vec<u64>),
}

impl<'de> Deserialize<'de> for RawSeeds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SeedsVisitor;
        impl<'de> Visitor<'de> for SeedsVisitor {
            type Value = RawSeeds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a count of seeds (100) or a list of seeds ([1, 5, 9])")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<RawSeeds, E> {
                Ok(RawSeeds::Count(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<RawSeeds, E> {
                u64::try_from(n)
                    .map(RawSeeds::Count)
                    .map_err(|_| E::custom(format!("seeds: {n} is negative")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawSeeds, A::Error> {
                let mut seeds = Vec::new();
                while let Some(seed) = seq.next_element::<u64>()? {
                    seeds.push(seed);
                }
                Ok(RawSeeds::List(seeds))
            }
        }
        deserializer.deserialize_any(SeedsVisitor)
    }
}

/// `vary:` keeps the order the keys were written in: it is the grid's order.
#[derive(Debug, Default)]
struct OrderedMap(Vec<(String, Vec<Value>)>);

impl<'de> Deserialize<'de> for OrderedMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = OrderedMap;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping from a path in the scenario to a list of values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedMap, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, values)) = map.next_entry::<String, Vec<Value>>()? {
                    if values.is_empty() {
                        return Err(de::Error::custom(format!(
                            "vary \"{key}\": list at least one value"
                        )));
                    }
                    entries.push((key, values));
                }
                Ok(OrderedMap(entries))
            }
        }
        deserializer.deserialize_map(MapVisitor)
    }
}

/// One varied parameter: its key as written, its parsed path and its values.
#[derive(Clone, Debug)]
pub struct VaryKey {
    pub key: String,
    pub path: Vec<Segment>,
    pub values: Vec<Value>,
}

/// One combination of varied values, with its resolved scenario.
#[derive(Clone, Debug)]
pub struct GridPoint {
    /// For each vary key, the index of its value.
    pub choice: Vec<usize>,
    pub scenario: Scenario,
}

#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    /// The experiment and scenario files as read (kept with the results).
    pub experiment_text: String,
    pub scenario_file_name: String,
    pub scenario_text: String,
    pub seeds: Vec<u64>,
    pub policies: Vec<Policy>,
    pub vary: Vec<VaryKey>,
    pub points: Vec<GridPoint>,
    /// Timeline events a variant left out (it lacks the node or job they name).
    pub warnings: Vec<String>,
    /// Metrics charted against each varied parameter.
    pub charted: Vec<Metric>,
}

impl Experiment {
    pub fn runs(&self) -> usize {
        self.points.len() * self.policies.len() * self.seeds.len()
    }

    /// The rendered value of each vary key at a grid point.
    pub fn point_values(&self, point: usize) -> Vec<String> {
        self.points[point]
            .choice
            .iter()
            .zip(&self.vary)
            .map(|(&choice, key)| render_value(&key.values[choice]))
            .collect()
    }

    /// `key=value, ...` for a grid point, for messages and labels.
    pub fn point_label(&self, point: usize) -> String {
        if self.vary.is_empty() {
            return "(no variation)".to_string();
        }
        self.vary
            .iter()
            .zip(self.point_values(point))
            .map(|(key, value)| format!("{}={value}", key.key))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn error(file: &str, message: impl Into<String>) -> LoadError {
    LoadError {
        file: file.to_string(),
        position: None,
        message: message.into(),
    }
}

/// Loads an experiment file. `scenario_override` replaces the scenario path
/// the file names (used when merging from the copies kept with results).
/// Its parts are checked in the order they are reported: the name, the
/// seeds, the schedulers, the vary keys, the grid's size, each point, the
/// metrics.
pub fn load(path: &Path, scenario_override: Option<&Path>) -> Result<Experiment, LoadError> {
    let label = path.display().to_string();
    let experiment_text = crate::scenario::load::read_text(path)?;
    if experiment_text.trim().is_empty() {
        return Err(error(
            &label,
            "the file is empty: an experiment needs at least `scenario:`",
        ));
    }
    let raw: RawExperiment = serde_saphyr::from_str_with_options(&experiment_text, yaml_options())
        .map_err(|err| yaml_error(&label, &experiment_text, &err))?;
    let scenario_path: PathBuf = match scenario_override {
        Some(path) => path.to_path_buf(),
        None => path.parent().unwrap_or(Path::new(".")).join(&raw.scenario),
    };
    // The base scenario first, so its own mistakes point at its own lines.
    // Read once: what is run is exactly what is kept with the results.
    let scenario_text = crate::scenario::load::read_text(&scenario_path)?;
    let stem = scenario_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base =
        crate::scenario::load_str(&scenario_text, &scenario_path.display().to_string(), &stem)?;
    let name = raw.name.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    crate::names::check(&name)
        .map_err(|problem| error(&label, format!("name: the name {problem}")))?;
    if let Some(description) = &raw.description {
        crate::names::check_text(description, true)
            .map_err(|problem| error(&label, format!("description: {problem}")))?;
    }
    let seeds = seeds_of(&label, raw.seeds, base.seed)?;
    let policies = policies_of(&label, raw.schedulers)?;
    let vary = vary_keys(&label, raw.vary)?;
    let point_count = grid_size(&label, &vary, policies.len() * seeds.len())?;
    let grid = Grid {
        label: &label,
        stem: &stem,
        base: &base,
        scenario_path: &scenario_path,
        scenario_text: &scenario_text,
        vary: &vary,
    };
    let (points, warnings) = grid.points(point_count)?;
    let charted = charted_metrics(&label, raw.metrics)?;
    Ok(Experiment {
        name,
        description: raw.description.unwrap_or_default().trim().to_string(),
        experiment_text,
        // The name of the copy kept with the results: a slug, so an odd
        // file name cannot become an odd path (ordinary names are unchanged).
        scenario_file_name: crate::names::slug(
            &scenario_path
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
        scenario_text,
        seeds,
        policies,
        vary,
        points,
        warnings,
        charted,
    })
}

/// `seeds:`: a count or a list of distinct seeds; the scenario's own seed
/// when absent.
fn seeds_of(label: &str, seeds: Option<RawSeeds>, base_seed: u64) -> Result<Vec<u64>, LoadError> {
    Ok(match seeds {
        None => vec![base_seed],
        Some(RawSeeds::Count(0)) => return Err(error(label, "seeds: a count must be at least 1")),
        Some(RawSeeds::Count(n)) if n > MAX_RUNS as u64 => {
            return Err(error(
                label,
                format!("seeds: {n} seeds exceed the limit of {MAX_RUNS} runs (MAX_RUNS)"),
            ));
        }
        Some(RawSeeds::Count(n)) => (0..n).collect(),
        Some(RawSeeds::List(list)) => {
            let mut unique = list.clone();
            unique.sort_unstable();
            unique.dedup();
            if list.is_empty() || unique.len() != list.len() {
                return Err(error(label, "seeds: list distinct seeds, at least one"));
            }
            list
        }
    })
}

/// `schedulers:`, in `Policy::ALL` order; every policy when absent.
fn policies_of(label: &str, schedulers: Option<Vec<Policy>>) -> Result<Vec<Policy>, LoadError> {
    Ok(match schedulers {
        None => Policy::ALL.to_vec(),
        Some(list) if list.is_empty() => {
            return Err(error(label, "schedulers: list at least one policy"));
        }
        Some(list) => Policy::ALL
            .into_iter()
            .filter(|p| list.contains(p))
            .collect(),
    })
}

/// `vary:`, each key a path into the scenario with its values; at most
/// MAX_VARY_KEYS of them.
fn vary_keys(label: &str, vary: Option<OrderedMap>) -> Result<Vec<VaryKey>, LoadError> {
    let vary: Vec<VaryKey> = vary
        .unwrap_or_default()
        .0
        .into_iter()
        .map(|(key, values)| vary_key(label, key, values))
        .collect::<Result<_, _>>()?;
    if vary.len() > MAX_VARY_KEYS {
        return Err(error(
            label,
            format!(
                "vary: {} keys exceed the limit of {MAX_VARY_KEYS} (MAX_VARY_KEYS); each key is a dimension of the grid and gets its own charts: vary fewer parameters",
                vary.len()
            ),
        ));
    }
    Ok(vary)
}

/// One `vary:` key and its values.
fn vary_key(label: &str, key: String, values: Vec<Value>) -> Result<VaryKey, LoadError> {
    if let Err(problem) = crate::names::check_text(&key, false) {
        return Err(error(
            label,
            format!("vary[\"{}\"]: the key {problem}", crate::names::shown(&key)),
        ));
    }
    let text_values = values.iter().filter_map(Value::as_str);
    if let Some((text, problem)) = text_values
        .filter_map(|text| {
            crate::names::check_text(text, false)
                .err()
                .map(|p| (text, p))
        })
        .next()
    {
        return Err(error(
            label,
            format!(
                "vary[\"{}\"]: the value \"{}\" {problem}",
                crate::names::shown(&key),
                crate::names::shown(text)
            ),
        ));
    }
    if key.trim() == "seed" {
        return Err(error(
            label,
            format!(
                "vary[\"{key}\"]: the seed is not a parameter to vary; an experiment runs every grid point with each of its `seeds:` (write e.g. seeds: 100, or seeds: [1, 5, 9])"
            ),
        ));
    }
    path::parse(&key)
        .map(|path| VaryKey {
            key: key.clone(),
            path,
            values,
        })
        .map_err(|message| error(label, format!("vary[\"{key}\"]: {message}")))
}

/// The number of grid points, within MAX_POINTS, and of runs (each point
/// runs `runs_per_point` times), within MAX_RUNS.
fn grid_size(label: &str, vary: &[VaryKey], runs_per_point: usize) -> Result<usize, LoadError> {
    let point_count = vary
        .iter()
        .try_fold(1usize, |acc, key| acc.checked_mul(key.values.len()));
    let point_count = point_count.filter(|&n| n <= MAX_POINTS).ok_or_else(|| {
        error(
            label,
            format!("vary: more than {MAX_POINTS} grid points (MAX_POINTS)"),
        )
    })?;
    let runs = point_count * runs_per_point;
    if runs > MAX_RUNS {
        return Err(error(
            label,
            format!("{runs} runs exceed the limit of {MAX_RUNS} (MAX_RUNS)"),
        ));
    }
    Ok(point_count)
}

/// `metrics:`, each listed once; the main metrics when absent.
fn charted_metrics(label: &str, metrics: Option<Vec<Metric>>) -> Result<Vec<Metric>, LoadError> {
    Ok(match metrics {
        Some(list) if list.is_empty() => {
            return Err(error(label, "metrics: list at least one metric"));
        }
        Some(list) => {
            // One chart per (vary key, metric): a repeated metric would
            // only repeat charts (and, repeated enough, fill memory).
            let mut seen = std::collections::BTreeSet::new();
            if let Some(twice) = list.iter().find(|&&metric| !seen.insert(metric)) {
                return Err(error(
                    label,
                    format!(
                        "metrics: {} is listed twice; list each metric once",
                        twice.name()
                    ),
                ));
            }
            list
        }
        None => MAIN_METRICS.to_vec(),
    })
}

/// What building the grid's scenarios needs: the base scenario, its text
/// and where it came from, and the keys varied.
struct Grid<'a> {
    label: &'a str,
    stem: &'a str,
    base: &'a Scenario,
    scenario_path: &'a Path,
    scenario_text: &'a str,
    vary: &'a [VaryKey],
}

impl Grid<'_> {
    /// Each grid point's scenario (the base's text with the point's values
    /// set, loaded again) and the warnings of loading them, within
    /// MAX_GRID_BYTES.
    fn points(&self, point_count: usize) -> Result<(Vec<GridPoint>, Vec<String>), LoadError> {
        let label = self.label;
        let tree: Value = serde_saphyr::from_str_with_options(self.scenario_text, yaml_options())
            .map_err(|err| {
            yaml_error(
                &self.scenario_path.display().to_string(),
                self.scenario_text,
                &err,
            )
        })?;
        let grid_error = |fit: u64| {
            error(
                label,
                format!(
                    "vary: the {point_count} grid points' scenarios would take more than {} MiB (MAX_GRID_BYTES; {fit} points of this scenario fit): vary fewer values, or a smaller scenario",
                    MAX_GRID_BYTES / (1024 * 1024)
                ),
            )
        };
        // Checked for the base scenario before building any point, then for
        // each variant as it is built (a variant may be larger than the base).
        let base_bytes = resolved_bytes(self.base);
        if base_bytes.saturating_mul(point_count as u64) > MAX_GRID_BYTES {
            return Err(grid_error(MAX_GRID_BYTES / base_bytes));
        }
        let mut points = Vec::with_capacity(point_count);
        let mut warnings = Vec::new();
        let mut grid_bytes = 0u64;
        for index in 0..point_count {
            let choice = grid_choice(index, self.vary);
            let scenario = self.point(&tree, &choice, &mut warnings)?;
            grid_bytes += resolved_bytes(&scenario);
            if grid_bytes > MAX_GRID_BYTES {
                return Err(grid_error(index as u64));
            }
            points.push(GridPoint { choice, scenario });
        }
        Ok((points, warnings))
    }

    /// The scenario of the grid point `choice` (value indices per key).
    fn point(
        &self,
        tree: &Value,
        choice: &[usize],
        warnings: &mut Vec<String>,
    ) -> Result<Scenario, LoadError> {
        let label = self.label;
        let mut varied = tree.clone();
        let mut label_parts = Vec::new();
        for (key, &value_index) in self.vary.iter().zip(choice) {
            let value = key.values[value_index].clone();
            label_parts.push(format!("{}={}", key.key, render_value(&value)));
            path::set(&mut varied, &key.path, value)
                .map_err(|message| error(label, format!("vary[\"{}\"]: {message}", key.key)))?;
        }
        if self.vary.is_empty() {
            return Ok(self.base.clone());
        }
        let text = serde_saphyr::to_string(&varied)
            .map_err(|err| error(label, format!("cannot re-write the varied scenario: {err}")))?;
        let point_label = format!("{label} (vary {})", label_parts.join(", "));
        let (scenario, skipped) =
            load_variant(&text, &point_label, self.stem).map_err(|mut err| {
                // Positions refer to the re-written text, not a file anyone has: drop them.
                err.position = None;
                err
            })?;
        warnings.extend(skipped.into_iter().map(|w| format!("{point_label}: {w}")));
        Ok(scenario)
    }
}

/// The value indices of grid point `index`: the first key varies slowest.
fn grid_choice(mut index: usize, vary: &[VaryKey]) -> Vec<usize> {
    let mut choice = vec![0; vary.len()];
    for (slot, key) in vary.iter().enumerate().rev() {
        choice[slot] = index % key.values.len();
        index /= key.values.len();
    }
    choice
}
