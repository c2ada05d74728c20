//! Every file plansim writes goes to a temporary file beside its target and
//! is renamed into place, so a reader (or an interrupted run) sees either the
//! old file or the new one, never half of one.
//!
//! The temporary is created exclusively (`create_new`: O_CREAT|O_EXCL, which
//! never follows a symlink, even a dangling one): a file or symlink planted
//! at a guessable name makes us pick the next name, it is never written
//! through. The rename then replaces the target's directory entry itself;
//! if the target is a symlink, the link is replaced, not the file it points to.
//!
//! Before the rename the target is checked by the output rules
//! (`fsio::check_replace`): plansim never replaces a symlink, FIFO,
//! socket, device or directory, nor a file this process read as an input.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The marker in every temporary's name; `outdir` removes strays by it.
pub const TEMP_MARKER: &str = ".tmp-";

/// How many names are tried before giving up (each taken name was planted
/// or left by someone else).
const TEMP_ATTEMPTS: u64 = 64;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Every temporary not yet renamed into place or removed, by its number:
/// what an interrupted command removes ([`remove_unfinished_and_exit`]).
static UNFINISHED: Mutex<BTreeMap<u64, PathBuf>> = Mutex::new(BTreeMap::new());

fn unfinished() -> std::sync::MutexGuard<'static, BTreeMap<u64, PathBuf>> {
    UNFINISHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every temporary still open, runs `then` (the output directories
/// the command created: `outdir::remove_unkept_claims`), prints `message`
/// and exits with `code`. The registry stays locked until the process is gone, so no
/// thread can create a temporary after the sweep (a temporary is created
/// under the same lock).
pub fn remove_unfinished_and_exit(code: i32, message: &str, then: fn()) -> ! {
    let live = unfinished();
    for temp in live.values() {
        let _ = fs::remove_file(temp);
    }
    // Still under the lock: what `then` removes cannot gain a temporary.
    then();
    let _ = writeln!(io::stderr(), "{message}");
    std::process::exit(code);
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Writes several files atomically, each as [`write_atomic`] writes one
/// (given as pieces, written in order), but flushed to disk together: every
/// temporary is written on the current rayon pool, then [`commit_all`]. On
/// an error, returns the failing file's path.
pub fn write_all_atomic(files: &[(PathBuf, Vec<Vec<u8>>)]) -> Result<(), (PathBuf, io::Error)> {
    use rayon::prelude::*;
    let staged: Vec<AtomicFile> = files
        .par_iter()
        .map(|(path, pieces)| stage(path, pieces).map_err(|err| (path.clone(), err)))
        .collect::<Result<_, _>>()?;
    commit_all(staged)
}

/// A file's temporary, written whole (its pieces in order), for [`commit_all`].
pub fn stage(path: &Path, pieces: &[Vec<u8>]) -> io::Result<AtomicFile> {
    let mut file = AtomicFile::create(path)?;
    for piece in pieces {
        file.write_all(piece)?;
    }
    Ok(file)
}

/// Commits written files, each synced and renamed on its own thread (at
/// most [`SYNC_THREADS`]): a disk's flushes overlap, so a sweep's outputs
/// cost about one flush, not one per file. As with files committed one
/// after another, a failure leaves the others committed or not, each whole.
/// On an error, returns the path of the first failing file.
pub fn commit_all(files: Vec<AtomicFile>) -> Result<(), (PathBuf, io::Error)> {
    let per_thread = files.len().div_ceil(SYNC_THREADS).max(1);
    let mut files: Vec<(usize, AtomicFile)> = files.into_iter().enumerate().collect();
    std::thread::scope(|scope| {
        let threads: Vec<_> = std::iter::from_fn(|| {
            let rest = files.len().saturating_sub(per_thread);
            let mine = files.split_off(rest);
            (!mine.is_empty()).then(|| {
                scope.spawn(move || {
                    mine.into_iter().try_for_each(|(at, file)| {
                        let target = file.target.clone();
                        file.commit().map_err(|err| (at, target, err))
                    })
                })
            })
        })
        .collect();
        let mut first: Option<(usize, PathBuf, io::Error)> = None;
        for thread in threads {
            let outcome = thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            if let Err(failed) = outcome
                && first.as_ref().is_none_or(|(other, _, _)| failed.0 < *other)
            {
                first = Some(failed);
            }
        }
        first.map_or(Ok(()), |(_, path, err)| Err((path, err)))
    })
}

/// At most this many files are synced at once.
const SYNC_THREADS: usize = 16;

/// A file written a piece at a time in place of its target: into a
/// temporary created exclusively beside it, renamed over the target by
/// [`AtomicFile::commit`]. Dropped uncommitted (a refused or failed run, an
/// error), it removes its temporary: nothing is left behind.
pub struct AtomicFile {
    temp: PathBuf,
    /// The temporary's number in [`UNFINISHED`].
    number: u64,
    target: PathBuf,
    /// `None` once closed: the data is on disk, the rename still to come.
    file: Option<fs::File>,
    committed: bool,
}

impl AtomicFile {
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?
            .to_string_lossy();
        let (number, temp, file) = create_temp(dir, &name)?;
        Ok(AtomicFile {
            temp,
            number,
            target: target.to_path_buf(),
            file: Some(file),
            committed: false,
        })
    }

    /// Syncs the data to disk and closes the file (so thousands of finished
    /// files waiting for their commit hold no descriptor); writing after
    /// this is an error.
    pub fn close(&mut self) -> io::Result<()> {
        match self.file.take() {
            Some(file) => file.sync_all(),
            None => Ok(()),
        }
    }

    /// Syncs the data written so far, keeping the file open: a long file
    /// synced as it goes leaves [`AtomicFile::close`] less to wait for.
    pub fn sync_data(&mut self) -> io::Result<()> {
        self.open_file()?.sync_data()
    }

    /// Closes the file and renames it over its target, which must be absent
    /// or a regular file that is not an input (`fsio::check_replace`).
    pub fn commit(mut self) -> io::Result<()> {
        self.close()?;
        crate::fsio::check_replace(&self.target)?;
        fs::rename(&self.temp, &self.target)?;
        self.finished();
        Ok(())
    }

    /// Renamed into place: no longer a temporary.
    fn finished(&mut self) {
        self.committed = true;
        unfinished().remove(&self.number);
    }

    /// As [`AtomicFile::commit`], for a target that must still be absent:
    /// linked into place, which fails if anything appeared there meanwhile.
    pub fn commit_new(mut self) -> io::Result<()> {
        self.close()?;
        match fs::hard_link(&self.temp, &self.target) {
            Ok(()) => {
                let _ = fs::remove_file(&self.temp);
                self.finished();
                Ok(())
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(io::Error::other(
                "refusing to replace a file that appeared while plansim was writing; run again",
            )),
            // A file system without hard links: renamed, if still absent.
            Err(_) if fs::symlink_metadata(&self.target).is_err() => {
                fs::rename(&self.temp, &self.target)?;
                self.finished();
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    fn open_file(&mut self) -> io::Result<&mut fs::File> {
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("written after it was closed"))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.open_file()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            self.file = None;
            let _ = fs::remove_file(&self.temp);
            unfinished().remove(&self.number);
        }
    }
}

/// Creates a temporary beside `name` in `dir` and registers it in
/// [`UNFINISHED`], both under the registry's lock.
fn create_temp(dir: &Path, name: &str) -> io::Result<(u64, PathBuf, fs::File)> {
    let mut last = None;
    let mut live = unfinished();
    for _ in 0..TEMP_ATTEMPTS {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}{TEMP_MARKER}{}-{n}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => {
                live.insert(n, temp.clone());
                return Ok((n, temp, file));
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary name was free")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    #[test]
    fn replaces_the_file_and_leaves_no_temp() {
        let dir = TempDir::new("atomic-replace");
        let target = dir.join("out.csv");
        write_atomic(&target, b"old").unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(TEMP_MARKER))
            .collect();
        assert!(leftovers.is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn several_files_are_written_synced_and_renamed() {
        let dir = TempDir::new("atomic-several");
        let (a, b) = (dir.join("a.csv"), dir.join("b.csv"));
        write_atomic(&a, b"old").unwrap();
        let pieces = |text: &str| vec![text.as_bytes().to_vec(), b"!".to_vec()];
        write_all_atomic(&[(a.clone(), pieces("new a")), (b.clone(), pieces("new b"))]).unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"new a!");
        assert_eq!(fs::read(&b).unwrap(), b"new b!");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 2, "no temporary left");
        // A file that cannot be created is named; nothing is renamed and
        // no temporary is left.
        let missing = dir.join("no-such-dir").join("c.csv");
        let err = write_all_atomic(&[(a.clone(), pieces("newer")), (missing.clone(), pieces("c"))])
            .unwrap_err();
        assert_eq!(err.0, missing);
        assert_eq!(fs::read(&a).unwrap(), b"new a!");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 2, "no temporary left");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_uncommitted_file_leaves_nothing_behind() {
        let dir = TempDir::new("atomic-uncommitted");
        let target = dir.join("trace.csv");
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"half a trace").unwrap();
        file.close().unwrap();
        assert!(file.write_all(b"more").is_err(), "closed");
        drop(file);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"a whole trace").unwrap();
        file.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"a whole trace");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_never_followed() {
        let dir = TempDir::new("atomic-symlink");
        let outside = dir.join("outside.txt");
        fs::write(&outside, b"precious").unwrap();
        let out = dir.join("o");
        fs::create_dir_all(&out).unwrap();
        // Plant a link at every name the next writes could pick.
        let next = COUNTER.load(Ordering::Relaxed);
        for n in next..next + 8 {
            let name = format!(".summary.csv{TEMP_MARKER}{}-{n}", std::process::id());
            std::os::unix::fs::symlink(&outside, out.join(name)).unwrap();
        }
        write_atomic(&out.join("summary.csv"), b"results").unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
        let target = out.join("summary.csv");
        assert!(
            !fs::symlink_metadata(&target)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&target).unwrap(), b"results");
        fs::remove_dir_all(&dir).unwrap();
    }
}
