//! Compact newtype identifiers. Every entity in a resolved scenario or a running
//! simulation is addressed by a dense `u32` index into a vector, never by name:
//! names are for people and live only at the edges (loading and reporting).

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The index of this entity in its owning vector.
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of the entity stored at `index`.
            pub fn from_index(index: usize) -> Self {
                Self(u32::try_from(index).expect("entity index fits in u32"))
            }
        }
    };
}

define_id!(
    /// A client node.
    NodeId
);
define_id!(
    /// A CSI plugin.
    PluginId
);
define_id!(
    /// A CSI volume.
    VolumeId
);
define_id!(
    /// A job.
    JobId
);
define_id!(
    /// An allocation, created when a plan that places it is committed.
    AllocId
);

/// A task group: the job it belongs to and its position in that job's groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupRef {
    pub job: JobId,
    pub group: u32,
}

impl GroupRef {
    pub fn new(job: JobId, group: usize) -> Self {
        Self {
            job,
            group: u32::try_from(group).expect("group index fits in u32"),
        }
    }

    pub fn group_index(self) -> usize {
        self.group as usize
    }
}
