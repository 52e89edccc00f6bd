//! The byte-level pieces of the hand-written encodings ([`crate::cmds`],
//! [`crate::delta`], and the server's demos): LEB128 varints taken only in their shortest form, zigzag for signed
//! numbers, little-endian floats, and a reader that refuses to run past its bytes.

/// Writes `v` as a LEB128 varint: seven bits a byte, low bits first.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes a signed number zigzagged (0, -1, 1, -2, ...), so small steps either way
/// take one byte.
pub fn put_zigzag(out: &mut Vec<u8>, v: i32) {
    put_varint(out, zigzag(v) as u64);
}

/// `v` zigzagged.
pub fn zigzag(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// The signed number `z` zigzags.
pub fn unzigzag(z: u32) -> i32 {
    ((z >> 1) as i32) ^ -((z & 1) as i32)
}

/// `v` zigzagged, for 64 bits.
pub fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The signed number `z` zigzags, for 64 bits.
pub fn unzigzag64(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Writes `v` as four little-endian bytes.
pub fn put_f32(out: &mut Vec<u8>, v: f32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Reads from a byte string, refusing to run past its end.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    /// The next byte.
    pub fn byte(&mut self) -> Result<u8, &'static str> {
        let (&b, rest) = self.0.split_first().ok_or("cut short")?;
        self.0 = rest;
        Ok(b)
    }

    /// A varint of at most `bits` bits, in its shortest form only: one number, one
    /// encoding.
    fn varint_of(&mut self, bits: u32) -> Result<u64, &'static str> {
        let mut v: u64 = 0;
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            // The last byte may carry only the bits that remain.
            if bits - shift < 7 && u32::from(b) >> (bits - shift) != 0 {
                return Err("varint too long");
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if b == 0 && shift > 0 {
                    return Err("varint not in its shortest form");
                }
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A varint of at most 32 bits.
    pub fn varint(&mut self) -> Result<u32, &'static str> {
        Ok(self.varint_of(32)? as u32)
    }

    /// A varint of at most 64 bits.
    pub fn varint64(&mut self) -> Result<u64, &'static str> {
        self.varint_of(64)
    }

    /// A zigzagged signed number.
    pub fn zigzag(&mut self) -> Result<i32, &'static str> {
        Ok(unzigzag(self.varint()?))
    }

    /// Four little-endian bytes as a float.
    pub fn f32(&mut self) -> Result<f32, &'static str> {
        let b = [self.byte()?, self.byte()?, self.byte()?, self.byte()?];
        Ok(f32::from_le_bytes(b))
    }

    /// Refuses bytes left over.
    pub fn finish(&self) -> Result<(), &'static str> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err("bytes after the end")
        }
    }
}

/// Deterministic byte strings of every length below `lengths` (xorshift from `seed`), for
/// decoders to accept or refuse but never panic on.
#[cfg(test)]
pub fn byte_soup(mut seed: u64, lengths: usize) -> impl Iterator<Item = Vec<u8>> {
    (0..lengths).map(move |len| {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_in_their_shortest_form_only() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut r = Reader(&out);
            assert_eq!(r.varint64(), Ok(v));
            assert_eq!(r.finish(), Ok(()));
        }
        // A fifth byte with high bits, a sixth byte, or padding is refused for 32 bits.
        assert!(Reader(&[0xff, 0xff, 0xff, 0xff, 0x1f]).varint().is_err());
        assert!(
            Reader(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01])
                .varint()
                .is_err()
        );
        assert_eq!(
            Reader(&[0xff, 0xff, 0xff, 0xff, 0x0f]).varint(),
            Ok(u32::MAX)
        );
        assert!(Reader(&[0xb6, 0x00]).varint().is_err());
        assert_eq!(Reader(&[0x00]).varint(), Ok(0));
        // For 64 bits the tenth byte may carry one bit.
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(Reader(&max).varint64(), Ok(u64::MAX));
        *max.last_mut().unwrap() = 0x02;
        assert!(Reader(&max).varint64().is_err());
        assert!(Reader(&[0x80]).varint().is_err(), "cut short");
    }

    #[test]
    fn zigzag_keeps_small_numbers_small() {
        for (v, z) in [(0, 0), (-1, 1), (1, 2), (-2, 3), (i32::MAX, u32::MAX - 1)] {
            assert_eq!(zigzag(v), z);
            assert_eq!(unzigzag(z), v);
        }
        assert_eq!(unzigzag(zigzag(i32::MIN)), i32::MIN);
    }
}
