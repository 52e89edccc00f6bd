//! Bit strings for the densest messages: single bits and Exp-Golomb codes, most
//! significant bit first, the last byte padded with zeros.
//!
//! An order-`k` Exp-Golomb code writes `v + 2^k` in binary after as many zeros as it has
//! bits beyond `k + 1`: small numbers take a few bits, and every number has exactly one
//! code, so a reader that also insists on zero padding reads one bit string per value.

/// Writes bits, most significant first.
#[derive(Debug, Default)]
pub struct BitWriter {
    out: Vec<u8>,
    /// Bits used in the last byte, 0 when it is full (or there is none).
    used: u32,
}

impl BitWriter {
    /// One bit.
    pub fn bit(&mut self, b: bool) {
        if self.used == 0 {
            self.out.push(0);
        }
        if b {
            *self.out.last_mut().expect("a byte to write into") |= 0x80 >> self.used;
        }
        self.used = (self.used + 1) % 8;
    }

    /// The low `n` bits of `v`, the highest first (zeros above 64).
    pub fn bits(&mut self, v: u64, n: u32) {
        for i in (0..n).rev() {
            self.bit(v.checked_shr(i).unwrap_or(0) & 1 == 1);
        }
    }

    /// `v` in the order-`k` Exp-Golomb code; `v` must be below `2^64 - 2^k`.
    pub fn exp_golomb(&mut self, v: u64, k: u32) {
        let w = v + (1 << k);
        let width = 64 - w.leading_zeros();
        self.bits(0, width - k - 1);
        self.bits(w, width);
    }

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

    /// One bit.
    pub fn bit(&mut self) -> Result<bool, &'static str> {
        let byte = self.bytes.get(self.pos / 8).ok_or("cut short")?;
        let b = byte << (self.pos % 8) & 0x80 != 0;
        self.pos += 1;
        Ok(b)
    }

    /// `n` bits (at most 64) as a number, the first the highest.
    pub fn bits(&mut self, n: u32) -> Result<u64, &'static str> {
        let mut v = 0u64;
        for _ in 0..n {
            v = v << 1 | u64::from(self.bit()?);
        }
        Ok(v)
    }

    /// A number in the order-`k` Exp-Golomb code, at most `max`.
    pub fn exp_golomb(&mut self, k: u32, max: u64) -> Result<u64, &'static str> {
        let mut zeros = 0;
        while !self.bit()? {
            zeros += 1;
            // Past 64 bits no number is written; past `max`'s width none is wanted.
            if zeros + k >= 64 {
                return Err("number too long");
            }
        }
        let width = zeros + k;
        let w = (1u64 << width) | self.bits(width)?;
        let v = w - (1 << k);
        if v > max {
            return Err("number out of range");
        }
        Ok(v)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_golomb_codes_are_short_for_small_numbers_and_round_trip() {
        let len = |v: u64, k: u32| {
            let mut w = BitWriter::default();
            w.exp_golomb(v, k);
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
            w.bit(true);
            for v in values {
                w.exp_golomb(v, k);
            }
            w.bits(0b101, 3);
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            assert!(r.bit().unwrap());
            for v in values {
                assert_eq!(r.exp_golomb(k, u64::MAX), Ok(v), "order {k}");
            }
            assert_eq!(r.bits(3), Ok(0b101));
            assert_eq!(r.finish(), Ok(()));
        }
    }

    #[test]
    fn a_reader_refuses_what_no_writer_writes() {
        // Cut short, too long, past the maximum, trailing bytes, padding bits set.
        assert!(BitReader::new(&[]).bit().is_err());
        assert!(
            BitReader::new(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff])
                .exp_golomb(0, u64::MAX)
                .is_err()
        );
        let mut w = BitWriter::default();
        w.exp_golomb(300, 2);
        let bytes = w.finish();
        assert!(BitReader::new(&bytes).exp_golomb(2, 299).is_err());
        let mut r = BitReader::new(&bytes);
        assert_eq!(r.exp_golomb(2, 300), Ok(300));
        assert_eq!(r.finish(), Ok(()));
        let mut longer = bytes.clone();
        longer.push(0);
        let mut r = BitReader::new(&longer);
        r.exp_golomb(2, 300).unwrap();
        assert!(r.finish().is_err());
        let mut r = BitReader::new(&[0b1000_0001]);
        assert_eq!(r.bit(), Ok(true));
        assert!(r.finish().is_err(), "a padding bit set");
        // Any bytes at all: refused or read, never a panic.
        for bytes in crate::bytes::byte_soup(7, 24) {
            let mut r = BitReader::new(&bytes);
            while r.exp_golomb(3, 1 << 20).is_ok() {}
        }
    }
}
