//! `plansim import nomad BUNDLE.tar.gz`: a `nomad operator debug` archive
//! (`tests/fixtures/nomad/debug-bundle.tar.gz`, made from the fixture
//! export by `debug_bundle/make.rs`) imports to the scenario the export
//! directory gives, archived or unpacked; and archives that could escape
//! their folder, point elsewhere or explode are refused whole, exit 2,
//! nothing written.

mod common;
#[path = "debug_bundle/make.rs"]
mod make;

use std::io::Read;
use std::path::Path;
use std::process::Output;

const EXPORT: &str = "tests/fixtures/nomad/export";
const BUNDLE: &str = "tests/fixtures/nomad/debug-bundle.tar.gz";

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn import(source: &Path, out: &Path) -> Output {
    common::plansim(&[
        "import",
        "nomad",
        common::arg(source),
        "-o",
        common::arg(out),
    ])
}

/// Imports `source` to `dir/cluster.yaml` and returns the scenario.
fn imported(source: &Path, dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let out = dir.join("cluster.yaml");
    let output = import(source, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    std::fs::read_to_string(out).unwrap()
}

/// The committed fixture is what `make.rs` makes (compared as the tar
/// stream, which does not depend on the compressor's version). Set
/// PLANSIM_WRITE_FIXTURES=1 to write it anew.
#[test]
fn the_committed_bundle_is_the_one_made_from_the_export() {
    let files = make::bundle_files(&common::repo_path(EXPORT));
    let tar = make::tar_bytes(&files);
    let path = common::repo_path(BUNDLE);
    if std::env::var_os("PLANSIM_WRITE_FIXTURES").is_some() {
        std::fs::write(&path, make::gzip(&tar)).unwrap();
    }
    let mut committed = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut committed)
        .unwrap();
    assert!(
        committed == tar,
        "{BUNDLE} is stale: PLANSIM_WRITE_FIXTURES=1 cargo test --test debug_bundle"
    );
}

#[test]
fn a_debug_bundle_imports_to_the_scenario_of_the_same_responses() {
    let dir = common::temp_dir("debug-bundle");
    let expected = imported(&common::repo_path(EXPORT), &dir.join("export"));
    let archive = common::repo_path(BUNDLE);
    let from_archive = imported(&archive, &dir.join("archive"));
    assert_eq!(
        from_archive, expected,
        "the archive gives the export's scenario"
    );
    // Unpacked: the folder that holds nomad-debug-*/, and that folder.
    let unpacked = dir.join("unpacked");
    make::unpack(&make::bundle_files(&common::repo_path(EXPORT)), &unpacked);
    assert_eq!(imported(&unpacked, &dir.join("parent")), expected);
    assert_eq!(
        imported(&unpacked.join(make::ROOT), &dir.join("root")),
        expected
    );
    // What the notes say: the latest capture.
    let output = import(&archive, &dir.join("again.yaml"));
    let notes = stderr(&output);
    assert!(
        notes.contains("debug bundle: the latest of 2 captures, interval/0001, is the starting state; 5 events in cluster/eventstream.json (3 nodes and 1 jobs in full)"),
        "{notes}"
    );
    // Facts about it: nodes, the volume, the running allocations, the plugin.
    for fact in [
        "client-1",
        "test-volume0",
        "hostpath-plugin0",
        "example.cache[0]",
    ] {
        assert!(expected.contains(fact), "{fact}");
    }
}

#[test]
fn a_bundle_without_an_event_stream_leaves_out_the_jobs_it_has_no_spec_for() {
    let dir = common::temp_dir("debug-bundle-stubs");
    let mut files = make::bundle_files(&common::repo_path(EXPORT));
    files.remove(&format!("{}/cluster/eventstream.json", make::ROOT));
    let archive = dir.join("stubs.tar.gz");
    std::fs::write(&archive, make::gzip(&make::tar_bytes(&files))).unwrap();
    let out = dir.join("stubs.yaml");
    let output = import(&archive, &out);
    let notes = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{notes}");
    assert!(
        notes.contains("job/example.json missing: job example left out"),
        "{notes}"
    );
    assert!(notes.contains("no NodeResources"), "{notes}");
    let scenario = std::fs::read_to_string(out).unwrap();
    assert!(!scenario.contains("example.cache"), "{scenario}");
}

/// An archive of one entry `name` (raw bytes of the header's name field)
/// of `kind`, holding `data`, beside a valid bundle's files.
fn crafted(name: &[u8], kind: tar::EntryType, link: Option<&str>, data: &[u8]) -> Vec<u8> {
    let files = make::bundle_files(&common::repo_path(EXPORT));
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(kind);
    if let Some(link) = link {
        header.set_link_name(link).unwrap();
    }
    header.set_cksum();
    builder.append(&header, data).unwrap();
    let mut tar = builder.into_inner().unwrap();
    // Drop the end-of-archive blocks, then the valid bundle.
    tar.truncate(tar.len() - 1024);
    tar.extend(make::tar_bytes(&files));
    make::gzip(&tar)
}

/// Imports `archive` and checks the refusal.
fn refused(archive: &[u8], expected: &[&str]) {
    static TRIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = TRIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = common::temp_dir(&format!("debug-bundle-bad-{n}"));
    let path = dir.join("bad.tar.gz");
    std::fs::write(&path, archive).unwrap();
    let out = dir.join("out.yaml");
    let output = import(&path, &out);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    for part in expected {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert!(!out.exists(), "nothing written");
    assert_eq!(common::names_in(&dir), ["bad.tar.gz"], "nothing extracted");
}

#[test]
fn an_archive_that_leaves_its_folder_is_refused() {
    refused(
        &crafted(
            b"nomad-debug-x/../../etc/cron.d/x",
            tar::EntryType::Regular,
            None,
            b"x",
        ),
        &[
            "bad.tar.gz",
            "leaves the archive's folder (`..` in its path): refused",
        ],
    );
    refused(
        &crafted(b"/etc/cron.d/x", tar::EntryType::Regular, None, b"x"),
        &["has an absolute path: refused"],
    );
}

#[test]
fn links_and_devices_in_an_archive_are_refused() {
    let root = make::ROOT;
    refused(
        &crafted(
            format!("{root}/interval/0002/nodes.json").as_bytes(),
            tar::EntryType::Symlink,
            Some("/etc/passwd"),
            b"",
        ),
        &["interval/0002/nodes.json", "is a symbolic link: refused"],
    );
    refused(
        &crafted(
            format!("{root}/cluster/nodes.json").as_bytes(),
            tar::EntryType::Link,
            Some("x"),
            b"",
        ),
        &["is a hard link: refused"],
    );
    refused(
        &crafted(
            format!("{root}/cluster/null").as_bytes(),
            tar::EntryType::Char,
            None,
            b"",
        ),
        &["is a device: refused"],
    );
}

#[test]
fn a_tar_bomb_is_refused_as_it_decompresses() {
    // 17 MiB of zeros, compressed to a few KiB, in a file the import reads.
    let bomb = vec![b' '; 17 * 1024 * 1024];
    let root = make::ROOT;
    refused(
        &crafted(
            format!("{root}/interval/0009/nodes.json").as_bytes(),
            tar::EntryType::Regular,
            None,
            &bomb,
        ),
        &[
            "interval/0009/nodes.json",
            "larger than 16 MiB (MAX_FILE_BYTES): refused",
        ],
    );
    // Not an archive at all.
    refused(b"{\"Nodes\": []}", &["not a gzip-compressed tar archive"]);
}
