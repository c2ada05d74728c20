//! `plansim import nomad --address URL`: a live cluster over Nomad's HTTP
//! API, served by a stand-in on 127.0.0.1 (`nomad_live/server.rs`) from
//! the fixture export, imports to the same scenario as the export
//! directory; and every bad answer exits 2, names the URL and writes
//! nothing.

mod common;
#[path = "nomad_live/server.rs"]
mod server;

use std::path::Path;
use std::process::{Command, Output};

use server::{Fault, TOKEN};

const EXPORT: &str = "tests/fixtures/nomad/export";

/// `plansim ARGS` with none of Nomad's variables or proxies set but `env`.
fn plansim_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_plansim"));
    command.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    for name in [
        "NOMAD_ADDR",
        "NOMAD_TOKEN",
        "NOMAD_NAMESPACE",
        "NOMAD_CACERT",
        "NOMAD_SKIP_VERIFY",
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command.output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The scenario the export directory imports to, as `name.yaml` in `dir`.
fn from_directory(dir: &Path, name: &str) -> Vec<u8> {
    let out = dir.join(format!("{name}.yaml"));
    let output = common::plansim(&["import", "nomad", EXPORT, "-o", common::arg(&out)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    std::fs::read(out).unwrap()
}

#[test]
fn a_live_cluster_imports_to_the_scenario_its_saved_responses_give() {
    let dir = common::temp_dir("nomad-live");
    let expected = from_directory(&dir.join("."), "cluster");
    let live = dir.join("live");
    std::fs::create_dir_all(&live).unwrap();
    let served = server::start(&common::repo_path(EXPORT), Fault::None);
    let out = live.join("cluster.yaml");
    // Paged one entry at a time: three pages of nodes, two of allocations.
    let output = plansim_env(
        &[
            "import",
            "nomad",
            "--address",
            &served.address,
            "--per-page",
            "1",
            "-o",
            common::arg(&out),
        ],
        &[("NOMAD_TOKEN", TOKEN)],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8(std::fs::read(&out).unwrap()).unwrap(),
        String::from_utf8(expected.clone()).unwrap(),
        "the same scenario, byte for byte"
    );
    let seen = served.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|s| s.token.as_deref() == Some(TOKEN)));
    let pages = |path: &str| seen.iter().filter(|s| s.path == path).count();
    assert_eq!(pages("/v1/nodes"), 3, "{seen:#?}");
    assert_eq!(pages("/v1/allocations"), 2, "{seen:#?}");
    let nodes: Vec<_> = seen.iter().filter(|s| s.path == "/v1/nodes").collect();
    assert_eq!(
        nodes[0].query.get("resources").map(String::as_str),
        Some("true")
    );
    assert_eq!(
        nodes[0].query.get("per_page").map(String::as_str),
        Some("1")
    );
    assert!(!nodes[0].query.contains_key("next_token"));
    assert_eq!(
        nodes[1].query.get("next_token").map(String::as_str),
        Some("1f0e4c8a-0002-4c3b-9a11-6f1d2a000002")
    );
    let job = seen.iter().find(|s| s.path == "/v1/job/example").unwrap();
    assert_eq!(
        job.query.get("namespace").map(String::as_str),
        Some("default")
    );

    // NOMAD_ADDR, a token file, `--namespace '*'` and `-o -`: the same
    // scenario on stdout, nothing else there.
    let token_file = live.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let output = plansim_env(
        &[
            "import",
            "nomad",
            "--namespace",
            "*",
            "--token-file",
            common::arg(&token_file),
            "-o",
            "-",
        ],
        &[("NOMAD_ADDR", &served.address)],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let expected_stdout = from_directory(&dir.join("."), "imported");
    assert_eq!(
        String::from_utf8(output.stdout.clone()).unwrap(),
        String::from_utf8(expected_stdout).unwrap()
    );
    assert!(stderr(&output).contains("note: "), "notes stay on stderr");
    let seen = served.seen.lock().unwrap().clone();
    let all = seen.iter().rfind(|s| s.path == "/v1/jobs").unwrap();
    assert_eq!(all.query.get("namespace").map(String::as_str), Some("*"));
    assert_eq!(all.query.get("per_page").map(String::as_str), Some("1000"));
}

/// Imports from `address` into a fresh `out.yaml` and checks that it
/// failed with exit 2, wrote nothing, and said `expected`.
fn refused(address: &str, token: &str, expected: &[&str]) -> String {
    let dir = common::temp_dir("nomad-live-bad");
    let out = dir.join("out.yaml");
    let output = plansim_env(
        &[
            "import",
            "nomad",
            "--address",
            address,
            "-o",
            common::arg(&out),
        ],
        &[("NOMAD_TOKEN", token)],
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(!out.exists(), "nothing is written: {message}");
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    for part in expected {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    message
}

#[test]
fn an_unreachable_address_is_refused_naming_it() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("http://127.0.0.1:{port}");
    refused(
        &address,
        TOKEN,
        &[
            &format!("{address}/v1/nodes?resources=true&per_page=1000"),
            "connection refused",
            "NOMAD_ADDR",
        ],
    );
    refused("127.0.0.1:4646", TOKEN, &["http://"]);
    refused(
        "unix:///var/run/nomad.sock",
        TOKEN,
        &["unix:// scheme is not supported"],
    );
}

#[test]
fn a_wrong_token_is_a_403_with_a_hint() {
    let served = server::start(&common::repo_path(EXPORT), Fault::None);
    refused(
        &served.address,
        "wrong",
        &[
            "/v1/nodes?resources=true",
            "403 permission denied",
            "\"Permission denied\"",
            "NOMAD_TOKEN",
        ],
    );
}

#[test]
fn a_truncated_page_is_refused() {
    let served = server::start(&common::repo_path(EXPORT), Fault::Truncate("/v1/jobs"));
    refused(
        &served.address,
        TOKEN,
        &["/v1/jobs?namespace=default&per_page=1000", "truncated"],
    );
    let served = server::start(
        &common::repo_path(EXPORT),
        Fault::Truncate("/v1/allocations"),
    );
    refused(
        &served.address,
        TOKEN,
        &["/v1/allocations?namespace=default", "truncated"],
    );
}

#[test]
fn a_response_over_the_budget_is_refused() {
    let served = server::start(&common::repo_path(EXPORT), Fault::Huge("/v1/plugins"));
    refused(
        &served.address,
        TOKEN,
        &["/v1/plugins?type=csi", "more than 16 MiB (MAX_FILE_BYTES)"],
    );
}

#[test]
fn a_response_that_is_not_json_is_refused() {
    let served = server::start(
        &common::repo_path(EXPORT),
        Fault::NotJson("/v1/node/1f0e4c8a-0001-4c3b-9a11-6f1d2a000001"),
    );
    refused(
        &served.address,
        TOKEN,
        &[
            "/v1/node/1f0e4c8a-0001-4c3b-9a11-6f1d2a000001",
            "not JSON",
            "Welcome to nginx",
        ],
    );
}

#[test]
fn exactly_one_source_is_given() {
    let dir = common::temp_dir("nomad-live-usage");
    let out = dir.join("out.yaml");
    let both = plansim_env(
        &[
            "import",
            "nomad",
            EXPORT,
            "--address",
            "http://127.0.0.1:1",
            "-o",
            common::arg(&out),
        ],
        &[],
    );
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    let none = plansim_env(&["import", "nomad", "-o", common::arg(&out)], &[]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr(&none).contains("--address URL (or set NOMAD_ADDR)"),
        "{}",
        stderr(&none)
    );
    assert!(!out.exists());
}

/// `scripts/export-nomad.sh` saves what plansim reads: the same endpoints,
/// pages and token, so its folder imports to the same scenario.
#[test]
fn the_export_script_saves_the_same_responses() {
    let have = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    assert!(have("curl") && have("jq"), "the script needs curl and jq");
    let dir = common::temp_dir("nomad-live-script");
    let expected = from_directory(&dir.join("."), "cluster");
    let served = server::start(&common::repo_path(EXPORT), Fault::None);
    let saved = dir.join("saved");
    let output = Command::new("bash")
        .arg(common::repo_path("scripts/export-nomad.sh"))
        .arg(&saved)
        .env("NOMAD_ADDR", &served.address)
        .env("NOMAD_TOKEN", TOKEN)
        .env("PER_PAGE", "2")
        .env_remove("NOMAD_NAMESPACE")
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let out = dir.join("script").join("cluster.yaml");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let import = common::plansim(&[
        "import",
        "nomad",
        common::arg(&saved),
        "-o",
        common::arg(&out),
    ]);
    assert_eq!(import.status.code(), Some(0), "{}", stderr(&import));
    assert_eq!(std::fs::read(&out).unwrap(), expected);
    let seen = served.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().filter(|s| s.path == "/v1/nodes").count(),
        2,
        "3 nodes, 2 a page"
    );
}
