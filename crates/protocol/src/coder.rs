//! Entropy coding of a packet's bytes: a range coder (LZMA's carry handling) over an
//! order-1 model, each byte coded in one step from a table of frequencies.
//!
//! A byte's frequencies depend on a context, the previous byte's length in bits (0 to 8):
//! a snapshot is mostly varints, zigzagged differences and masks, and what follows a
//! small byte (the last of a varint, a small change) differs from what follows a large one
//! (a mask, a varint that goes on). The frequencies are a [`Model`] trained on recorded
//! fights and fixed: per byte the coder does a multiplication and a table lookup, so a
//! server sending 64 players' snapshots 128 times a second to each of 64 clients pays
//! little for it. An adaptive coder, tried first (a bit tree of adaptive probabilities,
//! eight choices a byte), saved 0.3 points more of the bytes and cost the 64-player load
//! test's clients most of their frame rate. After the last byte an end symbol, in the
//! last byte's context, closes the packet.
//!
//! Where coding would lose, the packet goes raw: a first choice, nearly free when coded,
//! says so, and then the length and the bytes follow at exactly eight bits a byte. So a
//! coded packet is at most [`RAW_OVERHEAD`] bytes longer than its bytes, however unlike
//! the training they are.
//!
//! Decoding refuses more than its caller's cap, reads zeros past the end (the encoder
//! trims them) and then checks that the bytes it found are the one coding of what it
//! decoded, so a packet has a single encoding, as the rest of the protocol insists.
//!
//! Why not a crate: the ANS and range coders published as crates (constriction) write
//! whole 16- or 32-bit words and flush their state, which on a 40-byte snapshot costs
//! more than coding saves; this coder flushes to the byte, and the whole of it is below.

use std::fmt;

pub mod binary;

/// Frequencies are in 1/4096ths.
pub const TOTAL_BITS: u32 = 12;
const TOTAL: u32 = 1 << TOTAL_BITS;
/// The range is renormalised (a byte shifted out) whenever it falls below this.
const TOP: u32 = 1 << 24;
/// Longest packet the raw form can carry (its length is 16 bits).
pub const MAX_RAW: usize = u16::MAX as usize;
/// Most bytes a coded packet takes beyond the packet itself: the raw form's choice,
/// length and flush.
pub const RAW_OVERHEAD: usize = 4;
/// Contexts: the previous byte's length in bits, 0 to 8.
pub const CONTEXTS: usize = 9;
/// The 256 bytes and the end of the packet.
pub const SYMBOLS: usize = 257;
const END: usize = 256;

/// Each context's frequencies of the 256 bytes and of the end ([`SYMBOLS`]), in
/// 1/4096ths: each at least 1, and together 4096.
pub type Model = [[u16; SYMBOLS]; CONTEXTS];

/// The context a byte is coded in: the length in bits of the byte before it.
fn context(previous: u8) -> usize {
    (8 - previous.leading_zeros()) as usize
}

/// Why a [`Model`] cannot code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadModel(pub usize);

impl fmt::Display for BadModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "context {} has a zero frequency or does not sum to {TOTAL}",
            self.0
        )
    }
}

/// A [`Model`] ready to code with: each context's cumulative frequencies, and which
/// symbol each of the 4096 slots belongs to.
pub struct Coder {
    cumulative: Box<[[u32; SYMBOLS + 1]; CONTEXTS]>,
    slots: Box<[[u16; TOTAL as usize]; CONTEXTS]>,
}

impl Coder {
    /// Checks `model` and builds its tables.
    pub fn new(model: &Model) -> Result<Self, BadModel> {
        let mut cumulative = Box::new([[0u32; SYMBOLS + 1]; CONTEXTS]);
        let mut slots = Box::new([[0u16; TOTAL as usize]; CONTEXTS]);
        for (c, freqs) in model.iter().enumerate() {
            if freqs.contains(&0) || freqs.iter().map(|&f| u32::from(f)).sum::<u32>() != TOTAL {
                return Err(BadModel(c));
            }
            let mut at = 0u32;
            for (s, &f) in freqs.iter().enumerate() {
                cumulative[c][s] = at;
                for slot in at..at + u32::from(f) {
                    slots[c][slot as usize] = s as u16;
                }
                at += u32::from(f);
            }
            cumulative[c][SYMBOLS] = TOTAL;
        }
        Ok(Self { cumulative, slots })
    }

    /// `raw` coded: see the module docs. `raw` must be at most [`MAX_RAW`] bytes (every
    /// caller's message cap is below it).
    pub fn encode(&self, raw: &[u8]) -> Vec<u8> {
        assert!(raw.len() <= MAX_RAW, "a packet beyond the coder's cap");
        if raw.is_empty() {
            return encode_raw(raw);
        }
        let coded = self.encode_coded(raw);
        // Raw is rare, so it is tried only where coding did not save.
        if coded.len() <= raw.len() {
            return coded;
        }
        let plain = encode_raw(raw);
        if plain.len() < coded.len() {
            plain
        } else {
            coded
        }
    }

    fn encode_coded(&self, raw: &[u8]) -> Vec<u8> {
        let mut e = Encoder::new(raw.len());
        e.code(0, CODED, TOTAL_BITS);
        let mut previous = 0u8;
        for &byte in raw {
            self.put(&mut e, context(previous), usize::from(byte));
            previous = byte;
        }
        self.put(&mut e, context(previous), END);
        e.finish()
    }

    fn put(&self, e: &mut Encoder, c: usize, symbol: usize) {
        let (cum, freq) = self.span(c, symbol);
        e.code(cum, freq, TOTAL_BITS);
    }

    /// Where `symbol`'s slots start in context `c`, and how many it has.
    fn span(&self, c: usize, symbol: usize) -> (u32, u32) {
        let cum = &self.cumulative[c];
        (cum[symbol], cum[symbol + 1] - cum[symbol])
    }

    /// Decodes what [`Self::encode`] wrote, refusing a packet longer than `max` bytes
    /// and any bytes that are not the one coding of what they decode to.
    pub fn decode(&self, coded: &[u8], max: usize) -> Result<Vec<u8>, &'static str> {
        let mut d = Decoder::new(coded);
        let raw = if d.slot(TOTAL_BITS) < CODED {
            d.take(0, CODED, TOTAL_BITS);
            let mut raw = Vec::new();
            let mut previous = 0u8;
            loop {
                let c = context(previous);
                let symbol = usize::from(self.slots[c][d.slot(TOTAL_BITS) as usize]);
                let (cum, freq) = self.span(c, symbol);
                d.take(cum, freq, TOTAL_BITS);
                if symbol == END {
                    break raw;
                }
                if raw.len() == max {
                    return Err("coded packet longer than its cap");
                }
                previous = symbol as u8;
                raw.push(previous);
            }
        } else {
            d.take(CODED, TOTAL - CODED, TOTAL_BITS);
            let len = d.direct(16) as usize;
            if len > max {
                return Err("coded packet longer than its cap");
            }
            (0..len).map(|_| d.direct(8) as u8).collect()
        };
        if self.encode(&raw) != coded {
            return Err("not the coding of its own bytes");
        }
        Ok(raw)
    }
}

/// The first choice's share for "coded": coded costs almost nothing, raw 12 bits.
const CODED: u32 = TOTAL - 1;

fn encode_raw(raw: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new(raw.len());
    e.code(CODED, TOTAL - CODED, TOTAL_BITS);
    e.direct(raw.len() as u32, 16);
    for &byte in raw {
        e.direct(byte.into(), 8);
    }
    e.finish()
}

/// LZMA's range encoder: `low` carries into bytes already decided but not yet written
/// (`cache` and the `pending` 0xFFs after it).
struct Encoder {
    low: u64,
    range: u32,
    cache: u8,
    pending: u64,
    out: Vec<u8>,
}

impl Encoder {
    fn new(len: usize) -> Self {
        Self {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending: 1,
            out: Vec::with_capacity(len + RAW_OVERHEAD + 1),
        }
    }

    /// The symbol whose slots are `cum..cum + freq` of `2^bits`.
    fn code(&mut self, cum: u32, freq: u32, bits: u32) {
        let r = self.range >> bits;
        self.low += u64::from(r * cum);
        self.range = r * freq;
        self.normalize();
    }

    /// The low `n` bits of `v` (at most 16), at even odds.
    fn direct(&mut self, v: u32, n: u32) {
        self.code(v & ((1 << n) - 1), 1, n);
    }

    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    fn shift_low(&mut self) {
        if self.low < 0xFF00_0000 || self.low >= 1 << 32 {
            let carry = (self.low >> 32) as u8;
            let mut byte = self.cache;
            loop {
                self.out.push(byte.wrapping_add(carry));
                byte = 0xFF;
                self.pending -= 1;
                if self.pending == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    /// Ends on the number in the final interval with the most zero bits at its end, so
    /// the trailing zero bytes (which the decoder reads past the end anyway) can go; the
    /// first byte, always 0 (the interval lies below 1), goes too.
    fn finish(mut self) -> Vec<u8> {
        let end = self.low + u64::from(self.range);
        if let Some(v) = (0..=32u32).rev().find_map(|k| {
            let mask = (1u64 << k) - 1;
            let v = (self.low + mask) & !mask;
            (v < end).then_some(v)
        }) {
            self.low = v;
        }
        for _ in 0..5 {
            self.shift_low();
        }
        let mut out = self.out;
        debug_assert_eq!(out.first(), Some(&0));
        out.remove(0);
        while out.last() == Some(&0) {
            out.pop();
        }
        out
    }
}

/// The decoder's side: `code` is where the coded number lies within `range`.
struct Decoder<'a> {
    code: u32,
    range: u32,
    coded: &'a [u8],
    /// Bytes taken, past the end as zeros included.
    read: usize,
}

impl<'a> Decoder<'a> {
    fn new(coded: &'a [u8]) -> Self {
        let mut d = Self {
            code: 0,
            range: u32::MAX,
            coded,
            read: 0,
        };
        for _ in 0..4 {
            d.code = d.code << 8 | u32::from(d.next_byte());
        }
        d
    }

    fn next_byte(&mut self) -> u8 {
        let b = self.coded.get(self.read).copied().unwrap_or(0);
        self.read = self.read.saturating_add(1);
        b
    }

    /// Which of `2^bits` slots the coded number lies in (the last, for bytes that are
    /// no coding at all).
    fn slot(&self, bits: u32) -> u32 {
        (self.code / (self.range >> bits)).min((1 << bits) - 1)
    }

    /// Takes the symbol of slots `cum..cum + freq`, which [`Self::slot`] found.
    fn take(&mut self, cum: u32, freq: u32, bits: u32) {
        let r = self.range >> bits;
        self.code = self.code.wrapping_sub(r * cum);
        self.range = r * freq;
        self.normalize();
    }

    /// `n` bits (at most 16) at even odds.
    fn direct(&mut self, n: u32) -> u32 {
        let v = self.slot(n);
        self.take(v, 1, n);
        v
    }

    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.code = self.code << 8 | u32::from(self.next_byte());
        }
    }
}

/// A [`Model`] from counts of each context's symbols (what the training tallies with
/// [`Tally`]): each frequency the symbol's share of 4096, at least 1, the slots left
/// over by rounding down going to the largest remainders.
pub fn model_of(tally: &Tally) -> Model {
    let mut model = [[0u16; SYMBOLS]; CONTEXTS];
    for (freqs, counts) in model.iter_mut().zip(tally.0.iter()) {
        // An unseen context codes every symbol alike.
        let counts: Vec<u64> = if counts.iter().all(|&n| n == 0) {
            vec![1; SYMBOLS]
        } else {
            counts.to_vec()
        };
        let total: u64 = counts.iter().sum();
        let spare = u64::from(TOTAL) - SYMBOLS as u64;
        let mut left = spare;
        let mut remainders = Vec::with_capacity(SYMBOLS);
        for (s, (f, &n)) in freqs.iter_mut().zip(&counts).enumerate() {
            let share = n * spare;
            *f = 1 + (share / total) as u16;
            left -= share / total;
            remainders.push((share % total, s));
        }
        remainders.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, s) in remainders.iter().take(left as usize) {
            freqs[s] += 1;
        }
    }
    model
}

/// Counts of each context's symbols over packets a training run saw.
#[derive(Clone)]
pub struct Tally(pub Box<[[u64; SYMBOLS]; CONTEXTS]>);

impl Default for Tally {
    fn default() -> Self {
        Self(Box::new([[0; SYMBOLS]; CONTEXTS]))
    }
}

impl Tally {
    /// Counts the symbols coding `raw` would code.
    pub fn add(&mut self, raw: &[u8]) {
        let mut previous = 0u8;
        for &byte in raw {
            self.0[context(previous)][usize::from(byte)] += 1;
            previous = byte;
        }
        self.0[context(previous)][END] += 1;
    }

    /// The model's table as Rust source, for the generated model file.
    pub fn to_source(&self, name: &str, doc: &str) -> String {
        let model = model_of(self);
        let mut s = format!("{doc}\n/// The trained frequencies.\npub const {name}: Model = [\n");
        for freqs in &model {
            s.push_str("    [\n");
            for row in freqs.chunks(16) {
                let cells: Vec<String> = row.iter().map(u16::to_string).collect();
                s.push_str(&format!("        {},\n", cells.join(", ")));
            }
            s.push_str("    ],\n");
        }
        s.push_str("];\n");
        s
    }
}

#[cfg(test)]
mod tests;
