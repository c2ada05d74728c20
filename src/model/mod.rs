//! The domain vocabulary shared by every layer: ids, time, access-mode rules,
//! policies, metrics and the resolved scenario. Pure data and pure functions.

pub mod access;
pub mod cron;
pub mod expect;
pub mod host_volume;
pub mod ids;
pub mod lifecycle;
pub mod metrics;
pub mod periodic;
pub mod policy;
pub mod ports;
pub mod release;
pub mod scenario;
pub mod time;
pub mod timeline;
pub mod version;
