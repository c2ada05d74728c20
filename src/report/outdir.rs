//! The output rules: every file and directory plansim writes (`run --out`,
//! `run --report`, `sweep --out`, `merge --out`, `hunt -o`, `import -o`)
//! goes through here, so one set of rules holds everywhere:
//!
//! - **Create new, or replace only what plansim wrote.** A directory is
//!   plansim's when it holds the marker `.plansim-output` (written into
//!   every directory plansim creates or finds empty; its first line names
//!   the command, `plansim output: run`, `sweep` or `hunt`), or when it holds
//!   what an earlier version wrote there before markers existed (a
//!   `summary.csv` with plansim's header, a sweep journal, an `index.html`
//!   of `plansim run --report`, a `hunt` finding); the marker is then added.
//!   A single file (`import -o FILE`) is plansim's when its first line is
//!   plansim's stamp, `# Written by plansim ...; fingerprint F ...`, and F is
//!   the fingerprint of the lines below it: a file the user edited since is
//!   theirs again. Anything else is the user's: refused (exit 2) unless
//!   `--force` is given.
//! - **Never an input, never a non-regular file.** A file or directory this
//!   process read as an input (by device and inode: `fsio`) is never
//!   replaced or written into, and neither is a symlink, FIFO, socket,
//!   device or directory in a file's place, `--force` or not.
//! - **Temporaries beside the target.** Files are written to a temporary
//!   created exclusively beside their target and renamed into place
//!   (`atomic`); a new single file is linked into place only if nothing
//!   appeared there meanwhile.
//! - **One writer per directory.** A claimed directory is locked (an
//!   advisory `flock` on the directory itself, which the kernel drops when
//!   the process ends, so no lock file is ever left behind) before
//!   anything is written; temporaries a killed run left are removed.
//! - **A refused run leaves nothing.** A claim dropped before
//!   [`OutDir::keep`] (the command failed) removes what it wrote into a
//!   directory it created or found empty, and the directories it created.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::names::one_line_path;

use super::atomic::TEMP_MARKER;

/// The marker in every directory plansim writes.
pub const MARKER_FILE: &str = ".plansim-output";

/// The lock file of earlier versions: ignored, and removed when found.
pub const LOCK_FILE: &str = ".plansim.lock";

/// What a directory holds, for the marker and for the outputs of earlier
/// versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `plansim run --out`.
    Run,
    /// `plansim sweep --out` and `merge --out`.
    Sweep,
    /// `plansim run --report` (a `run` directory, like `--out`).
    Report,
    /// `plansim hunt -o`.
    Hunt,
}

impl Kind {
    /// The command named in the marker; `--out` and `--report` share it.
    fn family(self) -> &'static str {
        match self {
            Kind::Run | Kind::Report => "run",
            Kind::Sweep => "sweep",
            Kind::Hunt => "hunt",
        }
    }

    /// The file an earlier version of plansim left in such a directory,
    /// recognised by its content; `None` when there is none.
    fn earlier_output(self, dir: &Path) -> Option<String> {
        let starts_with = |name: &str, prefix: &str| {
            head_of(&dir.join(name), 4096).is_some_and(|head| head.starts_with(prefix.as_bytes()))
        };
        match self {
            Kind::Run | Kind::Report => {
                let summary = format!("{}\n", super::summary::header().join(","));
                if starts_with("summary.csv", &summary) {
                    return Some("summary.csv".into());
                }
                head_of(&dir.join("index.html"), 64 * 1024)
                    .is_some_and(|html| contains(&html, b"<h1>plansim run report</h1>"))
                    .then(|| "index.html".into())
            }
            Kind::Sweep => regular(&dir.join(super::journal::FILE_NAME))
                .then(|| super::journal::FILE_NAME.into()),
            Kind::Hunt => entries(dir).ok()?.into_iter().find(|name| {
                name.ends_with(".yaml") && starts_with(name, "# plansim hunt finding: ")
            }),
        }
    }
}

/// A claimed output directory; see the module documentation.
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
    /// The topmost directory the claim created, if it created `dir`.
    created: Option<PathBuf>,
    /// Its number in [`FRESH_CLAIMS`], where a fresh claim (created, or
    /// found empty: everything in it is this command's) stays until kept.
    id: u64,
    lock: Option<File>,
}

impl OutDir {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The command succeeded (or wrote what must be kept, as a sweep's
    /// journal): what it wrote stays when the claim is released.
    pub fn keep(&mut self) {
        fresh_claims().remove(&self.id);
    }

    /// Everything in the directory is this command's: it goes again unless
    /// the claim is kept, whether the claim is dropped or the process is
    /// interrupted. Registered as soon as that is known, so a claim refused
    /// later on (its marker cannot be written) still removes what it made.
    fn mark_fresh(&self) {
        fresh_claims().insert(self.id, (self.dir.clone(), self.created.clone()));
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let unkept = fresh_claims().remove(&self.id);
        if let Some((dir, created)) = unkept {
            remove_written(&dir, created.as_deref());
        }
        drop(self.lock.take());
    }
}

/// The claims that are fresh (created, or found empty) and not yet kept,
/// by their number: what an interrupted command removes, since `exit`
/// runs no `Drop` ([`remove_unkept_claims`]).
static FRESH_CLAIMS: std::sync::Mutex<BTreeMap<u64, (PathBuf, Option<PathBuf>)>> =
    std::sync::Mutex::new(BTreeMap::new());

static NEXT_CLAIM: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn fresh_claims() -> std::sync::MutexGuard<'static, BTreeMap<u64, (PathBuf, Option<PathBuf>)>> {
    FRESH_CLAIMS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes what every fresh claim not kept holds, and the directories the
/// claims created, as their `Drop` would: an interrupted `run -o NEW`
/// leaves no `NEW`. Called by the interrupt handler (`cli::interrupt`)
/// while no temporary can be created.
pub fn remove_unkept_claims() {
    for (dir, created) in fresh_claims().values() {
        remove_written(dir, created.as_deref());
    }
}

/// Everything in `dir` (all of it this command's: a refused run leaves
/// nothing), then the empty directories from `dir` up to `created`, the
/// topmost one the claim made.
fn remove_written(dir: &Path, created: Option<&Path>) {
    if let Ok(read) = std::fs::read_dir(dir) {
        for entry in read.filter_map(Result::ok) {
            let path = entry.path();
            let _ = match entry.file_type() {
                Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
        }
    }
    if let Some(top) = created {
        for ancestor in dir.ancestors() {
            if std::fs::remove_dir(ancestor).is_err() || ancestor == top {
                break;
            }
        }
    }
}

/// Claims `dir` for writing output of `kind`; `force` lets plansim write
/// into a directory that is not its own (never into an input).
pub fn claim(dir: &Path, kind: Kind, force: bool) -> Result<OutDir, String> {
    let label = one_line_path(dir);
    let created = match std::fs::metadata(dir) {
        Ok(metadata) if metadata.is_dir() => {
            if crate::fsio::is_input(&metadata) {
                return Err(format!(
                    "refusing to write into {label}: it is one of this command's inputs; choose another directory"
                ));
            }
            None
        }
        Ok(_) => {
            return Err(format!(
                "refusing to write into {label}: it exists and is not a directory; choose another directory"
            ));
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let top = dir
                .ancestors()
                .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
                .last()
                .map(Path::to_path_buf);
            std::fs::create_dir_all(dir)
                .map_err(|err| format!("{label}: cannot create output directory: {err}"))?;
            top.or_else(|| Some(dir.to_path_buf()))
        }
        Err(err) => return Err(format!("{label}: cannot use as output directory: {err}")),
    };
    let mut claim = OutDir {
        dir: dir.to_path_buf(),
        created,
        id: NEXT_CLAIM.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        lock: None,
    };
    if claim.created.is_some() {
        claim.mark_fresh();
    }
    claim.lock = Some(lock(dir)?);
    let theirs: Vec<String> = entries(dir)?
        .into_iter()
        .filter(|name| name != LOCK_FILE && name != MARKER_FILE && !is_temp(name))
        .collect();
    let mark = match marker_of(dir) {
        Some(family) if family == kind.family() => false,
        Some(family) if !force => {
            return Err(format!(
                "refusing to write into {label}: it holds the output of plansim {family}, not of plansim {}; pass --force, or choose a new or empty directory",
                kind.family()
            ));
        }
        Some(_) => false,
        None if theirs.is_empty() => {
            claim.mark_fresh();
            true
        }
        None => match kind.earlier_output(dir) {
            Some(_) => true,
            None if force => false,
            None => {
                return Err(format!(
                    "refusing to write into {label}: not written by plansim (it holds {}, and no {MARKER_FILE}); pass --force, or choose a new or empty directory",
                    crate::names::one_line(&theirs[0])
                ));
            }
        },
    };
    if mark {
        let marker = dir.join(MARKER_FILE);
        let text = format!(
            "plansim output: {}\nWritten by plansim: it replaces the files it writes here, and nothing else.\n",
            kind.family()
        );
        super::atomic::write_atomic(&marker, text.as_bytes())
            .map_err(|err| format!("{}: cannot write: {err}", one_line_path(&marker)))?;
    }
    if regular(&dir.join(LOCK_FILE)) {
        let _ = std::fs::remove_file(dir.join(LOCK_FILE));
    }
    remove_stray_temps(dir, 3);
    Ok(claim)
}

/// Whether `a` and `b` name the same existing directory.
pub fn same_dir(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        a == b
    }
}

/// The command named by `dir`'s marker, if it has one.
fn marker_of(dir: &Path) -> Option<String> {
    let head = head_of(&dir.join(MARKER_FILE), 4096)?;
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next()?;
    first
        .strip_prefix("plansim output: ")
        .map(|family| family.trim().to_string())
}

/// `import -o FILE`: a single output file, claimed before anything runs.
#[derive(Debug)]
pub struct OutFile {
    path: PathBuf,
    existed: bool,
}

/// Claims `path` for one output file: absent, or a regular file that
/// plansim stamped (see [`stamp`]) and nobody edited since, or with
/// `force` any regular file that is not an input.
pub fn claim_file(path: &Path, force: bool) -> Result<OutFile, String> {
    let label = one_line_path(path);
    crate::fsio::check_replace(path).map_err(|err| err.to_string())?;
    let existed = match std::fs::symlink_metadata(path) {
        Ok(_) => true,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
        Err(err) => return Err(format!("{label}: cannot use: {err}")),
    };
    if existed && !force && !head_of(path, STAMPED_MAX_BYTES).is_some_and(|b| is_stamped(&b)) {
        return Err(format!(
            "refusing to replace {label}: not written by plansim (or edited since); pass --force to replace it"
        ));
    }
    Ok(OutFile {
        path: path.to_path_buf(),
        existed,
    })
}

impl OutFile {
    /// Writes the file: replacing the claimed one, or created only if
    /// nothing appeared at its path since the claim.
    pub fn write(&self, bytes: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let label = one_line_path(&self.path);
        let mut file = super::atomic::AtomicFile::create(&self.path)
            .map_err(|err| format!("{label}: cannot write: {err}"))?;
        file.write_all(bytes)
            .map_err(|err| format!("{label}: cannot write: {err}"))?;
        let committed = if self.existed {
            file.commit()
        } else {
            file.commit_new()
        };
        committed.map_err(|err| format!("{label}: cannot write: {err}"))
    }
}

/// The largest stamped file recognised (MAX_FILE_BYTES, as any scenario).
const STAMPED_MAX_BYTES: u64 = crate::scenario::limits::MAX_FILE_BYTES as u64;

const STAMP_PREFIX: &str = "# Written by plansim ";
const STAMP_FINGERPRINT: &str = "; fingerprint ";

/// `body` under plansim's stamp: a first line naming `command` and the
/// fingerprint of `body`, by which plansim knows the file is its own and
/// unedited.
pub fn stamp(command: &str, body: &str) -> String {
    format!(
        "{STAMP_PREFIX}{command}{STAMP_FINGERPRINT}{} of the lines below (while they are unchanged, plansim may replace this file)\n{body}",
        super::journal::fingerprint(&[body])
    )
}

/// Whether `bytes` start with plansim's stamp and the rest is unchanged.
pub fn is_stamped(bytes: &[u8]) -> bool {
    let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let (Ok(first), Ok(body)) = (
        std::str::from_utf8(&bytes[..end]),
        std::str::from_utf8(&bytes[end + 1..]),
    ) else {
        return false;
    };
    first
        .strip_prefix(STAMP_PREFIX)
        .and_then(|rest| rest.split_once(STAMP_FINGERPRINT))
        .and_then(|(_, rest)| rest.get(..16))
        .is_some_and(|fingerprint| fingerprint == super::journal::fingerprint(&[body]))
}

/// Up to `limit` bytes of the regular file at `path` (never a symlink: not
/// followed; never a FIFO: opened without blocking), or `None`.
fn head_of(path: &Path, limit: u64) -> Option<Vec<u8>> {
    if !regular(path) {
        return None;
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Whether `path` is a regular file (a symlink is not followed).
fn regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Creates `relative` (slash-separated) below a claimed output directory,
/// refusing a symlink or non-directory on the way: what plansim writes stays
/// inside the output directory even if someone planted `plots -> /etc`.
pub fn create_subdir(out: &Path, relative: &str) -> Result<PathBuf, String> {
    let mut path = out.to_path_buf();
    for component in relative.split('/') {
        path.push(component);
        match std::fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(format!(
                    "{}: is a symlink; plansim writes only inside its output directory: remove it",
                    one_line_path(&path)
                ));
            }
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(format!(
                    "{}: exists and is not a directory; remove it",
                    one_line_path(&path)
                ));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&path)
                    .map_err(|err| format!("{}: cannot create: {err}", one_line_path(&path)))?;
            }
            Err(err) => return Err(format!("{}: cannot use: {err}", one_line_path(&path))),
        }
    }
    Ok(path)
}

/// Locks the directory itself (an advisory `flock` on its descriptor): no
/// lock file exists to be left behind by a killed process.
fn lock(dir: &Path) -> Result<File, String> {
    let file = File::open(dir)
        .map_err(|err| format!("{}: cannot open to lock: {err}", one_line_path(dir)))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "{}: another plansim is writing here; wait for it to finish, or choose another directory",
            one_line_path(dir)
        )),
        Err(std::fs::TryLockError::Error(err)) => {
            Err(format!("{}: cannot lock: {err}", one_line_path(dir)))
        }
    }
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|err| format!("{}: cannot read directory: {err}", one_line_path(dir)))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// `.NAME.tmp-PID-N`, as `atomic` names its temporaries.
fn is_temp(name: &str) -> bool {
    name.starts_with('.')
        && name.rsplit_once(TEMP_MARKER).is_some_and(|(_, tail)| {
            tail.split_once('-').is_some_and(|(pid, n)| {
                !pid.is_empty()
                    && !n.is_empty()
                    && pid.bytes().all(|b| b.is_ascii_digit())
                    && n.bytes().all(|b| b.is_ascii_digit())
            })
        })
}

/// Removes temporaries a killed run left, in `dir` and the directories
/// below it (never following a symlink). Only called with the lock held, so
/// no temporary found can belong to a live writer.
fn remove_stray_temps(dir: &Path, depth: usize) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.filter_map(Result::ok) {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_dir() && depth > 0 {
            remove_stray_temps(&entry.path(), depth - 1);
        } else if !kind.is_dir() && is_temp(&name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory that does not exist yet (`claim` creates it), removed
    /// when the guard is dropped.
    fn temp_dir(name: &str) -> crate::test_dir::TempDir {
        let dir = crate::test_dir::TempDir::new(&format!("outdir-{name}"));
        std::fs::remove_dir(&dir).unwrap();
        dir
    }

    #[test]
    fn refuses_a_foreign_directory_and_a_second_writer() {
        let dir = temp_dir("foreign");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.html"), "mine").unwrap();
        let err = claim(&dir, Kind::Sweep, false).unwrap_err();
        assert!(err.ends_with("not written by plansim (it holds index.html, and no .plansim-output); pass --force, or choose a new or empty directory"), "{err}");
        assert_eq!(std::fs::read(dir.join("index.html")).unwrap(), b"mine");
        // --force writes there, and marks nothing as plansim's.
        drop(claim(&dir, Kind::Sweep, true).unwrap());
        assert!(!dir.join(MARKER_FILE).exists());
        assert_eq!(std::fs::read(dir.join("index.html")).unwrap(), b"mine");
        std::fs::remove_file(dir.join("index.html")).unwrap();
        let mut first = claim(&dir, Kind::Run, false).unwrap();
        let err = claim(&dir, Kind::Run, false).unwrap_err();
        assert!(err.contains("another plansim is writing here"), "{err}");
        first.keep();
        drop(first);
        assert_eq!(
            std::fs::read_to_string(dir.join(MARKER_FILE))
                .unwrap()
                .lines()
                .next(),
            Some("plansim output: run")
        );
        let err = claim(&dir, Kind::Sweep, false).unwrap_err();
        assert!(
            err.contains("it holds the output of plansim run, not of plansim sweep"),
            "{err}"
        );
        drop(claim(&dir, Kind::Report, false).unwrap());
        assert!(!dir.join(LOCK_FILE).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cleans_stray_temporaries_and_removes_an_unused_new_directory() {
        let dir = temp_dir("strays");
        drop(claim(&dir.join("a/b"), Kind::Run, false).unwrap());
        assert!(
            !dir.exists(),
            "a directory (and its parents) created for a failed command is removed"
        );
        std::fs::create_dir_all(dir.join("plots")).unwrap();
        // A run directory of a version before markers: recognised by its summary.
        let header = format!("{}\n", crate::report::summary::header().join(","));
        std::fs::write(dir.join("summary.csv"), &header).unwrap();
        std::fs::write(dir.join(".summary.csv.tmp-123-4"), "half").unwrap();
        std::fs::write(dir.join("plots/.a.svg.tmp-9-0"), "half").unwrap();
        std::fs::write(dir.join("notes.tmp-1-1"), "user's").unwrap();
        std::fs::write(dir.join(LOCK_FILE), "").unwrap();
        let claimed = claim(&dir, Kind::Run, false).unwrap();
        assert!(!dir.join(".summary.csv.tmp-123-4").exists());
        assert!(!dir.join("plots/.a.svg.tmp-9-0").exists());
        assert!(!dir.join(LOCK_FILE).exists());
        assert!(dir.join("notes.tmp-1-1").exists());
        assert!(dir.join(MARKER_FILE).exists());
        drop(claimed);
        assert!(
            dir.join("summary.csv").exists(),
            "a directory that held output is never emptied"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_command_empties_the_empty_directory_it_was_given() {
        let dir = temp_dir("was-empty");
        std::fs::create_dir_all(&dir).unwrap();
        let claimed = claim(&dir, Kind::Sweep, false).unwrap();
        create_subdir(&dir, "inputs/scenario").unwrap();
        std::fs::write(dir.join("inputs/e.yaml"), "x").unwrap();
        drop(claimed);
        assert!(dir.is_dir(), "the user's directory stays");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn never_replaces_an_input_or_a_non_regular_file() {
        let dir = temp_dir("replace");
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("input.yaml");
        std::fs::write(&input, "name: x\n").unwrap();
        crate::fsio::read_limited(&input, 100, "LIMIT").unwrap();
        std::os::unix::fs::symlink("/dev/null", dir.join("link")).unwrap();
        for (path, what) in [
            (input.clone(), "one of this command's inputs"),
            (dir.join("link"), "a symlink"),
            (dir.to_path_buf(), "a directory"),
        ] {
            let err = claim_file(&path, true).unwrap_err();
            let expected = format!("refusing to replace {}: it is {what}", path.display());
            assert!(err.starts_with(&expected), "{err}");
        }
        crate::fsio::mark_input(&dir);
        let err = claim(&dir, Kind::Run, true).unwrap_err();
        assert!(
            err.ends_with("it is one of this command's inputs; choose another directory"),
            "{err}"
        );
        // Forgotten before they go: tests share the process, and a new
        // file could reuse an inode.
        crate::fsio::forget_input(&input);
        crate::fsio::forget_input(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_single_file_is_replaced_only_while_stamped_and_unedited() {
        let dir = temp_dir("stamp");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("imported.yaml");
        claim_file(&file, false)
            .unwrap()
            .write(stamp("import nomad", "name: a\n").as_bytes())
            .unwrap();
        assert!(is_stamped(&std::fs::read(&file).unwrap()));
        claim_file(&file, false)
            .unwrap()
            .write(stamp("import nomad", "name: b\n").as_bytes())
            .unwrap();
        let mut edited = std::fs::read_to_string(&file).unwrap();
        assert!(edited.ends_with("\nname: b\n"), "{edited}");
        edited.push_str("seed: 3\n");
        std::fs::write(&file, &edited).unwrap();
        let err = claim_file(&file, false).unwrap_err();
        assert!(
            err.ends_with("not written by plansim (or edited since); pass --force to replace it"),
            "{err}"
        );
        claim_file(&file, true).unwrap().write(b"forced").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"forced");
        // A file that appeared after the claim of a new one is not replaced.
        let late = dir.join("late.yaml");
        let claimed = claim_file(&late, false).unwrap();
        std::fs::write(&late, "theirs").unwrap();
        assert!(claimed.write(b"ours").is_err());
        assert_eq!(std::fs::read(&late).unwrap(), b"theirs");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "no temporary left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn subdirectories_never_lead_outside() {
        let dir = temp_dir("subdir");
        std::fs::create_dir_all(dir.join("out")).unwrap();
        std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join("out/plots")).unwrap();
        let err = create_subdir(&dir.join("out"), "plots").unwrap_err();
        assert!(
            err.ends_with(
                "plots: is a symlink; plansim writes only inside its output directory: remove it"
            ),
            "{err}"
        );
        let made = create_subdir(&dir.join("out"), "inputs/scenario").unwrap();
        assert!(made.is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
