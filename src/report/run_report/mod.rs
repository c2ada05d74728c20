//! The run report (`plansim run ... --report DIR`): one self-contained HTML
//! page per scenario (inline SVG and CSS; no script, no network) and an
//! index with a one-line verdict per policy. Each page draws, per policy
//! and on one time axis, a lane per node with each allocation's life and a
//! lane per volume with its claims, shades violation windows, marks
//! operator events and the first divergence, then gives the metrics, the
//! placement failures in Nomad's words and the `explain` narrative.
//! Every name is data: all text goes through `html.rs`'s `esc`.
//!
//! - `page.rs`: the scenario pages and the index;
//! - `timeline.rs`: the data a timeline draws, read off a trace;
//! - `timeline_svg.rs`: the SVG drawn from it; `layout.rs`: its geometry;
//! - `html.rs`: escaping, file names.

mod html;
mod layout;
mod page;
mod timeline;
mod timeline_svg;

pub use html::{esc, page_file_names};
pub use layout::{MAX_BARS, MAX_NODE_LANES, MAX_VOLUME_LANES};
pub use page::{index_page, page_explanation, scenario_page};
