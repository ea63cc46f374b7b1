//! Loading a network for play (`xqz uci --net`, arena players): a checkpoint directory of
//! `xqz train` (`runs/NAME/checkpoints/ckpt-NNNNNN`), evaluated on the CPU backend.

use std::path::Path;

use anyhow::Context;
use xiangqi::Game;
use xiangqi_nn::{InferenceNet, NnError, NnEvaluator, checkpoint, cpu_device};
use xiangqi_search::{EvalBuffer, EvalRequest, Evaluator, UniformEvaluator};

/// Loads the network of a checkpoint directory as an evaluator.
pub fn load(path: &Path) -> anyhow::Result<NnEvaluator> {
    let device = cpu_device();
    let (net, _) = checkpoint::load_net(path, None, &device)
        .with_context(|| format!("cannot load the network '{}'", path.display()))?;
    let net = InferenceNet::from_net(&net, &device)
        .with_context(|| format!("cannot prepare the network '{}'", path.display()))?;
    Ok(NnEvaluator::new(net))
}

/// Either evaluator, so that players and the engine have one type whether or not a network is
/// given.
pub enum AnyEvaluator {
    /// Uniform priors, value 0.
    Uniform(UniformEvaluator),
    /// A network.
    Net(Box<NnEvaluator>),
}

impl AnyEvaluator {
    /// The network at `path`, or the uniform evaluator if there is none.
    pub fn load_optional(path: Option<&Path>) -> anyhow::Result<AnyEvaluator> {
        Ok(match path {
            Some(p) => AnyEvaluator::Net(Box::new(load(p)?)),
            None => AnyEvaluator::Uniform(UniformEvaluator),
        })
    }
}

impl Evaluator<Game> for AnyEvaluator {
    type Error = NnError;

    fn evaluate(
        &mut self,
        batch: &[EvalRequest<'_, Game>],
        out: &mut EvalBuffer,
    ) -> Result<(), Self::Error> {
        match self {
            AnyEvaluator::Uniform(e) => e.evaluate(batch, out).map_err(|e| match e {}),
            AnyEvaluator::Net(e) => e.evaluate(batch, out),
        }
    }
}
