//! Config files: TOML under `configs/`, one section per concern.
//!
//! | section | type | read by |
//! |---|---|---|
//! | `[search]` | [`SearchConfig`] | `xqz selfplay`, `xqz train` |
//! | `[selfplay]` | [`SelfPlayConfig`] | `xqz selfplay`, `xqz train` |
//! | `[network]` | [`NetConfig`] | `xqz train` |
//! | `[training]` | [`TrainConfig`] | `xqz train` |
//! | `[loop]` | [`LoopConfig`] | `xqz train` |
//!
//! Every section is optional and takes its defaults when absent. An unknown top-level table or
//! an unknown key inside a section is an error naming the file and the key; a bad value is an
//! error naming the file, the key and the reason.

use std::fs;
use std::path::Path;

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};
use xiangqi_nn::{NetConfig, TrainConfig};
use xiangqi_search::{SearchConfig, SelfPlayConfig};
use xiangqi_train::pipeline::{LoopConfig, RunConfig};

/// The built-in CPU default of `xqz train` (the same as `configs/cpu.toml`).
pub const BUILTIN_CPU: &str = include_str!("../../../configs/cpu.toml");

/// A whole config file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
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
        let config: ConfigFile = toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?;
        config.search.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.selfplay.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.network.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.training.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.run.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        config.run_config().validate().map_err(|e| anyhow!("{origin}: {e}"))?;
        Ok(config)
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
