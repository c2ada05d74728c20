//! CSI access modes and the one rule that decides whether a set of claims is
//! legal. The scheduler (plan-aware), the server's claim check (validate and
//! plan-aware), the enforcing plugin and the violation detector all ask the
//! same question, so they all call [`admit`] or [`permits`].

use std::fmt;

/// A volume's access mode, as CSI and Nomad name it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum AccessMode {
    SingleNodeReaderOnly,
    SingleNodeWriter,
    MultiNodeReaderOnly,
    MultiNodeSingleWriter,
    MultiNodeMultiWriter,
}

impl AccessMode {
    pub const ALL: [AccessMode; 5] = [
        AccessMode::SingleNodeReaderOnly,
        AccessMode::SingleNodeWriter,
        AccessMode::MultiNodeReaderOnly,
        AccessMode::MultiNodeSingleWriter,
        AccessMode::MultiNodeMultiWriter,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AccessMode::SingleNodeReaderOnly => "single-node-reader-only",
            AccessMode::SingleNodeWriter => "single-node-writer",
            AccessMode::MultiNodeReaderOnly => "multi-node-reader-only",
            AccessMode::MultiNodeSingleWriter => "multi-node-single-writer",
            AccessMode::MultiNodeMultiWriter => "multi-node-multi-writer",
        }
    }

    /// Whether the mode allows a writer at all (Nomad's `WriteSchedulable`).
    pub fn allows_writers(self) -> bool {
        !matches!(
            self,
            AccessMode::SingleNodeReaderOnly | AccessMode::MultiNodeReaderOnly
        )
    }
}

impl fmt::Display for AccessMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether an allocation mounts a volume read-only or read-write. Ordered
/// `Read < Write`, so the stronger of two claims is their `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClaimMode {
    Read,
    Write,
}

impl ClaimMode {
    pub fn from_read_only(read_only: bool) -> Self {
        if read_only {
            ClaimMode::Read
        } else {
            ClaimMode::Write
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ClaimMode::Read => "read",
            ClaimMode::Write => "write",
        }
    }
}

/// How many reader and writer claims a volume has in some view of the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClaimCounts {
    pub readers: u32,
    pub writers: u32,
}

impl ClaimCounts {
    pub fn add(&mut self, mode: ClaimMode) {
        match mode {
            ClaimMode::Read => self.readers += 1,
            ClaimMode::Write => self.writers += 1,
        }
    }

    /// Removes one claim. Claims can never go negative: removing a claim that
    /// is not there is a bug in the caller, so it stops the simulation.
    pub fn remove(&mut self, mode: ClaimMode) {
        let slot = match mode {
            ClaimMode::Read => &mut self.readers,
            ClaimMode::Write => &mut self.writers,
        };
        assert!(*slot > 0, "claim count would go negative ({mode:?})");
        *slot -= 1;
    }

    pub fn plus(self, other: ClaimCounts) -> ClaimCounts {
        ClaimCounts {
            readers: self.readers + other.readers,
            writers: self.writers + other.writers,
        }
    }

    pub fn total(self) -> u32 {
        self.readers + self.writers
    }
}

/// Whether a volume may legally hold this set of claims at once (the rules of
/// the scenario format's "Access-mode rules").
pub fn permits(mode: AccessMode, claims: ClaimCounts) -> bool {
    match mode {
        AccessMode::SingleNodeReaderOnly => claims.writers == 0 && claims.readers <= 1,
        AccessMode::SingleNodeWriter => claims.total() <= 1,
        AccessMode::MultiNodeReaderOnly => claims.writers == 0,
        AccessMode::MultiNodeSingleWriter => claims.writers <= 1,
        AccessMode::MultiNodeMultiWriter => true,
    }
}

/// Why a claim was refused; each maps to the words Nomad's scheduler uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Refusal {
    /// A writer asked for a volume whose mode has no writers.
    ReadOnly,
    /// A reader asked for a volume whose reader claims are used up.
    NoFreeReaderClaims,
    /// A writer asked for a volume whose writer claims are used up.
    NoFreeWriterClaims,
}

/// Decides whether one more claim of `request` fits beside `existing`.
pub fn admit(mode: AccessMode, existing: ClaimCounts, request: ClaimMode) -> Result<(), Refusal> {
    if request == ClaimMode::Write && !mode.allows_writers() {
        return Err(Refusal::ReadOnly);
    }
    let mut after = existing;
    after.add(request);
    if permits(mode, after) {
        Ok(())
    } else {
        Err(match request {
            ClaimMode::Read => Refusal::NoFreeReaderClaims,
            ClaimMode::Write => Refusal::NoFreeWriterClaims,
        })
    }
}

/// How a volume is attached: a file system or a raw block device
/// (CSI's and host volumes' `attachment_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AttachmentMode {
    FileSystem,
    BlockDevice,
}

impl AttachmentMode {
    /// The name as Nomad's files and the scenario format write it.
    pub fn name(self) -> &'static str {
        match self {
            AttachmentMode::FileSystem => "file-system",
            AttachmentMode::BlockDevice => "block-device",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(readers: u32, writers: u32) -> ClaimCounts {
        ClaimCounts { readers, writers }
    }

    /// Every mode x request x small set of existing claims, against a table
    /// written out by hand from the scenario format's rules.
    #[test]
    fn admit_matches_the_rules_table() {
        use AccessMode::*;
        use ClaimMode::*;
        // (mode, existing readers, existing writers, request, admitted)
        let table = [
            (SingleNodeReaderOnly, 0, 0, Read, true),
            (SingleNodeReaderOnly, 1, 0, Read, false),
            (SingleNodeReaderOnly, 0, 0, Write, false),
            (SingleNodeReaderOnly, 1, 0, Write, false),
            (SingleNodeWriter, 0, 0, Read, true),
            (SingleNodeWriter, 0, 0, Write, true),
            (SingleNodeWriter, 1, 0, Read, false),
            (SingleNodeWriter, 1, 0, Write, false),
            (SingleNodeWriter, 0, 1, Read, false),
            (SingleNodeWriter, 0, 1, Write, false),
            (MultiNodeReaderOnly, 0, 0, Read, true),
            (MultiNodeReaderOnly, 5, 0, Read, true),
            (MultiNodeReaderOnly, 0, 0, Write, false),
            (MultiNodeSingleWriter, 0, 0, Write, true),
            (MultiNodeSingleWriter, 3, 0, Write, true),
            (MultiNodeSingleWriter, 3, 1, Read, true),
            (MultiNodeSingleWriter, 0, 1, Write, false),
            (MultiNodeMultiWriter, 4, 4, Write, true),
            (MultiNodeMultiWriter, 4, 4, Read, true),
        ];
        for (mode, readers, writers, request, admitted) in table {
            assert_eq!(
                admit(mode, counts(readers, writers), request).is_ok(),
                admitted,
                "{mode} with {readers}r/{writers}w asked {request:?}"
            );
        }
    }

    #[test]
    fn refusal_reasons_name_the_exhausted_side() {
        use AccessMode::*;
        assert_eq!(
            admit(SingleNodeReaderOnly, counts(0, 0), ClaimMode::Write),
            Err(Refusal::ReadOnly)
        );
        assert_eq!(
            admit(MultiNodeReaderOnly, counts(0, 0), ClaimMode::Write),
            Err(Refusal::ReadOnly)
        );
        assert_eq!(
            admit(SingleNodeReaderOnly, counts(1, 0), ClaimMode::Read),
            Err(Refusal::NoFreeReaderClaims)
        );
        assert_eq!(
            admit(SingleNodeWriter, counts(0, 1), ClaimMode::Write),
            Err(Refusal::NoFreeWriterClaims)
        );
    }

    /// `admit` never lets a legal state become illegal, for every mode.
    #[test]
    fn admitted_claims_keep_the_volume_legal() {
        for mode in AccessMode::ALL {
            for readers in 0..3 {
                for writers in 0..3 {
                    let existing = counts(readers, writers);
                    for request in [ClaimMode::Read, ClaimMode::Write] {
                        if permits(mode, existing) && admit(mode, existing, request).is_ok() {
                            let mut after = existing;
                            after.add(request);
                            assert!(permits(mode, after), "{mode} {existing:?} + {request:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "negative")]
    fn claims_never_go_negative() {
        ClaimCounts::default().remove(ClaimMode::Read);
    }
}
