//! Console variables: typed, range-checked, documented settings.

use bevy::prelude::*;
use std::collections::BTreeMap;
use std::fmt;

/// What values a cvar accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum CvarKind {
    /// 0/1, true/false, on/off.
    Bool,
    /// A whole number in a range.
    Int {
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// A number in a range.
    Float {
        /// Smallest allowed.
        min: f64,
        /// Largest allowed.
        max: f64,
    },
    /// Text up to a length, without control characters.
    Text {
        /// Longest allowed, in bytes.
        max_len: usize,
    },
    /// One word of a list (a game mode, a skill), in any case; read as written in the list.
    Choice {
        /// The words allowed, lower case.
        options: &'static [&'static str],
    },
}

/// A cvar's value.
#[derive(Debug, Clone, PartialEq)]
pub enum CvarValue {
    /// A boolean.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// A number.
    Float(f64),
    /// Text.
    Text(String),
}

impl fmt::Display for CvarValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bool(b) => write!(f, "{}", u8::from(*b)),
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{x}"),
            Self::Text(t) => write!(f, "{t}"),
        }
    }
}

/// How a cvar behaves beyond its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CvarFlags {
    /// Written to the config file and restored at start-up.
    pub saved: bool,
    /// Shown but never changed from the console.
    pub read_only: bool,
    /// Takes effect at the next start.
    pub needs_restart: bool,
}

impl CvarFlags {
    /// No flags.
    pub const NONE: Self = Self {
        saved: false,
        read_only: false,
        needs_restart: false,
    };
    /// Saved to the config file.
    pub const SAVED: Self = Self {
        saved: true,
        read_only: false,
        needs_restart: false,
    };
    /// Read-only.
    pub const READ_ONLY: Self = Self {
        saved: false,
        read_only: true,
        needs_restart: false,
    };
    /// Applied at the next start, not saved.
    pub const RESTART: Self = Self {
        saved: false,
        read_only: false,
        needs_restart: true,
    };
    /// Saved, and applied at the next start.
    pub const SAVED_RESTART: Self = Self {
        saved: true,
        read_only: false,
        needs_restart: true,
    };
}

/// A cvar's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct CvarDef {
    /// Name, lower case.
    pub name: &'static str,
    /// Accepted values.
    pub kind: CvarKind,
    /// Starting value.
    pub default: CvarValue,
    /// One line of help.
    pub help: &'static str,
    /// Behaviour.
    pub flags: CvarFlags,
}

/// Why a cvar was not changed.
#[derive(Debug, Clone, PartialEq)]
pub enum CvarError {
    /// No such cvar.
    Unknown(String),
    /// The value does not fit the cvar.
    BadValue {
        /// The cvar.
        name: String,
        /// What was given.
        value: String,
        /// What it accepts.
        expected: String,
    },
    /// The cvar cannot be changed.
    ReadOnly(String),
}

impl fmt::Display for CvarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(name) => write!(f, "unknown variable \"{name}\""),
            Self::BadValue {
                name,
                value,
                expected,
            } => write!(f, "{name}: \"{value}\" is not valid; expected {expected}"),
            Self::ReadOnly(name) => write!(f, "{name} is read-only"),
        }
    }
}

impl std::error::Error for CvarError {}

impl CvarDef {
    /// Parses `text` as a value of this cvar, or says what it expects.
    pub fn parse(&self, text: &str) -> Result<CvarValue, CvarError> {
        let bad = |expected: String| CvarError::BadValue {
            name: self.name.to_string(),
            value: text.to_string(),
            expected,
        };
        let t = text.trim();
        match &self.kind {
            CvarKind::Bool => match t.to_ascii_lowercase().as_str() {
                "1" | "true" | "on" | "yes" => Ok(CvarValue::Bool(true)),
                "0" | "false" | "off" | "no" => Ok(CvarValue::Bool(false)),
                _ => Err(bad("0 or 1".into())),
            },
            CvarKind::Int { min, max } => match t.parse::<i64>() {
                Ok(v) if (*min..=*max).contains(&v) => Ok(CvarValue::Int(v)),
                _ => Err(bad(format!("a whole number from {min} to {max}"))),
            },
            CvarKind::Float { min, max } => match t.parse::<f64>() {
                Ok(v) if v.is_finite() && (*min..=*max).contains(&v) => Ok(CvarValue::Float(v)),
                _ => Err(bad(format!("a number from {min} to {max}"))),
            },
            CvarKind::Text { max_len } => {
                if t.len() <= *max_len && !t.chars().any(char::is_control) {
                    Ok(CvarValue::Text(t.to_string()))
                } else {
                    Err(bad(format!("text of at most {max_len} bytes")))
                }
            }
            CvarKind::Choice { options } => options
                .iter()
                .find(|o| o.eq_ignore_ascii_case(t))
                .map(|o| CvarValue::Text((*o).to_string()))
                .ok_or_else(|| bad(format!("one of {}", options.join(", ")))),
        }
    }
}

/// What a typed cvar handle reads as: which kinds of cvar it reads, and how.
pub trait CvarType: Default {
    /// The value as this type, if the cvar is of a kind this type reads.
    fn from_value(value: &CvarValue) -> Option<Self>;
    /// This type's value as a cvar's.
    fn into_value(self) -> CvarValue;
}

impl CvarType for f64 {
    fn into_value(self) -> CvarValue {
        CvarValue::Float(self)
    }

    fn from_value(value: &CvarValue) -> Option<Self> {
        match *value {
            CvarValue::Float(x) => Some(x),
            CvarValue::Int(i) => Some(i as f64),
            CvarValue::Bool(b) => Some(f64::from(u8::from(b))),
            CvarValue::Text(_) => None,
        }
    }
}

impl CvarType for i64 {
    fn into_value(self) -> CvarValue {
        CvarValue::Int(self)
    }

    fn from_value(value: &CvarValue) -> Option<Self> {
        match *value {
            CvarValue::Int(i) => Some(i),
            CvarValue::Bool(b) => Some(i64::from(b)),
            _ => None,
        }
    }
}

impl CvarType for bool {
    fn into_value(self) -> CvarValue {
        CvarValue::Bool(self)
    }

    fn from_value(value: &CvarValue) -> Option<Self> {
        match *value {
            CvarValue::Bool(b) => Some(b),
            _ => None,
        }
    }
}

impl CvarType for String {
    fn into_value(self) -> CvarValue {
        CvarValue::Text(self)
    }

    fn from_value(value: &CvarValue) -> Option<Self> {
        match value {
            CvarValue::Text(t) => Some(t.clone()),
            _ => None,
        }
    }
}

/// A cvar named once, as a constant, and read through it: code cannot misspell the name.
/// [`cvar_table!`](crate::cvar_table) declares each handle with its cvar's definition, so
/// the two cannot disagree; [`Cvars::check`] proves a handle made by hand names a
/// registered cvar of a kind that reads as `T`.
pub struct CvarHandle<T> {
    name: &'static str,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T> CvarHandle<T> {
    /// The handle of the cvar called `name`.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            _type: std::marker::PhantomData,
        }
    }

    /// The cvar's name, as typed in the console.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> Clone for CvarHandle<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for CvarHandle<T> {}

impl<T> fmt::Debug for CvarHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CvarHandle({})", self.name)
    }
}

/// A cvar and its current value.
#[derive(Debug, Clone, PartialEq)]
pub struct Cvar {
    /// Its definition.
    pub def: CvarDef,
    /// Its value.
    pub value: CvarValue,
}

/// Every registered cvar, by name.
#[derive(Resource, Debug, Default, Clone)]
pub struct Cvars {
    vars: BTreeMap<&'static str, Cvar>,
}

impl Cvars {
    /// Adds a cvar at its default value (replacing one of the same name).
    ///
    /// # Panics
    /// When the default is not a value of the cvar's own kind and range: the tables are
    /// code, and such a cvar could never be set back to its default.
    pub fn register(&mut self, def: CvarDef) {
        let value = def.default.clone();
        assert_eq!(
            def.parse(&value.to_string()).as_ref(),
            Ok(&value),
            "cvar {}: the default does not fit its kind {:?}",
            def.name,
            def.kind
        );
        self.vars.insert(def.name, Cvar { def, value });
    }

    /// Sets a cvar from console text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<&Cvar, CvarError> {
        let cvar = self
            .vars
            .get_mut(name)
            .ok_or_else(|| CvarError::Unknown(name.to_string()))?;
        if cvar.def.flags.read_only {
            return Err(CvarError::ReadOnly(name.to_string()));
        }
        cvar.value = cvar.def.parse(text)?;
        Ok(cvar)
    }

    /// Sets a value from code, bypassing the read-only flag (the game owns read-only cvars).
    pub fn force(&mut self, name: &str, value: CvarValue) {
        if let Some(cvar) = self.vars.get_mut(name) {
            cvar.value = value;
        }
    }

    /// A cvar, if registered.
    pub fn get(&self, name: &str) -> Option<&Cvar> {
        self.vars.get(name)
    }

    /// A cvar's value through its handle. A handle that [`Cvars::check`] accepts always
    /// reads the value; any other reads as the type's default.
    pub fn read<T: CvarType>(&self, handle: CvarHandle<T>) -> T {
        self.get(handle.name)
            .and_then(|c| T::from_value(&c.value))
            .unwrap_or_default()
    }

    /// Sets a cvar through its handle from console text.
    pub fn set_handle<T>(&mut self, handle: CvarHandle<T>, text: &str) -> Result<&Cvar, CvarError> {
        self.set(handle.name, text)
    }

    /// Whether `handle` names a registered cvar whose values read as `T`.
    pub fn check<T: CvarType>(&self, handle: CvarHandle<T>) -> Result<(), String> {
        match self.get(handle.name) {
            None => Err(format!("no cvar \"{}\" is registered", handle.name)),
            Some(c) if T::from_value(&c.def.default).is_none() => Err(format!(
                "cvar \"{}\" is {:?}, which does not read as {}",
                handle.name,
                c.def.kind,
                std::any::type_name::<T>()
            )),
            Some(_) => Ok(()),
        }
    }

    /// A number cvar's range, from its table (for a slider, say).
    pub fn range(&self, name: &str) -> Option<(f64, f64)> {
        match self.get(name)?.def.kind {
            CvarKind::Int { min, max } => Some((min as f64, max as f64)),
            CvarKind::Float { min, max } => Some((min, max)),
            CvarKind::Bool | CvarKind::Text { .. } | CvarKind::Choice { .. } => None,
        }
    }

    /// A number cvar's value (ints and bools convert), or 0.
    pub fn number(&self, name: &str) -> f64 {
        match self.get(name).map(|c| &c.value) {
            Some(CvarValue::Float(x)) => *x,
            Some(CvarValue::Int(i)) => *i as f64,
            Some(CvarValue::Bool(b)) => f64::from(u8::from(*b)),
            _ => 0.0,
        }
    }

    /// A text cvar's value, or "".
    pub fn text(&self, name: &str) -> &str {
        match self.get(name).map(|c| &c.value) {
            Some(CvarValue::Text(t)) => t,
            _ => "",
        }
    }

    /// Every cvar, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Cvar> {
        self.vars.values()
    }
}

/// Declares one side's cvars in one table: for each, a typed [`CvarHandle`] constant and
/// its definition (name, kind with its range, default, flags, help), and a function
/// returning every definition to register. The default is written in the handle's type,
/// and [`Cvars::register`] checks it against the kind and range: a table that
/// contradicts itself fails at registration, the first time any test builds the app.
///
/// ```
/// sightline_console::cvar_table! {
///     /// Every cvar of this example.
///     pub fn example_cvars;
///     NETGRAPH: i64 = "cl_netgraph", Int { min: 0, max: 2 }, 0, SAVED,
///         "network graph: 0 off, 1 text, 2 graphs";
/// }
/// let mut cvars = sightline_console::Cvars::default();
/// for def in example_cvars() {
///     cvars.register(def);
/// }
/// assert_eq!(cvars.read(NETGRAPH), 0);
/// ```
#[macro_export]
macro_rules! cvar_table {
    (
        $(#[$table_meta:meta])*
        $vis:vis fn $table:ident;
        $(
            $handle:ident: $ty:ty = $name:literal, $kind:ident $({ $($range:tt)* })?,
                $default:expr, $flags:ident, $help:literal;
        )*
    ) => {
        $(
            #[doc = concat!("`", $name, "`: ", $help, ".")]
            $vis const $handle: $crate::CvarHandle<$ty> = $crate::CvarHandle::new($name);
        )*
        $(#[$table_meta])*
        $vis fn $table() -> ::std::vec::Vec<$crate::CvarDef> {
            ::std::vec![$(
                $crate::CvarDef {
                    name: $name,
                    kind: $crate::CvarKind::$kind $({ $($range)* })?,
                    default: $crate::CvarType::into_value(<$ty>::from($default)),
                    help: $help,
                    flags: $crate::CvarFlags::$flags,
                },
            )*]
        }
    };
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A few cvars of each kind, shared by this crate's tests.
    pub(crate) fn registry() -> Cvars {
        let mut c = Cvars::default();
        c.register(CvarDef {
            name: "cl_netgraph",
            kind: CvarKind::Int { min: 0, max: 2 },
            default: CvarValue::Int(0),
            help: "network graph",
            flags: CvarFlags::SAVED,
        });
        c.register(CvarDef {
            name: "cl_interp",
            kind: CvarKind::Float { min: 0.0, max: 0.5 },
            default: CvarValue::Float(0.0),
            help: "interpolation delay",
            flags: CvarFlags::SAVED,
        });
        c.register(CvarDef {
            name: "version",
            kind: CvarKind::Text { max_len: 32 },
            default: CvarValue::Text("1".into()),
            help: "build",
            flags: CvarFlags::READ_ONLY,
        });
        c
    }

    #[test]
    fn good_values_are_taken() {
        let mut c = registry();
        c.set("cl_netgraph", "2").unwrap();
        assert_eq!(c.number("cl_netgraph"), 2.0);
        c.set("cl_interp", " 0.05 ").unwrap();
        assert_eq!(c.number("cl_interp"), 0.05);
    }

    #[test]
    fn bad_values_are_refused_and_change_nothing() {
        let mut c = registry();
        for bad in ["3", "-1", "two", "", "1.5"] {
            let err = c.set("cl_netgraph", bad).unwrap_err();
            assert!(err.to_string().contains("from 0 to 2"), "{err}");
        }
        for bad in ["NaN", "inf", "0.6", "x"] {
            assert!(c.set("cl_interp", bad).is_err(), "{bad}");
        }
        assert_eq!(c.number("cl_netgraph"), 0.0);
        assert_eq!(c.number("cl_interp"), 0.0);
        assert_eq!(
            c.set("cl_nope", "1").unwrap_err(),
            CvarError::Unknown("cl_nope".into())
        );
        assert_eq!(
            c.set("version", "2").unwrap_err(),
            CvarError::ReadOnly("version".into())
        );
        assert_eq!(c.text("version"), "1");
    }

    #[test]
    fn handles_read_typed_values_and_checks_catch_wrong_names_and_kinds() {
        const NETGRAPH: CvarHandle<i64> = CvarHandle::new("cl_netgraph");
        const INTERP: CvarHandle<f64> = CvarHandle::new("cl_interp");
        const VERSION: CvarHandle<String> = CvarHandle::new("version");
        let mut c = registry();
        c.set_handle(NETGRAPH, "2").unwrap();
        assert_eq!(c.read(NETGRAPH), 2);
        assert_eq!(c.read(CvarHandle::<f64>::new("cl_netgraph")), 2.0);
        assert_eq!(c.read(VERSION), "1");
        assert!(c.check(NETGRAPH).is_ok() && c.check(INTERP).is_ok() && c.check(VERSION).is_ok());
        let misspelt = CvarHandle::<f64>::new("cl_interpp");
        assert!(c.check(misspelt).unwrap_err().contains("cl_interpp"));
        assert_eq!(c.read(misspelt), 0.0);
        assert!(c.check(CvarHandle::<i64>::new("cl_interp")).is_err());
        assert!(c.check(CvarHandle::<String>::new("cl_netgraph")).is_err());
    }

    #[test]
    fn a_choice_takes_one_of_its_words_in_any_case() {
        let mode = CvarDef {
            name: "mode",
            kind: CvarKind::Choice {
                options: &["dm", "tdm"],
            },
            default: CvarValue::Text("dm".into()),
            help: "game mode",
            flags: CvarFlags::NONE,
        };
        assert_eq!(mode.parse(" TDM "), Ok(CvarValue::Text("tdm".into())));
        let err = mode.parse("ctf").unwrap_err();
        assert!(err.to_string().contains("expected one of dm, tdm"), "{err}");
    }

    #[test]
    #[should_panic(expected = "the default does not fit")]
    fn a_default_outside_its_range_is_refused_at_registration() {
        let mut c = Cvars::default();
        c.register(CvarDef {
            name: "fov",
            kind: CvarKind::Float {
                min: 60.0,
                max: 130.0,
            },
            default: CvarValue::Float(200.0),
            help: "field of view",
            flags: CvarFlags::SAVED,
        });
    }

    #[test]
    #[should_panic(expected = "the default does not fit")]
    fn a_default_of_another_type_is_refused_at_registration() {
        let mut c = Cvars::default();
        c.register(CvarDef {
            name: "sensitivity",
            kind: CvarKind::Int { min: 0, max: 10 },
            default: CvarValue::Float(3.0),
            help: "mouse",
            flags: CvarFlags::SAVED,
        });
    }
}
