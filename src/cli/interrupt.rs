//! Ctrl-C, and the `SIGTERM` / `SIGHUP` a batch engine or a closing
//! terminal sends. Every file plansim writes is a temporary until its
//! rename (`report::atomic`), so an interrupted command would leave those
//! temporaries behind: the handler removes every one still open and exits
//! 130 (128 + SIGINT, as shells expect). A sweep asks for more (see
//! [`graceful`]): its first interrupt only stops new runs, so the runs
//! that finished are journaled and `--resume` can finish it; a second one
//! stops at once, as above.
//!
//! `SIGKILL` cannot be caught: what a killed process leaves (temporaries
//! named `.<file>.tmp-<pid>-<n>`) is removed by the next command that
//! claims the directory (`report::outdir`).

use std::sync::atomic::{AtomicBool, Ordering};

/// The exit code of an interrupted command.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Set by the first interrupt.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether the first interrupt only sets [`INTERRUPTED`] (a sweep).
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once, before a command runs). ctrlc runs it on a
/// thread of its own, not in signal context, so it may take locks.
pub fn install() {
    // Refused only when another handler is installed: nothing to do then.
    let _ = ctrlc::set_handler(on_interrupt);
}

/// Makes the first interrupt a request to stop (see the module's doc).
pub fn graceful() {
    GRACEFUL.store(true, Ordering::SeqCst);
}

fn on_interrupt() {
    let first = !INTERRUPTED.swap(true, Ordering::SeqCst);
    if first && GRACEFUL.load(Ordering::SeqCst) {
        return;
    }
    crate::report::atomic::remove_unfinished_and_exit(
        i32::from(EXIT_INTERRUPTED),
        "plansim: interrupted; the files it had not finished writing were removed, and the output directories it had created",
        crate::report::outdir::remove_unkept_claims,
    );
}
