//! Binary entropy coding of a bit string ([`crate::bits`]): each bit coded by the same
//! range coder at the odds of its context, the odds starting from a table trained on
//! recorded fights and following what the message codes as it goes (LZMA's adaptive
//! bits, a 16th of the way a bit). An input packet is a few dozen bits of a few kinds,
//! flags that repeat and angles that turn at a steady pace, so the odds a context had in
//! training are most of what coding it can save, and following them within the packet
//! takes the rest (a fight's turns differ from a stroll's).
//!
//! Every bit costs at most about eight bits ([`MIN_ODDS`]), so a caller keeps the
//! plain bit string beside it for messages the odds do not suit.

use super::{Decoder, Encoder, TOTAL, TOTAL_BITS};
use crate::bits::{BitSink, BitSource, Ctx};

/// A context's odds of a zero bit, in 1/4096ths.
pub type Odds = u16;
/// Each coded bit moves its context's odds this share (as a shift) of the way to it: a
/// 16th, which coded the training fights' inputs 0.4 % shorter than a 32nd and 0.6 %
/// shorter than an 8th.
const ADAPT_SHIFT: u32 = 4;
/// The lowest odds either way, where a step of the adaptation rounds to nothing: it
/// stays within them by itself.
pub const MIN_ODDS: Odds = (1 << ADAPT_SHIFT) - 1;
/// The highest odds of a zero.
pub const MAX_ODDS: Odds = TOTAL as Odds - MIN_ODDS;
/// The odds of a context the table does not have (a table trained before the message
/// grew a field): even, so that such a table codes worse, never wrongly.
const EVEN: Odds = (TOTAL / 2) as Odds;

/// Each context's odds, from a trained table (clamped to the adaptation's bounds).
#[derive(Clone)]
struct Contexts(Vec<Odds>);

impl Contexts {
    fn new(start: &[Odds]) -> Self {
        Self(
            start
                .iter()
                .map(|p| p.clamp(&MIN_ODDS, &MAX_ODDS))
                .copied()
                .collect(),
        )
    }

    /// The odds of a zero in `ctx`.
    fn odds(&self, ctx: Ctx) -> u32 {
        u32::from(self.0.get(ctx).copied().unwrap_or(EVEN))
    }

    /// Moves `ctx`'s odds toward `b`, once coded.
    fn adapt(&mut self, ctx: Ctx, b: bool) {
        if ctx >= self.0.len() {
            self.0.resize(ctx + 1, EVEN);
        }
        let p = &mut self.0[ctx];
        if b {
            *p -= *p >> ADAPT_SHIFT;
        } else {
            *p += (TOTAL as Odds - *p) >> ADAPT_SHIFT;
        }
    }
}

/// Codes bits at their contexts' odds.
pub struct BinaryEncoder {
    e: Encoder,
    contexts: Contexts,
}

impl BinaryEncoder {
    /// An encoder starting from the trained `start` odds, one per context.
    pub fn new(start: &[Odds]) -> Self {
        Self {
            e: Encoder::new(16),
            contexts: Contexts::new(start),
        }
    }

    /// The coded bytes: as short as the range coder ends (trailing zeros dropped, which
    /// the decoder reads past the end).
    pub fn finish(self) -> Vec<u8> {
        self.e.finish()
    }
}

impl BitSink for BinaryEncoder {
    fn bit(&mut self, b: bool, ctx: Ctx) {
        let p = self.contexts.odds(ctx);
        match b {
            false => self.e.code(0, p, TOTAL_BITS),
            true => self.e.code(p, TOTAL - p, TOTAL_BITS),
        }
        self.contexts.adapt(ctx, b);
    }
}

/// Reads what a [`BinaryEncoder`] coded, with the same starting odds. Any bytes decode
/// to some bits (past the end, as zeros): the caller bounds what it reads and checks
/// the bytes are the one coding of what it read.
pub struct BinaryDecoder<'a> {
    d: Decoder<'a>,
    contexts: Contexts,
}

impl<'a> BinaryDecoder<'a> {
    /// A decoder of `coded` starting from the trained `start` odds.
    pub fn new(start: &[Odds], coded: &'a [u8]) -> Self {
        Self {
            d: Decoder::new(coded),
            contexts: Contexts::new(start),
        }
    }
}

impl BitSource for BinaryDecoder<'_> {
    fn bit(&mut self, ctx: Ctx) -> Result<bool, &'static str> {
        let p = self.contexts.odds(ctx);
        let b = self.d.slot(TOTAL_BITS) >= p;
        match b {
            false => self.d.take(0, p, TOTAL_BITS),
            true => self.d.take(p, TOTAL - p, TOTAL_BITS),
        }
        self.contexts.adapt(ctx, b);
        Ok(b)
    }
}

/// Counts of each context's zeros and ones over the messages a training run wrote.
#[derive(Debug, Clone, Default)]
pub struct BitTally(pub Vec<[u64; 2]>);

impl BitSink for BitTally {
    fn bit(&mut self, b: bool, ctx: Ctx) {
        if ctx >= self.0.len() {
            self.0.resize(ctx + 1, [0; 2]);
        }
        self.0[ctx][usize::from(b)] += 1;
    }
}

impl BitTally {
    /// Each context's odds of a zero, as counted (with one of each added, so a context
    /// seen once is not taken for certain), within the coder's bounds; `contexts` long.
    pub fn odds(&self, contexts: Ctx) -> Vec<Odds> {
        (0..contexts)
            .map(|c| {
                let [zeros, ones] = self.0.get(c).copied().unwrap_or([0; 2]);
                let p = (zeros + 1) * u64::from(TOTAL) / (zeros + ones + 2);
                (p as Odds).clamp(MIN_ODDS, MAX_ODDS)
            })
            .collect()
    }

    /// The odds as Rust source, for a generated model file: a constant `name`.
    pub fn to_source(&self, name: &str, contexts: Ctx, doc: &str) -> String {
        let odds = self.odds(contexts);
        let mut s = format!(
            "{doc}\n/// The trained odds of a zero, one a context.\npub const {name}: [u16; {contexts}] = [\n"
        );
        for row in odds.chunks(16) {
            let cells: Vec<String> = row.iter().map(u16::to_string).collect();
            s.push_str(&format!("    {},\n", cells.join(", ")));
        }
        s.push_str("];\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::{BitReader, BitWriter, EXP_GOLOMB_CONTEXTS};

    /// A message of bits in a few contexts, some skewed, some not.
    fn message(sink: &mut impl BitSink, seed: u64) {
        let mut x = seed;
        for i in 0..200u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            sink.bit(x >> 60 == 0, 0);
            sink.bit(x >> 33 & 1 == 1, 1);
            sink.exp_golomb(i % 5, 1, 2);
            // Six bits of nine: the top three are always zero.
            sink.bits(x >> 58, 9, 2 + EXP_GOLOMB_CONTEXTS);
        }
    }

    fn read(src: &mut impl BitSource, seed: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut x = seed;
        for _ in 0..200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.push(u64::from(src.bit(0).unwrap()));
            out.push(u64::from(src.bit(1).unwrap()));
            out.push(src.exp_golomb(1, 100, 2).unwrap());
            out.push(src.bits(9, 2 + EXP_GOLOMB_CONTEXTS).unwrap());
        }
        out
    }

    #[test]
    fn coded_bits_read_back_as_the_plain_ones_and_take_fewer_bytes() {
        let mut tally = BitTally::default();
        message(&mut tally, 1);
        let odds = tally.odds(40);
        for seed in [1, 2, 3] {
            let mut plain = BitWriter::default();
            message(&mut plain, seed);
            let plain = plain.finish();
            let mut coded = BinaryEncoder::new(&odds);
            message(&mut coded, seed);
            let coded = coded.finish();
            let expected = read(&mut BitReader::new(&plain), seed);
            assert_eq!(read(&mut BinaryDecoder::new(&odds, &coded), seed), expected);
            // The first bit is a one once in 16, the codes and the field skewed.
            assert!(
                coded.len() * 10 < plain.len() * 9,
                "{} coded against {} plain",
                coded.len(),
                plain.len()
            );
            // A table of another length codes too, the missing contexts at even odds.
            let mut short = BinaryEncoder::new(&odds[..3]);
            message(&mut short, seed);
            let short = short.finish();
            assert_eq!(
                read(&mut BinaryDecoder::new(&odds[..3], &short), seed),
                expected
            );
        }
    }

    #[test]
    fn the_odds_stay_within_their_bounds_however_long_a_run() {
        let mut c = Contexts::new(&[0, u16::MAX, EVEN]);
        assert_eq!(c.0, vec![MIN_ODDS, MAX_ODDS, EVEN]);
        for b in [false, true] {
            for _ in 0..10_000 {
                c.adapt(2, b);
                c.adapt(0, b);
                c.adapt(1, b);
                assert!((MIN_ODDS..=MAX_ODDS).contains(&c.0[2]), "{:?}", c.0);
                assert!((MIN_ODDS..=MAX_ODDS).contains(&c.0[0]), "{:?}", c.0);
                assert!((MIN_ODDS..=MAX_ODDS).contains(&c.0[1]), "{:?}", c.0);
            }
        }
        // Past a long run each bit the run makes costs little.
        let mut e = BinaryEncoder::new(&[EVEN]);
        for _ in 0..1000 {
            e.bit(true, 0);
        }
        assert!(e.finish().len() < 8);
    }

    #[test]
    fn any_bytes_decode_to_bits_without_a_panic() {
        let odds = [MIN_ODDS, MAX_ODDS, EVEN, 1000];
        for bytes in crate::bytes::byte_soup(11, 24) {
            let mut d = BinaryDecoder::new(&odds, &bytes);
            for i in 0..400 {
                d.bit(i % 5).unwrap();
            }
            let _ = d.exp_golomb(3, 1 << 20, 0);
        }
    }
}
