//! The output-directory guard. Before a command writes into `--out DIR` it
//! claims the directory:
//!
//! - DIR is created if missing; if it exists it must be a directory that is
//!   empty or already holds this kind of plansim output (a `summary.csv`
//!   for `run`, a sweep journal for `sweep` and `merge`). Anything else is
//!   the user's, and is refused with how to proceed.
//! - A lock (`.plansim.lock`, an advisory `flock` the kernel drops when the
//!   process dies) is taken before anything is written: two plansim
//!   processes never write one directory at once.
//! - Temporaries a killed run left behind are removed.
//!
//! The claim is released on drop: the lock file is removed, and a directory
//! the claim created and nothing was written to is removed too, so a
//! refused run (exit 2) leaves nothing behind.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use super::atomic::TEMP_MARKER;

/// The lock file's name inside a claimed directory.
pub const LOCK_FILE: &str = ".plansim.lock";

/// What a directory must already hold to be written into again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `plansim run --out`: a previous run's `summary.csv`.
    Run,
    /// `plansim sweep --out` and `merge --out`: a sweep journal.
    Sweep,
}

impl Kind {
    fn marker(self) -> &'static str {
        match self {
            Kind::Run => "summary.csv",
            Kind::Sweep => super::journal::FILE_NAME,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Run => "plansim run results (summary.csv)",
            Kind::Sweep => "a plansim sweep",
        }
    }
}

/// A claimed output directory; see the module documentation.
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
    created: bool,
    lock: Option<File>,
}

impl OutDir {
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        // Removed while still locked, so no one locks a file about to vanish.
        let _ = std::fs::remove_file(self.dir.join(LOCK_FILE));
        drop(self.lock.take());
        if self.created {
            // Only succeeds if nothing was written.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Claims `dir` for writing output of `kind`.
pub fn claim(dir: &Path, kind: Kind) -> Result<OutDir, String> {
    let label = dir.display();
    let created = match std::fs::metadata(dir) {
        Ok(metadata) if metadata.is_dir() => false,
        Ok(_) => {
            return Err(format!(
                "{label}: exists and is not a directory; choose another --out"
            ));
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .map_err(|err| format!("{label}: cannot create output directory: {err}"))?;
            true
        }
        Err(err) => return Err(format!("{label}: cannot use as output directory: {err}")),
    };
    let mut claim = OutDir {
        dir: dir.to_path_buf(),
        created,
        lock: None,
    };
    claim.lock = Some(lock(dir)?);
    let foreign = entries(dir)?
        .into_iter()
        .filter(|name| name != LOCK_FILE && !is_temp(name))
        .collect::<Vec<_>>();
    if !foreign.is_empty() && !foreign.iter().any(|name| name == kind.marker()) {
        return Err(format!(
            "{label}: is not empty and does not hold {} (found {}); choose a new or empty --out directory, or move its contents away",
            kind.what(),
            foreign.first().map(String::as_str).unwrap_or("")
        ));
    }
    remove_stray_temps(dir, 3);
    Ok(claim)
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
                    path.display()
                ));
            }
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(format!(
                    "{}: exists and is not a directory; remove it",
                    path.display()
                ));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&path)
                    .map_err(|err| format!("{}: cannot create: {err}", path.display()))?;
            }
            Err(err) => return Err(format!("{}: cannot use: {err}", path.display())),
        }
    }
    Ok(path)
}

fn lock(dir: &Path) -> Result<File, String> {
    let path = dir.join(LOCK_FILE);
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A symlink planted at the lock's name is not followed.
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let file = options
        .open(&path)
        .map_err(|err| format!("{}: cannot create the lock file: {err}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "{}: another plansim is writing here (it holds {LOCK_FILE}); wait for it to finish, or choose another --out",
            dir.display()
        )),
        Err(std::fs::TryLockError::Error(err)) => {
            Err(format!("{}: cannot lock: {err}", path.display()))
        }
    }
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|err| format!("{}: cannot read directory: {err}", dir.display()))?
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
        let err = claim(&dir, Kind::Sweep).unwrap_err();
        assert!(err.ends_with("is not empty and does not hold a plansim sweep (found index.html); choose a new or empty --out directory, or move its contents away"), "{err}");
        assert_eq!(std::fs::read(dir.join("index.html")).unwrap(), b"mine");
        std::fs::remove_file(dir.join("index.html")).unwrap();
        let first = claim(&dir, Kind::Run).unwrap();
        let err = claim(&dir, Kind::Run).unwrap_err();
        assert!(err.contains("another plansim is writing here"), "{err}");
        drop(first);
        assert!(!dir.join(LOCK_FILE).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cleans_stray_temporaries_and_removes_an_unused_new_directory() {
        let dir = temp_dir("strays");
        drop(claim(&dir, Kind::Run).unwrap());
        assert!(
            !dir.exists(),
            "a directory nothing was written to is removed"
        );
        std::fs::create_dir_all(dir.join("plots")).unwrap();
        std::fs::write(dir.join("summary.csv"), "x").unwrap();
        std::fs::write(dir.join(".summary.csv.tmp-123-4"), "half").unwrap();
        std::fs::write(dir.join("plots/.a.svg.tmp-9-0"), "half").unwrap();
        std::fs::write(dir.join("notes.tmp-1-1"), "user's").unwrap();
        let claimed = claim(&dir, Kind::Run).unwrap();
        assert!(!dir.join(".summary.csv.tmp-123-4").exists());
        assert!(!dir.join("plots/.a.svg.tmp-9-0").exists());
        assert!(dir.join("notes.tmp-1-1").exists());
        drop(claimed);
        assert!(dir.join("summary.csv").exists());
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
