//! A `nomad operator debug` bundle (`plansim import nomad BUNDLE.tar.gz`,
//! or the folder it unpacks to): the files `import::debug` asks for, read
//! into memory within the import's limits. Nothing is extracted to disk.
//! An archive is streamed through the decompressor once; every byte it
//! decompresses counts against IMPORT_MAX_TOTAL_BYTES (the tar headers'
//! sizes are not trusted), a kept file against MAX_FILE_BYTES, and an
//! archive with more than IMPORT_MAX_ENTRIES entries, an entry whose path
//! is absolute or holds `..`, or a link, device or FIFO, is refused whole.

use std::cell::Cell;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::fsio::{ReadError, human_bytes, open_limited, read_limited};
use crate::import::debug::{BundleReader, DebugExport, Use, is_bundle_root};
use crate::names::{one_line, one_line_path};
use crate::scenario::limits::{IMPORT_MAX_ENTRIES, IMPORT_MAX_TOTAL_BYTES, MAX_FILE_BYTES};

/// The bundle's limits: the real ones, or smaller ones in the tests.
#[derive(Clone, Copy)]
pub(super) struct BundleLimits {
    pub(super) entries: usize,
    pub(super) file_bytes: u64,
    pub(super) total_bytes: u64,
}

impl BundleLimits {
    pub(super) const REAL: BundleLimits = BundleLimits {
        entries: IMPORT_MAX_ENTRIES,
        file_bytes: MAX_FILE_BYTES as u64,
        total_bytes: IMPORT_MAX_TOTAL_BYTES,
    };
}

/// Bytes read so far against the total.
struct Budget {
    read: Cell<u64>,
    limit: u64,
    over: Cell<bool>,
}

impl Budget {
    fn new(limit: u64) -> Self {
        Budget {
            read: Cell::new(0),
            limit,
            over: Cell::new(false),
        }
    }

    fn left(&self) -> u64 {
        self.limit.saturating_sub(self.read.get())
    }

    fn over_message(&self) -> String {
        format!(
            "more than {} decompressed (IMPORT_MAX_TOTAL_BYTES): refused as a tar bomb",
            human_bytes(self.limit)
        )
    }
}

/// The decompressed stream, counted against the budget as it is read.
struct Counting<'b, R> {
    inner: R,
    budget: &'b Budget,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let read = self.budget.read.get() + n as u64;
        self.budget.read.set(read);
        if read > self.budget.limit {
            self.budget.over.set(true);
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                self.budget.over_message(),
            ));
        }
        Ok(n)
    }
}

/// The names a bundle's folder may hold at its top.
const TOP_NAMES: [&str; 6] = [
    "cluster",
    "interval",
    "client",
    "server",
    "index.json",
    "index.html",
];

/// An entry's path, checked: relative, without `..`, as `/`-separated
/// components (`.` and empty ones dropped).
fn entry_path(raw: &[u8]) -> Result<String, String> {
    let Ok(name) = std::str::from_utf8(raw) else {
        return Err(format!(
            "an entry's path is not UTF-8 ({:?})",
            String::from_utf8_lossy(raw)
        ));
    };
    if name.starts_with('/') || name.starts_with('\\') {
        return Err(format!("entry {name:?} has an absolute path: refused"));
    }
    let parts: Vec<&str> = name
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if parts
        .iter()
        .any(|part| *part == ".." || part.contains('\\'))
    {
        return Err(format!(
            "entry {name:?} leaves the archive's folder (`..` in its path): refused"
        ));
    }
    Ok(parts.join("/"))
}

/// Refuses what `nomad operator debug` never writes (it archives regular
/// files only) and could point outside: links, devices, FIFOs.
fn check_kind(kind: tar::EntryType, name: &str) -> Result<bool, String> {
    use tar::EntryType as T;
    let what = match kind {
        T::Regular | T::Continuous => return Ok(true),
        T::Directory | T::XGlobalHeader => return Ok(false),
        T::Symlink => "a symbolic link",
        T::Link => "a hard link",
        T::Char | T::Block => "a device",
        T::Fifo => "a FIFO",
        other => {
            return Err(format!(
                "entry {name:?} is of tar type {:?}: refused (nomad operator debug archives regular files only)",
                other.as_byte() as char
            ));
        }
    };
    Err(format!(
        "entry {name:?} is {what}: refused (nomad operator debug archives regular files only)"
    ))
}

/// The path inside the bundle's folder: the archive's one top-level
/// folder (`nomad-debug-<timestamp>/`) is taken off.
fn inside_root<'n>(root: &mut Option<String>, path: &'n str) -> Result<&'n str, String> {
    let (first, rest) = path.split_once('/').unwrap_or((path, ""));
    let root = root.get_or_insert_with(|| {
        if TOP_NAMES.contains(&first) {
            String::new()
        } else {
            first.to_string()
        }
    });
    if root.is_empty() {
        return Ok(path);
    }
    if first != root.as_str() {
        return Err(format!(
            "entry {path:?} is outside the bundle's folder {root:?}: refused"
        ));
    }
    Ok(rest)
}

/// Reads the `nomad operator debug` archive at `path`.
pub(super) fn read_archive(path: &Path, limits: BundleLimits) -> Result<DebugExport, String> {
    let shown = one_line_path(path);
    let file = open_limited(path, limits.total_bytes, "IMPORT_MAX_TOTAL_BYTES")
        .map_err(|err| format!("{shown}: {}", read_error(err)))?;
    let budget = Budget::new(limits.total_bytes);
    let stream = Counting {
        inner: flate2::read::MultiGzDecoder::new(BufReader::new(file)),
        budget: &budget,
    };
    let mut archive = tar::Archive::new(stream);
    let failed = |err: std::io::Error| {
        if budget.over.get() {
            format!("{shown}: {}", budget.over_message())
        } else {
            format!(
                "{shown}: not a gzip-compressed tar archive, or a damaged one: {}",
                one_line(&err.to_string())
            )
        }
    };
    let mut reader = BundleReader::default();
    let mut root = None;
    for (count, entry) in archive.entries().map_err(failed)?.enumerate() {
        if count >= limits.entries {
            return Err(format!(
                "{shown}: more than {} entries (IMPORT_MAX_ENTRIES)",
                limits.entries
            ));
        }
        let mut entry = entry.map_err(failed)?;
        let name = entry_path(&entry.path_bytes()).map_err(|m| format!("{shown}: {m}"))?;
        if !check_kind(entry.header().entry_type(), &name).map_err(|m| format!("{shown}: {m}"))? {
            continue;
        }
        let inner = inside_root(&mut root, &name).map_err(|m| format!("{shown}: {m}"))?;
        let at = format!("{shown}: {}", one_line(&name));
        match reader.use_of(inner) {
            Use::Skip => reader.saw(inner),
            Use::Keep => {
                let (limit, limit_name) = entry_limit(inner, limits, budget.left());
                let mut bytes = Vec::new();
                (&mut entry)
                    .take(limit + 1)
                    .read_to_end(&mut bytes)
                    .map_err(failed)?;
                if bytes.len() as u64 > limit {
                    return Err(format!(
                        "{at}: larger than {} ({limit_name}): refused",
                        human_bytes(limit)
                    ));
                }
                reader.add(inner, bytes);
            }
            Use::Events => reader
                .read_events(&mut BufReader::new(&mut entry))
                .map_err(|err| {
                    if budget.over.get() {
                        format!("{shown}: {}", budget.over_message())
                    } else {
                        format!(
                            "{shown}: {}",
                            err.to_string().replacen(
                                crate::import::debug::EVENT_STREAM,
                                &one_line(&name),
                                1,
                            )
                        )
                    }
                })?,
        }
    }
    reader.finish().map_err(|err| format!("{shown}: {err}"))
}

/// A kept file's limit: MAX_FILE_BYTES, or for the allocations what is
/// left of the total; never more than is left.
fn entry_limit(inner: &str, limits: BundleLimits, left: u64) -> (u64, &'static str) {
    if BundleReader::is_large(inner) || left < limits.file_bytes {
        (left, "IMPORT_MAX_TOTAL_BYTES")
    } else {
        (limits.file_bytes, "MAX_FILE_BYTES")
    }
}

fn read_error(err: ReadError) -> String {
    match err {
        ReadError::NotFound => "not found".into(),
        ReadError::Refused(message) => message,
    }
}

/// The bundle's folder in DIR: DIR itself, or the one `nomad-debug-*`
/// folder in it (a folder the archive was unpacked into).
pub(super) fn bundle_root(dir: &Path) -> Option<PathBuf> {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .take(64)
            .filter_map(|entry| Some(entry.ok()?.file_name().to_string_lossy().into_owned()))
            .collect()
    };
    let top = names(dir);
    let is_root =
        |names: &[String]| is_bundle_root(&names.iter().map(String::as_str).collect::<Vec<_>>());
    if is_root(&top) {
        return Some(dir.to_path_buf());
    }
    let [only] = top.as_slice() else {
        return None;
    };
    let inner = dir.join(only);
    (only.starts_with("nomad-debug-") && inner.is_dir() && is_root(&names(&inner))).then_some(inner)
}

/// Reads an unpacked bundle: its folder's `cluster/` and `interval/<n>/`
/// are listed (at most IMPORT_MAX_ENTRIES names) and only the files the
/// import uses are opened (regular files only: a symlink is never followed).
pub(super) fn read_bundle_dir(root: &Path, limits: BundleLimits) -> Result<DebugExport, String> {
    let mut files = Vec::new();
    let mut listed = 0usize;
    let mut list = |rel: &str, files: &mut Vec<(String, bool)>| -> Result<(), String> {
        let path = root.join(rel);
        let Ok(entries) = std::fs::read_dir(&path) else {
            return Ok(());
        };
        for entry in entries {
            let entry = entry.map_err(|err| format!("{}: {err}", one_line_path(&path)))?;
            listed += 1;
            if listed > limits.entries {
                return Err(format!(
                    "{}: more than {} entries in its cluster/ and interval/ (IMPORT_MAX_ENTRIES)",
                    one_line_path(root),
                    limits.entries
                ));
            }
            let kind = entry.file_type().map_err(|err| err.to_string())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            files.push((rel, kind.is_dir()));
        }
        Ok(())
    };
    list("cluster", &mut files)?;
    let mut captures = Vec::new();
    list("interval", &mut captures)?;
    for (capture, is_dir) in &captures {
        if *is_dir {
            list(capture, &mut files)?;
        }
    }
    files.sort();
    let budget = Budget::new(limits.total_bytes);
    let mut reader = BundleReader::default();
    for (rel, is_dir) in files {
        if is_dir {
            continue;
        }
        let path = root.join(&rel);
        let shown = one_line_path(&path);
        match reader.use_of(&rel) {
            Use::Skip => reader.saw(&rel),
            Use::Keep => {
                let (limit, limit_name) = entry_limit(&rel, limits, budget.left());
                let bytes = read_limited(&path, limit, limit_name)
                    .map_err(|err| format!("{shown}: {}", read_error(err)))?;
                budget.read.set(budget.read.get() + bytes.len() as u64);
                reader.add(&rel, bytes);
            }
            Use::Events => {
                let file = open_limited(&path, budget.left(), "IMPORT_MAX_TOTAL_BYTES")
                    .map_err(|err| format!("{shown}: {}", read_error(err)))?;
                let mut stream = BufReader::new(file);
                reader
                    .read_events(&mut stream)
                    .map_err(|err| format!("{}: {err}", one_line_path(root)))?;
                budget
                    .read
                    .set(budget.read.get() + stream.get_ref().bytes_read());
            }
        }
    }
    reader
        .finish()
        .map_err(|err| format!("{}: {err}", one_line_path(root)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_are_checked() {
        assert_eq!(
            entry_path(b"./nomad-debug-x//cluster/nodes.json").unwrap(),
            "nomad-debug-x/cluster/nodes.json"
        );
        assert!(entry_path(b"/etc/passwd").unwrap_err().contains("absolute"));
        assert!(
            entry_path(b"nomad-debug-x/../../x")
                .unwrap_err()
                .contains("`..`")
        );
        assert!(entry_path(b"a\\..\\b").unwrap_err().contains("`..`"));
        let mut root = None;
        assert_eq!(
            inside_root(&mut root, "nomad-debug-x/cluster/nodes.json").unwrap(),
            "cluster/nodes.json"
        );
        assert!(inside_root(&mut root, "other/cluster/nodes.json").is_err());
        let mut root = None;
        assert_eq!(
            inside_root(&mut root, "cluster/nodes.json").unwrap(),
            "cluster/nodes.json"
        );
    }
}

#[cfg(test)]
mod archive_tests {
    use super::*;
    use crate::test_dir::TempDir;
    use std::io::Write;

    fn archive(dir: &Path, files: &[(&str, usize)]) -> PathBuf {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, size) in files {
            let mut header = tar::Header::new_ustar();
            header.set_size(*size as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, name, vec![b' '; *size].as_slice())
                .unwrap();
        }
        let path = dir.join("bundle.tar.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&builder.into_inner().unwrap()).unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        path
    }

    const SMALL: BundleLimits = BundleLimits {
        entries: 3,
        file_bytes: 500,
        total_bytes: 4000,
    };

    fn refused(files: &[(&str, usize)]) -> String {
        let dir = TempDir::new("bundle-limits");
        read_archive(&archive(&dir, files), SMALL)
            .err()
            .expect("refused")
    }

    #[test]
    fn every_decompressed_byte_counts_even_in_files_never_read() {
        // A profile the import skips, larger than the total.
        let err = refused(&[("client/x/profile_0000.prof", 5000)]);
        assert!(
            err.contains(
                "more than 4000 bytes decompressed (IMPORT_MAX_TOTAL_BYTES): refused as a tar bomb"
            ),
            "{err}"
        );
        let err = refused(&[("interval/0000/nodes.json", 600)]);
        assert!(
            err.contains("interval/0000/nodes.json: larger than 500 bytes (MAX_FILE_BYTES)"),
            "{err}"
        );
        let err = refused(&[
            ("cluster/a", 1),
            ("cluster/b", 1),
            ("cluster/c", 1),
            ("cluster/d", 1),
        ]);
        assert!(
            err.contains("more than 3 entries (IMPORT_MAX_ENTRIES)"),
            "{err}"
        );
        // The allocations count only against the total.
        let dir = TempDir::new("bundle-limits-ok");
        let path = archive(
            &dir,
            &[
                ("interval/0000/nodes.json", 2),
                ("interval/0000/allocations.json", 900),
            ],
        );
        assert!(read_archive(&path, SMALL).is_ok());
    }
}
