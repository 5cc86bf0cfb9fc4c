//! The names of a counting semaphore (`--limit K`) and of the slot a lease
//! holds: value types only, which mutex.rs (the lease) and semaphore.rs
//! (taking a slot) both use.

use super::key::{LockKey, LIMIT_SUFFIX};

/// Where the servers record a semaphore's K, and the K: what a slot's
/// attempt and extension pass (limit.lua).
pub(super) type LimitRecord = (Vec<u8>, u32);

/// The most slots one semaphore may have: each waiter tries every slot in
/// a pass, and listens to every slot's channel.
pub const MAX_LIMIT: u32 = 256;

/// A semaphore: the name the user gave (the slots' keys derive from it)
/// and how many may hold it at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Semaphore {
    pub key: LockKey,
    pub limit: u32,
}

/// The slot a lease holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The semaphore's name (not the slot's).
    pub semaphore: LockKey,
    /// 0 … limit-1.
    pub index: u32,
    pub limit: u32,
}

impl Semaphore {
    /// `limit` must be 1 … [`MAX_LIMIT`] (config checks it).
    pub fn new(key: LockKey, limit: u32) -> Self {
        Semaphore { key, limit }
    }

    /// The key of slot `index`: `NAME#index` under the same prefix.
    pub fn slot_key(&self, index: u32) -> LockKey {
        let name = self.key.name();
        let bytes = self.key.bytes();
        let prefix = &bytes[..bytes.len() - name.len()];
        LockKey::prefixed(prefix, &[name, format!("#{index}").as_bytes()].concat())
    }

    /// Every slot's key, in order.
    pub fn slot_keys(&self) -> Vec<LockKey> {
        (0..self.limit).map(|i| self.slot_key(i)).collect()
    }

    /// The servers' record of this semaphore's K, and this client's K.
    pub(super) fn limit_record(&self) -> LimitRecord {
        ([self.key.bytes(), LIMIT_SUFFIX].concat(), self.limit)
    }

    pub(super) fn slot(&self, index: u32) -> Slot {
        Slot {
            semaphore: self.key.clone(),
            index,
            limit: self.limit,
        }
    }
}

impl Slot {
    /// The servers' record of its semaphore's K, and the K it was taken with.
    pub(super) fn limit_record(&self) -> LimitRecord {
        Semaphore::new(self.semaphore.clone(), self.limit).limit_record()
    }
}
