//! Sightline's end-to-end tests, grouped by topic into modules of this crate so they build
//! into a single test binary. Most run the server and clients in one process on
//! `sightline_harness`'s [`Stepper`](sightline_harness::Stepper); `loopback`, `hostile`,
//! `floods`, `hosting`, `transport`, `faults` and `windowed` run the real binaries, as
//! does one test of `votes`. What several topics share (running the binaries, a server
//! for one test, an attacker, raw messages) is in `support`, apart from any topic.

#[cfg(test)]
mod agones;
#[cfg(test)]
mod bodies;
#[cfg(test)]
mod coding;
#[cfg(test)]
mod container;
#[cfg(test)]
mod demos;
#[cfg(test)]
mod events;
#[cfg(test)]
mod faults;
#[cfg(test)]
mod flags;
#[cfg(test)]
mod floods;
#[cfg(test)]
mod frames;
#[cfg(test)]
mod handshake;
#[cfg(test)]
mod hostile;
#[cfg(test)]
mod hosting;
#[cfg(test)]
mod inputs;
#[cfg(test)]
mod interest;
#[cfg(test)]
mod loopback;
#[cfg(test)]
mod maps;
#[cfg(test)]
mod matches;
#[cfg(test)]
mod netcode;
#[cfg(test)]
mod operating;
#[cfg(test)]
mod pickups;
#[cfg(test)]
mod rate;
#[cfg(test)]
mod session;
#[cfg(test)]
mod spectators;
#[cfg(test)]
mod support;
#[cfg(test)]
mod switching;
#[cfg(test)]
mod together;
#[cfg(test)]
mod transport;
#[cfg(test)]
mod votes;
#[cfg(test)]
mod windowed;
