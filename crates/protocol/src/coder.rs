//! Entropy coding of a packet's bytes: a binary range coder (the kind LZMA uses), each byte
//! coded as eight yes-or-no choices down a bit tree, each choice with its own probability.
//!
//! The probabilities depend on a context, the previous byte's length in bits (0 to 8): a
//! snapshot is mostly varints, zigzagged differences and masks, and what follows a small
//! byte (the last of a varint, a small change) differs from what follows a large one (a
//! mask, a varint that goes on). Every packet starts from a [`Model`] trained on recorded
//! fights and adapts within itself (a step of 1/32 towards what it saw), so a packet unlike
//! the training costs a little more but is never refused. After each byte one more choice
//! says whether it was the last, in the byte's context.
//!
//! Where coding would lose, the packet goes raw: a first choice, nearly free when coded,
//! says so, and then the length and the bytes follow at exactly one bit per bit. So a coded
//! packet is at most [`RAW_OVERHEAD`] bytes longer than its bytes, however unlike the
//! training they are.
//!
//! Decoding refuses more than its caller's cap, reads zeros past the end (the encoder
//! trims them) and then checks that the bytes it found are the one coding of what it
//! decoded, so a packet has a single encoding, as the rest of the protocol insists.
//!
//! Why not a crate: the ANS and range coders published as crates (constriction) write
//! whole 16- or 32-bit words and flush their state, which on a 40-byte snapshot costs
//! more than coding saves; this coder flushes to the byte, and the whole of it is below.

/// Probability of a 0 in 1/2048ths, LZMA's scale.
const ONE: u32 = 1 << 11;
/// How fast a probability follows what it sees: 1/32 of the way each time.
const ADAPT: u32 = 5;
/// The range is renormalised (a byte shifted out) whenever it falls below this.
const TOP: u32 = 1 << 24;
/// Longest packet the raw form can carry (its length is 16 bits).
pub const MAX_RAW: usize = u16::MAX as usize;
/// Most bytes a coded packet takes beyond the packet itself: the raw form's choice,
/// length and flush.
pub const RAW_OVERHEAD: usize = 4;
/// Contexts: the previous byte's length in bits, 0 to 8.
pub const CONTEXTS: usize = 9;
/// Least and most a trained probability may be, so that no choice costs more than
/// about six bits and adaptation can always move it.
pub const MIN_PROB: u16 = 31;
/// See [`MIN_PROB`].
pub const MAX_PROB: u16 = (ONE as u16) - MIN_PROB;
/// The first choice's probability of "coded" (fixed, not adapted): coded costs almost
/// nothing, raw about 11 bits.
const CODED_PROB: u16 = MAX_PROB;

/// Starting probabilities: for each context, entry 0 is "more bytes follow" after a byte
/// of that context's length, entries 1 to 255 the bit tree's nodes (node 1 the top bit;
/// a node's children are `2n` and `2n + 1`).
pub type Model = [[u16; 256]; CONTEXTS];

/// The context a byte is coded in: the length in bits of the byte before it.
fn context(previous: u8) -> usize {
    (8 - previous.leading_zeros()) as usize
}

/// `raw` coded against `model`: see the module docs. `raw` must be at most [`MAX_RAW`]
/// bytes (every caller's message cap is below it).
pub fn encode(raw: &[u8], model: &Model) -> Vec<u8> {
    assert!(raw.len() <= MAX_RAW, "a packet beyond the coder's cap");
    if raw.is_empty() {
        return encode_raw(raw);
    }
    let coded = encode_coded(raw, model);
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

fn encode_coded(raw: &[u8], model: &Model) -> Vec<u8> {
    let mut probs = *model;
    let mut e = Encoder::new(raw.len());
    e.bit(&mut { CODED_PROB }, false);
    let mut previous = 0u8;
    for (i, &byte) in raw.iter().enumerate() {
        let tree = &mut probs[context(previous)];
        let mut node = 1usize;
        for k in (0..8).rev() {
            let bit = byte >> k & 1 == 1;
            e.bit(&mut tree[node], bit);
            node = node << 1 | usize::from(bit);
        }
        e.bit(&mut probs[context(byte)][0], i + 1 == raw.len());
        previous = byte;
    }
    e.finish()
}

fn encode_raw(raw: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new(raw.len());
    e.bit(&mut { CODED_PROB }, true);
    e.direct(raw.len() as u32, 16);
    for &byte in raw {
        e.direct(byte.into(), 8);
    }
    e.finish()
}

/// Decodes what [`encode`] wrote with the same `model`, refusing a packet longer than
/// `max` bytes and any bytes that are not the one coding of what they decode to.
pub fn decode(coded: &[u8], model: &Model, max: usize) -> Result<Vec<u8>, &'static str> {
    let mut d = Decoder::new(coded);
    let raw = if d.bit(&mut { CODED_PROB }) {
        let len = d.direct(16) as usize;
        if len > max {
            return Err("coded packet longer than its cap");
        }
        (0..len).map(|_| d.direct(8) as u8).collect()
    } else {
        let mut probs = *model;
        let mut raw = Vec::new();
        let mut previous = 0u8;
        loop {
            if raw.len() == max {
                return Err("coded packet longer than its cap");
            }
            let tree = &mut probs[context(previous)];
            let mut node = 1usize;
            while node < 256 {
                node = node << 1 | usize::from(d.bit(&mut tree[node]));
            }
            let byte = node as u8;
            raw.push(byte);
            previous = byte;
            if d.bit(&mut probs[context(byte)][0]) {
                break raw;
            }
        }
    };
    if encode(&raw, model) != coded {
        return Err("not the coding of its own bytes");
    }
    Ok(raw)
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

    /// One choice, `prob` the chance of `false`, which then moves towards what was coded.
    fn bit(&mut self, prob: &mut u16, bit: bool) {
        let bound = (self.range >> 11) * u32::from(*prob);
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
            *prob -= *prob >> ADAPT;
        } else {
            self.range = bound;
            *prob += ((ONE as u16) - *prob) >> ADAPT;
        }
        self.normalize();
    }

    /// The low `n` bits of `v`, highest first, each at even odds.
    fn direct(&mut self, v: u32, n: u32) {
        for k in (0..n).rev() {
            self.range >>= 1;
            if v >> k & 1 == 1 {
                self.low += u64::from(self.range);
            }
            self.normalize();
        }
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

    fn bit(&mut self, prob: &mut u16) -> bool {
        let bound = (self.range >> 11) * u32::from(*prob);
        let bit = self.code >= bound;
        if bit {
            self.code -= bound;
            self.range -= bound;
            *prob -= *prob >> ADAPT;
        } else {
            self.range = bound;
            *prob += ((ONE as u16) - *prob) >> ADAPT;
        }
        self.normalize();
        bit
    }

    fn direct(&mut self, n: u32) -> u32 {
        let mut v = 0;
        for _ in 0..n {
            self.range >>= 1;
            let bit = self.code >= self.range;
            if bit {
                self.code -= self.range;
            }
            v = v << 1 | u32::from(bit);
            self.normalize();
        }
        v
    }

    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.code = self.code << 8 | u32::from(self.next_byte());
        }
    }
}

/// A [`Model`] from counts of zeros and ones seen at each choice (what the training
/// tallies with [`Tally`]): each probability the share of zeros, kept within
/// [`MIN_PROB`]..=[`MAX_PROB`].
pub fn model_of(tally: &Tally) -> Model {
    let mut model = [[0u16; 256]; CONTEXTS];
    for (probs, counts) in model.iter_mut().zip(tally.0.iter()) {
        for (p, [zeros, ones]) in probs.iter_mut().zip(counts) {
            let share = (*zeros as f64 + 0.5) / (*zeros as f64 + *ones as f64 + 1.0);
            *p = ((share * f64::from(ONE)).round() as u16).clamp(MIN_PROB, MAX_PROB);
        }
    }
    model
}

/// Counts of zeros and ones at each of a [`Model`]'s choices, over packets a training
/// run saw.
#[derive(Clone)]
pub struct Tally(pub Box<[[[u64; 2]; 256]; CONTEXTS]>);

impl Default for Tally {
    fn default() -> Self {
        Self(Box::new([[[0; 2]; 256]; CONTEXTS]))
    }
}

impl Tally {
    /// Counts the choices coding `raw` would make.
    pub fn add(&mut self, raw: &[u8]) {
        let mut previous = 0u8;
        for (i, &byte) in raw.iter().enumerate() {
            let tree = &mut self.0[context(previous)];
            let mut node = 1usize;
            for k in (0..8).rev() {
                let bit = byte >> k & 1;
                tree[node][usize::from(bit)] += 1;
                node = node << 1 | usize::from(bit);
            }
            self.0[context(byte)][0][usize::from(i + 1 == raw.len())] += 1;
            previous = byte;
        }
    }

    /// The model's table as Rust source, for the generated model file.
    pub fn to_source(&self, name: &str, doc: &str) -> String {
        let model = model_of(self);
        let mut s =
            format!("{doc}\n/// The starting probabilities.\npub const {name}: Model = [\n");
        for probs in &model {
            s.push_str("    [\n");
            for row in probs.chunks(16) {
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
