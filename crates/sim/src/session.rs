//! The end of a client's session with a server. Each plugin that keeps state about a
//! session (players, clocks, statistics, feedback on screen) registers what to forget in
//! the [`EndSession`] schedule, and whoever ends a session runs it once with
//! [`end_session`]. So no list of everything to clear is kept in one place, where a new
//! plugin's state would be missed.

use bevy::ecs::schedule::ScheduleLabel;
use bevy::prelude::*;

/// Runs once when a session ends (disconnect, reconnect, a new server or map), before
/// the next one starts: like a state's `OnExit`, but run on demand, so the next session
/// can begin in the same frame.
#[derive(ScheduleLabel, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndSession;

/// Forgets the session: runs [`EndSession`] and applies what its systems ask.
pub fn end_session(world: &mut World) {
    // An app without any session state has no such schedule: nothing to forget.
    let _ = world.try_run_schedule(EndSession);
}

/// Registering session state with a plugin's other resources.
pub trait SessionAppExt {
    /// Initialises `R` and puts it back to its default when a session ends: the one call
    /// for state that lasts a session.
    fn init_session_resource<R: Resource + Default>(&mut self) -> &mut Self;
    /// Puts `R` back to its default when a session ends (for a resource inserted with a
    /// value of its own).
    fn reset_on_session_end<R: Resource + Default>(&mut self) -> &mut Self;
}

impl SessionAppExt for App {
    fn init_session_resource<R: Resource + Default>(&mut self) -> &mut Self {
        self.init_resource::<R>().reset_on_session_end::<R>()
    }

    fn reset_on_session_end<R: Resource + Default>(&mut self) -> &mut Self {
        self.add_systems(EndSession, reset_resource::<R>)
    }
}

fn reset_resource<R: Resource + Default>(mut commands: Commands) {
    commands.insert_resource(R::default());
}

/// Despawns every entity with `C` (with its children) when a session ends.
pub fn despawn_all<C: Component>(mut commands: Commands, entities: Query<Entity, With<C>>) {
    for entity in &entities {
        commands.entity(entity).despawn();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Resource, Default, Debug, PartialEq)]
    struct Count(u32);

    #[derive(Resource, Default, Debug, PartialEq)]
    struct Other(u32);

    #[derive(Component)]
    struct Marker;

    #[test]
    fn ending_a_session_resets_registered_state_and_nothing_else() {
        let mut app = App::new();
        app.insert_resource(Count(7))
            .reset_on_session_end::<Count>()
            .init_session_resource::<Other>()
            .add_systems(EndSession, despawn_all::<Marker>);
        let marked = app.world_mut().spawn(Marker).id();
        let kept = app.world_mut().spawn_empty().id();
        app.world_mut().resource_mut::<Other>().0 = 3;
        end_session(app.world_mut());
        assert_eq!(*app.world().resource::<Count>(), Count(0));
        assert_eq!(*app.world().resource::<Other>(), Other(0));
        assert!(app.world().get_entity(marked).is_err());
        assert!(app.world().get_entity(kept).is_ok());
        // Without the schedule (a server, say), ending a session does nothing.
        end_session(&mut World::new());
    }
}
