//! The training loop of xiangqi-zero: self-play with the current network → replay shards → a
//! sliding replay window → optimizer steps → checkpoints → a periodic arena, resumable after a
//! kill at any moment ([`pipeline`]); and the hand-off between the trainer and any number of
//! self-play workers through an object store ([`distributed`]).
//!
//! It sits above every other library crate: the rules ([`xiangqi`]), the search, self-play,
//! replay shards and arena ([`xiangqi_search`]), the store of distributed runs
//! ([`xiangqi_store`]) and the network, its trainer and checkpoint format ([`xiangqi_nn`]). It
//! names no burn type of its own: the device comes from [`xiangqi_nn::Device`], chosen by the
//! caller. Only paths and a store given by the caller are written; the `xqz` binary decides
//! where they are.
//!
//! # Example
//! ```no_run
//! use std::path::Path;
//!
//! use xiangqi_nn::NetConfig;
//! use xiangqi_train::pipeline::{NoObserver, RunConfig, RunPaths, TrainingRun};
//!
//! // Settings as a config file holds them, checked once; the run takes the checked form.
//! let config = RunConfig { network: NetConfig::tiny(), ..RunConfig::default() }.check()?;
//! let paths = RunPaths::under(Path::new("runs/example"));
//! // Two iterations on the CPU; `TrainingRun::resume` continues from the newest checkpoint.
//! let mut run = TrainingRun::create(config, paths)?;
//! run.run(Some(2), &mut NoObserver)?;
//! # Ok::<(), xiangqi_train::pipeline::PipelineError>(())
//! ```

pub mod atomic;
pub mod distributed;
pub mod pipeline;
