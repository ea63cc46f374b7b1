//! Errors of inference and training (checkpoint errors are in [`crate::checkpoint`], config
//! errors in [`crate::config`]).

use thiserror::Error;

/// Why an evaluation or a training step failed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum NnError {
    /// The device could not produce or hand back a tensor.
    #[error("reading a tensor from the device failed: {0}")]
    Read(String),
    /// A move has no policy index (never the case for a legal move).
    #[error("move {mv} has no policy index: it is not a move any piece could play")]
    NoPolicyIndex {
        /// The move, in UCI notation.
        mv: String,
    },
    /// A batch of inputs or training samples is malformed.
    #[error("bad batch: {0}")]
    Batch(String),
    /// A training step produced a loss or gradient that is not finite.
    #[error("training step {step} diverged: {what} is {value}")]
    NotFinite {
        /// The optimizer step (from 0).
        step: u64,
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: f32,
    },
}
