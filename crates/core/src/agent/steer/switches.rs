//! [`Steers`]: which steers are on, as overrides of each steer's default.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which steers are on: each steer's default, with the switches set here
/// on top. Serialized as a table of the switched ones (`{"read_check":
/// false}`), in role files, suites and on the cluster wire; a name no
/// steer has is kept (a newer node's steer) but [`Steers::check`] refuses it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Steers(BTreeMap<String, bool>);

/// A switch that names no steer, or a switch that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SteerError {
    /// No steer has this name.
    #[error("unknown steer `{0}`; the steers are: {known}", known = super::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", "))]
    Unknown(String),
    /// `NAME=VALUE` with a value other than on/off.
    #[error("`{0}`: expected NAME=on or NAME=off")]
    Malformed(String),
}

impl Steers {
    /// Every steer at its default.
    pub fn defaults() -> Self {
        Self::default()
    }

    /// Whether the steer named `name` is on.
    pub fn is_on(&self, name: &str) -> bool {
        self.0
            .get(name)
            .copied()
            .unwrap_or_else(|| super::find(name).is_some_and(|steer| steer.on_by_default()))
    }

    /// Whether `steer` is on: [`Steers::is_on`] for a steer at hand,
    /// without looking it up by name (asked for every steer every round).
    pub fn is_on_steer(&self, steer: &dyn super::Steer) -> bool {
        if self.0.is_empty() {
            return steer.on_by_default();
        }
        self.0
            .get(steer.name())
            .copied()
            .unwrap_or_else(|| steer.on_by_default())
    }

    /// These switches with `name` set to `on`.
    pub fn with(mut self, name: &str, on: bool) -> Self {
        self.set(name, on);
        self
    }

    /// Sets the steer named `name` on or off.
    pub fn set(&mut self, name: &str, on: bool) {
        self.0.insert(name.to_string(), on);
    }

    /// These switches, then `over`'s on top of them.
    pub fn overlaid(&self, over: &Steers) -> Steers {
        let mut out = self.clone();
        out.0.extend(over.0.iter().map(|(k, v)| (k.clone(), *v)));
        out
    }

    /// Whether no switch is set (every steer at its default).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The switches set here (name, on), in name order.
    pub fn switched(&self) -> impl Iterator<Item = (&str, bool)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// An error for the first switch that names no steer.
    pub fn check(&self) -> Result<(), SteerError> {
        match self.0.keys().find(|name| super::find(name).is_none()) {
            Some(name) => Err(SteerError::Unknown(name.clone())),
            None => Ok(()),
        }
    }

    /// Reads one `NAME=on|off` switch (also `true/false`, `1/0`, `yes/no`);
    /// a bare `NAME` means on.
    pub fn parse_switch(text: &str) -> Result<(String, bool), SteerError> {
        let (name, value) = text.split_once('=').unwrap_or((text, "on"));
        let name = name.trim().replace('-', "_");
        let on = match value.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "1" | "yes" => true,
            "off" | "false" | "0" | "no" => false,
            _ => return Err(SteerError::Malformed(text.to_string())),
        };
        if super::find(&name).is_none() {
            return Err(SteerError::Unknown(name));
        }
        Ok((name, on))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_come_from_the_steers_and_switches_override_them() {
        let steers = Steers::defaults();
        assert!(steers.is_on("finish_check"));
        assert!(!steers.is_on("compute_check"));
        assert!(!steers.is_on("nonesuch"));
        let off = steers.with("finish_check", false);
        assert!(!off.is_on("finish_check"));
        let on_again = off.overlaid(&Steers::defaults().with("finish_check", true));
        assert!(on_again.is_on("finish_check"));
    }

    #[test]
    fn a_steer_at_hand_reads_as_its_name_does() {
        let switched = Steers::defaults()
            .with("finish_check", false)
            .with("compute_check", true);
        for steers in [Steers::defaults(), switched] {
            for steer in super::super::ALL {
                assert_eq!(
                    steers.is_on_steer(*steer),
                    steers.is_on(steer.name()),
                    "{}",
                    steer.name()
                );
            }
        }
    }

    #[test]
    fn switches_parse_and_unknown_names_are_refused() {
        assert_eq!(
            Steers::parse_switch("read-check=off").unwrap(),
            ("read_check".to_string(), false)
        );
        assert_eq!(
            Steers::parse_switch("repeat_guidance").unwrap(),
            ("repeat_guidance".to_string(), true)
        );
        let unknown = Steers::parse_switch("nonesuch=on").unwrap_err();
        assert!(unknown.to_string().contains("finish_check"), "{unknown}");
        assert!(Steers::parse_switch("read_check=maybe").is_err());
    }

    #[test]
    fn a_table_round_trips_and_is_checked() {
        let steers: Steers = toml::from_str("read_check = false\nlabel_check = true").unwrap();
        assert!(!steers.is_on("read_check"));
        steers.check().unwrap();
        let json = serde_json::to_string(&steers).unwrap();
        assert_eq!(serde_json::from_str::<Steers>(&json).unwrap(), steers);
        let bad: Steers = toml::from_str("nonesuch = true").unwrap();
        assert!(bad.check().is_err());
    }
}
