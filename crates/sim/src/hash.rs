//! Deterministic randomness: a hash of (seed, a, b) instead of a stateful generator, so
//! anything "random" (bot choices, weapon spread, a test's packet loss) depends only on
//! its inputs and replays identically everywhere.

/// A well-mixed 64-bit hash of (seed, a, b): SplitMix64's finaliser over the combination.
pub fn hash(seed: u64, a: u64, b: u64) -> u64 {
    let mut z =
        seed ^ a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value in 0..1 (never 1) from a hash.
pub fn unit(h: u64) -> f32 {
    (h >> 40) as f32 / (1u64 << 24) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_spread_and_depend_on_every_input() {
        assert_ne!(hash(1, 2, 3), hash(1, 2, 4));
        assert_ne!(hash(1, 2, 3), hash(1, 3, 3));
        assert_ne!(hash(1, 2, 3), hash(2, 2, 3));
        let mean = (0..10_000).map(|i| unit(hash(7, i, 0)) as f64).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        assert!((0..10_000).all(|i| (0.0..1.0).contains(&unit(hash(9, i, 1)))));
    }
}
