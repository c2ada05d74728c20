//! What every command shares on the way out: the exit codes, and printing
//! to stdout (which a reader that went away does not turn into an error).

/// Exit codes, as `--help` and README list them.
pub const EXIT_OK: u8 = 0;
pub const EXIT_EXPECT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

static STDOUT_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The process started with stdout closed (`>&-`; see the binary's
/// `note_closed_stdout`): what is printed cannot be written.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes that the process started with stdout closed, before Rust's
/// runtime put /dev/null in its place (the binary's ELF constructor).
pub fn stdout_was_closed() {
    STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The first error writing to stdout other than a reader that went away
/// (a full disk: `plansim run ... > /dev/full`), for [`stdout_failed`].
static STDOUT_ERROR: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Prints to stdout. A reader that went away (`plansim run ... | head`) is
/// not our error: printing stops quietly, and the work (and any `--out`
/// files) still completes. Any other error (a full disk) stops the
/// printing too, and is reported once the command ends ([`stdout_failed`]):
/// the command then exits 2.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    note_stdout(
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush()),
    );
}

/// Prints one message line (or several) to stderr, through
/// [`crate::names::terminal_lines`] so no control character but the line
/// breaks reaches the terminal. A stderr that cannot be written (closed,
/// `2>/dev/full`) loses the message but never stops the command: the
/// standard `eprintln!` would panic there (clippy.toml forbids it).
pub(crate) fn err(text: &str) {
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(crate::names::terminal_lines(text).as_bytes())
        .and_then(|()| stderr.write_all(b"\n"));
}

/// [`err`] with `format!` arguments: the shell's `eprintln!`.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::output::err(&format!($($arg)*))
    };
}
pub(crate) use errln;

/// Records the outcome of a write to stdout; `false` once stdout is gone.
pub(crate) fn note_stdout(written: std::io::Result<()>) -> bool {
    use std::sync::atomic::Ordering;
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return false;
    }
    // Rust's stdout reports a write to a closed descriptor as done.
    let written = match written {
        Ok(()) if STDOUT_CLOSED.load(Ordering::Relaxed) => {
            Err(std::io::Error::from_raw_os_error(libc::EBADF))
        }
        other => other,
    };
    let Err(err) = written else {
        return true;
    };
    STDOUT_GONE.store(true, Ordering::Relaxed);
    if err.kind() != std::io::ErrorKind::BrokenPipe {
        let mut first = STDOUT_ERROR
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        first.get_or_insert_with(|| format!("cannot write to stdout: {err}"));
    }
    false
}

/// Why stdout could not be written, if it could not (a reader that went
/// away is not a failure).
pub(crate) fn stdout_failed() -> Option<String> {
    STDOUT_ERROR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}
