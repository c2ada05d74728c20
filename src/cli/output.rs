//! What every command shares on the way out: the exit codes, and printing
//! to stdout (which a reader that went away does not turn into an error).

/// Exit codes, as `--help` and README list them.
pub const EXIT_OK: u8 = 0;
pub const EXIT_EXPECT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

static STDOUT_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints to stdout. A reader that went away (`plansim run ... | head`) is
/// not our error: printing stops quietly, and the work (and any `--out`
/// files) still completes.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if err.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("cannot write to stdout: {err}");
        }
    }
}
