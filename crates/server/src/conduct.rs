//! How a connection behaves: budgets on what is handled per frame, strikes for junk and
//! impossible input, and a kick past a threshold or when no command arrives for too long.
//!
//! An honest client never sends a malformed message, never floods and never forges a
//! sequence number, so strikes add up only for broken or hostile clients; they decay so
//! that a rare glitch is forgiven.

use sightline_net::{ClientId, RenetServer};
use sightline_protocol::Channel;

/// Unreliable messages (inputs, pings) handled per connection per frame; more are
/// dropped unread, whatever the sender, so no connection can starve the tick. An honest
/// client sends one per tick, but one drawing 2 frames a second sends its commands in
/// bursts of 64 (half a second at 128 Hz): bursts are no offence, only the rate is.
pub const FRAME_DATAGRAMS: usize = 64;
/// Reliable messages (Hello, chat) handled per connection per frame; an honest client
/// sends a handful a minute, so more in one frame is a flood.
pub const FRAME_RELIABLE: usize = 8;
/// Bytes of messages handled per connection per frame, on each channel.
pub const FRAME_BYTES: usize = 16 * 1024;
/// Strikes at which a connection is kicked.
pub const KICK_STRIKES: u32 = 30;
/// Seconds for one strike to be forgiven.
pub const STRIKE_DECAY_SECONDS: f64 = 2.0;
/// Datagrams per second allowed beyond one per tick before a client counts as flooding:
/// pings, and the burst of a client catching up after a stall.
pub const SPARE_DATAGRAMS_PER_SECOND: u32 = 64;

/// What one frame may handle of a connection's unreliable messages: [`FRAME_DATAGRAMS`]
/// and [`FRAME_BYTES`], or as much more as the allowed rate let it send since the last
/// frame (`elapsed` seconds, at most [`crate::MAX_STALL_CATCH_UP`]): after the server
/// stood still, the backlog a client sent meanwhile is read, not dropped.
pub fn frame_budget(elapsed: f64, tick_hz: u32) -> (usize, usize) {
    let rate = f64::from(tick_hz.saturating_add(SPARE_DATAGRAMS_PER_SECOND));
    let elapsed = elapsed.clamp(0.0, crate::MAX_STALL_CATCH_UP.as_secs_f64());
    let messages = ((rate * elapsed).ceil() as usize).max(FRAME_DATAGRAMS);
    (messages, FRAME_BYTES * messages / FRAME_DATAGRAMS)
}

/// Reliable messages one frame may handle after `elapsed` seconds: [`FRAME_RELIABLE`]
/// for each second that passed, and never fewer.
pub fn frame_reliable(elapsed: f64) -> usize {
    let seconds = elapsed.clamp(1.0, crate::MAX_STALL_CATCH_UP.as_secs_f64());
    FRAME_RELIABLE * seconds.ceil() as usize
}

/// Something a connection did that an honest client does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offence {
    /// A message that failed to decode or validate.
    Malformed,
    /// A message of zero bytes.
    Empty,
    /// A valid message the connection may not send now (Hello twice, chat before Hello).
    Unexpected,
    /// More messages or bytes than the per-frame budget, or datagrams above the rate.
    Flood,
    /// A command no client could send: a sequence far ahead, an acknowledgement of a
    /// snapshot never sent.
    ImpossibleInput,
}

impl Offence {
    /// Strikes it costs: floods and forgeries cost more than a single bad message.
    pub fn weight(self) -> u32 {
        match self {
            Self::Malformed | Self::Empty | Self::Unexpected => 1,
            Self::ImpossibleInput => 2,
            Self::Flood => 10,
        }
    }

    /// In words, for the kick message and the log.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Malformed => "malformed messages",
            Self::Empty => "empty messages",
            Self::Unexpected => "messages out of turn",
            Self::Flood => "flooding",
            Self::ImpossibleInput => "impossible input",
        }
    }
}

/// One connection's record.
#[derive(Debug, Clone)]
pub struct Conduct {
    strikes: u32,
    decayed_at: f64,
    worst: Option<Offence>,
    /// When a command last arrived (or the connection joined), real seconds.
    pub last_command_at: f64,
    /// Datagrams it may still send at the allowed rate, and when that was worked out.
    allowance: f64,
    counted_at: f64,
    flood_struck_at: Option<f64>,
}

impl Conduct {
    /// A clean record starting at `now`.
    pub fn new(now: f64) -> Self {
        Self {
            strikes: 0,
            decayed_at: now,
            worst: None,
            last_command_at: now,
            // A second's worth at the first count.
            allowance: f64::INFINITY,
            counted_at: now,
            flood_struck_at: None,
        }
    }

    /// Current strikes.
    pub fn strikes(&self) -> u32 {
        self.strikes
    }

    /// Records an offence; returns the kick reason once the strikes reach
    /// [`KICK_STRIKES`].
    pub fn strike(&mut self, offence: Offence, now: f64) -> Option<String> {
        self.decay(now);
        self.strikes = self.strikes.saturating_add(offence.weight());
        if self.worst.is_none_or(|w| offence.weight() >= w.weight()) {
            self.worst = Some(offence);
        }
        (self.strikes >= KICK_STRIKES)
            .then(|| format!("kicked for {}", self.worst.unwrap_or(offence).describe()))
    }

    fn decay(&mut self, now: f64) {
        let forgiven = ((now - self.decayed_at) / STRIKE_DECAY_SECONDS).floor();
        if forgiven >= 1.0 {
            self.strikes = self
                .strikes
                .saturating_sub(forgiven.min(u32::MAX as f64) as u32);
            self.decayed_at += forgiven * STRIKE_DECAY_SECONDS;
        }
    }

    /// Counts `n` datagrams (handled or dropped) that arrived since the last count
    /// against the rate of `tick_hz` + `SPARE_DATAGRAMS_PER_SECOND` a second; returns
    /// true when the rate is exceeded, at most once a second while a flood lasts.
    ///
    /// The allowance grows at the rate over the time since the last count, up to what
    /// that time allows and never less than a second's worth: datagrams read together
    /// may have been sent any time since the last read, so a backlog that waited while
    /// the server stood still is what the client sent over that time, not a flood.
    pub fn count_datagrams(&mut self, n: usize, now: f64, tick_hz: u32) -> bool {
        let rate = f64::from(tick_hz.saturating_add(SPARE_DATAGRAMS_PER_SECOND));
        let elapsed = (now - self.counted_at).max(0.0);
        self.counted_at = now;
        self.allowance = (self.allowance + rate * elapsed).min(rate * elapsed.max(1.0));
        self.allowance -= n as f64;
        if self.allowance >= 0.0 {
            return false;
        }
        self.allowance = 0.0;
        if self.flood_struck_at.is_some_and(|at| now - at < 1.0) {
            return false;
        }
        self.flood_struck_at = Some(now);
        true
    }

    /// Whether no command has arrived for longer than `limit` seconds (0: never idle).
    pub fn idle(&self, now: f64, limit: f32) -> bool {
        limit > 0.0 && now - self.last_command_at > limit as f64
    }
}

/// What a frame's budget let through on one channel of one connection.
pub(crate) struct Budgeted {
    /// Messages to handle, in order.
    pub messages: Vec<sightline_net::Bytes>,
    /// Messages dropped unread for being over budget.
    pub dropped: usize,
}

/// Takes a connection's waiting messages on `channel`: up to `max_messages` and the
/// byte budget left in `bytes_left`; the rest are drained and dropped, so a flood costs
/// a counter per message and never the decoder's time.
pub(crate) fn take_budgeted(
    server: &mut RenetServer,
    client: ClientId,
    channel: Channel,
    max_messages: usize,
    bytes_left: &mut usize,
) -> Budgeted {
    let mut messages = Vec::new();
    let mut dropped = 0;
    while let Some(bytes) = server.receive_message(client, channel) {
        if messages.len() < max_messages && bytes.len() <= *bytes_left {
            *bytes_left -= bytes.len();
            messages.push(bytes);
        } else {
            dropped += 1;
        }
    }
    Budgeted { messages, dropped }
}

/// Drops everything a connection has sent on both channels (a refused or kicked
/// connection's traffic is not read).
pub(crate) fn discard_all(server: &mut RenetServer, client: ClientId) -> usize {
    let mut dropped = 0;
    for channel in [Channel::Reliable, Channel::Unreliable] {
        while server.receive_message(client, channel).is_some() {
            dropped += 1;
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strikes_add_up_to_a_kick_with_the_worst_offence_named() {
        let mut c = Conduct::new(0.0);
        for _ in 0..KICK_STRIKES - 11 {
            assert_eq!(c.strike(Offence::Malformed, 0.0), None);
        }
        assert_eq!(c.strike(Offence::Flood, 0.0), None);
        let kick = c.strike(Offence::Empty, 0.0).expect("kicked");
        assert_eq!(kick, "kicked for flooding");
    }

    #[test]
    fn strikes_are_forgiven_over_time() {
        let mut c = Conduct::new(0.0);
        for _ in 0..10 {
            c.strike(Offence::Malformed, 0.0);
        }
        assert_eq!(c.strikes(), 10);
        c.strike(Offence::Malformed, 10.0);
        assert_eq!(c.strikes(), 10 - 5 + 1);
        // A client with a glitch every few seconds is never kicked.
        let mut honest = Conduct::new(0.0);
        for i in 0..1000 {
            assert_eq!(honest.strike(Offence::Malformed, i as f64 * 3.0), None);
        }
    }

    #[test]
    fn flooding_strikes_once_a_second_while_it_lasts() {
        let mut c = Conduct::new(0.0);
        let allowed = 128 + SPARE_DATAGRAMS_PER_SECOND;
        let floods = (0..allowed * 3)
            .filter(|_| c.count_datagrams(1, 0.5, 128))
            .count();
        assert_eq!(floods, 1);
        assert!(
            !c.count_datagrams(1, 1.6, 128),
            "a new second starts afresh"
        );
        // An honest client at the tick rate never floods, even in bursts of 64.
        let mut honest = Conduct::new(0.0);
        for frame in 0..20 {
            assert!(!honest.count_datagrams(64, frame as f64 * 0.5, 128));
        }
    }

    #[test]
    fn a_backlog_the_server_s_own_stall_left_is_not_a_flood() {
        let mut c = Conduct::new(0.0);
        for frame in 1..=100 {
            assert!(!c.count_datagrams(1, frame as f64 / 128.0, 128));
        }
        // The server stood still 2.5 s; an input packet a tick and pings waited.
        let backlog = 128 * 5 / 2 + 5;
        let woke = 100.0 / 128.0 + 2.5;
        assert!(!c.count_datagrams(backlog, woke, 128));
        assert!(!c.count_datagrams(1, woke + 1.0 / 128.0, 128));
        // The same burst without the stall is one.
        assert!(c.count_datagrams(backlog, woke + 2.0 / 128.0, 128));
        // And the frame budget reads it all.
        let (messages, bytes) = frame_budget(2.5, 128);
        assert!(messages >= backlog && bytes >= FRAME_BYTES * 5);
        assert_eq!(frame_budget(0.008, 128), (FRAME_DATAGRAMS, FRAME_BYTES));
        assert_eq!(frame_reliable(0.008), FRAME_RELIABLE);
        assert_eq!(frame_reliable(2.5), 3 * FRAME_RELIABLE);
    }

    #[test]
    fn idle_means_no_command_for_longer_than_the_limit() {
        let mut c = Conduct::new(0.0);
        assert!(!c.idle(29.0, 30.0));
        assert!(c.idle(31.0, 30.0));
        assert!(!c.idle(1e9, 0.0), "0 never kicks");
        c.last_command_at = 30.5;
        assert!(!c.idle(31.0, 30.0));
    }
}
