//! Config files: TOML under `configs/`, one section per concern.
//!
//! | section | type | read by |
//! |---|---|---|
//! | `game`, `rules` (top-level keys) | [`GameKind`], a rule-set name | every command that reads a config |
//! | `[search]` | [`SearchConfig`] | `xqz selfplay`, `xqz train` |
//! | `[selfplay]` | [`SelfPlayConfig`] | `xqz selfplay`, `xqz train` |
//! | `[network]` | [`NetConfig`] | `xqz train` |
//! | `[training]` | [`TrainConfig`] | `xqz train` |
//! | `[loop]` | [`LoopConfig`] | `xqz train` |
//!
//! The game and its rule set are keys at the top of the file, before any section
//! (`game = "janggi"`, `rules = "site"`; absent: xiangqi under its default rules). Files written
//! before they moved there name them in `[selfplay]`; those still load, with a note saying where
//! the keys go now, and naming the game in both places differently is an error.
//!
//! Every section is optional and takes its defaults when absent. An unknown top-level table or
//! an unknown key inside a section is an error naming the file and the key; a bad value is an
//! error naming the file, the key and the reason.

use std::fs;
use std::path::Path;

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};
use xiangqi_nn::{NetConfig, TrainConfig};
use xiangqi_search::{GameKind, SearchConfig, SelfPlayConfig};
use xiangqi_train::pipeline::{LoopConfig, RunConfig};

/// The built-in CPU default of `xqz train` (the same as `configs/cpu.toml`).
pub const BUILTIN_CPU: &str = include_str!("../../../configs/cpu.toml");

/// Where a file names the game: at its top, or in `[selfplay]` (the old place). Every other key
/// is passed over here; [`ConfigFile`] reads them.
#[derive(Deserialize)]
struct GamePlaces {
    game: Option<String>,
    rules: Option<String>,
    selfplay: Option<OldGamePlace>,
}

/// The game's keys in `[selfplay]`.
#[derive(Default, Deserialize)]
struct OldGamePlace {
    game: Option<String>,
    rules: Option<String>,
}

/// A whole config file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `game`: the game every section is for (xiangqi when absent).
    #[serde(default)]
    pub game: GameKind,
    /// `rules`: the game's rule set by name (`asian`, `simple`; `site`, `traditional`); absent
    /// means the game's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    /// `[search]`.
    #[serde(default)]
    pub search: SearchConfig,
    /// `[selfplay]`.
    #[serde(default)]
    pub selfplay: SelfPlayConfig,
    /// `[network]`.
    #[serde(default)]
    pub network: NetConfig,
    /// `[training]`.
    #[serde(default)]
    pub training: TrainConfig,
    /// `[loop]`.
    #[serde(default, rename = "loop")]
    pub run: LoopConfig,
}

impl ConfigFile {
    /// Parses and validates TOML text; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<ConfigFile> {
        let mut config: ConfigFile = toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?;
        config.settle_game(text, origin)?;
        config.search.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.selfplay.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.network.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.training.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.run.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.run_config().validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        Ok(config)
    }

    /// Settles where the game is named: the top-level `game` and `rules`, or `[selfplay]`'s
    /// (the old place, with a note), never both differently; then checks the rule-set name
    /// against the game and copies both into `[selfplay]`, which self-play reads.
    fn settle_game(&mut self, text: &str, origin: &str) -> anyhow::Result<()> {
        // Parsed once already: which keys the file wrote is what decides.
        let places: GamePlaces = toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?;
        let old = places.selfplay.unwrap_or_default();
        let mut moved = Vec::new();
        for (key, top, value) in
            [("game", &places.game, &old.game), ("rules", &places.rules, &old.rules)]
        {
            let Some(value) = value else { continue };
            // Compared as the game and the rule set read them (`Janggi` is `janggi`).
            let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
            if let Some(top) = top.as_ref().filter(|top| !same(top, value)) {
                anyhow::bail!(
                    "{origin}: {key} is named twice, '{top}' at the top of the file and '{value}' \
                     in [selfplay] (the old place): keep the top one"
                );
            }
            moved.push(format!("{key} = \"{value}\""));
        }
        if !moved.is_empty() {
            errln!(
                "note: {origin}: [selfplay] names the game, its old place; it loads as it is, but \
                 write {} at the top of the file, before any section",
                moved.join(" and ")
            );
            if places.game.is_none() {
                self.game = self.selfplay.game;
            }
            if places.rules.is_none() {
                self.rules = self.selfplay.rules.clone();
            }
        }
        if let Some(name) = &self.rules {
            self.game.check_rule_name(name).map_err(|e| anyhow!("{origin}: rules: {e}"))?;
        }
        self.selfplay.game = self.game;
        self.selfplay.rules = self.rules.clone();
        Ok(())
    }

    /// The sections that `xqz train` runs on.
    pub fn run_config(&self) -> RunConfig {
        RunConfig {
            network: self.network.clone(),
            training: self.training.clone(),
            search: self.search.clone(),
            selfplay: self.selfplay.clone(),
            run: self.run.clone(),
        }
    }

    /// The resolved config as TOML (every key with its value).
    pub fn to_toml(&self) -> anyhow::Result<String> {
        toml::to_string(self).context("serialising the resolved config")
    }

    /// Reads, parses and validates a config file.
    pub fn load(path: &Path) -> anyhow::Result<ConfigFile> {
        let text = fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        if text.trim().is_empty() {
            errln!(
                "warning: config {} is empty: every key takes its built-in default (the defaults \
                 of the config structs, not configs/cpu.toml)",
                path.display()
            );
        }
        ConfigFile::parse(&text, &path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_optional_and_checked() {
        let c = ConfigFile::parse("", "x.toml").unwrap();
        assert_eq!(c, ConfigFile::default());
        let c = ConfigFile::parse(
            "[search]\nsimulations = 8\ncheap_simulations = 2\n[network]\nblocks = 2\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(c.search.simulations, 8);
        assert_eq!(c.network.blocks, 2);
        let e = ConfigFile::parse("[loop]\nbatch_size = 0\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("loop.batch_size"), "{e}");
        let e = ConfigFile::parse("[network]\nfliters = 3\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("fliters"), "{e}");
        let e = ConfigFile::parse("[serach]\n", "x.toml").unwrap_err().to_string();
        assert!(e.starts_with("x.toml: ") && e.contains("serach"), "{e}");
        let e = ConfigFile::parse("[selfplay]\ngames = 3\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("games"), "{e}");
        let e = ConfigFile::parse("[search]\nc_puct = 0\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("search.c_puct"), "{e}");
        for (text, key) in [
            ("[loop]\nmax_steps = 18446744073709551615\n", "loop.max_steps"),
            ("[training]\nwarmup_steps = 18446744073709551615\n", "training.warmup_steps"),
            ("[loop]\ntrain_ratio = 1e30\n", "loop.train_ratio"),
            ("[network]\nblocks = 256\nfilters = 4096\n", "network.filters"),
            (
                "[loop]\nresign_target_false_positive = 0.05\n[selfplay]\nresign_threshold = -0.9\n",
                "selfplay.resign_threshold",
            ),
            ("[loop]\ndevice = \"gpu\"\n", "loop.device"),
        ] {
            let e = ConfigFile::parse(text, "x.toml").unwrap_err().to_string();
            assert!(e.starts_with("x.toml: ") && e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn the_game_is_named_at_the_top_and_the_old_place_still_loads() {
        let top =
            ConfigFile::parse("game = \"janggi\"\nrules = \"traditional\"\n", "x.toml").unwrap();
        assert_eq!((top.game, top.rules.as_deref()), (GameKind::Janggi, Some("traditional")));
        // Self-play reads the game from its section.
        assert_eq!(top.selfplay.game, GameKind::Janggi);
        assert_eq!(top.selfplay.rules.as_deref(), Some("traditional"));
        let old =
            ConfigFile::parse("[selfplay]\ngame = \"janggi\"\nrules = \"traditional\"\n", "x.toml")
                .unwrap();
        assert_eq!(old, top);
        // The same name in both places is no conflict; two different ones are.
        let both = "game = \"janggi\"\n[selfplay]\ngame = \"janggi\"\n";
        assert_eq!(ConfigFile::parse(both, "x.toml").unwrap().game, GameKind::Janggi);
        let e = ConfigFile::parse("game = \"janggi\"\n[selfplay]\ngame = \"xiangqi\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml: game is named twice"), "{e}");
        // A rule set of the other game names the top-level key.
        let e = ConfigFile::parse("game = \"janggi\"\nrules = \"asian\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml: rules: 'asian' is no janggi rule set"), "{e}");
        // Written back, the game is at the top and [selfplay] does not name it.
        let text = top.to_toml().unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table["game"].as_str(), Some("janggi"));
        assert_eq!(table["rules"].as_str(), Some("traditional"));
        assert!(!table["selfplay"].as_table().unwrap().contains_key("game"), "{text}");
        assert_eq!(ConfigFile::parse(&text, "resolved").unwrap(), top);
    }

    #[test]
    fn the_shipped_configs_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        let mut n = 0;
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                ConfigFile::load(&path).unwrap();
                n += 1;
            }
        }
        assert!(n >= 1, "no config in {}", dir.display());
    }
}
