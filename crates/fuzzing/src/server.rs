//! Bodies for what the dedicated server reads besides the game's own messages: Source
//! RCON packets from a TCP connection ([`RconPacket::decode`]), the ban file
//! ([`BanList::parse`], what [`BanList::load`] runs on the file's bytes), requests to
//! the metrics listener ([`parse_request_head`]), and demo files ([`DemoReader`]).

use sightline_dedicated::{
    Ban, BanList, MAX_BANS, MAX_REQUEST_BYTES, RequestHead, parse_request_head,
};
use sightline_query::RconPacket;
use sightline_server::demo::{CommandChain, DemoEncoder, DemoReader, MAX_RECORD_BYTES, Record};
use std::path::Path;

/// Decodes packets from the front of `inbox` as the RCON service does (decode, drain
/// what was used, until the bytes run out or are refused), checking each step, and adds
/// them to `packets`. Whether the stream was refused.
///
/// Each packet uses exactly its size field's bytes plus the field's own four, at least
/// 14 (the smallest size is 10) and never more than there are; it re-encodes to those
/// bytes, or, where the body's terminating zero is followed by more than the one zero
/// the format ends with (which the decoder lets pass), to those bytes without the extra
/// zeros; and the re-encoding decodes to the same packet. The decoder waits for more
/// only while the packet its size field announces is incomplete.
fn decode_stream(inbox: &mut Vec<u8>, packets: &mut Vec<RconPacket>) -> bool {
    loop {
        match RconPacket::decode(inbox) {
            Ok(Some((packet, used))) => {
                assert!(used <= inbox.len(), "used {used} of {} bytes", inbox.len());
                assert!(used >= 14, "a packet of {used} bytes");
                let consumed = &inbox[..used];
                let size = i32::from_le_bytes([consumed[0], consumed[1], consumed[2], consumed[3]]);
                assert_eq!(
                    usize::try_from(size).ok(),
                    Some(used - 4),
                    "not its size field"
                );
                let again = packet.encode();
                assert!(
                    again.len() <= used,
                    "{packet:?} re-encodes longer than it came"
                );
                let (kept, padding) = consumed[4..].split_at(again.len() - 4);
                assert_eq!(kept, &again[4..], "{packet:?} re-encodes to other bytes");
                assert!(
                    padding.iter().all(|&b| b == 0),
                    "{packet:?} decoded from bytes with more after it"
                );
                assert_eq!(
                    RconPacket::decode(&again),
                    Ok(Some((packet.clone(), again.len()))),
                    "re-encoding changed it"
                );
                inbox.drain(..used);
                packets.push(packet);
            }
            Ok(None) => {
                if let Some(size) = inbox.first_chunk::<4>() {
                    let size = i32::from_le_bytes(*size);
                    assert!(
                        usize::try_from(size).is_ok_and(|size| inbox.len() < 4 + size),
                        "waiting for more after a whole packet of size {size}"
                    );
                }
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// Source RCON bytes as a TCP connection delivers them to the server: [`RconPacket::decode`]
/// applied as the service applies it, over the whole input at once, then over the same
/// bytes arriving in pieces of changing sizes (TCP may cut anywhere, and the service
/// decodes what it has after each read). Both give the same packets and the same verdict.
pub fn rcon_stream(data: &[u8]) {
    let mut whole = data.to_vec();
    let mut at_once = Vec::new();
    let refused = decode_stream(&mut whole, &mut at_once);

    const PIECES: [usize; 7] = [1, 3, 4, 2, 7, 13, 64];
    let mut inbox = Vec::new();
    let mut in_pieces = Vec::new();
    let mut refused_in_pieces = false;
    let mut rest = data;
    for piece in PIECES.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (read, later) = rest.split_at((*piece).min(rest.len()));
        rest = later;
        inbox.extend_from_slice(read);
        if decode_stream(&mut inbox, &mut in_pieces) {
            refused_in_pieces = true;
            break;
        }
    }
    assert_eq!(
        in_pieces, at_once,
        "the packets depend on how the bytes arrived"
    );
    assert_eq!(
        refused_in_pieces, refused,
        "the verdict depends on how the bytes arrived"
    );
}

/// The ban file's bytes, as [`BanList::load`] reads them: a line that does not read is
/// skipped and reported by its number, never the whole file. A list holds at most
/// [`MAX_BANS`] bans, and written back through its own line format
/// ([`BanList::to_bytes`], what saving writes) parses to the same bans with as many lines
/// skipped (they are kept as they were), which write the same bytes again.
pub fn ban_file(data: &[u8]) {
    let path = Path::new("bans.txt");
    let list = BanList::parse(data, path);
    let bans: Vec<&Ban> = list.iter().collect();
    assert!(bans.len() <= MAX_BANS);
    let lines = data.split(|&b| b == b'\n').count();
    assert!(bans.len() + list.skipped() <= lines);
    // All but a last "and N more lines" name their line.
    for report in list
        .skipped_reports()
        .iter()
        .filter(|r| !r.starts_with("and "))
    {
        let line = report
            .strip_prefix("bans.txt:")
            .and_then(|e| e.split_once(':'))
            .and_then(|(n, _)| n.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("{report:?} names no line of bans.txt"));
        assert!(
            (1..=lines).contains(&line),
            "{report:?}: the file has {lines} lines"
        );
    }
    let written = list.to_bytes();
    let again = BanList::parse(&written, path);
    assert_eq!(
        again.iter().collect::<Vec<_>>(),
        bans,
        "the written list reads back to other bans:\n{}",
        String::from_utf8_lossy(&written)
    );
    assert_eq!(again.skipped(), list.skipped());
    assert_eq!(again.to_bytes(), written);
}

/// Bytes sent to the metrics listener, read as it reads them: after each piece that
/// arrives, [`parse_request_head`] on everything so far, until a head is whole or
/// refused. A whole head names a method and a target and stays the same however the
/// bytes were cut; nothing over [`MAX_REQUEST_BYTES`] is ever taken as partial.
pub fn metrics_request(data: &[u8]) {
    let at_once = parse_request_head(data);
    if let RequestHead::Complete { method, target } = &at_once {
        assert!(!method.is_empty(), "a head without a method");
        assert!(!target.is_empty(), "a head without a target");
    }
    if at_once == RequestHead::Partial {
        assert!(
            data.len() < MAX_REQUEST_BYTES,
            "{} bytes still partial",
            data.len()
        );
    }
    // In pieces, as reads return them: the first verdict that is not Partial is the
    // listener's, and a whole head is whole from then on with the same method and target.
    const PIECES: [usize; 5] = [1, 2, 7, 64, 512];
    let mut end = 0;
    for piece in PIECES.iter().cycle() {
        if end >= data.len() {
            break;
        }
        end = (end + piece).min(data.len());
        match parse_request_head(&data[..end]) {
            RequestHead::Partial => continue,
            RequestHead::Complete { method, target } => {
                assert_eq!(
                    at_once,
                    RequestHead::Complete { method, target },
                    "a whole head read differently with more bytes after it"
                );
                return;
            }
            RequestHead::Refused => return,
        }
    }
}

/// A demo file, read as `--verify-demo` reads it: the header, then each record, the
/// commands through a [`CommandChain`] and each keyframe checked. An error names a byte
/// within the file; no record claims more than [`MAX_RECORD_BYTES`]; every record read
/// encodes again, and each tick's commands written again read back the same.
pub fn demo_file(data: &[u8]) {
    let mut reader = match DemoReader::open(data) {
        Ok(r) => r,
        Err(e) => {
            assert!(
                e.offset <= data.len() as u64,
                "{e} past {} bytes",
                data.len()
            );
            return;
        }
    };
    let header = reader.header().clone();
    let mut again = DemoEncoder::start(&header).expect("a header read encodes");
    let (mut chain, mut writer, mut check) = (
        CommandChain::default(),
        CommandChain::default(),
        CommandChain::default(),
    );
    loop {
        let before = reader.offset();
        let (offset, record) = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                assert!(
                    e.offset <= data.len() as u64,
                    "{e} past {} bytes",
                    data.len()
                );
                assert!(e.offset >= before, "{e}: before the record it was reading");
                return;
            }
        };
        assert!(reader.offset() - offset <= MAX_RECORD_BYTES as u64 + 5);
        again.record(&record).expect("a record read encodes");
        again.take();
        match &record {
            Record::Tick(commands) => {
                let Ok(steps) = chain.read(commands) else {
                    return;
                };
                let written = writer.write(&steps);
                assert_eq!(check.read(&written).as_ref(), Ok(&steps), "written again");
            }
            Record::Left(id) => {
                for c in [&mut chain, &mut writer, &mut check] {
                    c.forget(*id);
                }
            }
            Record::Keyframe(k) => {
                let _ = k.check();
            }
            _ => {}
        }
    }
}
