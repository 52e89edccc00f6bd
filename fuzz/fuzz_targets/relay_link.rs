#![no_main]
// The body lives in sightline-fuzzing, shared with the stable corpus test.
libfuzzer_sys::fuzz_target!(|data: &[u8]| sightline_fuzzing::relay::relay_link(data));
