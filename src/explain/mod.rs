//! `plansim explain`: why two policies differ on one scenario and seed.
//! Both runs are traced; their decisions (see decisions.rs) are compared
//! to find the first divergence, which is told in plain words: what each
//! scheduler saw and decided, what followed in each run (the chain of
//! consequences, with violation windows) and which metric differences it
//! accounts for. Pure: it returns data; the shell prints text or JSON.
//!
//! - `explanation.rs`: what explain finds, as data (the JSON);
//! - `decisions.rs`: each run's decisions, read from its trace, and the
//!   first divergence;
//! - `divergence.rs`: running both policies and explaining the difference;
//! - `side.rs`: one run's side of the divergence;
//! - `consequences.rs` and `followed.rs`: what followed, and about what;
//! - `windows.rs`: violation windows; `names.rs`: ids in words;
//! - `text.rs`: the explanation in words.

mod consequences;
pub mod decisions;
mod divergence;
mod explanation;
mod followed;
mod names;
mod side;
mod text;
mod windows;

pub use divergence::{explain, explain_runs};
pub use explanation::{
    Divergence, Explanation, MetricDifference, RunView, SideDecision, Step, Window,
};
pub use text::render_text;
pub use windows::violation_windows;
