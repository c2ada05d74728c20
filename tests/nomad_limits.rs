//! Nomad files against the limits of issue 28: the HCL evaluation budget,
//! task config blocks left unparsed, one parse per file per load, and the
//! JSON front end's key checks (case, unknown keys, `--strict`).

mod common;

use std::path::Path;
use std::time::Duration;

use plansim::scenario::{load_file, load_file_with_warnings};

const TASK: &str = "task \"t\" {\n      driver = \"docker\"\n      CONFIG\n      resources {\n        cpu    = 100\n        memory = 64\n      }\n    }";

/// Writes a job file (HCL, `locals` and `config` spliced in) and a
/// scenario with `entries` `file:` entries naming it; returns the scenario.
fn write_job(
    dir: &Path,
    locals: &str,
    config: &str,
    priority: &str,
    entries: usize,
) -> std::path::PathBuf {
    let task = TASK.replace("CONFIG", config);
    let job = format!(
        "{locals}\njob \"j\" {{\n  datacenters = [\"dc1\"]\n  priority = {priority}\n  group \"g\" {{\n    count = 1\n    {task}\n  }}\n}}\n"
    );
    std::fs::write(dir.join("job.nomad.hcl"), job).unwrap();
    let jobs: String = (0..entries)
        .map(|i| {
            format!(
                "  - file: {}job.nomad.hcl\n",
                if i % 2 == 0 { "" } else { "./" }
            )
        })
        .collect();
    let scenario = dir.join("scenario.yaml");
    std::fs::write(
        &scenario,
        format!("nodes:\n  - id: client-0\njobs:\n{jobs}"),
    )
    .unwrap();
    scenario
}

/// Runs `f` and says how long it took: these tests bound the loader's
/// wall time (the model never reads a clock).
#[allow(clippy::disallowed_methods)]
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = std::time::Instant::now();
    let out = f();
    (out, start.elapsed())
}

fn big_list(bytes: usize) -> String {
    format!("[{}1]", "1,".repeat(bytes / 2))
}

#[test]
fn a_14_mb_list_in_a_task_config_is_not_parsed() {
    let dir = common::temp_dir("hcl-big-config");
    let config = format!(
        "config {{\n        args = {}\n      }}",
        big_list(14_000_000)
    );
    let scenario = write_job(dir.as_ref(), "", &config, "50", 1);
    let (loaded, took) = timed(|| load_file(&scenario).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(loaded.jobs[0].priority, 50);
    assert!(took.as_secs() < 5, "{took:?}");
}

#[test]
fn the_same_list_in_a_local_is_refused_before_parsing() {
    let dir = common::temp_dir("hcl-big-local");
    let locals = format!("locals {{\n  big = {}\n}}", big_list(14_000_000));
    let scenario = write_job(dir.as_ref(), &locals, "", "50", 1);
    let err = load_file(&scenario).unwrap_err().to_string();
    assert!(err.contains("HCL_MAX_TOKENS"), "{err}");
    assert!(
        err.contains("job.nomad.hcl:2:"),
        "at the token past the limit: {err}"
    );
}

#[test]
fn fifty_entries_naming_one_file_parse_it_once() {
    let dir = common::temp_dir("hcl-fifty-entries");
    // 12 MB of text every parse scans, and a local chain every parse evaluates.
    let config = format!(
        "config {{\n        args = {}\n      }}",
        big_list(12_000_000)
    );
    let locals: String = std::iter::once("locals {\n  c0 = 1\n".to_string())
        .chain((1..=2000).map(|i| format!("  c{i} = local.c{} + 1\n", i - 1)))
        .chain(std::iter::once("}\n".to_string()))
        .collect();
    let scenario = write_job(dir.as_ref(), &locals, &config, "local.c2000 - 1950", 50);
    // One job fifty times: refused by the resolver, after every entry was
    // expanded (50 parses took more than 12 s; one takes a fraction).
    let (err, took) = timed(|| load_file(&scenario).unwrap_err().to_string());
    assert!(err.contains("\"j\" is used twice"), "{err}");
    assert!(took.as_secs() < 5, "{took:?}");
}

#[test]
fn moderate_expressions_stay_within_the_budget_and_evaluate_as_before() {
    let dir = common::temp_dir("hcl-moderate");
    let locals = "locals {\n  zones = join(\",\", [for i in split(\",\", \"a,b,c\"): \"dc-${i}\"])\n  words = [for w in split(\" \", replace(\"x y z\", \"y\", \"yy\")): upper(w)]\n}";
    let scenario = write_job(
        dir.as_ref(),
        locals,
        "",
        "length(local.words) * 10 + length(split(\",\", local.zones))",
        1,
    );
    let loaded = load_file(&scenario).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.jobs[0].priority, 33);
}

const JSON_JOB: &str = r#"{
  "ID": "example",
  "Type": "service",
  "Datacenters": ["dc1"],
  "Constraint": [{"LTarget": "${attr.kernel.name}", "Operand": "=", "RTarget": "linux"}],
  "TaskGroups": [
    {"name": "cache", "count": 3, "Tasks": [{"Name": "redis", "Driver": "docker", "Resources": {"CPU": 100, "MemoryMb": 64, "Memry": 1}}]}
  ]
}
"#;

#[test]
fn json_keys_match_in_any_case_and_unknown_keys_are_warned() {
    let dir = common::temp_dir("json-keys");
    std::fs::write(dir.as_ref().join("job.json"), JSON_JOB).unwrap();
    let scenario = dir.as_ref().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "nodes:\n  - id: client-0\njobs:\n  - file: job.json\n",
    )
    .unwrap();
    let (loaded, warnings) = load_file_with_warnings(&scenario).unwrap_or_else(|e| panic!("{e}"));
    let group = &loaded.jobs[0].groups[0];
    // Go's encoding/json matches "count" and "MemoryMb" to Count and MemoryMB.
    assert_eq!(
        (group.name.as_str(), group.count, group.memory),
        ("cache", 3, 64)
    );
    assert!(
        loaded.jobs[0].constraints.is_empty(),
        "a misspelt key sets nothing"
    );
    let warning = warnings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        warning.contains("job.Constraint (not a field of Nomad's api.Job"),
        "{warning}"
    );
    assert!(warning.contains("did you mean Constraints?"), "{warning}");
    assert!(warning.contains("(line 5)"), "{warning}");
    assert!(
        warning.contains("job.TaskGroups[0].Tasks[0].Resources.Memry"),
        "{warning}"
    );
    let strict = common::plansim(&["validate", "--strict", common::arg(&scenario)]);
    assert_eq!(strict.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("Constraint"));
}

/// Nested `dynamic` blocks multiply, and an outer iterator's value is
/// copied into every inner copy: 120 x 120 blocks, each holding a copy of a
/// 120-element list, is 1.7 million expression nodes from a 1 KiB file (at
/// 300 x 300, 27 million: over 1 GiB before this bound). It is refused
/// before anything is built, naming the limit; the same shape at 10 x 10
/// loads.
#[test]
fn nested_dynamic_blocks_are_bounded_by_what_they_build() {
    let dir = common::temp_dir("hcl-nested-dynamic");
    let job = |n: u32| {
        let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let items = items.join(",");
        format!(
            "locals {{\n  rows = [for i in split(\",\", \"{items}\") : split(\",\", \"{items}\")]\n}}\njob \"j\" {{\n  datacenters = [\"dc1\"]\n  group \"g\" {{\n    dynamic \"meta_outer\" {{\n      for_each = local.rows\n      iterator = row\n      content {{\n        dynamic \"meta_inner\" {{\n          for_each = row.value\n          content {{\n            all = row.value\n          }}\n        }}\n      }}\n    }}\n    {}\n  }}\n}}\n",
            TASK.replace("CONFIG", "")
        )
    };
    let scenario = dir.as_ref().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "nodes:\n  - id: client-0\njobs:\n  - file: job.nomad.hcl\n",
    )
    .unwrap();
    std::fs::write(dir.as_ref().join("job.nomad.hcl"), job(120)).unwrap();
    let (result, took) = timed(|| load_file(&scenario));
    let err = result.expect_err("1.7 million nodes").to_string();
    assert!(err.contains("HCL_MAX_DYNAMIC_NODES"), "{err}");
    assert!(err.contains("job.nomad.hcl:"), "{err}");
    assert!(took.as_secs() < 5, "{took:?}");

    std::fs::write(dir.as_ref().join("job.nomad.hcl"), job(10)).unwrap();
    let err = load_file(&scenario).err().map(|e| e.to_string());
    assert!(
        err.as_ref()
            .is_none_or(|e| !e.contains("HCL_MAX_DYNAMIC_NODES")),
        "{err:?}"
    );
}
