//! What a panic prints. A panic is a bug in plansim (bad input exits 2 with
//! a message at file:line:column, never a panic), so instead of Rust's raw
//! message and backtrace the user gets one paragraph: what happened, what
//! to send, and the crash file that holds it all (the panic's message and
//! location, the plansim version, the command line with its arguments
//! escaped, the backtrace). The process still exits 101, by unwinding as
//! before (every thread plansim starts hands its panic to the main thread).
//!
//! The crash file is created in the system temp dir (`TMPDIR`) under a
//! name with the process id and a random part, exclusively (O_CREAT|O_EXCL
//! and O_NOFOLLOW: an existing file or a symlink planted under that name is
//! never written through), readable by its owner only. If it cannot be
//! written the paragraph says so and carries the details itself.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the test suite only, to make `plansim` panic right after the hook
/// is installed (the message names the variable). No input can make plansim
/// panic on purpose, and the hook's one end-to-end test needs a real panic
/// through the real binary; nothing else reads it.
pub const TEST_PANIC_VAR: &str = "PLANSIM_TEST_PANIC";

/// Names tried before giving up on the crash file (each is new, random).
const CRASH_FILE_ATTEMPTS: u32 = 16;

/// Installs the hook. Only the first panic of the process is reported:
/// several worker threads may hit the same bug at once.
pub fn install() {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    std::panic::set_hook(Box::new(|info| {
        if REPORTED.swap(true, Ordering::SeqCst) {
            return;
        }
        let message = panic_message(info.payload());
        let location = info
            .location()
            .map_or_else(|| "an unknown place".to_string(), |l| l.to_string());
        let backtrace = std::backtrace::Backtrace::force_capture();
        let text = crash_file_text(
            &message,
            &location,
            env!("CARGO_PKG_VERSION"),
            &std::env::args_os().collect::<Vec<_>>(),
            &backtrace.to_string(),
        );
        let written = write_crash_file(&std::env::temp_dir(), &text);
        let paragraph = crash_paragraph(
            &message,
            &location,
            written.as_deref().map_err(String::as_str),
        );
        // A closed stderr must not turn the report into an abort.
        let _ = io::stderr().write_all(paragraph.as_bytes());
    }));
}

/// Panics when the test-only variable is set (see [`TEST_PANIC_VAR`]).
pub fn test_panic_if_asked() {
    if std::env::var_os(TEST_PANIC_VAR).is_some() {
        panic!("{TEST_PANIC_VAR} is set: a panic on purpose, to test the crash report");
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// The paragraph on stderr: what happened, what to report, and where the
/// crash file is (or why there is none).
pub fn crash_paragraph(message: &str, location: &str, written: Result<&Path, &str>) -> String {
    let report = match written {
        Ok(path) => format!(
            "Please report it to plansim's maintainers with the crash file {}, which holds the \
             message, where it happened, the plansim version, the command line and a backtrace, \
             and the input files that command names if you can share them.",
            crate::names::one_line_path(path)
        ),
        Err(why) => format!(
            "No crash file could be written ({why}): please report it to plansim's maintainers \
             with this message, the plansim version ({}), the command line and the input files it \
             names if you can share them.",
            env!("CARGO_PKG_VERSION")
        ),
    };
    format!(
        "plansim: internal error: {message} (at {location}). This is a bug in plansim, not in \
         your input; whatever this command was writing may be incomplete. {report}\n"
    )
}

/// The crash file's contents.
pub fn crash_file_text(
    message: &str,
    location: &str,
    version: &str,
    args: &[OsString],
    backtrace: &str,
) -> String {
    let command: Vec<String> = args.iter().map(|a| shell_quote(a.as_bytes())).collect();
    format!(
        "plansim crash report\n\
         message: {message}\n\
         location: {location}\n\
         version: plansim {version}\n\
         command: {}\n\
         \n\
         backtrace:\n{backtrace}\n",
        command.join(" ")
    )
}

/// One argument as a POSIX shell reads it back: bare when it is made of
/// safe characters, in single quotes when it is printable UTF-8, otherwise
/// (control characters, bytes that are not UTF-8) in `$'...'` with every
/// byte outside printable ASCII as `\xNN`.
pub fn shell_quote(arg: &[u8]) -> String {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b);
    if !arg.is_empty() && arg.iter().all(|&b| safe(b)) {
        return String::from_utf8_lossy(arg).into_owned();
    }
    if let Ok(text) = std::str::from_utf8(arg)
        && !text.chars().any(char::is_control)
    {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    let mut quoted = String::from("$'");
    for &b in arg {
        match b {
            b'\\' => quoted.push_str(r"\\"),
            b'\'' => quoted.push_str(r"\'"),
            0x20..=0x7e => quoted.push(char::from(b)),
            _ => quoted.push_str(&format!("\\x{b:02x}")),
        }
    }
    quoted.push('\'');
    quoted
}

/// Writes `text` to a new file in `dir`; `Err` says why it could not.
fn write_crash_file(dir: &Path, text: &str) -> Result<PathBuf, String> {
    let pid = std::process::id();
    let mut last = String::new();
    for _ in 0..CRASH_FILE_ATTEMPTS {
        let path = dir.join(format!("plansim-crash-{pid}-{:016x}.txt", random_u64()));
        match create_exclusive(&path, text.as_bytes()) {
            Ok(()) => return Ok(path),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                last = format!("{}: {err}", crate::names::one_line_path(&path));
            }
            Err(err) => return Err(format!("{}: {err}", crate::names::one_line_path(&path))),
        }
    }
    Err(format!(
        "{CRASH_FILE_ATTEMPTS} names in {} were taken, the last {last}",
        crate::names::one_line_path(dir)
    ))
}

/// Creates `path`, which must not exist (not even as a symlink), mode 0600,
/// and writes `bytes` to it.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A random number from the standard library's per-process hash keys: the
/// crash file's name must not be guessable in a shared temp dir, and the
/// model's seeded streams are no business of the shell's.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_quoted_as_a_shell_reads_them_back() {
        assert_eq!(shell_quote(b"--budget"), "--budget");
        assert_eq!(shell_quote(b"a/b.yaml"), "a/b.yaml");
        assert_eq!(shell_quote(b""), "''");
        assert_eq!(shell_quote(b"my file.yaml"), "'my file.yaml'");
        assert_eq!(shell_quote(b"it's"), r"'it'\''s'");
        assert_eq!(shell_quote("vol-é".as_bytes()), "'vol-é'");
        assert_eq!(shell_quote(b"a\nb"), r"$'a\x0ab'");
        assert_eq!(shell_quote(b"\xff'\\"), r"$'\xff\'\\'");
    }

    #[test]
    fn the_crash_file_holds_what_a_report_needs() {
        let args: Vec<OsString> = ["plansim", "run", "my dir/s.yaml"]
            .into_iter()
            .map(OsString::from)
            .collect();
        let text = crash_file_text("boom", "src/x.rs:1:2", "9.9.9", &args, "frames");
        assert!(text.contains("message: boom\n"), "{text}");
        assert!(text.contains("location: src/x.rs:1:2\n"), "{text}");
        assert!(text.contains("version: plansim 9.9.9\n"), "{text}");
        assert!(
            text.contains("command: plansim run 'my dir/s.yaml'\n"),
            "{text}"
        );
        assert!(text.ends_with("backtrace:\nframes\n"), "{text}");
    }

    #[test]
    fn the_paragraph_names_the_file_or_says_why_there_is_none() {
        let with = crash_paragraph("boom", "src/x.rs:1:2", Ok(Path::new("/tmp/c.txt")));
        assert!(with.starts_with("plansim: internal error: boom (at src/x.rs:1:2)."));
        assert!(with.contains("crash file /tmp/c.txt"), "{with}");
        assert_eq!(with.lines().count(), 1, "one paragraph: {with}");
        let without = crash_paragraph("boom", "src/x.rs:1:2", Err("/nope: denied"));
        assert!(
            without.contains("No crash file could be written (/nope: denied)"),
            "{without}"
        );
        assert!(without.contains(env!("CARGO_PKG_VERSION")), "{without}");
    }

    #[test]
    fn the_crash_file_is_new_and_never_written_through_a_symlink() {
        let dir = crate::test_dir::TempDir::new("crash-file");
        let written = write_crash_file(&dir, "report").unwrap();
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "report");
        assert!(written.starts_with(&dir));
        let again = write_crash_file(&dir, "second").unwrap();
        assert_ne!(written, again, "a unique name each time");

        let target = dir.join("target");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_exclusive(&link, b"x").is_err());
        assert!(create_exclusive(&written, b"x").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "report");

        let missing = dir.join("missing");
        assert!(write_crash_file(&missing, "report").is_err());
    }
}
