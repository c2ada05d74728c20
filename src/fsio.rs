//! The one way plansim reads a file: every input (scenario, experiment,
//! results given to `diff`, sweep journals) goes through [`read_limited`],
//! so none can be a FIFO that blocks forever, a device that never ends
//! (`/dev/zero`) or a file larger than its limit.
//!
//! Every file read is also remembered, by device and inode (and its size
//! and modification time as read), as one of this process's inputs: the output rules (`report::outdir`) never replace one,
//! whatever path names it (`import nomad snap -o snap/nodes.json`), and
//! [`check_replace`] is the check every write makes before it replaces a
//! file.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

/// Largest results file (`summary.csv`) `diff` reads, in bytes: 16 MiB is
/// about 100,000 rows, and two of them parsed fit well within 1 GiB.
pub const MAX_RESULTS_BYTES: u64 = 16 * 1024 * 1024;
/// Largest sweep journal read back, in bytes (MAX_RUNS lines of a few hundred bytes).
pub const MAX_JOURNAL_BYTES: u64 = 256 * 1024 * 1024;

/// Why a read failed: the file is missing (callers may treat that as "no
/// file yet"), or any other problem, already worded for the user.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError {
    NotFound,
    Refused(String),
}

impl ReadError {
    /// The message, with a missing file worded like any other problem.
    pub fn message(self) -> String {
        match self {
            ReadError::NotFound => "cannot read: no such file or directory".to_string(),
            ReadError::Refused(message) => message,
        }
    }
}

/// Reads at most `limit` bytes of the regular file at `path` (symlinks to
/// one are followed). Anything else is refused by its metadata before a
/// byte is read: a directory, a FIFO, a socket, a device. The file is
/// opened without blocking (a FIFO swapped in after the check cannot hang
/// the open) and checked again through the open handle, then read with
/// `take(limit + 1)` so a file that grows while being read is still caught.
/// `limit_name` names the limit in the message (e.g. `MAX_FILE_BYTES`).
pub fn read_limited(path: &Path, limit: u64, limit_name: &str) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    open_limited(path, limit, limit_name)?
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    Ok(bytes)
}

/// The words of a failed read: the limit's own message, or the system's.
pub fn read_error(err: std::io::Error) -> ReadError {
    if err.kind() == std::io::ErrorKind::FileTooLarge {
        ReadError::Refused(err.to_string())
    } else {
        ReadError::Refused(format!("cannot read: {err}"))
    }
}

/// The regular file at `path`, checked and opened as [`read_limited`]
/// does, as a stream for a reader that parses as it goes (a large export
/// file is never held whole): reading past `limit` bytes is an error of
/// kind `FileTooLarge` naming `limit_name`.
pub fn open_limited(path: &Path, limit: u64, limit_name: &str) -> Result<LimitedFile, ReadError> {
    let metadata = std::fs::metadata(path).map_err(open_error)?;
    check_kind(&metadata)?;
    let file = open_nonblocking(path).map_err(open_error)?;
    let opened = file.metadata().map_err(open_error)?;
    check_kind(&opened)?;
    note_input(&opened);
    Ok(LimitedFile {
        file: file.take(limit + 1),
        read: 0,
        limit,
        limit_name: limit_name.to_string(),
    })
}

/// A file read through [`open_limited`].
pub struct LimitedFile {
    file: std::io::Take<File>,
    read: u64,
    limit: u64,
    limit_name: String,
}

impl LimitedFile {
    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }
}

impl Read for LimitedFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read += n as u64;
        if self.read > self.limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!(
                    "file is larger than the limit of {} ({})",
                    human_bytes(self.limit),
                    self.limit_name
                ),
            ));
        }
        Ok(n)
    }
}

/// As [`read_limited`], for text: the bytes must be UTF-8.
pub fn read_text_limited(path: &Path, limit: u64, limit_name: &str) -> Result<String, ReadError> {
    let bytes = read_limited(path, limit, limit_name)?;
    String::from_utf8(bytes).map_err(|err| {
        ReadError::Refused(format!(
            "not UTF-8 text (invalid byte at offset {})",
            err.utf8_error().valid_up_to()
        ))
    })
}

/// A file as it was read: device and inode, and its size and modification
/// time, so that an input deleted while plansim runs is not mistaken for
/// the new file that reuses its inode.
type Identity = (u64, u64, u64, i64, i64);

/// The inputs read so far.
static INPUTS: std::sync::Mutex<std::collections::BTreeSet<Identity>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn identity(metadata: &std::fs::Metadata) -> Option<Identity> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // A directory's size and time change as files come and go in it.
        let (len, secs, nanos) = if metadata.is_dir() {
            (0, 0, 0)
        } else {
            (metadata.len(), metadata.mtime(), metadata.mtime_nsec())
        };
        Some((metadata.dev(), metadata.ino(), len, secs, nanos))
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        None
    }
}

fn inputs() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<Identity>> {
    INPUTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn note_input(metadata: &std::fs::Metadata) {
    if let Some(id) = identity(metadata) {
        inputs().insert(id);
    }
}

/// Marks `path` (a file or a directory, symlinks followed) as one of this
/// process's inputs, as reading it would: `merge` marks its shard
/// directories so that none can be its output directory.
pub fn mark_input(path: &Path) {
    if let Ok(metadata) = std::fs::metadata(path) {
        note_input(&metadata);
    }
}

/// Forgets that `path` was read: a sweep's own journal, read back by
/// `--resume`, is plansim's to replace.
pub fn forget_input(path: &Path) {
    if let Some(id) = std::fs::metadata(path).ok().as_ref().and_then(identity) {
        inputs().remove(&id);
    }
}

/// Whether `metadata` is that of a file (or directory) this process read
/// as an input.
pub fn is_input(metadata: &std::fs::Metadata) -> bool {
    identity(metadata).is_some_and(|id| inputs().contains(&id))
}

/// Checks that `target` may be replaced by a file plansim wrote: absent,
/// or a regular file (not a symlink, FIFO, socket, device or directory)
/// that is not one of this command's inputs. `--force` never lifts this.
pub fn check_replace(target: &Path) -> std::io::Result<()> {
    let metadata = match std::fs::symlink_metadata(target) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    let what = if metadata.file_type().is_symlink() {
        "it is a symlink"
    } else if metadata.is_dir() {
        "it is a directory"
    } else if !metadata.is_file() {
        "it is a FIFO, socket or device"
    } else if is_input(&metadata) {
        "it is one of this command's inputs"
    } else {
        return Ok(());
    };
    Err(std::io::Error::other(format!(
        "refusing to replace {}: {what} (plansim replaces only regular files, never an input, even with --force)",
        crate::names::one_line_path(target)
    )))
}

fn open_error(err: std::io::Error) -> ReadError {
    if err.kind() == std::io::ErrorKind::NotFound {
        ReadError::NotFound
    } else {
        ReadError::Refused(format!("cannot read: {err}"))
    }
}

fn check_kind(metadata: &std::fs::Metadata) -> Result<(), ReadError> {
    if metadata.is_file() {
        return Ok(());
    }
    let kind = if metadata.is_dir() {
        "a directory"
    } else {
        "a FIFO, socket or device"
    };
    Err(ReadError::Refused(format!(
        "cannot read: this is {kind}, not a regular file"
    )))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).open(path)
}

/// `16 MiB`, `512 KiB`, `100 bytes`.
pub fn human_bytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_directories_devices_and_large_files() {
        let dir = crate::test_dir::TempDir::new("fsio");
        assert_eq!(
            read_limited(&dir, 10, "LIMIT").unwrap_err().message(),
            "cannot read: this is a directory, not a regular file"
        );
        if Path::new("/dev/zero").exists() {
            assert_eq!(
                read_limited(Path::new("/dev/zero"), 10, "LIMIT")
                    .unwrap_err()
                    .message(),
                "cannot read: this is a FIFO, socket or device, not a regular file"
            );
        }
        let file = dir.join("big");
        std::fs::write(&file, [b'x'; 11]).unwrap();
        assert_eq!(
            read_limited(&file, 10, "LIMIT").unwrap_err().message(),
            "file is larger than the limit of 10 bytes (LIMIT)"
        );
        assert_eq!(read_limited(&file, 11, "LIMIT").unwrap().len(), 11);
        // Read, so an input: never replaced, until forgotten.
        let err = check_replace(&file).unwrap_err().to_string();
        assert!(err.contains("it is one of this command's inputs"), "{err}");
        forget_input(&file);
        assert!(check_replace(&file).is_ok());
        assert!(check_replace(&dir.join("absent")).is_ok());
        assert_eq!(
            read_limited(&dir.join("absent"), 10, "LIMIT").unwrap_err(),
            ReadError::NotFound
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
