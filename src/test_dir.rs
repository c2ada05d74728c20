//! A temporary directory for one test, removed when the test is done with
//! it. Shared by the unit tests and (through `#[path]`) the integration
//! tests' `common` module, so it uses nothing but std.

use std::path::{Path, PathBuf};

/// `$TMPDIR/plansim-{name}-{pid}`, fresh and empty, removed with everything
/// in it when the guard is dropped: keep the guard alive as long as the test
/// uses the directory. A test that panics leaves its directory for
/// inspection.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("plansim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // Some tests remove the directory themselves: nothing to report.
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}
