//! The coder round-trips every packet, saves on what it was trained for, never grows a
//! packet by more than its raw form's overhead, and refuses every other coding.

use super::*;
use proptest::prelude::*;
use std::sync::LazyLock;

/// A model trained as the snapshots' is, on packets of mostly small bytes with now and
/// then a large one (a mask, a varint that goes on), as snapshots are.
static TRAINED: LazyLock<Model> = LazyLock::new(|| {
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
    model_of(&tally)
});

/// Even odds everywhere: a model trained on nothing.
const FLAT: Model = [[1024; 256]; CONTEXTS];

fn round_trip(raw: &[u8], model: &Model) -> Vec<u8> {
    let coded = encode(raw, model);
    assert_eq!(
        decode(&coded, model, MAX_RAW).as_deref(),
        Ok(raw),
        "{raw:?}"
    );
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
    let zeros = model_of(&tally);
    let mut x = 99u32;
    let raw: Vec<u8> = (0..300)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 16) as u8
        })
        .collect();
    for model in [&zeros, &FLAT] {
        let coded = round_trip(&raw, model);
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
    let quiet = encode(&[0; 100], &TRAINED);
    assert_eq!(decode(&quiet, &TRAINED, 100).map(|r| r.len()), Ok(100));
    assert!(decode(&quiet, &TRAINED, 99).is_err());
    let noisy: Vec<u8> = (0..100u32).map(|i| (i * 131 % 256) as u8 | 0x80).collect();
    let coded = encode(&noisy, &TRAINED);
    assert!(decode(&coded, &TRAINED, 99).is_err());
}

#[test]
fn zeros_added_at_the_end_or_bytes_cut_off_are_refused() {
    let raw = [5u8, 0, 130, 1, 0, 0, 7];
    let coded = encode(&raw, &TRAINED);
    let mut longer = coded.clone();
    longer.push(0);
    assert!(decode(&longer, &TRAINED, MAX_RAW).is_err());
    for cut in 0..coded.len() {
        assert_ne!(
            decode(&coded[..cut], &TRAINED, MAX_RAW).as_deref(),
            Ok(&raw[..]),
            "cut at {cut}"
        );
    }
}

#[test]
fn the_model_s_probabilities_stay_within_their_bounds() {
    for probs in TRAINED.iter() {
        assert!(probs.iter().all(|p| (MIN_PROB..=MAX_PROB).contains(p)));
    }
    // Trained on one byte over and over: every choice it makes is near certain.
    let mut tally = Tally::default();
    for _ in 0..1000 {
        tally.add(&[3, 3, 3]);
    }
    let model = model_of(&tally);
    let coded = round_trip(&[3; 60], &model);
    assert!(coded.len() < 8, "{} bytes", coded.len());
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
        if let Ok(raw) = decode(&coded, &TRAINED, 1_000) {
            prop_assert_eq!(encode(&raw, &TRAINED), coded);
        }
    }
}
