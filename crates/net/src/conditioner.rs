//! A link conditioner: fake latency, jitter, loss, duplication and reordering applied to
//! packets in the transport, deterministic from a seed so tests replay exactly. With
//! [`ConditionerSettings::capacity_bps`] it is also a slow link: a bottleneck that sends
//! so many bytes a second, queueing what comes faster and dropping what would wait
//! longer than [`BOTTLENECK_QUEUE_MS`] (a router's buffer overflowing).
//!
//! Loss is independent per packet by default. With [`ConditionerSettings::loss_burst`]
//! above 1 it comes in bursts, as on real paths (a Wi-Fi retry storm, a congested queue
//! overflowing): a two-state Gilbert-Elliott chain, good and bad, each with its own loss
//! rate, whose transition probabilities are chosen so that the mean loss and the mean
//! length of a run of lost packets are the ones asked for. With
//! [`ConditionerSettings::outage_ms`] above 0 it comes as outages in time instead: the link
//! goes out for spells of about that long and loses everything sent meanwhile, so an
//! outage costs a client at 30 fps as much time as one at 240 fps (a burst counted in
//! packets costs the faster client less time, as real paths do not).

use sightline_sim::hash::{hash as mix, unit};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// How a link misbehaves, one way.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ConditionerSettings {
    /// Added one-way delay, milliseconds.
    pub latency_ms: f32,
    /// Each packet's delay varies uniformly by up to this much either way, milliseconds.
    /// Packets may then overtake each other, as on a real path.
    pub jitter_ms: f32,
    /// Share of packets dropped, percent (the long-run mean when losses are bursty).
    pub loss_pct: f32,
    /// Mean length of a run of consecutive lost packets. 0 or 1: every packet is lost
    /// independently; above 1: losses come in bursts (Gilbert-Elliott), as many in the
    /// long run but this many in a row on average.
    pub loss_burst: f32,
    /// Share of packets delivered twice, percent.
    pub duplicate_pct: f32,
    /// Share of packets held back an extra 20-40 ms, arriving after later ones, percent.
    pub reorder_pct: f32,
    /// Loss in time: above 0, the link goes out for spells of 0.6 to 1.4 times this long,
    /// milliseconds, and every packet sent during one is lost; `loss_pct` is then the
    /// share of time it is out, and `loss_burst` is not used.
    pub outage_ms: f32,
    /// Heavy-tailed delay: above 0, each packet is held a further Pareto-distributed time
    /// (shape 2) of this mean, milliseconds, at most [`MAX_TAIL_MS`]: most packets a
    /// little, a few much (a Wi-Fi retry, a queue filling). One in a hundred waits over
    /// nine times the mean, one in a thousand over thirty.
    pub jitter_tail_ms: f32,
    /// A slow link: above 0, the bytes a second the link carries (each packet with
    /// UDP/IP's [`UDP_IP_HEADER`]); a packet waits behind those sent before it, and one
    /// that would wait longer than [`BOTTLENECK_QUEUE_MS`] is dropped.
    pub capacity_bps: f32,
}

/// The longest a packet waits in a slow link's queue before the queue overflows and drops
/// it, milliseconds: a home router's buffer, as the bottleneck of a slow line.
pub const BOTTLENECK_QUEUE_MS: f64 = 100.0;

/// Bytes of IPv4 and UDP header around each datagram: what it costs a slow link, and the
/// transports' traffic counts, besides its payload.
pub const UDP_IP_HEADER: usize = 28;

/// A packet's size, which a slow link takes time to send.
pub trait WireSize {
    /// Payload bytes.
    fn wire_bytes(&self) -> usize;
}

impl WireSize for Vec<u8> {
    fn wire_bytes(&self) -> usize {
        self.len()
    }
}

impl<A> WireSize for (A, Vec<u8>) {
    fn wire_bytes(&self) -> usize {
        self.1.len()
    }
}

/// An outage lasts `outage_ms` times this at the shortest…
pub const OUTAGE_SHORTEST: f64 = 0.6;
/// …and up to this much longer (uniformly in between).
pub const OUTAGE_SPREAD: f64 = 0.8;

/// Longest a packet is held by [`ConditionerSettings::jitter_tail_ms`], milliseconds.
pub const MAX_TAIL_MS: f64 = 1000.0;

impl ConditionerSettings {
    /// The shortest and longest outage, milliseconds (see [`Self::outage_ms`]).
    pub fn outage_range_ms(&self) -> (f64, f64) {
        let mean = f64::from(self.outage_ms);
        (
            mean * OUTAGE_SHORTEST,
            mean * (OUTAGE_SHORTEST + OUTAGE_SPREAD),
        )
    }

    /// The loss in words, as the reports name it: "5 % loss in outages of 60-140 ms",
    /// "5 % loss in bursts of 3", "1 % loss", "no loss".
    pub fn describe_loss(&self) -> String {
        let (loss, burst) = (self.loss_pct, self.loss_burst);
        if loss == 0.0 {
            "no loss".into()
        } else if self.outage_ms > 0.0 {
            let (shortest, longest) = self.outage_range_ms();
            format!("{loss} % loss in outages of {shortest:.0}-{longest:.0} ms")
        } else if burst > 1.0 {
            format!("{loss} % loss in bursts of {burst}")
        } else {
            format!("{loss} % loss")
        }
    }

    /// The jitter in words: "jitter 20 ms", "jitter 20 ms and spikes (Pareto, mean 5 ms)".
    pub fn describe_jitter(&self) -> String {
        let mut text = format!("jitter {} ms", self.jitter_ms);
        if self.jitter_tail_ms > 0.0 {
            text += &format!(" and spikes (Pareto, mean {} ms)", self.jitter_tail_ms);
        }
        text
    }

    /// Whether these settings change anything.
    pub fn is_active(&self) -> bool {
        *self != Self::default()
    }

    /// Checks every value is finite and in range.
    pub fn validate(&self) -> Result<(), String> {
        let check = |name: &str, v: f32, max: f32| {
            if v.is_finite() && (0.0..=max).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} must be between 0 and {max}, got {v}"))
            }
        };
        check("latency", self.latency_ms, 5000.0)?;
        check("jitter", self.jitter_ms, 1000.0)?;
        check("loss", self.loss_pct, 100.0)?;
        check("loss burst length", self.loss_burst, 1000.0)?;
        check("duplication", self.duplicate_pct, 100.0)?;
        check("reordering", self.reorder_pct, 100.0)?;
        check("outage length", self.outage_ms, 10_000.0)?;
        check("jitter tail", self.jitter_tail_ms, 1000.0)?;
        check("capacity", self.capacity_bps, 1e9)
    }
}

/// Packets on their way through a conditioned link.
#[derive(Debug)]
pub struct LinkConditioner<P> {
    /// Current behaviour; may be changed at any time and applies to packets sent after.
    pub settings: ConditionerSettings,
    seed: u64,
    sent: u64,
    /// Whether the loss chain is in its bad state (bursty loss only).
    bad: bool,
    /// Outages in time: whether the link is out, when that changes next (`None` before
    /// the first packet), and how many changes there have been.
    out: bool,
    switch_at: Option<Duration>,
    switches: u64,
    /// When a slow link has sent everything queued so far.
    busy_until: Duration,
    /// Packets a slow link's full queue dropped.
    overflowed: u64,
    // Ordered by delivery time, then by send order so equal times keep their order.
    queue: BinaryHeap<Reverse<(Duration, u64, Wrapped<P>)>>,
}

/// Lets packets sit in the heap without needing an order of their own.
#[derive(Debug)]
struct Wrapped<P>(P);

impl<P> PartialEq for Wrapped<P> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<P> Eq for Wrapped<P> {}
impl<P> PartialOrd for Wrapped<P> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Wrapped<P> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<P: Clone + WireSize> LinkConditioner<P> {
    /// A conditioner whose choices follow from `seed`.
    pub fn new(settings: ConditionerSettings, seed: u64) -> Self {
        Self {
            settings,
            seed,
            sent: 0,
            bad: false,
            out: false,
            switch_at: None,
            switches: 0,
            busy_until: Duration::ZERO,
            overflowed: 0,
            queue: BinaryHeap::new(),
        }
    }

    /// Takes a packet sent at `now`; it comes out of [`Self::ready`] once its delay is over.
    pub fn send(&mut self, now: Duration, packet: P) {
        let n = self.sent;
        self.sent += 1;
        let s = self.settings;
        let lost = if s.outage_ms > 0.0 {
            self.out_at(now)
        } else {
            self.lose(n)
        };
        if lost {
            return;
        }
        let Some(sent) = self.through_bottleneck(now, &packet) else {
            self.overflowed += 1;
            return;
        };
        let copies = if unit(mix(self.seed, n, 2)) * 100.0 < s.duplicate_pct {
            2
        } else {
            1
        };
        for copy in 0..copies {
            let jitter = (unit(mix(self.seed, n, 3 + copy)) * 2.0 - 1.0) * s.jitter_ms;
            let mut delay_ms = (s.latency_ms + jitter).max(0.0);
            if unit(mix(self.seed, n, 5 + copy)) * 100.0 < s.reorder_pct {
                delay_ms += 20.0 + 20.0 * unit(mix(self.seed, n, 7 + copy));
            }
            if s.jitter_tail_ms > 0.0 {
                let u = f64::from(unit(mix(self.seed, n, 13 + copy)));
                delay_ms += pareto_extra(f64::from(s.jitter_tail_ms), u) as f32;
            }
            let at = sent + Duration::from_secs_f64(delay_ms as f64 / 1000.0);
            self.queue
                .push(Reverse((at, n * 2 + copy, Wrapped(packet.clone()))));
        }
    }

    /// When a slow link has finished sending `packet`, queued at `now` behind what it
    /// still has to send; `None` when the queue is too full to take it. Without a
    /// capacity, `now`.
    fn through_bottleneck(&mut self, now: Duration, packet: &P) -> Option<Duration> {
        let capacity = f64::from(self.settings.capacity_bps);
        if capacity <= 0.0 {
            return Some(now);
        }
        let start = self.busy_until.max(now);
        if (start - now).as_secs_f64() * 1000.0 > BOTTLENECK_QUEUE_MS {
            return None;
        }
        let bytes = (packet.wire_bytes() + UDP_IP_HEADER) as f64;
        self.busy_until = start + Duration::from_secs_f64(bytes / capacity);
        Some(self.busy_until)
    }

    /// Packets a slow link dropped because its queue was full.
    pub fn overflowed(&self) -> u64 {
        self.overflowed
    }

    /// Whether packet `n` is lost: an independent draw, or a step of the Gilbert-Elliott
    /// chain and a draw at its state's loss rate.
    fn lose(&mut self, n: u64) -> bool {
        let s = self.settings;
        let draw = unit(mix(self.seed, n, 1));
        if s.loss_burst <= 1.0 {
            return draw * 100.0 < s.loss_pct;
        }
        let chain = GilbertElliott::from_mean(s.loss_pct / 100.0, s.loss_burst);
        let step = unit(mix(self.seed, n, 9));
        self.bad = if self.bad {
            step >= chain.to_good
        } else {
            step < chain.to_bad
        };
        let loss = if self.bad {
            chain.loss_bad
        } else {
            chain.loss_good
        };
        draw < loss
    }

    /// Whether the link is out at `now`, living its spells up to then: outages of 0.6 to
    /// 1.4 times `outage_ms`, and between them spells up exponentially distributed with
    /// the mean that makes the outages `loss_pct` of the time.
    fn out_at(&mut self, now: Duration) -> bool {
        let s = self.settings;
        let share = f64::from(s.loss_pct / 100.0);
        if share <= 0.0 || share >= 1.0 {
            self.out = share >= 1.0;
            return self.out;
        }
        let mean_out = f64::from(s.outage_ms);
        let mean_up = mean_out * (1.0 - share) / share;
        let spell = |switches: u64, out: bool, seed: u64| {
            let u = f64::from(unit(mix(seed, switches, 11)));
            let ms = if out {
                mean_out * (OUTAGE_SHORTEST + OUTAGE_SPREAD * u)
            } else {
                -mean_up * (1.0 - u).max(1e-9).ln()
            };
            Duration::from_secs_f64(ms / 1000.0)
        };
        let mut at = match self.switch_at {
            Some(at) => at,
            None => now + spell(0, false, self.seed),
        };
        while now >= at {
            self.out = !self.out;
            self.switches += 1;
            at += spell(self.switches, self.out, self.seed);
        }
        self.switch_at = Some(at);
        self.out
    }

    /// Packets whose time has come by `now`, in delivery order.
    pub fn ready(&mut self, now: Duration) -> Vec<P> {
        let mut out = Vec::new();
        while let Some(Reverse((at, _, _))) = self.queue.peek() {
            if *at > now {
                break;
            }
            let Reverse((_, _, Wrapped(p))) = self.queue.pop().expect("peeked");
            out.push(p);
        }
        out
    }

    /// Packets still in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }
}

/// A Pareto (shape 2) extra delay of mean `mean_ms` for a uniform draw `u` in [0, 1):
/// `mean (1 / sqrt(1 - u) - 1)`, exceeding `k` means with chance `1 / (1 + k)^2`; at most
/// [`MAX_TAIL_MS`].
fn pareto_extra(mean_ms: f64, u: f64) -> f64 {
    (mean_ms * (1.0 / (1.0 - u).max(1e-12).sqrt() - 1.0)).min(MAX_TAIL_MS)
}

/// A two-state Gilbert-Elliott loss chain: each packet first moves the chain (good to bad
/// with probability `to_bad`, bad to good with `to_good`), then is lost with its state's
/// loss rate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct GilbertElliott {
    to_bad: f32,
    to_good: f32,
    loss_good: f32,
    loss_bad: f32,
}

impl GilbertElliott {
    /// The chain with mean loss `loss` (0..=1) in runs of `burst` packets on average:
    /// Gilbert's special case, nothing lost in the good state and everything in the bad,
    /// so a run of losses is a stay in the bad state. A stay lasts 1 / `to_good` packets on
    /// average, and the bad state's share of time, `to_bad / (to_bad + to_good)`, is the
    /// loss.
    fn from_mean(loss: f32, burst: f32) -> Self {
        let loss = loss.clamp(0.0, 1.0);
        let to_good = 1.0 / burst.max(1.0);
        let to_bad = if loss >= 1.0 {
            1.0
        } else {
            (to_good * loss / (1.0 - loss)).min(1.0)
        };
        Self {
            to_bad,
            to_good: if loss >= 1.0 { 0.0 } else { to_good },
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }

    /// Long-run share of packets lost.
    #[cfg(test)]
    fn mean_loss(&self) -> f32 {
        let bad = self.to_bad / (self.to_bad + self.to_good);
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn run(settings: ConditionerSettings, seed: u64, n: u32) -> Vec<(u32, Duration)> {
        let mut c = LinkConditioner::new(settings, seed);
        let mut out = vec![];
        for i in 0..n {
            c.send(ms(i as u64), i);
        }
        for t in 0..(n as u64 + 2000) {
            for p in c.ready(ms(t)) {
                out.push((p, ms(t)));
            }
        }
        out
    }

    impl WireSize for u32 {
        fn wire_bytes(&self) -> usize {
            4
        }
    }

    #[test]
    fn a_slow_link_queues_what_it_cannot_send_at_once_and_drops_what_overflows() {
        let s = ConditionerSettings {
            capacity_bps: 10_000.0,
            ..Default::default()
        };
        // 100 bytes on the link each, headers included: 10 ms.
        let packet = vec![0u8; 100 - UDP_IP_HEADER];
        // Half the capacity: everything arrives, each after its 10 ms on the line.
        let mut c = LinkConditioner::new(s, 1);
        for i in 0..100u64 {
            c.send(ms(i * 20), packet.clone());
            assert!(c.ready(ms(i * 20 + 9)).is_empty());
            assert_eq!(c.ready(ms(i * 20 + 10)).len(), 1);
        }
        assert_eq!(c.overflowed(), 0);
        // Twice the capacity for two seconds: the queue fills to its 100 ms and then drops
        // what would wait longer, so the link carries its capacity and half is lost.
        let mut c = LinkConditioner::new(s, 1);
        let (mut arrived, mut longest) = (0, Duration::ZERO);
        let mut sent_at = std::collections::VecDeque::new();
        for t in 0..2000u64 {
            if t % 5 == 0 {
                let before = c.overflowed();
                c.send(ms(t), packet.clone());
                if c.overflowed() == before {
                    sent_at.push_back(ms(t));
                }
            }
            for _ in c.ready(ms(t)) {
                arrived += 1;
                longest = longest.max(ms(t) - sent_at.pop_front().expect("sent"));
            }
        }
        assert!((195..=200).contains(&arrived), "{arrived} arrived");
        // The 400 sent, less the 200 carried and the ten that filled the queue first.
        assert!(
            (185..=195).contains(&c.overflowed()),
            "{} dropped",
            c.overflowed()
        );
        assert!(longest <= ms(111), "waited {longest:?}");
        assert!(longest >= ms(100), "the queue never filled: {longest:?}");
    }

    #[test]
    fn a_clean_link_delivers_everything_in_order_at_once() {
        let out = run(ConditionerSettings::default(), 1, 100);
        assert_eq!(out.len(), 100);
        assert!(
            out.iter()
                .enumerate()
                .all(|(i, (p, t))| *p == i as u32 && *t == ms(i as u64))
        );
    }

    #[test]
    fn latency_delays_every_packet() {
        let s = ConditionerSettings {
            latency_ms: 75.0,
            ..Default::default()
        };
        for (p, t) in run(s, 1, 50) {
            assert_eq!(t, ms(p as u64 + 75));
        }
    }

    #[test]
    fn jitter_spreads_delays_within_bounds_and_reorders() {
        let s = ConditionerSettings {
            latency_ms: 50.0,
            jitter_ms: 20.0,
            ..Default::default()
        };
        let out = run(s, 7, 1000);
        assert_eq!(out.len(), 1000);
        let delays: Vec<i64> = out
            .iter()
            .map(|(p, t)| t.as_millis() as i64 - *p as i64)
            .collect();
        assert!(delays.iter().all(|d| (30..=71).contains(d)), "{delays:?}");
        let spread = delays.iter().max().unwrap() - delays.iter().min().unwrap();
        assert!(spread >= 35, "jitter barely varied the delay: {spread}");
        assert!(
            out.windows(2).any(|w| w[1].0 < w[0].0),
            "nothing was reordered"
        );
    }

    #[test]
    fn loss_and_duplication_happen_at_about_their_rates() {
        let s = ConditionerSettings {
            loss_pct: 20.0,
            duplicate_pct: 10.0,
            ..Default::default()
        };
        let out = run(s, 3, 10_000);
        let mut counts = vec![0u32; 10_000];
        for (p, _) in &out {
            counts[*p as usize] += 1;
        }
        let lost = counts.iter().filter(|&&c| c == 0).count();
        let doubled = counts.iter().filter(|&&c| c == 2).count();
        assert!((1800..2200).contains(&lost), "lost {lost}");
        assert!((650..950).contains(&doubled), "doubled {doubled}");
    }

    #[test]
    fn the_same_seed_gives_the_same_behaviour() {
        let s = ConditionerSettings {
            latency_ms: 30.0,
            jitter_ms: 10.0,
            loss_pct: 5.0,
            duplicate_pct: 2.0,
            reorder_pct: 2.0,
            loss_burst: 0.0,
            outage_ms: 0.0,
            jitter_tail_ms: 0.0,
            capacity_bps: 0.0,
        };
        assert_eq!(run(s, 11, 500), run(s, 11, 500));
        let bursty = ConditionerSettings {
            loss_burst: 3.0,
            ..s
        };
        assert_eq!(run(bursty, 11, 500), run(bursty, 11, 500));
        assert_ne!(run(s, 11, 500), run(s, 12, 500));
    }

    #[test]
    fn a_jitter_tail_delays_most_packets_little_and_a_few_much() {
        let s = ConditionerSettings {
            latency_ms: 50.0,
            jitter_tail_ms: 5.0,
            ..Default::default()
        };
        let out = run(s, 9, 20_000);
        assert_eq!(out.len(), 20_000, "nothing lost");
        let mut extra: Vec<f64> = out
            .iter()
            .map(|(p, t)| t.as_secs_f64() * 1000.0 - f64::from(*p) - 50.0)
            .collect();
        extra.sort_by(f64::total_cmp);
        let at = |q: f64| extra[((extra.len() - 1) as f64 * q) as usize];
        let mean = extra.iter().sum::<f64>() / extra.len() as f64;
        // Shape 2 of mean 5 ms: the median about 2 ms, the 99th percentile 45 ms.
        assert!((3.5..6.5).contains(&mean), "mean {mean}");
        assert!((1.0..3.5).contains(&at(0.5)), "median {}", at(0.5));
        assert!((30.0..65.0).contains(&at(0.99)), "p99 {}", at(0.99));
        assert!(at(1.0) <= MAX_TAIL_MS + 1.0);
        assert!(out.windows(2).any(|w| w[1].0 < w[0].0), "spikes reorder");
    }

    #[test]
    fn outages_take_time_not_packets() {
        let s = ConditionerSettings {
            loss_pct: 5.0,
            outage_ms: 100.0,
            ..Default::default()
        };
        // The same minute at 30 and at 240 packets a second: about 5 % lost either way,
        // in outages of 60-140 ms, so runs of 2-4 packets at 30 and 15-33 at 240.
        for (rate, runs) in [(30.0, 2.0..4.5), (240.0, 14.0..34.0)] {
            let mut c = LinkConditioner::new(s, 5);
            let n = (rate * 600.0) as u32;
            let (mut lost, mut run, mut longest, mut count) = (0, 0, 0, 0);
            for i in 0..n {
                let now = Duration::from_secs_f64(f64::from(i) / rate);
                c.send(now, i);
                if c.ready(now).is_empty() {
                    lost += 1;
                    run += 1;
                    count += u32::from(run == 1);
                    longest = longest.max(run);
                } else {
                    run = 0;
                }
            }
            let share = f64::from(lost) / f64::from(n);
            let mean_run = f64::from(lost) / f64::from(count.max(1));
            assert!((0.035..0.065).contains(&share), "{rate}/s: lost {share}");
            assert!(runs.contains(&mean_run), "{rate}/s: runs of {mean_run}");
            assert!(
                f64::from(longest) <= (0.14 * rate).ceil() + 1.0,
                "{rate}/s: a run of {longest}"
            );
        }
        // A link out all the time loses everything.
        let dark = ConditionerSettings {
            loss_pct: 100.0,
            ..s
        };
        assert!(run(dark, 1, 100).is_empty());
    }

    /// (share lost, mean run of consecutive losses) over `n` packets.
    fn loss_runs(settings: ConditionerSettings, seed: u64, n: u32) -> (f64, f64) {
        let mut c = LinkConditioner::new(settings, seed);
        let (mut lost, mut runs, mut in_run) = (0u32, 0u32, false);
        for i in 0..n {
            c.send(ms(0), i);
            let gone = c.ready(ms(0)).is_empty();
            lost += u32::from(gone);
            runs += u32::from(gone && !in_run);
            in_run = gone;
        }
        (lost as f64 / n as f64, lost as f64 / runs.max(1) as f64)
    }

    #[test]
    fn bursty_loss_has_the_mean_loss_and_burst_length_asked_for() {
        for (loss_pct, burst) in [(5.0, 3.0), (20.0, 2.0), (1.0, 8.0)] {
            let s = ConditionerSettings {
                loss_pct,
                loss_burst: burst,
                ..Default::default()
            };
            let chain = GilbertElliott::from_mean(loss_pct / 100.0, burst);
            assert!((chain.mean_loss() - loss_pct / 100.0).abs() < 1e-6);
            let (lost, run) = loss_runs(s, 5, 400_000);
            let want = loss_pct as f64 / 100.0;
            assert!(
                (lost - want).abs() < want * 0.1,
                "{loss_pct} %: lost {lost}"
            );
            assert!(
                (run - burst as f64).abs() < burst as f64 * 0.1,
                "{burst}: runs of {run}"
            );
        }
        // Independent loss at the same rate has runs of 1 / (1 - loss).
        let s = ConditionerSettings {
            loss_pct: 5.0,
            ..Default::default()
        };
        let (lost, run) = loss_runs(s, 5, 400_000);
        assert!((lost - 0.05).abs() < 0.005, "{lost}");
        assert!((run - 1.0 / 0.95).abs() < 0.02, "{run}");
    }

    #[test]
    fn a_link_lost_entirely_stays_lost_with_bursts_too() {
        let s = ConditionerSettings {
            loss_pct: 100.0,
            loss_burst: 4.0,
            ..Default::default()
        };
        assert_eq!(loss_runs(s, 1, 1000).0, 1.0);
    }

    #[test]
    fn settings_are_validated() {
        assert!(ConditionerSettings::default().validate().is_ok());
        let bad = ConditionerSettings {
            loss_pct: 150.0,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("loss"));
        let nan = ConditionerSettings {
            latency_ms: f32::NAN,
            ..Default::default()
        };
        assert!(nan.validate().is_err());
    }
}
