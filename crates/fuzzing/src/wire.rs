//! Bodies for the wire decoders: [`Wire::decode`] of every message type, and
//! [`peek_welcome_version`].
//!
//! bincode's varints are not canonical: a small number may also arrive in the long form
//! that a prefix byte of 251, 252 or 253 announces, and it decodes to the same value. So
//! a decoded message must re-encode to exactly its input only when the input holds none
//! of those bytes; otherwise to something shorter that decodes to the same message.

use sightline_protocol::{
    ClientDatagram, ClientMessage, DecodeError, InputPacket, ServerDatagram, ServerMessage,
    SnapshotPacket, Wire, peek_welcome_version,
};
use std::fmt::Debug;

/// Whether `bytes` may hold a varint in a long form (see the module documentation).
fn may_hold_long_varints(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| (251..=253).contains(b))
}

/// Decodes `data` as a `T` and checks the result: refused with the right error, or a
/// message that passes validation, encodes within its cap to no more bytes than it came
/// in (exactly those bytes when they are canonical), and decodes back to itself.
pub fn decode_checked<T: Wire + PartialEq + Debug>(data: &[u8]) -> Option<T> {
    let msg = match T::decode(data) {
        Ok(msg) => msg,
        Err(DecodeError::TooLarge { len, max }) => {
            assert!(len == data.len() && len > max && max == T::MAX_BYTES);
            return None;
        }
        Err(e) => {
            assert!(data.len() <= T::MAX_BYTES, "{e} for an input over the cap");
            return None;
        }
    };
    assert_eq!(msg.validate(), Ok(()), "decode accepted an invalid {msg:?}");
    let again = msg
        .encode()
        .unwrap_or_else(|e| panic!("{msg:?} decoded but does not encode: {e}"));
    assert!(
        again.len() <= data.len(),
        "{msg:?} re-encodes longer than it came"
    );
    if !may_hold_long_varints(data) {
        assert_eq!(again, data, "{msg:?} re-encodes to other bytes");
    }
    assert_eq!(
        T::decode(&again).as_ref(),
        Ok(&msg),
        "re-encoding changed it"
    );
    Some(msg)
}

/// Reliable client messages, as the server reads them.
pub fn client_message(data: &[u8]) {
    decode_checked::<ClientMessage>(data);
}

/// Reliable server messages, as a client reads them.
pub fn server_message(data: &[u8]) {
    decode_checked::<ServerMessage>(data);
}

/// Unreliable client datagrams, as the server reads them. A canonical input datagram is
/// its variant tag (0) followed by the input packet's own encoding. A packet whose chain
/// applies (from nothing, or to [`crate::seeds::input_base`] counted back from
/// [`crate::seeds::INPUT_ACKED`]) gives commands that write, against the same base, the
/// very same packet.
pub fn client_datagram(data: &[u8]) {
    let Some(ClientDatagram::Input(packet)) = decode_checked::<ClientDatagram>(data) else {
        return;
    };
    if !may_hold_long_varints(data) {
        assert_eq!(data[0], 0);
        assert_eq!(InputPacket::decode(&data[1..]).as_ref(), Ok(&packet));
    }
    let acked = crate::seeds::INPUT_ACKED;
    let base = packet.base_seq(acked).map(crate::seeds::input_base);
    if let Ok(cmds) = packet.commands(base.as_ref()) {
        assert_eq!(
            InputPacket::new(packet.ack_snapshot, acked, base.as_ref(), &cmds),
            packet
        );
    }
}

/// Unreliable server datagrams, as a client reads them. A canonical snapshot datagram is
/// its variant tag (0) followed by the packet's own encoding. A packet that resolves
/// (in full, or against [`crate::seeds::baseline`]) gives a snapshot that passes validation and encodes
/// against the same baseline to the very same packet.
pub fn server_datagram(data: &[u8]) {
    let Some(ServerDatagram::Snapshot(packet)) = decode_checked::<ServerDatagram>(data) else {
        return;
    };
    if !may_hold_long_varints(data) {
        assert_eq!(data[0], 0);
    }
    let base = (packet.baseline != 0).then(|| crate::seeds::baseline(packet.baseline));
    if let Ok(snapshot) = packet.resolve(base.as_ref()) {
        assert_eq!(snapshot.validate(), Ok(()));
        assert_eq!(SnapshotPacket::encode(&snapshot, base.as_ref()), packet);
    }
}

/// [`peek_welcome_version`]: agrees with the full decoder wherever that decodes, answers
/// only for input that starts with the Welcome tag, and ignores anything after the
/// version (later versions may append fields).
pub fn welcome_version(data: &[u8]) {
    let peeked = peek_welcome_version(data);
    match decode_checked::<ServerMessage>(data) {
        Some(ServerMessage::Welcome(w)) => assert_eq!(peeked, Some(w.protocol_version)),
        Some(other) => assert_eq!(peeked, None, "a version read from {other:?}"),
        None => {}
    }
    let Some(version) = peeked else { return };
    // Tag 0 as a varint: one zero byte, or a long form of zero.
    let zero_tag = [&[0u8][..], &[251, 0, 0], &[252, 0, 0, 0, 0]];
    assert!(
        zero_tag.iter().any(|tag| data.starts_with(tag)),
        "version {version} read after a tag other than 0"
    );
    let mut longer = data.to_vec();
    longer.extend_from_slice(&[0xff, 0x07, 253]);
    assert_eq!(peek_welcome_version(&longer), Some(version));
}
