//! Nomad's CSI claim checks as each pinned release codes them: the
//! scheduler's (CSIVolumeChecker.isFeasible) and the server's (CSIVolume.Claim
//! -> claimRead / claimWrite in nomad/structs/csi.go). They read the volume's
//! *current* mode, which the first claim sets (setModesFromClaim); before any
//! claim, the volume's capabilities stand in. These are not the access-mode
//! rules (`model::access::permits`): Nomad's code is looser, and that is what
//! the releases as shipped reproduce.

use crate::model::access::{AccessMode, ClaimCounts, ClaimMode};
use crate::model::release::{Release, ServerClaimCheck};
use crate::model::scenario::{Capability, VolumeSpec};

/// Nomad's `WriteSchedulable`: the volume's mode allows writers, or, with no
/// mode set yet, one of its capabilities does.
pub fn write_schedulable(mode: Option<Capability>, spec: &VolumeSpec) -> bool {
    match mode {
        Some(mode) => mode.access_mode.allows_writers(),
        None => spec.writable(),
    }
}

/// Whether the volume's write claims are used up (1.2.6 `WriteFreeClaims`,
/// 2.0.5 `HasFreeWriteClaims`; the same for every mode that passed
/// `write_schedulable`). Only write claims count: a single-node-writer
/// volume with a reader still has a free write claim.
pub fn write_claims_exhausted(mode: Option<Capability>, claims: ClaimCounts) -> bool {
    matches!(
        mode.map(|m| m.access_mode),
        Some(AccessMode::SingleNodeWriter | AccessMode::MultiNodeSingleWriter)
    ) && claims.writers > 0
}

/// 2.0.5 `HasFreeReadClaims` (1.2.6 has no reader check at all).
fn read_claims_exhausted(mode: Option<Capability>, claims: ClaimCounts) -> bool {
    match mode.map(|m| m.access_mode) {
        Some(AccessMode::SingleNodeReaderOnly) => claims.readers > 0,
        Some(AccessMode::SingleNodeWriter) => claims.total() > 0,
        _ => false,
    }
}

/// Why the server refused a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimError {
    /// The volume's mode has no room for this kind of claim at all.
    Unschedulable,
    /// The claims the mode allows are taken.
    MaxClaims,
    /// The volume is claimed with another attachment mode.
    AttachmentMode,
}

impl ClaimError {
    /// The server's message at the release.
    pub fn message(self, release: &Release) -> &'static str {
        match self {
            ClaimError::Unschedulable => release.claim_errors.unschedulable,
            ClaimError::MaxClaims => release.claim_errors.max_claims,
            ClaimError::AttachmentMode => "cannot change attachment mode of claimed volume",
        }
    }

    /// Whether a 2.0.5 client retries it (`isRetryableClaimRPCError`: the
    /// message contains "volume max claims reached"; the other retryable
    /// errors, no servers or no leader, do not arise in the model).
    pub fn retryable(self) -> bool {
        self == ClaimError::MaxClaims
    }
}

/// The server's check of one new claim (`CSIVolume.Claim` in the state
/// store). `other_job_writes`: a job other than the claimant's holds a write
/// claim (1.2.6 lets a job's own writers share).
pub fn server_check(
    rule: ServerClaimCheck,
    spec: &VolumeSpec,
    mode: Option<Capability>,
    claims: ClaimCounts,
    request: ClaimMode,
    claim: Capability,
    other_job_writes: bool,
) -> Result<(), ClaimError> {
    if mode.is_some_and(|m| m.attachment_mode != claim.attachment_mode) {
        return Err(ClaimError::AttachmentMode);
    }
    match request {
        ClaimMode::Read => {
            if rule == ServerClaimCheck::FreeClaims && read_claims_exhausted(mode, claims) {
                return Err(ClaimError::MaxClaims);
            }
        }
        ClaimMode::Write => {
            if !write_schedulable(mode, spec) {
                return Err(ClaimError::Unschedulable);
            }
            let exhausted = write_claims_exhausted(mode, claims);
            let refused = match rule {
                ServerClaimCheck::OtherJobsWriters => exhausted && other_job_writes,
                ServerClaimCheck::FreeClaims => exhausted,
            };
            if refused {
                return Err(ClaimError::MaxClaims);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::PluginId;
    use crate::model::release::{NOMAD_1_2_6, NOMAD_2_0_5};
    use crate::model::scenario::AttachmentMode;

    fn capability(access_mode: AccessMode) -> Capability {
        Capability {
            access_mode,
            attachment_mode: AttachmentMode::FileSystem,
        }
    }

    fn volume(modes: &[AccessMode]) -> VolumeSpec {
        VolumeSpec {
            name: "v".into(),
            plugin: PluginId(0),
            capabilities: modes.iter().map(|&m| capability(m)).collect(),
            shorthand: None,
            attachment_mode: AttachmentMode::FileSystem,
            topologies: Vec::new(),
            register_at: crate::model::time::Millis::ZERO,
            namespace: crate::model::scenario::DEFAULT_NAMESPACE.to_string(),
        }
    }

    fn counts(readers: u32, writers: u32) -> ClaimCounts {
        ClaimCounts { readers, writers }
    }

    /// A table written from csi.go's claimRead / claimWrite at both tags.
    #[test]
    fn server_checks_follow_each_release() {
        use AccessMode::*;
        use ClaimMode::*;
        // The table's rows.
        let (v1_2_6, v2_0_5) = (&NOMAD_1_2_6, &NOMAD_2_0_5);
        let block = Capability {
            access_mode: SingleNodeWriter,
            attachment_mode: AttachmentMode::BlockDevice,
        };
        let file = capability(SingleNodeWriter);
        let max = Err(ClaimError::MaxClaims);
        // (release, volume modes, current mode, readers, writers, request,
        //  claim, another job writes, expected)
        // One row per line: a table reads down its columns.
        #[rustfmt::skip]
        let table = [
            // A writer beside a reader on single-node-writer: only write
            // claims count, so it is granted.
            (v2_0_5, SingleNodeWriter, true, 1, 0, Write, file, true, Ok(())),
            // A reader beside a writer: refused in 2.0.5, granted in 1.2.6.
            (v2_0_5, SingleNodeWriter, true, 0, 1, Read, file, true, max),
            (v1_2_6, SingleNodeWriter, true, 0, 1, Read, file, true, Ok(())),
            // A second writer: 1.2.6 refuses only another job's.
            (v1_2_6, SingleNodeWriter, true, 0, 1, Write, file, false, Ok(())),
            (v1_2_6, SingleNodeWriter, true, 0, 1, Write, file, true, max),
            (v2_0_5, SingleNodeWriter, true, 0, 1, Write, file, false, max),
            // A writer on a reader-only volume is unschedulable.
            (v2_0_5, SingleNodeReaderOnly, false, 0, 0, Write, file, false, Err(ClaimError::Unschedulable)),
            // A second reader of single-node-reader-only.
            (v2_0_5, SingleNodeReaderOnly, true, 1, 0, Read, file, false, max),
            (v1_2_6, SingleNodeReaderOnly, true, 1, 0, Read, file, false, Ok(())),
            // Another attachment mode than the claimed one.
            (v1_2_6, SingleNodeWriter, true, 1, 0, Read, block, false, Err(ClaimError::AttachmentMode)),
        ];
        for (release, access, claimed, readers, writers, request, claim, other, expected) in table {
            let mode = claimed.then(|| capability(access));
            let got = server_check(
                release.server_claim_check,
                &volume(&[access]),
                mode,
                counts(readers, writers),
                request,
                claim,
                other,
            );
            assert_eq!(
                got, expected,
                "{} {access} {readers}r/{writers}w {request:?}",
                release.version
            );
        }
        assert!(!ClaimError::Unschedulable.retryable());
        assert!(ClaimError::MaxClaims.retryable());
        assert_eq!(
            ClaimError::MaxClaims.message(&NOMAD_1_2_6),
            "volume max claim reached"
        );
    }

    #[test]
    fn unclaimed_volume_is_judged_by_its_capabilities() {
        let either = volume(&[
            AccessMode::MultiNodeReaderOnly,
            AccessMode::SingleNodeWriter,
        ]);
        assert!(write_schedulable(None, &either));
        let readers = volume(&[AccessMode::MultiNodeReaderOnly]);
        assert!(!write_schedulable(None, &readers));
        // Once a reader claim set the mode, writers are out.
        assert!(!write_schedulable(
            Some(capability(AccessMode::MultiNodeReaderOnly)),
            &either
        ));
    }
}
