//! What a demo keeps of the world: each player's whole state ([`PlayerRecord`]), the
//! rest a tick reads ([`Keyframe`]: items, projectiles, drops, flags, the match, the
//! lag-compensation history), and checksums of them ([`Sums`]) that name the field that
//! differs. Taken from a server's world and put back into a replay's.

use crate::catch_up::CatchUp;
use crate::rules::MatchState;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use sightline_combat::{
    Ammo, Arsenal, DroppedWeapon, FlagAt, Flags, Hitbox, HitboxHistory, ItemSpot, NextDropId,
    NextRocketId, ProjectileKind, Pushes, Rocket, Score, SpawnCount, Team, ViewWindow, Vitals,
    WeaponKind,
};
use sightline_movement::{Contacts, MoveFlags, PlayerState, Solid};
use sightline_protocol::{MAX_NAME_LEN, clean_text};
use sightline_sim::hash::hash;
use sightline_sim::{BotControlled, Player, PlayerId, PlayerName, Tick};

/// Largest coordinate or speed a demo may hold: far past any map, short of overflow.
const MAX_MAGNITUDE: f32 = 1.0e6;

/// A player's whole state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "PlayerWire", try_from = "PlayerWire")]
pub struct PlayerRecord {
    /// Its id.
    pub id: PlayerId,
    /// Its name.
    pub name: String,
    /// Whether a bot played it.
    pub bot: bool,
    /// Its side, in team games.
    pub team: Option<Team>,
    /// Where and how it moves.
    pub state: PlayerState,
    /// Health, armour, timers.
    pub vitals: Vitals,
    /// Weapons.
    pub arsenal: Arsenal,
    /// Frags and deaths.
    pub score: Score,
    /// Placements.
    pub spawns: SpawnCount,
    /// Explosions that pushed it.
    pub pushes: Pushes,
    /// Bodies it met.
    pub contacts: Contacts,
    /// Whether it blocks others.
    pub solid: Solid,
}

/// [`PlayerRecord`] in plain numbers, as a demo holds it.
#[derive(Serialize, Deserialize)]
struct PlayerWire {
    id: PlayerId,
    name: String,
    bot: bool,
    team: Option<Team>,
    pos: [f32; 3],
    vel: [f32; 3],
    view: [f32; 2],
    flags: u8,
    /// Health, armour, protection, respawn, quad, regeneration.
    vitals: [f32; 6],
    weapon: WeaponKind,
    /// Switching, cooldown, reloading, charge.
    timers: [f32; 4],
    ammo: [(u16, u16); WeaponKind::ALL.len()],
    owned: u8,
    alt_held: bool,
    frags: i32,
    deaths: u32,
    captures: u32,
    spawns: u8,
    pushes: [u8; 2],
    contacts: (u8, Option<PlayerId>),
    solid: bool,
}

impl From<PlayerRecord> for PlayerWire {
    fn from(p: PlayerRecord) -> Self {
        let (s, v, a) = (p.state, p.vitals, p.arsenal);
        Self {
            id: p.id,
            name: p.name,
            bot: p.bot,
            team: p.team,
            pos: s.pos.to_array(),
            vel: s.vel.to_array(),
            view: [s.yaw, s.pitch],
            flags: s.flags.0,
            vitals: [
                v.health,
                v.armor,
                v.protection,
                v.respawn_in,
                v.quad,
                v.regen,
            ],
            weapon: a.current,
            timers: [a.switching, a.cooldown, a.reloading, a.charge],
            ammo: a.ammo.map(|x| (x.magazine, x.reserve)),
            owned: a.owned,
            alt_held: a.alt_held,
            frags: p.score.frags,
            deaths: p.score.deaths,
            captures: p.score.captures,
            spawns: p.spawns.0,
            pushes: [p.pushes.own, p.pushes.others],
            contacts: (p.contacts.count, p.contacts.last),
            solid: p.solid.0,
        }
    }
}

impl TryFrom<PlayerWire> for PlayerRecord {
    type Error = String;

    fn try_from(w: PlayerWire) -> Result<Self, String> {
        let numbers = w.pos.iter().chain(&w.vel).chain(&w.view);
        let numbers = numbers.chain(&w.vitals).chain(&w.timers);
        if !numbers
            .clone()
            .all(|n| n.is_finite() && n.abs() < MAX_MAGNITUDE)
        {
            return Err(format!("player {}: a number out of range", w.id.0));
        }
        if w.flags & !MoveFlags::ALL != 0 {
            return Err(format!("player {}: unknown movement flags", w.id.0));
        }
        if clean_text(&w.name, MAX_NAME_LEN) != w.name || w.name.is_empty() {
            return Err(format!("player {}: a name the game never gives", w.id.0));
        }
        let [health, armor, protection, respawn_in, quad, regen] = w.vitals;
        let [switching, cooldown, reloading, charge] = w.timers;
        Ok(Self {
            id: w.id,
            name: w.name,
            bot: w.bot,
            team: w.team,
            state: PlayerState {
                pos: Vec3::from_array(w.pos),
                vel: Vec3::from_array(w.vel),
                yaw: w.view[0],
                pitch: w.view[1],
                flags: MoveFlags(w.flags),
            },
            vitals: Vitals {
                health,
                armor,
                protection,
                respawn_in,
                quad,
                regen,
            },
            arsenal: Arsenal {
                current: w.weapon,
                switching,
                cooldown,
                reloading,
                ammo: w.ammo.map(|(magazine, reserve)| Ammo { magazine, reserve }),
                owned: w.owned,
                charge,
                alt_held: w.alt_held,
            },
            score: Score {
                frags: w.frags,
                deaths: w.deaths,
                captures: w.captures,
            },
            spawns: SpawnCount(w.spawns),
            pushes: Pushes {
                own: w.pushes[0],
                others: w.pushes[1],
            },
            contacts: Contacts {
                count: w.contacts.0,
                last: w.contacts.1,
            },
            solid: Solid(w.solid),
        })
    }
}

/// Bits of an f32, as a word for a checksum.
fn word(v: f32) -> u64 {
    u64::from(v.to_bits())
}

/// A well-mixed digest of words.
fn digest(words: impl IntoIterator<Item = u64>) -> u64 {
    words
        .into_iter()
        .enumerate()
        .fold(0x5347_444d, |h, (i, w)| hash(h, w, i as u64))
}

/// The names of a player's fields, in the order of [`PlayerRecord::fields`].
pub const PLAYER_FIELDS: [&str; 21] = [
    "position",
    "velocity",
    "view angles",
    "movement flags",
    "health",
    "armour",
    "spawn protection",
    "respawn timer",
    "power-ups",
    "weapon in hand",
    "weapon timers",
    "ammunition",
    "weapons owned",
    "frags",
    "deaths",
    "captures",
    "spawn count",
    "pushes",
    "contacts",
    "solidity",
    "team and name",
];

impl PlayerRecord {
    /// A digest of each field, in the order of [`PLAYER_FIELDS`].
    pub fn fields(&self) -> [u64; PLAYER_FIELDS.len()] {
        let (s, v, a) = (&self.state, &self.vitals, &self.arsenal);
        let v3 = |v: Vec3| digest(v.to_array().map(word));
        [
            v3(s.pos),
            v3(s.vel),
            digest([word(s.yaw), word(s.pitch)]),
            u64::from(s.flags.0),
            word(v.health),
            word(v.armor),
            word(v.protection),
            word(v.respawn_in),
            digest([word(v.quad), word(v.regen)]),
            a.current.index() as u64,
            digest([a.switching, a.cooldown, a.reloading, a.charge].map(word)),
            digest(
                a.ammo
                    .iter()
                    .map(|x| u64::from(x.magazine) << 16 | u64::from(x.reserve)),
            ),
            u64::from(a.owned) << 1 | u64::from(a.alt_held),
            self.score.frags as u32 as u64,
            u64::from(self.score.deaths),
            u64::from(self.score.captures),
            u64::from(self.spawns.0),
            u64::from(self.pushes.own) << 8 | u64::from(self.pushes.others),
            u64::from(self.contacts.count) << 9
                | self.contacts.last.map_or(0, |p| 256 | u64::from(p.0)),
            u64::from(self.solid.0),
            digest(
                std::iter::once(self.team.map_or(0, |t| t as u64 + 1))
                    .chain(self.name.bytes().map(u64::from)),
            ),
        ]
    }
}

/// A projectile in flight, in plain numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RocketRecord {
    id: u16,
    kind: ProjectileKind,
    owner: PlayerId,
    pos: [f32; 3],
    vel: [f32; 3],
    age: f32,
    detonate: bool,
}

impl RocketRecord {
    fn of(r: &Rocket) -> Self {
        Self {
            id: r.id,
            kind: r.kind,
            owner: r.owner,
            pos: r.pos.to_array(),
            vel: r.vel.to_array(),
            age: r.age,
            detonate: r.detonate,
        }
    }

    fn rocket(&self) -> Rocket {
        Rocket {
            id: self.id,
            kind: self.kind,
            owner: self.owner,
            pos: Vec3::from_array(self.pos),
            vel: Vec3::from_array(self.vel),
            age: self.age,
            detonate: self.detonate,
        }
    }

    fn numbers(&self) -> impl Iterator<Item = f32> + '_ {
        self.pos.iter().chain(&self.vel).copied().chain([self.age])
    }
}

/// A dropped weapon, in plain numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DropRecord {
    id: u16,
    weapon: WeaponKind,
    pos: [f32; 3],
    left: f32,
}

/// Where a flag is, as [`FlagAt`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum FlagRecord {
    /// On its base.
    Home,
    /// Carried.
    Carried(PlayerId),
    /// Lying at a place for some seconds more.
    Dropped([f32; 3], f32),
}

impl FlagRecord {
    fn of(at: FlagAt) -> Self {
        match at {
            FlagAt::Home => Self::Home,
            FlagAt::Carried(id) => Self::Carried(id),
            FlagAt::Dropped { pos, left } => Self::Dropped(pos.to_array(), left),
        }
    }

    fn flag(self) -> FlagAt {
        match self {
            Self::Home => FlagAt::Home,
            Self::Carried(id) => FlagAt::Carried(id),
            Self::Dropped(pos, left) => FlagAt::Dropped {
                pos: Vec3::from_array(pos),
                left,
            },
        }
    }

    fn numbers(self) -> Vec<f32> {
        match self {
            Self::Dropped(pos, left) => vec![pos[0], pos[1], pos[2], left],
            _ => Vec::new(),
        }
    }

    fn digest(self) -> u64 {
        match self {
            Self::Home => 0,
            Self::Carried(id) => 1 << 8 | u64::from(id.0),
            Self::Dropped(pos, left) => digest([2, word(left)].into_iter().chain(pos.map(word))),
        }
    }
}

/// Where the match stands, as [`MatchState`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchRecord {
    elapsed: f32,
    intermission: Option<(f32, String)>,
    rotation_index: u32,
    finished: u32,
    overtime: bool,
    warmup: Option<f32>,
    countdown: Option<f32>,
}

/// Everything a tick reads, before the tick's moves: where a replay starts, and what it
/// is compared with every ten seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keyframe {
    /// The tick about to run.
    pub tick: u32,
    /// Every player, by id.
    pub players: Vec<PlayerRecord>,
    /// Each item spot's seconds until its item is back, by index.
    pub items: Vec<(u8, f32)>,
    /// Projectiles in flight, by number.
    pub projectiles: Vec<RocketRecord>,
    /// Weapons lying about, by number.
    pub drops: Vec<DropRecord>,
    /// The red and the blue flag (both home when capture the flag is not played).
    pub flags: [FlagRecord; 2],
    /// The match.
    pub match_state: MatchRecord,
    /// The next projectile's and drop's numbers.
    pub next_ids: (u16, u16),
    /// The lag-compensation history: each tick's hitboxes (feet, crouched).
    pub hitboxes: Vec<(u32, Vec<(PlayerId, [f32; 3], bool)>)>,
}

impl Keyframe {
    /// A keyframe of `players` in an empty world: nothing in flight or dropped, every
    /// item in place, a match just begun, no history (for tests and fuzzing seeds).
    pub fn of_players(tick: u32, players: Vec<PlayerRecord>) -> Self {
        Self {
            tick,
            players,
            items: Vec::new(),
            projectiles: Vec::new(),
            drops: Vec::new(),
            flags: [FlagRecord::Home; 2],
            match_state: MatchRecord {
                elapsed: 0.0,
                intermission: None,
                rotation_index: 0,
                finished: 0,
                overtime: false,
                warmup: None,
                countdown: None,
            },
            next_ids: (0, 0),
            hitboxes: Vec::new(),
        }
    }

    /// Refuses a keyframe holding what the game never makes (the players were checked
    /// as they were read).
    pub fn check(&self) -> Result<(), String> {
        let drops = self
            .drops
            .iter()
            .flat_map(|d| d.pos.into_iter().chain([d.left]));
        let boxes = self.hitboxes.iter().flat_map(|(_, b)| b.iter());
        let numbers = self
            .projectiles
            .iter()
            .flat_map(RocketRecord::numbers)
            .chain(drops)
            .chain(self.flags.iter().flat_map(|f| f.numbers()))
            .chain(self.items.iter().map(|i| i.1))
            .chain(boxes.flat_map(|b| b.1))
            .chain([self.match_state.elapsed])
            .chain(self.match_state.intermission.iter().map(|i| i.0));
        for n in numbers {
            if !(n.is_finite() && n.abs() < MAX_MAGNITUDE) {
                return Err("a keyframe holds a number out of range".into());
            }
        }
        Ok(())
    }
}

/// Every player's record, by id.
pub fn players(world: &mut World) -> Vec<PlayerRecord> {
    let mut query = world.query_filtered::<(
        &PlayerId,
        &PlayerName,
        Has<BotControlled>,
        Has<Recorded>,
        Option<&Team>,
        (&PlayerState, &Vitals, &Arsenal, &Score),
        (&SpawnCount, &Pushes, &Contacts, &Solid),
    ), With<Player>>();
    let mut out: Vec<PlayerRecord> = query
        .iter(world)
        .map(
            |(id, name, bot, recorded, team, (state, vitals, arsenal, score), counts)| {
                PlayerRecord {
                    id: *id,
                    name: name.0.clone(),
                    bot: bot || recorded,
                    team: team.copied(),
                    state: *state,
                    vitals: *vitals,
                    arsenal: *arsenal,
                    score: *score,
                    spawns: *counts.0,
                    pushes: *counts.1,
                    contacts: *counts.2,
                    solid: *counts.3,
                }
            },
        )
        .collect();
    out.sort_by_key(|p| p.id);
    out
}

/// Marks a bot a replay plays from its recorded commands: it is no [`BotControlled`]
/// (nothing decides for it), but a bot still, judged without a view window.
#[derive(Component, Debug, Clone, Copy)]
pub struct Recorded;

/// The whole state before this tick's moves.
pub fn keyframe(world: &mut World) -> Keyframe {
    let players = players(world);
    let mut items: Vec<(u8, f32)> = world
        .query::<&ItemSpot>()
        .iter(world)
        .map(|s| (s.index, s.respawn_in))
        .collect();
    items.sort_by_key(|i| i.0);
    let mut projectiles: Vec<RocketRecord> = world
        .query::<&Rocket>()
        .iter(world)
        .map(RocketRecord::of)
        .collect();
    projectiles.sort_by_key(|r| r.id);
    let mut drops: Vec<DropRecord> = world
        .query::<&DroppedWeapon>()
        .iter(world)
        .map(|d| DropRecord {
            id: d.id,
            weapon: d.weapon,
            pos: d.pos.to_array(),
            left: d.left,
        })
        .collect();
    drops.sort_by_key(|d| d.id);
    let flags = world.resource::<Flags>().at.map(FlagRecord::of);
    let m = world.resource::<MatchState>();
    let match_state = MatchRecord {
        elapsed: m.elapsed,
        intermission: m.intermission.clone(),
        rotation_index: m.rotation_index as u32,
        finished: m.finished,
        overtime: m.overtime,
        warmup: m.warmup,
        countdown: m.countdown,
    };
    let hitboxes = world
        .resource::<HitboxHistory>()
        .ticks()
        .map(|(t, boxes)| {
            let boxes = boxes
                .iter()
                .map(|(id, b)| (*id, b.feet.to_array(), b.crouched))
                .collect();
            (t, boxes)
        })
        .collect();
    Keyframe {
        tick: world.resource::<Tick>().0,
        players,
        items,
        projectiles,
        drops,
        flags,
        match_state,
        next_ids: (
            world.resource::<NextRocketId>().0,
            world.resource::<NextDropId>().0,
        ),
        hitboxes,
    }
}

/// Makes a replay's world what `k` says: its players, items, projectiles, drops, match
/// and history.
pub fn restore(world: &mut World, k: &Keyframe) {
    let gone: Vec<Entity> = world
        .query_filtered::<Entity, Or<(With<Player>, With<Rocket>, With<DroppedWeapon>)>>()
        .iter(world)
        .collect();
    for e in gone {
        world.despawn(e);
    }
    for p in &k.players {
        put_player(world, p);
    }
    let mut spots = world.query::<&mut ItemSpot>();
    for mut spot in spots.iter_mut(world) {
        if let Some((_, left)) = k.items.iter().find(|(i, _)| *i == spot.index) {
            spot.respawn_in = *left;
        }
    }
    for r in &k.projectiles {
        world.spawn(r.rocket());
    }
    for d in &k.drops {
        world.spawn(DroppedWeapon {
            id: d.id,
            weapon: d.weapon,
            pos: Vec3::from_array(d.pos),
            left: d.left,
        });
    }
    world.resource_mut::<Flags>().at = k.flags.map(FlagRecord::flag);
    let m = &k.match_state;
    *world.resource_mut::<MatchState>() = MatchState {
        elapsed: m.elapsed,
        intermission: m.intermission.clone(),
        rotation_index: m.rotation_index as usize,
        finished: m.finished,
        overtime: m.overtime,
        warmup: m.warmup,
        countdown: m.countdown,
    };
    world.resource_mut::<NextRocketId>().0 = k.next_ids.0;
    world.resource_mut::<NextDropId>().0 = k.next_ids.1;
    let mut history = world.resource_mut::<HitboxHistory>();
    history.clear();
    for (t, boxes) in &k.hitboxes {
        let boxes = boxes
            .iter()
            .map(|(id, feet, crouched)| {
                let hitbox = Hitbox {
                    feet: Vec3::from_array(*feet),
                    crouched: *crouched,
                };
                (*id, hitbox)
            })
            .collect();
        history.record(*t, boxes);
    }
    world.resource_mut::<Tick>().0 = k.tick;
}

/// Puts a player into a replay's world as `p` says: a new one, or the one of its id
/// changed.
pub fn put_player(world: &mut World, p: &PlayerRecord) {
    let mut entity = match entity_of(world, p.id) {
        Some(e) => world.entity_mut(e),
        None => world.spawn((Player, p.id)),
    };
    // A second command, when the demo gives one, is set on it each tick.
    entity.insert((
        PlayerName(p.name.clone()),
        (p.state, p.vitals, p.arsenal, p.score),
        (p.spawns, p.pushes, p.contacts, p.solid),
        CatchUp::default(),
    ));
    match p.team {
        Some(team) => entity.insert(team),
        None => entity.remove::<Team>(),
    };
    // A bot shoots without a view window; a person's is set from the demo each tick.
    if p.bot {
        entity.insert(Recorded).remove::<ViewWindow>();
    } else {
        entity.remove::<Recorded>().insert(ViewWindow::CLOSED);
    }
}

/// Takes a player out of a replay's world.
pub fn remove_player(world: &mut World, id: PlayerId) {
    if let Some(e) = entity_of(world, id) {
        world.despawn(e);
    }
}

/// The entity of player `id`, if there is one.
fn entity_of(world: &mut World, id: PlayerId) -> Option<Entity> {
    world
        .query::<(Entity, &PlayerId)>()
        .iter(world)
        .find(|(_, p)| **p == id)
        .map(|(e, _)| e)
}

/// The names of the world's parts, in the order of [`Sums::world`].
pub const WORLD_PARTS: [&str; 6] = [
    "items",
    "projectiles",
    "dropped weapons",
    "flags",
    "match state",
    "lag-compensation history",
];

/// Checksums of the state before a tick's moves: per player, one of everything and a
/// byte per field (to name the field that differs); the same for the rest of the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sums {
    /// (id, checksum of all, a byte per field of [`PLAYER_FIELDS`]), by id.
    pub players: Vec<(PlayerId, u32, [u8; PLAYER_FIELDS.len()])>,
    /// (checksum of all, a byte per part of [`WORLD_PARTS`]).
    pub world: (u32, [u8; WORLD_PARTS.len()]),
}

impl Sums {
    /// The sums of a keyframe's state.
    pub fn of(k: &Keyframe) -> Self {
        let players = k
            .players
            .iter()
            .map(|p| {
                let fields = p.fields();
                (p.id, digest(fields) as u32, fields.map(|f| f as u8))
            })
            .collect();
        let m = &k.match_state;
        let parts = [
            digest(k.items.iter().map(|(i, l)| u64::from(*i) << 32 | word(*l))),
            digest(k.projectiles.iter().flat_map(|r| {
                let head = u64::from(r.id) << 24
                    | (r.kind as u64) << 16
                    | u64::from(r.owner.0) << 1
                    | u64::from(r.detonate);
                std::iter::once(head).chain(r.numbers().map(word))
            })),
            digest(k.drops.iter().flat_map(|d| {
                let head = u64::from(d.id) << 8 | d.weapon.index() as u64;
                std::iter::once(head).chain(d.pos.into_iter().chain([d.left]).map(word))
            })),
            digest(k.flags.map(FlagRecord::digest)),
            digest(
                [
                    word(m.elapsed),
                    u64::from(m.rotation_index),
                    u64::from(m.finished),
                    u64::from(k.next_ids.0) << 16 | u64::from(k.next_ids.1),
                ]
                .into_iter()
                .chain(m.intermission.iter().flat_map(|(left, winner)| {
                    std::iter::once(word(*left)).chain(winner.bytes().map(u64::from))
                })),
            ),
            digest(k.hitboxes.iter().flat_map(|(t, boxes)| {
                std::iter::once(u64::from(*t)).chain(boxes.iter().flat_map(|(id, feet, c)| {
                    std::iter::once(u64::from(id.0) << 1 | u64::from(*c)).chain(feet.map(word))
                }))
            })),
        ];
        Self {
            players,
            world: (digest(parts) as u32, parts.map(|p| p as u8)),
        }
    }

    /// What differs between the recorded sums and a replay's, in words; `None` when
    /// nothing does.
    pub fn difference(&self, replayed: &Sums) -> Option<String> {
        for (id, all, fields) in &self.players {
            let Some((_, their_all, theirs)) = replayed.players.iter().find(|p| p.0 == *id) else {
                return Some(format!("player {} is missing from the replay", id.0));
            };
            if all != their_all {
                return Some(format!(
                    "player {}: {}",
                    id.0,
                    named(fields, theirs, &PLAYER_FIELDS)
                ));
            }
        }
        if let Some((id, ..)) = replayed
            .players
            .iter()
            .find(|p| !self.players.iter().any(|q| q.0 == p.0))
        {
            return Some(format!("player {} is in the replay only", id.0));
        }
        (self.world.0 != replayed.world.0)
            .then(|| named(&self.world.1, &replayed.world.1, &WORLD_PARTS))
    }
}

/// The names of the fields whose bytes differ ("a field" when their bytes collide).
fn named(ours: &[u8], theirs: &[u8], names: &[&str]) -> String {
    let differ: Vec<&str> = names
        .iter()
        .zip(ours.iter().zip(theirs))
        .filter(|(_, (a, b))| a != b)
        .map(|(n, _)| *n)
        .collect();
    if differ.is_empty() {
        "a field (its check byte matches by chance)".into()
    } else {
        differ.join(", ")
    }
}

/// What differs between a recorded keyframe and a replay's, field by field; `None` when
/// nothing does.
pub fn keyframe_difference(recorded: &Keyframe, replayed: &Keyframe) -> Option<String> {
    for p in &recorded.players {
        let Some(q) = replayed.players.iter().find(|q| q.id == p.id) else {
            return Some(format!("player {} is missing from the replay", p.id.0));
        };
        let differ: Vec<&str> = PLAYER_FIELDS
            .iter()
            .zip(p.fields().iter().zip(q.fields()))
            .filter(|(_, (a, b))| **a != *b)
            .map(|(n, _)| *n)
            .collect();
        if !differ.is_empty() {
            return Some(format!(
                "player {} ({}): {} (recorded {:?}, replayed {:?})",
                p.id.0,
                p.name,
                differ.join(", "),
                p.state.pos,
                q.state.pos
            ));
        }
    }
    if replayed.players.len() != recorded.players.len() {
        return Some("a player is in the replay only".into());
    }
    let (a, b) = (Sums::of(recorded), Sums::of(replayed));
    (a.world.0 != b.world.0).then(|| named(&a.world.1, &b.world.1, &WORLD_PARTS))
}
