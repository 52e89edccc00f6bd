//! A navigation graph built from a map at load time: standing spots sampled over every
//! walkable brush top, linked where a player can walk, step, drop or jump from one to the
//! next, and from a jump pad to where it lands; routes through it by A*. Pure: the same
//! map gives the same graph, and the same question the same route.

use bevy::math::Vec3;
use sightline_map::{CollisionWorld, MapDef};
use sightline_movement::{MoveParams, PlayerState, step};
use sightline_sim::InputCmd;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

/// Spacing of the standing spots sampled on a brush top, m.
const SPACING: f32 = 1.5;
/// Farthest (horizontally) two spots are linked, m: a grid step diagonally, and a bit.
const LINK_REACH: f32 = 2.3;
/// Most rise a walk link climbs (steps and ramps between neighbouring spots), m.
const WALK_RISE: f32 = 0.6;
/// Most rise a jump link climbs (a jump reaches 1.06 m), m.
const JUMP_RISE: f32 = 1.0;
/// Deepest drop a link walks off, m.
const DROP_DEPTH: f32 = 6.0;
/// Most spots a graph keeps, so a hostile or huge map cannot make it unbounded.
pub const MAX_NODES: usize = 8192;

/// How a route moves from one spot to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// Walk (or step, or drop off an edge).
    Walk,
    /// Jump up onto it.
    Jump,
    /// Walk onto a jump pad and fly.
    Pad,
}

/// A spot on a route and how it is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waypoint {
    /// Where to stand (feet).
    pub pos: Vec3,
    /// How to get there from the spot before.
    pub kind: LinkKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Link {
    to: u32,
    kind: LinkKind,
    cost: f32,
}

/// The graph: spots and the links between them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NavGraph {
    spots: Vec<Vec3>,
    links: Vec<Vec<Link>>,
}

impl NavGraph {
    /// Builds the graph for `map`, whose collision world is `world`.
    pub fn build(map: &MapDef, world: &CollisionWorld, params: &MoveParams) -> Self {
        let mut spots = Vec::new();
        for brush in &map.brushes {
            sample_top(brush.oriented_box(), world, params, &mut spots);
            if spots.len() >= MAX_NODES {
                spots.truncate(MAX_NODES);
                break;
            }
        }
        let buckets = bucket(&spots);
        let mut links: Vec<Vec<Link>> = vec![Vec::new(); spots.len()];
        for (a, from) in spots.iter().enumerate() {
            for b in near(&buckets, *from) {
                if b == a {
                    continue;
                }
                if let Some(kind) = link(world, params, *from, spots[b]) {
                    let climb = (spots[b].y - from.y).max(0.0);
                    let cost = horizontal(*from, spots[b]) + climb * 2.0;
                    let cost = if kind == LinkKind::Jump {
                        cost + 1.0
                    } else {
                        cost
                    };
                    links[a].push(Link {
                        to: b as u32,
                        kind,
                        cost,
                    });
                }
            }
        }
        let mut graph = Self { spots, links };
        graph.link_pads(map, world, params);
        graph
    }

    /// Number of spots.
    pub fn len(&self) -> usize {
        self.spots.len()
    }

    /// Whether it has no spots (a map with nothing to stand on).
    pub fn is_empty(&self) -> bool {
        self.spots.is_empty()
    }

    /// The spot nearest `pos` within 3 m (vertical distance counted double, so a spot on
    /// the floor below a platform is not taken for one on it).
    pub fn nearest(&self, pos: Vec3) -> Option<usize> {
        self.spots
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let d = *s - pos;
                (i, d.x * d.x + d.z * d.z + 4.0 * d.y * d.y)
            })
            .filter(|(_, d2)| *d2 < 9.0)
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map(|(i, _)| i)
    }

    /// The route from `from` to `to` by A* (each a position near a spot), the start left
    /// out; `None` when either is off the graph or nothing links them.
    pub fn route(&self, from: Vec3, to: Vec3) -> Option<Vec<Waypoint>> {
        let (start, goal) = (self.nearest(from)?, self.nearest(to)?);
        let mut best = vec![f32::INFINITY; self.spots.len()];
        let mut came: Vec<Option<(usize, LinkKind)>> = vec![None; self.spots.len()];
        let mut open = BinaryHeap::new();
        best[start] = 0.0;
        open.push(Open {
            estimate: self.spots[start].distance(self.spots[goal]),
            node: start,
        });
        while let Some(Open { node, .. }) = open.pop() {
            if node == goal {
                let mut path = Vec::new();
                let mut at = goal;
                while let Some((prev, kind)) = came[at] {
                    path.push(Waypoint {
                        pos: self.spots[at],
                        kind,
                    });
                    at = prev;
                }
                path.reverse();
                return Some(path);
            }
            for link in &self.links[node] {
                let next = link.to as usize;
                let cost = best[node] + link.cost;
                if cost < best[next] {
                    best[next] = cost;
                    came[next] = Some((node, link.kind));
                    open.push(Open {
                        estimate: cost + self.spots[next].distance(self.spots[goal]),
                        node: next,
                    });
                }
            }
        }
        None
    }

    /// Links the spots on each jump pad to the spot where it throws a player, flown with
    /// the movement step itself.
    fn link_pads(&mut self, map: &MapDef, world: &CollisionWorld, params: &MoveParams) {
        let dt = 1.0 / 64.0;
        for pad in &map.jump_pads {
            let on_pad: Vec<usize> = (0..self.spots.len())
                .filter(|&i| pad.holds(self.spots[i]))
                .collect();
            let Some(&first) = on_pad.first() else {
                continue;
            };
            let mut s = PlayerState::at(self.spots[first], 0.0);
            let mut landed = None;
            for tick in 0..(6.0 / dt) as usize {
                s = step(&s, &InputCmd::default(), world, params, dt);
                if tick > 4 && s.on_ground() {
                    landed = Some((s.pos, tick as f32 * dt));
                    break;
                }
            }
            let Some((at, seconds)) = landed else {
                continue;
            };
            let Some(to) = self.nearest(at) else {
                continue;
            };
            for from in on_pad {
                self.links[from].push(Link {
                    to: to as u32,
                    kind: LinkKind::Pad,
                    cost: seconds * params.run_speed,
                });
            }
        }
    }
}

/// How near (horizontally, m) a spot must be to count as reached.
const REACHED: f32 = 0.7;

/// A bot's route being followed: where it goes and the spots left on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Itinerary {
    /// Where the route ends.
    pub goal: Option<Vec3>,
    /// The spots still ahead, next first.
    pub ahead: Vec<Waypoint>,
    /// The tick it was planned at.
    pub planned: u32,
}

impl Itinerary {
    /// Plans a route from `from` to the first of `goals` the graph reaches; an empty
    /// itinerary when none.
    pub fn plan(graph: &NavGraph, from: Vec3, goals: &[Vec3], tick: u32) -> Self {
        goals
            .iter()
            .find_map(|g| {
                graph.route(from, *g).map(|ahead| Self {
                    goal: Some(*g),
                    ahead,
                    planned: tick,
                })
            })
            .unwrap_or(Self {
                planned: tick,
                ..Self::default()
            })
    }

    /// The next spot for a bot standing at `pos`, passing the spots it has reached.
    pub fn next(&mut self, pos: Vec3) -> Option<Waypoint> {
        while let Some(first) = self.ahead.first() {
            let d = first.pos - pos;
            let reached = Vec3::new(d.x, 0.0, d.z).length() < REACHED && d.y.abs() < 1.2;
            if !reached {
                break;
            }
            self.ahead.remove(0);
        }
        self.ahead.first().copied()
    }
}

/// A spot waiting in A*'s open set, least estimate first.
#[derive(PartialEq)]
struct Open {
    estimate: f32,
    node: usize,
}

impl Eq for Open {}

impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .estimate
            .total_cmp(&self.estimate)
            .then(other.node.cmp(&self.node))
    }
}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn horizontal(a: Vec3, b: Vec3) -> f32 {
    let d = b - a;
    (d.x * d.x + d.z * d.z).sqrt()
}

/// Standing spots on the top of the box (centre, half extents, rotation), if that top
/// is walkable: a grid inset by a player's radius, where a standing player fits.
fn sample_top(
    (center, half, rotation): (Vec3, Vec3, bevy::math::Quat),
    world: &CollisionWorld,
    params: &MoveParams,
    out: &mut Vec<Vec3>,
) {
    let up = rotation * Vec3::Y;
    if up.y < params.min_ground_normal_y {
        return;
    }
    let inset = params.radius;
    let axis = |h: f32| {
        let span = (h - inset).max(0.0);
        let n = (2.0 * span / SPACING).floor() as i32;
        (0..=n).map(move |i| -span + (2.0 * span) * i as f32 / n.max(1) as f32)
    };
    for x in axis(half.x) {
        for z in axis(half.z) {
            if out.len() >= MAX_NODES {
                return;
            }
            let top = center + rotation * Vec3::new(x, half.y, z);
            let feet = top + Vec3::Y * 0.02;
            let fits = !world.capsule_overlaps(feet, params.radius, params.stand_height);
            let grounded = world
                .cast_ray(feet + Vec3::Y * 0.1, Vec3::NEG_Y, 0.3)
                .is_some();
            if fits && grounded {
                out.push(feet);
            }
        }
    }
}

type Buckets = HashMap<(i32, i32), Vec<usize>>;

fn cell(p: Vec3) -> (i32, i32) {
    (
        (p.x / LINK_REACH).floor() as i32,
        (p.z / LINK_REACH).floor() as i32,
    )
}

fn bucket(spots: &[Vec3]) -> Buckets {
    let mut buckets = Buckets::new();
    for (i, s) in spots.iter().enumerate() {
        buckets.entry(cell(*s)).or_default().push(i);
    }
    buckets
}

/// Spots within [`LINK_REACH`] of `p` horizontally, in index order.
fn near(buckets: &Buckets, p: Vec3) -> Vec<usize> {
    let (cx, cz) = cell(p);
    let mut found: Vec<usize> = (-1..=1)
        .flat_map(|dx| (-1..=1).map(move |dz| (cx + dx, cz + dz)))
        .filter_map(|c| buckets.get(&c))
        .flatten()
        .copied()
        .collect();
    found.sort_unstable();
    found
}

/// How a player standing at `a` gets to `b`, if it can: walk across (a step or a ramp),
/// jump up, or drop down; the way must be clear of the map at the height it moves.
fn link(world: &CollisionWorld, params: &MoveParams, a: Vec3, b: Vec3) -> Option<LinkKind> {
    let flat = horizontal(a, b);
    if !(1e-3..=LINK_REACH).contains(&flat) {
        return None;
    }
    let rise = b.y - a.y;
    let kind = if rise.abs() <= WALK_RISE {
        LinkKind::Walk
    } else if rise > 0.0 && rise <= JUMP_RISE && flat <= 2.0 {
        LinkKind::Jump
    } else if rise < 0.0 && -rise <= DROP_DEPTH {
        LinkKind::Walk
    } else {
        return None;
    };
    // Moved across at the higher of the two heights, lifted over a step: the capsule
    // from there to the top of a standing player must sweep clear.
    let lift = WALK_RISE + 0.05;
    let height = params.stand_height - lift;
    let from = Vec3::new(a.x, a.y.max(b.y) + lift, a.z);
    let motion = Vec3::new(b.x - a.x, 0.0, b.z - a.z);
    let clear = world
        .cast_capsule(from, params.radius * 0.9, height, motion)
        .is_none();
    clear.then_some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_map::{CurrentMap, MapSource, find_map};

    fn spire() -> (CurrentMap, NavGraph) {
        let map = CurrentMap::new(MapSource::load(&find_map("spire")).unwrap());
        let graph = NavGraph::build(&map.def, &map.world, &MoveParams::default());
        (map, graph)
    }

    #[test]
    fn spire_routes_climb_ramps_and_fly_pads_but_not_to_the_rocket_jump_ledge() {
        let (_, graph) = spire();
        assert!(graph.len() > 500, "{} spots", graph.len());
        let yard = Vec3::new(-10.0, 0.0, -15.0);
        // Up the ramp onto the balcony.
        let balcony = graph
            .route(yard, Vec3::new(0.0, 4.0, -24.5))
            .expect("a route to the balcony");
        assert!(balcony.last().unwrap().pos.y > 3.9);
        // Onto the spire, by a pad.
        let spire = graph
            .route(yard, Vec3::new(0.0, 6.0, 0.0))
            .expect("a route onto the spire");
        assert!(spire.iter().any(|w| w.kind == LinkKind::Pad), "{spire:?}");
        // The ledge takes a rocket jump, which a walking route does not have.
        assert_eq!(graph.route(yard, Vec3::new(25.0, 3.2, 0.0)), None);
        // Up the ramp to the south-west platform.
        let platform = graph
            .route(yard, Vec3::new(-23.0, 2.5, 20.0))
            .expect("a route up the ramp");
        assert!(platform.last().unwrap().pos.y > 2.4);
    }

    /// A bot driven by [`crate::decide`] along an itinerary to `goal` on spire, flown by
    /// the movement step for `seconds`: the closest it came.
    fn walk_to(from: Vec3, goal: Vec3, seconds: f32) -> f32 {
        let (map, graph) = spire();
        let params = MoveParams::default();
        let hz = 64;
        let mut s = PlayerState::at(from, 0.0);
        let mut plan = Itinerary::plan(&graph, from, &[goal], 0);
        assert!(plan.goal.is_some(), "no route to {goal}");
        let mut closest = f32::INFINITY;
        for tick in 0..(seconds * hz as f32) as u32 {
            let mut seen = crate::sense(&map.world, &s, &params);
            seen.waypoint = plan.next(s.pos);
            let cmd = crate::decide(&s, &seen, 3, tick, hz).sanitized().unwrap();
            s = step(&s, &cmd, &map.world, &params, 1.0 / hz as f32);
            closest = closest.min(s.pos.distance(goal));
        }
        closest
    }

    #[test]
    fn a_bot_follows_its_route_onto_the_spire_and_up_to_the_balcony() {
        let quad = walk_to(Vec3::new(-10.0, 0.0, 15.0), Vec3::new(0.0, 6.0, 0.0), 8.0);
        assert!(quad < 1.0, "came within {quad} m of the quad");
        let regen = walk_to(Vec3::new(-12.0, 0.0, 0.0), Vec3::new(0.0, 4.0, -24.5), 20.0);
        assert!(regen < 1.0, "came within {regen} m of the regeneration");
    }

    #[test]
    fn building_is_a_pure_function_of_the_map() {
        let (map, graph) = spire();
        let again = NavGraph::build(&map.def, &map.world, &MoveParams::default());
        assert_eq!(graph, again);
    }
}
