//! A plugin's value handed to the app once: `Plugin::build` takes `&self`, so what a
//! plugin was made with (a bound socket, an open database, a thread's link, made before
//! the app so their errors reach the caller) waits here until the app is built.

use std::sync::Mutex;

/// A value taken out exactly once.
pub struct TakeOnce<T>(Mutex<Option<T>>);

impl<T> TakeOnce<T> {
    /// Holds `value` until it is taken.
    pub fn new(value: T) -> Self {
        Self(Mutex::new(Some(value)))
    }

    /// The value. A second take is a bug in how the app was put together (`plugin`
    /// added twice), so it panics naming the plugin.
    pub fn take(&self, plugin: &str) -> T {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .unwrap_or_else(|| panic!("{plugin} was added to an app twice"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_is_taken_once() {
        let held = TakeOnce::new(String::from("socket"));
        assert_eq!(held.take("TestPlugin"), "socket");
        let again = std::panic::catch_unwind(|| held.take("TestPlugin"));
        let message = again.expect_err("a second take panics");
        let text = message
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        assert_eq!(text, "TestPlugin was added to an app twice");
    }
}
