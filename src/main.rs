//! The `plansim` binary: the library's command line, plus the one guard
//! that has to run before Rust's runtime does.

use std::process::ExitCode;

fn main() -> ExitCode {
    plansim::cli::main()
}

/// `plansim run ... >&-` starts with stdout closed. Rust's runtime, before
/// `main`, opens /dev/null read-write on a closed fd 0-2 (so a file opened
/// later cannot take the number and receive the output), and its stdout
/// then treats a bad descriptor as a sink: the output would go nowhere and
/// the command exit 0. An ELF constructor runs before the runtime: this
/// one notes that stdout was closed, for the first write to stdout to
/// fail as writing to a closed file does (exit 2), and plugs the number
/// itself, read-only, so the runtime's check finds it open and nothing
/// opened later takes it. A command that writes nothing to stdout is not
/// affected.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

#[cfg(target_os = "linux")]
extern "C" fn note_closed_stdout() {
    const STDOUT: libc::c_int = 1;
    // SAFETY: fcntl, open, dup2 and close on fixed descriptors and a
    // constant path, before any other code of this process runs.
    unsafe {
        if libc::fcntl(STDOUT, libc::F_GETFD) != -1 {
            return;
        }
        plansim::cli::stdout_was_closed();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
        if null >= 0 && null != STDOUT {
            libc::dup2(null, STDOUT);
            libc::close(null);
        }
    }
}
