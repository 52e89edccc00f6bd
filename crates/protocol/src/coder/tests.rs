//! The coder round-trips every packet, saves on what it was trained for, never grows a
//! packet by more than its raw form's overhead, and refuses every other coding.

use super::*;
use proptest::prelude::*;
use std::sync::LazyLock;

/// A model trained as the snapshots' is, on packets of mostly small bytes with now and
/// then a large one (a mask, a varint that goes on), as snapshots are.
static TRAINED: LazyLock<Coder> = LazyLock::new(|| {
    let mut tally = Tally::default();
    let mut x = 12345u32;
    for _ in 0..2000 {
        let packet: Vec<u8> = (0..40)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let r = x >> 16;
                if r.is_multiple_of(8) {
                    (r >> 3) as u8 | 0x80
                } else {
                    (r % 5) as u8
                }
            })
            .collect();
        tally.add(&packet);
    }
    coder_of(&tally)
});

/// A model trained on nothing: every symbol alike.
static FLAT: LazyLock<Coder> = LazyLock::new(|| coder_of(&Tally::default()));

fn coder_of(tally: &Tally) -> Coder {
    Coder::new(&model_of(tally)).expect("a trained model is well formed")
}

fn round_trip(raw: &[u8], coder: &Coder) -> Vec<u8> {
    let coded = coder.encode(raw);
    assert_eq!(coder.decode(&coded, MAX_RAW).as_deref(), Ok(raw), "{raw:?}");
    assert!(
        coded.len() <= raw.len() + RAW_OVERHEAD,
        "{} bytes coded to {}",
        raw.len(),
        coded.len()
    );
    coded
}

#[test]
fn small_bytes_after_small_bytes_cost_two_thirds_of_a_byte_or_less() {
    // What a quiet snapshot is mostly made of.
    let raw = [1u8, 0, 2, 0, 0, 1, 3, 0, 0, 0, 1, 0, 0, 2, 0, 0];
    let coded = round_trip(&raw, &TRAINED);
    assert!(coded.len() * 3 < raw.len() * 2, "{} bytes", coded.len());
}

#[test]
fn bytes_no_model_predicts_grow_by_at_most_the_raw_overhead() {
    // Random bytes, against a model that has only ever seen zeros and against none.
    let mut tally = Tally::default();
    for _ in 0..1000 {
        tally.add(&[0; 40]);
    }
    let zeros = coder_of(&tally);
    let mut x = 99u32;
    let raw: Vec<u8> = (0..300)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 16) as u8
        })
        .collect();
    for coder in [&zeros, &*FLAT] {
        let coded = round_trip(&raw, coder);
        assert!(coded.len() >= raw.len(), "{} bytes", coded.len());
    }
}

#[test]
fn an_empty_packet_and_one_at_the_cap_round_trip() {
    round_trip(&[], &TRAINED);
    round_trip(&[0xFF; MAX_RAW], &TRAINED);
    round_trip(&[0; MAX_RAW], &TRAINED);
}

#[test]
fn a_packet_longer_than_the_cap_is_refused_either_way() {
    let quiet = TRAINED.encode(&[0; 100]);
    assert_eq!(TRAINED.decode(&quiet, 100).map(|r| r.len()), Ok(100));
    assert!(TRAINED.decode(&quiet, 99).is_err());
    let noisy: Vec<u8> = (0..100u32).map(|i| (i * 131 % 256) as u8 | 0x80).collect();
    let coded = TRAINED.encode(&noisy);
    assert!(TRAINED.decode(&coded, 99).is_err());
}

#[test]
fn zeros_added_at_the_end_or_bytes_cut_off_are_refused() {
    let raw = [5u8, 0, 130, 1, 0, 0, 7];
    let coded = TRAINED.encode(&raw);
    let mut longer = coded.clone();
    longer.push(0);
    assert!(TRAINED.decode(&longer, MAX_RAW).is_err());
    for cut in 0..coded.len() {
        assert_ne!(
            TRAINED.decode(&coded[..cut], MAX_RAW).as_deref(),
            Ok(&raw[..]),
            "cut at {cut}"
        );
    }
}

#[test]
fn a_trained_model_gives_every_symbol_a_slot_and_fills_all_4096() {
    let mut tally = Tally::default();
    tally.add(&[0, 200, 1]);
    let model = model_of(&tally);
    for freqs in &model {
        assert!(freqs.iter().all(|&f| f >= 1));
        assert_eq!(freqs.iter().map(|&f| u32::from(f)).sum::<u32>(), 4096);
    }
    let mut broken = model;
    broken[3][7] = 0;
    assert_eq!(Coder::new(&broken).err(), Some(BadModel(3)));
    // Trained on one byte over and over, it codes that byte in a few bits.
    let mut tally = Tally::default();
    for _ in 0..1000 {
        tally.add(&[3, 3, 3]);
    }
    let coded = round_trip(&[3; 60], &coder_of(&tally));
    assert!(coded.len() < 12, "{} bytes", coded.len());
}

proptest! {
    #[test]
    fn every_packet_round_trips(raw in proptest::collection::vec(any::<u8>(), 0..400)) {
        round_trip(&raw, &TRAINED);
        round_trip(&raw, &FLAT);
    }

    #[test]
    fn small_numbers_round_trip(raw in proptest::collection::vec(0u8..4, 1..400)) {
        round_trip(&raw, &TRAINED);
    }

    #[test]
    fn any_bytes_decode_to_an_error_or_to_their_one_coding(
        coded in proptest::collection::vec(any::<u8>(), 0..64)
    ) {
        if let Ok(raw) = TRAINED.decode(&coded, 1_000) {
            prop_assert_eq!(TRAINED.encode(&raw), coded);
        }
    }
}
