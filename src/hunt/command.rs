//! `plansim hunt` as a library call, past argument parsing: the scenario to
//! mutate loaded, the properties chosen, the search run on a pool of
//! `threads`, its first failures shrunk, checked to fail again once
//! written, written to the output directory, and the summary the terminal
//! prints. The wall clock stays with the caller: it decides, through the
//! search's `keep_going`, when a DURATION budget is spent.

use std::path::{Path, PathBuf};

use super::report::{file_name, render, reproduces};
use super::{Finding, Hunt, Progress, Property, Search, Source};
use crate::model::scenario::Scenario;
use crate::report::atomic::write_atomic;
use crate::report::outdir::{self, OutDir};
use crate::scenario::load_file;

/// What `plansim hunt` was asked for.
pub struct HuntRequest<'a> {
    pub seed: u64,
    /// `--property`, any order; empty means every property (`expect` only
    /// with `from`).
    pub properties: &'a [Property],
    /// `--from SCENARIO`.
    pub from: Option<&'a Path>,
    /// `--out DIR` (default `hunt-<seed>`).
    pub out: Option<&'a Path>,
    /// Worker threads.
    pub threads: usize,
    /// `--force`: write into an `out` plansim did not write.
    pub force: bool,
}

/// A hunt ready to search: its scenario to mutate, if any, and its pool.
pub struct HuntSession {
    seed: u64,
    properties: Vec<Property>,
    base: Option<Scenario>,
    from_label: Option<String>,
    dir: PathBuf,
    /// `dir`, claimed by the output rules before the search.
    out_dir: std::sync::Mutex<OutDir>,
    pool: rayon::ThreadPool,
}

/// What a finished hunt hands back: the summary to print, and whether it
/// found (and wrote) a failing scenario.
pub struct HuntOutcome {
    pub summary: String,
    pub found: bool,
}

impl HuntSession {
    /// Loads `--from`, chooses the properties and starts the pool; `Err`
    /// is bad input.
    pub fn open(request: &HuntRequest) -> Result<HuntSession, String> {
        let base = match request.from {
            Some(path) => Some(load_file(path).map_err(|err| err.to_string())?),
            None => None,
        };
        let properties: Vec<Property> = if request.properties.is_empty() {
            Property::ALL
                .into_iter()
                .filter(|&p| p != Property::Expect || base.is_some())
                .collect()
        } else {
            Property::ALL
                .into_iter()
                .filter(|p| request.properties.contains(p))
                .collect()
        };
        if properties.contains(&Property::Expect) {
            match &base {
                None => {
                    return Err(
                        "--property expect checks a scenario's own expect block: give it with --from SCENARIO"
                            .to_string(),
                    );
                }
                Some(s) if s.expectations.is_empty() => {
                    return Err(format!(
                        "{}: has no expect block for --property expect to check",
                        crate::names::one_line_path(request.from.expect("base came from --from"))
                    ));
                }
                Some(_) => {}
            }
        }
        let dir = request
            .out
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(format!("hunt-{}", request.seed)));
        let threads = request.threads;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|err| format!("cannot start {threads} worker threads: {err}"))?;
        // Refused before a long search, not after it; removed again if
        // nothing is found.
        let out_dir =
            std::sync::Mutex::new(outdir::claim(&dir, outdir::Kind::Hunt, request.force)?);
        Ok(HuntSession {
            seed: request.seed,
            properties,
            base,
            from_label: request.from.map(crate::names::one_line_path),
            dir,
            out_dir,
            pool,
        })
    }

    fn hunt(&self) -> Hunt<'_> {
        Hunt {
            seed: self.seed,
            properties: self.properties.clone(),
            source: self.base.as_ref().map_or(Source::Generated, Source::From),
        }
    }

    /// Checks up to `runs` scenarios, asking `keep_going` after each batch
    /// and `stop` before each scenario (see `Hunt::search_until`).
    pub fn search(
        &self,
        runs: u64,
        keep_going: impl FnMut(Progress) -> bool + Send,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Search {
        let hunt = self.hunt();
        self.pool
            .install(|| hunt.search_until(runs, keep_going, stop))
    }

    /// Shrinks the search's first failures, writes them (each checked to
    /// fail again once written: otherwise nothing is written) and the
    /// summary. `Err` is the line to report.
    pub fn finish(&self, search: &Search) -> Result<HuntOutcome, String> {
        let hunt = self.hunt();
        let findings = self.pool.install(|| hunt.shrink_all(search));
        let files = self.checked_files(&hunt, &findings)?;
        for (path, text) in &files {
            write_atomic(path, text.as_bytes()).map_err(|err| {
                format!("{}: cannot write: {err}", crate::names::one_line_path(path))
            })?;
        }
        if !files.is_empty() {
            self.out_dir
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .keep();
        }
        Ok(HuntOutcome {
            summary: self.summary(search, &findings),
            found: !findings.is_empty(),
        })
    }

    /// Each finding's file and text, once its text is known to load and
    /// fail again.
    fn checked_files(
        &self,
        hunt: &Hunt,
        findings: &[Finding],
    ) -> Result<Vec<(PathBuf, String)>, String> {
        let mut files = Vec::new();
        for finding in findings {
            let text = render(hunt, finding, self.from_label.as_deref());
            match reproduces(&text, finding) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(format!(
                        "internal error: the minimal scenario for {} does not fail again once written; nothing was written",
                        finding.property.name()
                    ));
                }
                Err(err) => {
                    return Err(format!(
                        "internal error: the minimal scenario for {} does not load once written ({err}); nothing was written",
                        finding.property.name()
                    ));
                }
            }
            files.push((self.dir.join(file_name(finding.property)), text));
        }
        Ok(files)
    }

    /// The lines `plansim hunt` prints: a headline, then one per property.
    fn summary(&self, search: &Search, findings: &[Finding]) -> String {
        let mut report = format!(
            "hunt: seed {}, {} scenario(s) checked, {} broke a property{}\n",
            self.seed,
            search.tried,
            search.failing,
            match &self.from_label {
                Some(f) => format!(" (mutants of {f})"),
                None => String::new(),
            }
        );
        for result in &search.results {
            let (property, count) = (&result.property, result.failing);
            match &result.first {
                None => report.push_str(&format!("  {:<27} held\n", property.name())),
                Some((index, failure)) => {
                    report.push_str(&format!(
                        "  {:<27} FAILED in {count} scenario(s); first #{index}: {}\n",
                        property.name(),
                        failure.message
                    ));
                    if let Some(finding) = findings.iter().find(|f| f.property == *property) {
                        report.push_str(&format!(
                            "  {:<27} minimal ({} checks): {}\n",
                            "",
                            finding.checks,
                            crate::names::one_line_path(&self.dir.join(file_name(*property)))
                        ));
                    }
                }
            }
        }
        report
    }
}
