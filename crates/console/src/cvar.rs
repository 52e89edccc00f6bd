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
        }
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
#[derive(Resource, Debug, Default)]
pub struct Cvars {
    vars: BTreeMap<&'static str, Cvar>,
}

impl Cvars {
    /// Adds a cvar at its default value (replacing one of the same name).
    pub fn register(&mut self, def: CvarDef) {
        let value = def.default.clone();
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
}
