//! Config files: TOML under `configs/`, one section per concern.
//!
//! | section | type | read by |
//! |---|---|---|
//! | `game`, `rules` (top-level keys) | [`xiangqi_search::GameKind`], a rule-set name | every command that reads a config |
//! | `[search]` | [`xiangqi_search::SearchConfig`] | `xqz selfplay`, `xqz train` |
//! | `[selfplay]` | [`xiangqi_search::SelfPlayConfig`] | `xqz selfplay`, `xqz train` |
//! | `[network]` | [`xiangqi_nn::NetConfig`] | `xqz train` |
//! | `[training]` | [`xiangqi_nn::TrainConfig`] | `xqz train` |
//! | `[loop]` | [`xiangqi_train::pipeline::LoopConfig`] | `xqz train` |
//!
//! The game and its rule set are keys at the top of the file, before any section
//! (`game = "janggi"`, `rules = "site"`; absent: xiangqi under its default rules). Files written
//! before they moved there name them in `[selfplay]`; those still load, with a note saying where
//! the keys go now, and naming the game in both places differently is an error.
//!
//! The whole file is one [`RunConfig`], read as it is ([`parse`], [`load`]), changed by the
//! command line's overrides, then checked once ([`check`]) into the [`CheckedRunConfig`] that
//! the commands and the training loop take: nothing below checks it again.
//!
//! Every section is optional and takes its defaults when absent. An unknown top-level table or
//! an unknown key inside a section is an error naming the file and the key; a bad value is an
//! error naming the file, the key and the reason.

use std::fs;
use std::path::Path;

use anyhow::{Context, anyhow};
use serde::Deserialize;
use xiangqi_train::pipeline::{CheckedRunConfig, RunConfig};

/// The built-in CPU default of `xqz train` (the same as `configs/cpu.toml`).
pub const BUILTIN_CPU: &str = include_str!("../../../configs/cpu.toml");

/// How messages name [`BUILTIN_CPU`].
pub const BUILTIN_CPU_ORIGIN: &str = "built-in configs/cpu.toml";

/// Where a file names the game: at its top, or in `[selfplay]` (the old place). Every other key
/// is passed over here; [`RunConfig`] reads them.
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

/// Parses TOML text into the settings as the file holds them, not checked yet ([`check`] does
/// that, once, after any command-line overrides); `origin` names the file in errors. A game
/// named in `[selfplay]` (the old place) is moved to the top, with a note.
///
/// # Errors
/// Bad TOML, an unknown key, a value of the wrong type, or the game named twice differently.
pub fn parse(text: &str, origin: &str) -> anyhow::Result<RunConfig> {
    let mut config: RunConfig = toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?;
    settle_game(&mut config, text, origin)?;
    Ok(config)
}

/// Checks the settings (each section and the rules between them): what every command runs on.
///
/// # Errors
/// The first bad key, after `origin`.
pub fn check(config: RunConfig, origin: &str) -> anyhow::Result<CheckedRunConfig> {
    config.check().map_err(|e| anyhow!("{origin}: {e}"))
}

/// [`parse`], then [`check`].
///
/// # Errors
/// As those.
pub fn parse_checked(text: &str, origin: &str) -> anyhow::Result<CheckedRunConfig> {
    check(parse(text, origin)?, origin)
}

/// Settles where the game is named: the top-level `game` and `rules`, or `[selfplay]`'s (the
/// old place, with a note), never both differently. The top-level keys are the game's home.
fn settle_game(config: &mut RunConfig, text: &str, origin: &str) -> anyhow::Result<()> {
    // Parsed once already: which keys the file wrote is what decides.
    let places: GamePlaces = toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?;
    let old = places.selfplay.unwrap_or_default();
    let (mut moved, mut again) = (Vec::new(), Vec::new());
    for (key, top, value) in
        [("game", &places.game, &old.game), ("rules", &places.rules, &old.rules)]
    {
        let Some(value) = value else { continue };
        // Compared as the game and the rule set read them (`Janggi` is `janggi`).
        let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
        match top {
            Some(top) if !same(top, value) => anyhow::bail!(
                "{origin}: {key} is named twice, '{top}' at the top of the file and '{value}' \
                 in [selfplay] (the old place): keep the top one"
            ),
            Some(_) => again.push(key),
            None => moved.push(format!("{key} = \"{}\"", value.trim())),
        }
    }
    if !moved.is_empty() {
        errln!(
            "note: {origin}: [selfplay] names the game, its old place; it loads as it is, but \
             write {} at the top of the file, before any section",
            moved.join(" and ")
        );
    }
    if !again.is_empty() {
        errln!(
            "note: {origin}: [selfplay] names {} again, as the top of the file does (the old \
             place): remove it from [selfplay]",
            again.join(" and ")
        );
    }
    if !moved.is_empty() || !again.is_empty() {
        if places.game.is_none() {
            config.game = config.selfplay.game;
        }
        if places.rules.is_none() {
            config.rules = config.selfplay.rules.clone();
        }
        // The top-level keys are the home; `RunConfig::check` fills [selfplay] from them.
        config.selfplay.game = config.game;
        config.selfplay.rules = config.rules.clone();
    }
    Ok(())
}

/// The settings as TOML (every key with its value; the game at the top, not in `[selfplay]`).
///
/// # Errors
/// If serialising fails (it does not for settings that passed their checks).
pub fn to_toml(config: &CheckedRunConfig) -> anyhow::Result<String> {
    toml::to_string(&config.to_unchecked()).context("serialising the resolved config")
}

/// Reads and parses a config file ([`parse`]; not checked yet).
///
/// # Errors
/// An unreadable file, or as [`parse`].
pub fn load(path: &Path) -> anyhow::Result<RunConfig> {
    let text = fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    if text.trim().is_empty() {
        errln!(
            "warning: config {} is empty: every key takes its built-in default (the defaults \
             of the config structs, not configs/cpu.toml)",
            path.display()
        );
    }
    parse(&text, &path.display().to_string())
}

/// [`load`], then [`check`].
///
/// # Errors
/// As those.
pub fn load_checked(path: &Path) -> anyhow::Result<CheckedRunConfig> {
    check(load(path)?, &path.display().to_string())
}

/// The settings that differ between two configs given as TOML text, such as a run's last
/// resolved `config.toml` and the config a `--resume` runs with: one `section.key: old -> new`
/// per key, sorted by key. A key absent from one side (the keys written only when set) reads
/// `(not set)` there.
///
/// # Errors
/// If either text is not TOML (`old_origin` names the first in the message).
pub fn changes(old: &str, old_origin: &str, new: &str) -> anyhow::Result<Vec<String>> {
    let old: toml::Table = old.parse().with_context(|| format!("{old_origin}: not TOML"))?;
    let new: toml::Table = new.parse().context("the new config: not TOML")?;
    let (mut before, mut after) = (Default::default(), Default::default());
    flatten("", &old, &mut before);
    flatten("", &new, &mut after);
    let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let show =
        |v: Option<&toml::Value>| v.map_or_else(|| "(not set)".to_string(), toml::Value::to_string);
    Ok(keys
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| format!("{k}: {} -> {}", show(before.get(k)), show(after.get(k))))
        .collect())
}

/// Every value of `table` under its dotted key (`loop.material_plies`), tables opened.
fn flatten(
    prefix: &str,
    table: &toml::Table,
    out: &mut std::collections::BTreeMap<String, toml::Value>,
) {
    for (key, value) in table {
        let key = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            toml::Value::Table(t) => flatten(&key, t, out),
            v => {
                out.insert(key, v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi_search::GameKind;

    #[test]
    fn sections_are_optional_and_checked() {
        let c = parse_checked("", "x.toml").unwrap();
        assert_eq!(c, RunConfig::default().check().unwrap());
        let c = parse_checked(
            "[search]\nsimulations = 8\ncheap_simulations = 2\n[network]\nblocks = 2\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(c.search().simulations, 8);
        assert_eq!(c.network().blocks, 2);
        let e = parse_checked("[loop]\nbatch_size = 0\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("loop.batch_size"), "{e}");
        let e = parse_checked("[network]\nfliters = 3\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("fliters"), "{e}");
        let e = parse_checked("[serach]\n", "x.toml").unwrap_err().to_string();
        assert!(e.starts_with("x.toml: ") && e.contains("serach"), "{e}");
        let e = parse_checked("[selfplay]\ngames = 3\n", "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("games"), "{e}");
        let e = parse_checked("[search]\nc_puct = 0\n", "x.toml").unwrap_err().to_string();
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
            let e = parse_checked(text, "x.toml").unwrap_err().to_string();
            assert!(e.starts_with("x.toml: ") && e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn the_game_is_named_at_the_top_and_the_old_place_still_loads() {
        let top = parse_checked("game = \"janggi\"\nrules = \"traditional\"\n", "x.toml").unwrap();
        assert_eq!(
            (top.game(), top.selfplay().rules.as_deref()),
            (GameKind::Janggi, Some("traditional"))
        );
        // Self-play reads the game from its section.
        assert_eq!(top.selfplay().game, GameKind::Janggi);
        assert_eq!(top.selfplay().rules.as_deref(), Some("traditional"));
        let old =
            parse_checked("[selfplay]\ngame = \"janggi\"\nrules = \"traditional\"\n", "x.toml")
                .unwrap();
        assert_eq!(old, top);
        // The same name in both places is no conflict; two different ones are.
        let both = "game = \"janggi\"\n[selfplay]\ngame = \"janggi\"\n";
        assert_eq!(parse_checked(both, "x.toml").unwrap().game(), GameKind::Janggi);
        let e = parse_checked("game = \"janggi\"\n[selfplay]\ngame = \"xiangqi\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml: game is named twice"), "{e}");
        // A rule set of the other game names the top-level key.
        let e = parse_checked("game = \"janggi\"\nrules = \"asian\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml: rules: 'asian' is no janggi rule set"), "{e}");
        // Written back, the game is at the top and [selfplay] does not name it.
        let text = to_toml(&top).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table["game"].as_str(), Some("janggi"));
        assert_eq!(table["rules"].as_str(), Some("traditional"));
        assert!(!table["selfplay"].as_table().unwrap().contains_key("game"), "{text}");
        assert_eq!(parse_checked(&text, "resolved").unwrap(), top);
    }

    #[test]
    fn the_shipped_configs_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        let mut n = 0;
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                load_checked(&path).unwrap();
                n += 1;
            }
        }
        assert!(n >= 1, "no config in {}", dir.display());
    }

    /// The changes between two configs are the keys whose values differ, by hand: a changed
    /// number, a key only one side sets, a changed string in a section; equal keys and key
    /// order do not count.
    #[test]
    fn changes_name_each_key_that_differs() {
        let old = "game = \"xiangqi\"\n[loop]\nmax_hours = 1.0\nbatch_size = 256\n[search]\nalgorithm = \"gumbel\"\n";
        let new = "game = \"xiangqi\"\n[search]\nalgorithm = \"puct\"\n[loop]\nbatch_size = 256\nmax_hours = 2.0\nmaterial_plies = 8\n";
        assert_eq!(
            changes(old, "run/config.toml", new).unwrap(),
            [
                "loop.material_plies: (not set) -> 8",
                "loop.max_hours: 1.0 -> 2.0",
                "search.algorithm: \"gumbel\" -> \"puct\"",
            ]
        );
        assert!(changes(new, "x", new).unwrap().is_empty());
        let e = changes("[loop\n", "run/config.toml", new).unwrap_err().to_string();
        assert!(e.contains("run/config.toml"), "{e}");
    }
}
