//! Redis Cluster's key-to-slot map, so that keys which can never be taken in one script are
//! refused before anything is sent (a script's keys must all live in one hash slot).

/// Redis Cluster's number of hash slots.
pub const CLUSTER_SLOTS: u16 = 16384;

/// The hash slot Redis Cluster puts `key` in (`CLUSTER KEYSLOT`): CRC16/XMODEM of its hash tag
/// (the bytes between the first `{` and the first `}` after it, when there is at least one)
/// or else of the whole key, modulo 16384. The same rule as `has_hash_tag`, so a lock and its
/// companions (`companion`) always land in one slot.
pub fn cluster_slot(key: &str) -> u16 {
    crc16(hashed(key).as_bytes()) % CLUSTER_SLOTS
}

/// The part of `key` that Redis Cluster hashes.
fn hashed(key: &str) -> &str {
    if let Some(open) = key.find('{')
        && let Some(len) = key[open + 1..].find('}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

/// CRC16/XMODEM (polynomial 0x1021, initial value 0, no reflection), bit by bit: a key is at
/// most 512 bytes and this runs once per `--also` key, so a table would buy nothing.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests;
