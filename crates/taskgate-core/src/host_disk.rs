//! The free-space floor of the runner's host: below it no run starts.
//!
//! Owns: the decision from a free-space reading and the operator's floor
//! (`TASKGATE_MIN_FREE_MIB`, [`LowDisk::below_floor`]) and the sentence
//! every place says it with: the held runs' check runs, `/healthz` (with
//! the token) and `doctor`. Must not: read the disk (the shell passes the
//! reading in) or decide anything else about a run.

/// The default of `TASKGATE_MIN_FREE_MIB`. A run writes to a tmpfs of its
/// own (RAM), not to this disk: the floor keeps room for the store's
/// checkpoints and the mirrors' fetches, which 512 MiB holds, and a
/// default no higher than that does not hold the runs of a small host
/// (or a CI machine) that has all the room it needs.
pub const DEFAULT_MIN_FREE_MIB: u64 = 512;

/// The host has less free space than the operator's floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LowDisk {
    pub free_mib: u64,
    pub floor_mib: u64,
}

impl LowDisk {
    /// `Some` when `free_bytes` is under `floor_mib`: runs are held.
    pub fn below_floor(free_bytes: u64, floor_mib: u64) -> Option<LowDisk> {
        let free_mib = free_bytes >> 20;
        (free_bytes < floor_mib.saturating_mul(1 << 20)).then_some(LowDisk {
            free_mib,
            floor_mib,
        })
    }

    /// Why no run starts, in one sentence.
    pub fn says(&self) -> String {
        format!(
            "taskgate's runner host has {} MiB of disk free, below its floor of {} MiB (TASKGATE_MIN_FREE_MIB), so no run starts",
            self.free_mib, self.floor_mib
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_held_only_below_the_floor() {
        assert_eq!(LowDisk::below_floor(2048 << 20, 2048), None);
        assert_eq!(
            LowDisk::below_floor((2048 << 20) - 1, 2048),
            Some(LowDisk {
                free_mib: 2047,
                floor_mib: 2048
            })
        );
        assert_eq!(
            LowDisk::below_floor(0, 0),
            None,
            "a floor of 0 holds nothing"
        );
        insta::assert_snapshot!(LowDisk { free_mib: 100, floor_mib: 2048 }.says(), @"taskgate's runner host has 100 MiB of disk free, below its floor of 2048 MiB (TASKGATE_MIN_FREE_MIB), so no run starts");
    }
}
