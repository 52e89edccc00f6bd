//! A small deterministic input generator for running the bodies on stable: mutations of
//! seed inputs in the manner of libFuzzer's (bit flips, edge bytes, inserted, removed,
//! repeated and spliced ranges, dictionary tokens), fed back into a pool so edits stack.
//! Seeded, so CI runs the same inputs every time and a failure reproduces.

use crate::Target;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// A splitmix64 generator: tiny, fast, and the same on every platform.
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

/// Bytes that often sit on a decoder's edges.
const EDGE_BYTES: &[u8] = &[
    0, 1, 2, 0x7f, 0x80, 0xff, 250, 251, 252, 253, b'"', b';', b'/', b' ', b'\n', b'(', b')',
];

/// `input` changed in one to four ways; `donor` supplies spliced ranges.
pub fn mutate(rng: &mut Rng, input: &[u8], dictionary: &[&[u8]], donor: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = out.len();
        let at = rng.below(len + 1);
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                out[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                out[i] = EDGE_BYTES[rng.below(EDGE_BYTES.len())];
            }
            2 => {
                let b = rng.byte();
                out.insert(at, b);
            }
            3 if len > 0 => {
                let end = (at + 1 + rng.below(8)).min(len);
                out.drain(at.min(len - 1)..end);
            }
            4 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(16)).min(len);
                let copy = out[start..end].to_vec();
                for _ in 0..1 + rng.below(3) {
                    out.splice(at..at, copy.iter().copied());
                }
            }
            5 => out.truncate(at),
            6 => out.extend((0..1 + rng.below(8)).map(|_| rng.byte())),
            7 if !dictionary.is_empty() => {
                let token = dictionary[rng.below(dictionary.len())];
                out.splice(at..at, token.iter().copied());
            }
            8 if !donor.is_empty() => {
                let from = rng.below(donor.len());
                out.truncate(at);
                out.extend_from_slice(&donor[from..]);
            }
            _ => {
                let b = rng.byte();
                out.push(b);
            }
        }
    }
    out
}

/// An input made from nothing: random bytes, or a run of dictionary tokens.
pub fn fresh(rng: &mut Rng, dictionary: &[&[u8]]) -> Vec<u8> {
    let len = rng.below(64);
    if rng.below(2) == 0 || dictionary.is_empty() {
        (0..len).map(|_| rng.byte()).collect()
    } else {
        (0..len / 4)
            .flat_map(|_| dictionary[rng.below(dictionary.len())].iter().copied())
            .collect()
    }
}

/// Runs `body` on `input`; when it panics, prints the input so it can be replayed (as a
/// file, with `cargo +nightly fuzz run <target> <file>`) before passing the panic on.
pub fn run_one(target: &Target, input: &[u8]) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| (target.body)(input))) {
        eprintln!(
            "fuzz target {} failed on this input ({} bytes): {:?}\nas text: {:?}",
            target.name,
            input.len(),
            input,
            String::from_utf8_lossy(input)
        );
        resume_unwind(panic);
    }
}

/// Runs `target` on every seed, then on `count` inputs generated from `seed`: mostly
/// mutations of the seeds and of earlier mutations, some from nothing. Returns the
/// number of inputs run.
pub fn exercise(target: &Target, seeds: &[Vec<u8>], count: usize, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let mut pool: Vec<Vec<u8>> = seeds.to_vec();
    for input in seeds {
        run_one(target, input);
    }
    for _ in 0..count {
        let input = if pool.is_empty() || rng.below(10) == 0 {
            fresh(&mut rng, target.dictionary)
        } else {
            // Half the time a seed itself, so single edits of valid inputs stay common
            // however far the pool has drifted.
            let base = match rng.below(2) {
                0 if !seeds.is_empty() => &seeds[rng.below(seeds.len())],
                _ => &pool[rng.below(pool.len())],
            };
            let donor = &pool[rng.below(pool.len())];
            mutate(&mut rng, base, target.dictionary, donor)
        };
        // Text mostly stays text, so most inputs get past the UTF-8 check; some do not,
        // so that check is exercised too.
        let input = if target.text && rng.below(8) != 0 {
            String::from_utf8_lossy(&input).into_owned().into_bytes()
        } else {
            input
        };
        run_one(target, &input);
        // Bounded, so the pool keeps some of each seed's descendants.
        if input.len() <= 8192 && rng.below(4) == 0 {
            if pool.len() < 512 {
                pool.push(input);
            } else {
                let i = rng.below(pool.len());
                pool[i] = input;
            }
        }
    }
    seeds.len() + count
}
