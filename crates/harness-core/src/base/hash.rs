//! A stable hash, and short ids made of it: the same value on every platform and Rust version,
//! for ids and names that are written to disk (std's `DefaultHasher` promises neither).

/// FNV-1a over `bytes`, then mixed (splitmix64's finaliser) so that every bit depends on every
/// byte.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// The first `digits` hex digits (at most 16) of the stable hash of `bytes`.
pub fn hex_id(bytes: &[u8], digits: usize) -> String {
    format!(
        "{:0digits$x}",
        stable_hash(bytes) >> (64 - 4 * digits),
        digits = digits
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_of_the_asked_length() {
        assert_eq!(
            hex_id(b"x", 10),
            format!("{:010x}", stable_hash(b"x") >> 24)
        );
        assert_eq!(hex_id(b"x", 6), format!("{:06x}", stable_hash(b"x") >> 40));
        assert_eq!(hex_id(b"x", 6).len(), 6);
        assert_ne!(hex_id(b"x", 6), hex_id(b"y", 6));
    }
}
