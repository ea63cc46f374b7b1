//! The neural network of xiangqi-zero, the only crate that knows burn: a residual tower with a
//! policy head over the action space and a win/draw/loss value head ([`Net`]), its folded
//! inference form and the search's evaluator over it ([`InferenceNet`], [`NnEvaluator`]), the
//! trainer ([`Trainer`]) and the checkpoint format ([`checkpoint`]).
//!
//! Inputs and outputs follow the environment view of the network's game (a network is for one
//! game: its shapes come from the game's [`xiangqi_search::Encoding`] at run time, so this crate
//! is compiled once for both games): `[B, 16, 10, 9]` input planes from the side to move,
//! policy logits over the game's actions (2166 for xiangqi, [`xiangqi::env`]; 2451 for janggi,
//! [`xiangqi::janggi::env`]), and WDL logits for the side to move; the evaluator's value is
//! `P(win) − P(loss)`.
//!
//! # Backends
//! One model definition runs on every burn device; only the device differs, chosen at run time
//! by name ([`device::DeviceSpec`]: `cpu`, `wgpu[:N]`, `cuda:N`). The CPU backend is burn's
//! pure-Rust `flex` ([`cpu_device`]), always built. The cargo feature `wgpu` (a default of the
//! `xqz` binary) adds burn's wgpu backend (Vulkan, Metal, DirectX 12), tested on Mesa's lavapipe;
//! `cuda` adds burn's CUDA backend, which cannot be built offline (burn 0.22's `cubecl-cuda`
//! depends on `cubecl-llvm`, whose build script downloads a prebuilt LLVM) and is untested.
//! Training needs an autodiff device (`device.autodiff()`, done by [`Trainer`]); inference runs
//! on the plain device. CPU threads are the global rayon pool's, which the binary configures.
//!
//! On the CPU, [`InferenceNet`] runs this crate's own kernels ([`kernels`]: AVX-512 or AVX2 +
//! FMA chosen at run time, no allocation per call) on parallel chunks of at most
//! [`infer::CPU_CHUNK`] positions; training runs the tower's 3 × 3 convolutions and its batch
//! norms, forward and backward, on the same kernels ([`train_ops`], a burn backend extension
//! that other devices run with burn's own operations); and `micro_batch = 64` in
//! [`TrainConfig`] makes training faster (ghost batch normalisation; see
//! [`TrainConfig::micro_batch`]).
//!
//! # Example
//! ```
//! use xiangqi::{Game, Position, RuleSet};
//! use xiangqi_nn::{InferenceNet, Net, NetConfig, NnEvaluator, cpu_device};
//! use xiangqi_search::{EvalBuffer, EvalRequest, Evaluator, SearchGame};
//!
//! let device = cpu_device();
//! let net = Net::new::<xiangqi::Game>(&NetConfig::tiny(), &device);
//! let mut evaluator = NnEvaluator::new(InferenceNet::from_net(&net, &device).unwrap());
//!
//! let game = Game::new(Position::start(), RuleSet::Asian);
//! let mut moves = Vec::new();
//! game.legal_moves_into(&mut moves);
//! let batch = [EvalRequest { game: &game, moves: &moves }];
//! let mut out = EvalBuffer::new();
//! out.prepare(&batch);
//! evaluator.evaluate(&batch, &mut out).unwrap();
//! let sum: f32 = out.priors(0).iter().sum();
//! assert!((sum - 1.0).abs() < 1e-4);
//! assert!((-1.0..=1.0).contains(&out.value(0)));
//! ```

pub mod batch;
pub mod checkpoint;
pub mod config;
pub mod device;
pub mod error;
pub mod export;
pub mod infer;
pub mod kernels;
pub mod model;
pub mod onnx;
pub mod optim;
pub mod train;
pub mod train_ops;

pub use burn::tensor::Device;
pub use checkpoint::{CheckpointError, Manifest};
pub use config::{ConfigError, GlobalKind, LrSchedule, NetConfig, OptimizerKind, TrainConfig};
pub use error::NnError;
pub use infer::{InferenceNet, InferencePath, Logits, NnEvaluator, Precision};
pub use model::{AuxiliaryOutput, MOVES_LEFT_SCALE, Net, NetOutput, WDL};
pub use train::{AuxiliaryTargets, StepMetrics, TrainBatch, Trainer};

/// The CPU device: burn's `flex` backend (multithreaded through the global rayon pool).
pub fn cpu_device() -> Device {
    Device::flex()
}
