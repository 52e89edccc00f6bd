//! Bit strings for the densest messages: single bits and Exp-Golomb codes, most
//! significant bit first, the last byte padded with zeros.
//!
//! An order-`k` Exp-Golomb code writes `v + 2^k` in binary after as many zeros as it has
//! bits beyond `k + 1`: small numbers take a few bits, and every number has exactly one
//! code, so a reader that also insists on zero padding reads one bit string per value.
//!
//! A message is written and read through [`BitSink`] and [`BitSource`], which name each
//! bit's *context* (what kind of bit it is: a flag, the third bit of an angle's code): a
//! plain [`BitWriter`] ignores it, and the entropy coder ([`crate::coder::binary`]) codes
//! each bit at its context's odds, so one description of a message serves both.

/// Which of a message's bit kinds a bit is: an index into the coder's model.
pub type Ctx = usize;

/// Contexts a fixed-width field of `n` bits takes ([`BitSink::bits`]): two a bit, as a
/// bit's odds differ before and after the value's first one (a float's exponent is
/// all zeros or mostly ones, its fraction zeros after a one).
pub const fn fixed_contexts(n: u32) -> Ctx {
    2 * n as Ctx
}

/// Contexts of the unary part of an Exp-Golomb code (the zeros and the one ending them),
/// the last shared by every bit past it.
const PREFIX_CONTEXTS: Ctx = 12;
/// Places of the bits after the unary part with contexts of their own, from the first,
/// the last shared by every place past it.
const SUFFIX_PLACES: Ctx = 6;
/// Lengths of the unary part told apart in the bits after it: the first bit after a
/// short code's unary part says more than after a long one's.
const SUFFIX_CLASSES: Ctx = 3;
/// Contexts an Exp-Golomb code takes ([`BitSink::exp_golomb`]).
pub const EXP_GOLOMB_CONTEXTS: Ctx = PREFIX_CONTEXTS + SUFFIX_CLASSES * SUFFIX_PLACES;

/// The context of bit `i` after a unary part of `zeros` zeros, of the code at `ctx`.
fn suffix_context(ctx: Ctx, zeros: u32, i: u32) -> Ctx {
    let class = (zeros as Ctx).min(SUFFIX_CLASSES - 1);
    ctx + PREFIX_CONTEXTS + class * SUFFIX_PLACES + (i as Ctx).min(SUFFIX_PLACES - 1)
}

/// The context of bit `i` (from the top) of a fixed-width field at `ctx`, after a one
/// was seen above it or not.
fn fixed_context(ctx: Ctx, i: u32, seen_one: bool) -> Ctx {
    ctx + 2 * i as Ctx + Ctx::from(seen_one)
}

/// Where bits go: each with its context.
pub trait BitSink {
    /// One bit, in context `ctx`.
    fn bit(&mut self, b: bool, ctx: Ctx);

    /// The low `n` bits of `v`, the highest first (zeros above 64), in the
    /// [`fixed_contexts`]`(n)` contexts from `ctx`.
    fn bits(&mut self, v: u64, n: u32, ctx: Ctx) {
        let mut seen_one = false;
        for i in 0..n {
            let b = v.checked_shr(n - 1 - i).unwrap_or(0) & 1 == 1;
            self.bit(b, fixed_context(ctx, i, seen_one));
            seen_one |= b;
        }
    }

    /// `v` in the order-`k` Exp-Golomb code, in the [`EXP_GOLOMB_CONTEXTS`] contexts
    /// from `ctx`; `v` must be below `2^64 - 2^k`.
    fn exp_golomb(&mut self, v: u64, k: u32, ctx: Ctx) {
        let w = v + (1 << k);
        let width = 64 - w.leading_zeros();
        let zeros = width - k - 1;
        for j in 0..=zeros {
            self.bit(j == zeros, ctx + (j as Ctx).min(PREFIX_CONTEXTS - 1));
        }
        for i in 0..width - 1 {
            let b = w >> (width - 2 - i) & 1 == 1;
            self.bit(b, suffix_context(ctx, zeros, i));
        }
    }
}

/// Where bits come from: what a [`BitSink`] wrote, read with the same contexts.
pub trait BitSource {
    /// One bit, in context `ctx`.
    fn bit(&mut self, ctx: Ctx) -> Result<bool, &'static str>;

    /// `n` bits (at most 64) as a number, the first the highest, as [`BitSink::bits`].
    fn bits(&mut self, n: u32, ctx: Ctx) -> Result<u64, &'static str> {
        let mut v = 0u64;
        for i in 0..n {
            let b = self.bit(fixed_context(ctx, i, v != 0))?;
            v = v << 1 | u64::from(b);
        }
        Ok(v)
    }

    /// A number in the order-`k` Exp-Golomb code, at most `max`, as
    /// [`BitSink::exp_golomb`].
    fn exp_golomb(&mut self, k: u32, max: u64, ctx: Ctx) -> Result<u64, &'static str> {
        let mut zeros = 0;
        while !self.bit(ctx + (zeros as Ctx).min(PREFIX_CONTEXTS - 1))? {
            zeros += 1;
            // Past 64 bits no number is written; past `max`'s width none is wanted.
            if zeros + k >= 64 {
                return Err("number too long");
            }
        }
        let width = zeros + k + 1;
        let mut w = 1u64;
        for i in 0..width - 1 {
            let b = self.bit(suffix_context(ctx, zeros, i))?;
            w = w << 1 | u64::from(b);
        }
        let v = w - (1 << k);
        if v > max {
            return Err("number out of range");
        }
        Ok(v)
    }
}

/// Writes bits, most significant first.
#[derive(Debug, Default)]
pub struct BitWriter {
    out: Vec<u8>,
    /// Bits used in the last byte, 0 when it is full (or there is none).
    used: u32,
}

impl BitSink for BitWriter {
    fn bit(&mut self, b: bool, _: Ctx) {
        if self.used == 0 {
            self.out.push(0);
        }
        if b {
            *self.out.last_mut().expect("a byte to write into") |= 0x80 >> self.used;
        }
        self.used = (self.used + 1) % 8;
    }
}

impl BitWriter {
    /// The bytes written, the last padded with zeros.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Reads what a [`BitWriter`] wrote, refusing to run past the end.
#[derive(Debug)]
pub struct BitReader<'a> {
    bytes: &'a [u8],
    /// Bits read.
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// Reads `bytes` from their first bit.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Refuses anything left but the last byte's zero padding.
    pub fn finish(&self) -> Result<(), &'static str> {
        let end = self.pos.div_ceil(8);
        if end != self.bytes.len() {
            return Err("bytes after the end");
        }
        let padding = (8 - self.pos % 8) % 8;
        if padding > 0 && self.bytes[end - 1] & ((1u8 << padding) - 1) != 0 {
            return Err("padding bits set");
        }
        Ok(())
    }
}

impl BitSource for BitReader<'_> {
    fn bit(&mut self, _: Ctx) -> Result<bool, &'static str> {
        let byte = self.bytes.get(self.pos / 8).ok_or("cut short")?;
        let b = byte << (self.pos % 8) & 0x80 != 0;
        self.pos += 1;
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_golomb_codes_are_short_for_small_numbers_and_round_trip() {
        let len = |v: u64, k: u32| {
            let mut w = BitWriter::default();
            w.exp_golomb(v, k, 0);
            (w.used + 7) % 8 + 1 + 8 * (w.out.len() as u32 - 1)
        };
        assert_eq!(len(0, 0), 1);
        assert_eq!(len(1, 0), 3);
        assert_eq!(len(6, 0), 5);
        assert_eq!(len(0, 3), 4);
        assert_eq!(len(7, 3), 4);
        assert_eq!(len(8, 3), 6);
        let values = [
            0u64,
            1,
            2,
            3,
            7,
            8,
            255,
            256,
            65_535,
            1 << 40,
            u64::MAX >> 1,
        ];
        for k in [0, 1, 3, 6] {
            let mut w = BitWriter::default();
            w.bit(true, 0);
            for v in values {
                w.exp_golomb(v, k, 0);
            }
            w.bits(0b101, 3, 0);
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            assert!(r.bit(0).unwrap());
            for v in values {
                assert_eq!(r.exp_golomb(k, u64::MAX, 0), Ok(v), "order {k}");
            }
            assert_eq!(r.bits(3, 0), Ok(0b101));
            assert_eq!(r.finish(), Ok(()));
        }
    }

    #[test]
    fn a_reader_refuses_what_no_writer_writes() {
        // Cut short, too long, past the maximum, trailing bytes, padding bits set.
        assert!(BitReader::new(&[]).bit(0).is_err());
        assert!(
            BitReader::new(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff])
                .exp_golomb(0, u64::MAX, 0)
                .is_err()
        );
        let mut w = BitWriter::default();
        w.exp_golomb(300, 2, 0);
        let bytes = w.finish();
        assert!(BitReader::new(&bytes).exp_golomb(2, 299, 0).is_err());
        let mut r = BitReader::new(&bytes);
        assert_eq!(r.exp_golomb(2, 300, 0), Ok(300));
        assert_eq!(r.finish(), Ok(()));
        let mut longer = bytes.clone();
        longer.push(0);
        let mut r = BitReader::new(&longer);
        r.exp_golomb(2, 300, 0).unwrap();
        assert!(r.finish().is_err());
        let mut r = BitReader::new(&[0b1000_0001]);
        assert_eq!(r.bit(0), Ok(true));
        assert!(r.finish().is_err(), "a padding bit set");
        // Any bytes at all: refused or read, never a panic.
        for bytes in crate::bytes::byte_soup(7, 24) {
            let mut r = BitReader::new(&bytes);
            while r.exp_golomb(3, 1 << 20, 0).is_ok() {}
        }
    }
}
