//! The tower's 3 × 3 convolution and its batch normalisation in training mode as burn
//! operations with their own backward steps, so that training on the CPU runs them (forward and
//! every gradient) through this crate's kernels ([`crate::kernels`]) instead of burn's im2col
//! convolution and generic batch norm.
//!
//! [`board_conv3x3`] is what the model calls for every 3 × 3 convolution of the tower, and
//! [`board_batch_norm_train`] for every batch norm in training mode (`model::ConvBn`). Both are
//! a burn backend extension ([`BoardOps`]):
//! * on burn's CPU backend (`Flex`) they run the kernels (`board_conv3x3`,
//!   `board_conv3x3_input_grad`, `board_conv3x3_weight_grad`, `batch_norm_train` and
//!   `batch_norm_train_backward` of [`crate::kernels`]);
//! * on the GPU backends, and for shapes the kernels do not take, they are burn's own `conv2d`,
//!   `conv2d_x_backward`, `conv2d_weight_backward`, `batch_norm_train` and
//!   `batch_norm_train_backward`;
//! * under autodiff each records itself with a backward step that calls the inner backend's
//!   gradients.
//!
//! The results are burn's (`conv2d` with padding 1, stride 1, no bias; `batch_norm_train`) up to
//! the rounding of another summation order: the tests compare values and every gradient with
//! burn's within 1e-4.
//!
//! [`softmax_cross_entropy`] is the training losses' cross-entropy on burn's CPU backend
//! ([`LossOps`], `kernels::softmax_cross_entropy` and its gradient): one operation where
//! `log_softmax` and the products and sums around it are a dozen, each a pass over the
//! `[B, POLICY_SIZE]` logits. The training step writes the same sums with burn's operations on
//! the GPU backends. The tests compare the loss, the entropy and the gradient with those of
//! `log_softmax` within 1e-5.

use std::cell::Cell;

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::{ConvOptions, ModuleOps};
use burn::backend::tensor::FloatTensor;
use burn::backend::{
    Autodiff, AutodiffBackend, Backend, Dispatch, Flex, TensorMetadata, backend_extension,
};
use burn::tensor::{DType, Tensor, TensorData};
use xiangqi::env::{PLANE_FILES, PLANE_RANKS};

use crate::kernels;

/// Padding 1, stride 1, dilation 1, one group: the board keeps its size.
fn same() -> ConvOptions<2> {
    ConvOptions::new([1, 1], [1, 1], [1, 1], 1)
}

/// The board's 3 × 3 convolution and batch norm with their gradients, per backend (see the
/// module documentation). The default bodies are burn's operations.
#[backend_extension(Flex, Autodiff, Cube: cfg(any(feature = "wgpu", feature = "cuda")))]
pub trait BoardOps: Backend {
    /// `[B, in, H, W]` × `[out, in, 3, 3]` → `[B, out, H, W]`; with `bf16`, in bfloat16 with
    /// `f32` sums where the backend can (the CPU kernels on AMX).
    fn board_conv3x3(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bf16: bool,
    ) -> FloatTensor<Self> {
        let _ = bf16;
        Self::conv2d(x, weight, None, same())
    }

    /// The gradient with respect to `x` of [`BoardOps::board_conv3x3`], given the output's.
    fn board_conv3x3_x_backward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        bf16: bool,
    ) -> FloatTensor<Self> {
        let _ = bf16;
        Self::conv2d_x_backward(x, weight, grad, same())
    }

    /// The gradient with respect to `weight` of [`BoardOps::board_conv3x3`].
    fn board_conv3x3_weight_backward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        bf16: bool,
    ) -> FloatTensor<Self> {
        let _ = bf16;
        Self::conv2d_weight_backward(x, weight, grad, same())
    }

    /// Batch normalisation in training mode over `[B, C, H, W]`: `(output, mean, variance)`,
    /// the statistics per channel (`[C]`, the variance biased), as burn's `batch_norm_train`.
    fn board_batch_norm_train(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let r = Self::batch_norm_train(x, gamma, beta, epsilon);
        (r.output, r.mean, r.variance)
    }

    /// The gradients of [`BoardOps::board_batch_norm_train`] with respect to `x`, `gamma` and
    /// `beta`, given its output's gradient and its statistics.
    fn board_batch_norm_train_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        variance: FloatTensor<Self>,
        epsilon: f64,
        grad: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let r = Self::batch_norm_train_backward(x, gamma, mean, variance, epsilon, grad);
        (r.x_grad, r.gamma_grad, r.beta_grad)
    }
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl BoardOps for burn::backend::Cube {}

/// The shape of an `f32` tensor of rank `D`, or `None` for another dtype or rank.
fn dims<const D: usize>(t: &FlexTensor) -> Option<[usize; D]> {
    if t.dtype() != DType::F32 {
        return None;
    }
    t.shape().as_slice().try_into().ok()
}

/// A contiguous `f32` view of a tensor of rank `D`, with its shape, or `None` for another dtype
/// or rank.
fn host<const D: usize>(t: &FlexTensor) -> Option<(std::borrow::Cow<'_, [f32]>, [usize; D])> {
    let dims = dims::<D>(t)?;
    let data = match t.as_slice::<f32>() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(t.to_contiguous().as_slice::<f32>()?.to_vec()),
    };
    Some((data, dims))
}

/// Whether a convolution of `x` (`[n, cin, h, w]`) by `weight` is one the kernels run: the
/// board's size and a `[cout, cin, 3, 3]` kernel.
fn on_board(x: [usize; 4], weight: [usize; 4]) -> bool {
    x[2] == PLANE_RANKS && x[3] == PLANE_FILES && weight[1] == x[1] && weight[2..] == [3, 3]
}

/// Whether `x` is `[n, channels, 10, 9]`.
fn on_board_channels(x: [usize; 4], channels: usize) -> bool {
    x[1] == channels && x[2] == PLANE_RANKS && x[3] == PLANE_FILES
}

/// A contiguous `f32` copy of a tensor of rank 1, or `None` for another dtype or rank.
fn vector(t: &FlexTensor) -> Option<Vec<f32>> {
    host::<1>(t).map(|(data, _)| data.into_owned())
}

fn flex(data: Vec<f32>, dims: [usize; 4]) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(data, dims))
}

fn flex1(data: Vec<f32>) -> FlexTensor {
    let n = data.len();
    FlexTensor::from_data(TensorData::new(data, [n]))
}

impl BoardOps for Flex {
    fn board_conv3x3(x: FlexTensor, weight: FlexTensor, bf16: bool) -> FlexTensor {
        if let (Some((xs, xd)), Some((ws, wd))) = (host(&x), host(&weight))
            && on_board(xd, wd)
        {
            let y = kernels::board_conv3x3(&xs, &ws, xd[1], wd[0], bf16);
            return flex(y, [xd[0], wd[0], xd[2], xd[3]]);
        }
        Self::conv2d(x, weight, None, same())
    }

    fn board_conv3x3_x_backward(
        x: FlexTensor,
        weight: FlexTensor,
        grad: FlexTensor,
        bf16: bool,
    ) -> FlexTensor {
        if let (Some(xd), Some((ws, wd)), Some((gs, gd))) =
            (dims::<4>(&x), host(&weight), host(&grad))
            && on_board(xd, wd)
            && gd == [xd[0], wd[0], xd[2], xd[3]]
        {
            let dx = kernels::board_conv3x3_input_grad(&gs, &ws, wd[1], wd[0], bf16);
            return flex(dx, xd);
        }
        Self::conv2d_x_backward(x, weight, grad, same())
    }

    fn board_conv3x3_weight_backward(
        x: FlexTensor,
        weight: FlexTensor,
        grad: FlexTensor,
        bf16: bool,
    ) -> FlexTensor {
        if let (Some((xs, xd)), Some(wd), Some((gs, gd))) =
            (host(&x), dims::<4>(&weight), host(&grad))
            && on_board(xd, wd)
            && gd == [xd[0], wd[0], xd[2], xd[3]]
        {
            let dw = kernels::board_conv3x3_weight_grad(&xs, &gs, wd[1], wd[0], bf16);
            return flex(dw, wd);
        }
        Self::conv2d_weight_backward(x, weight, grad, same())
    }

    fn board_batch_norm_train(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        epsilon: f64,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if let (Some((xs, xd)), Some(g), Some(b)) = (host(&x), vector(&gamma), vector(&beta))
            && on_board_channels(xd, g.len())
            && b.len() == g.len()
        {
            let (out, mean, var) = kernels::batch_norm_train(&xs, &g, &b, epsilon);
            return (flex(out, xd), flex1(mean), flex1(var));
        }
        let r = Self::batch_norm_train(x, gamma, beta, epsilon);
        (r.output, r.mean, r.variance)
    }

    fn board_batch_norm_train_backward(
        x: FlexTensor,
        gamma: FlexTensor,
        mean: FlexTensor,
        variance: FlexTensor,
        epsilon: f64,
        grad: FlexTensor,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if let (Some((xs, xd)), Some(g), Some(mu), Some(var), Some((gs, gd))) =
            (host(&x), vector(&gamma), vector(&mean), vector(&variance), host(&grad))
            && on_board_channels(xd, g.len())
            && gd == xd
            && mu.len() == g.len()
            && var.len() == g.len()
        {
            let (dx, dg, db) = kernels::batch_norm_train_backward(&xs, &g, &mu, &var, epsilon, &gs);
            return (flex(dx, xd), flex1(dg), flex1(db));
        }
        let r = Self::batch_norm_train_backward(x, gamma, mean, variance, epsilon, grad);
        (r.x_grad, r.gamma_grad, r.beta_grad)
    }
}

/// The backward step of [`BoardOps::board_conv3x3`] under autodiff, in the forward pass's
/// precision.
#[derive(Debug)]
struct BoardConvBackward {
    bf16: bool,
}

impl<B: Backend + BoardOps> Backward<B, 2> for BoardConvBackward {
    type State = (NodeId, NodeId);

    fn backward(
        self,
        ops: Ops<Self::State, 2>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x, node_weight] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (x_state, weight_state) = ops.state;
        let x = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(x_state);
        let weight = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(weight_state);
        if let Some(node) = node_x {
            let dx =
                B::board_conv3x3_x_backward(x.clone(), weight.clone(), grad.clone(), self.bf16);
            grads.register::<B>(node.id, dx);
        }
        if let Some(node) = node_weight {
            let dw = B::board_conv3x3_weight_backward(x, weight, grad, self.bf16);
            grads.register::<B>(node.id, dw);
        }
    }
}

impl<B: Backend + BoardOps, C: CheckpointStrategy> BoardOps for Autodiff<B, C> {
    fn board_conv3x3(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bf16: bool,
    ) -> FloatTensor<Self> {
        let backward = BoardConvBackward { bf16 };
        match backward.prepare::<C>([x.node(), weight.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let x_state = prep.checkpoint(&x);
                let weight_state = prep.checkpoint(&weight);
                let y = B::board_conv3x3(x.into_primitive(), weight.into_primitive(), bf16);
                prep.finish((x_state, weight_state), y)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::board_conv3x3(x.into_primitive(), weight.into_primitive(), bf16))
            }
        }
    }

    fn board_batch_norm_train(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let nodes = [x.node(), gamma.node(), beta.node()];
        match BatchNormBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let x_state = prep.checkpoint(&x);
                let gamma_state = prep.checkpoint(&gamma);
                let (out, mean, var) = B::board_batch_norm_train(
                    x.into_primitive(),
                    gamma.into_primitive(),
                    beta.into_primitive(),
                    epsilon,
                );
                let state = (x_state, gamma_state, mean.clone(), var.clone(), epsilon);
                (prep.finish(state, out), Self::from_inner(mean), Self::from_inner(var))
            }
            OpsKind::UnTracked(prep) => {
                let (out, mean, var) = B::board_batch_norm_train(
                    x.into_primitive(),
                    gamma.into_primitive(),
                    beta.into_primitive(),
                    epsilon,
                );
                (prep.finish(out), Self::from_inner(mean), Self::from_inner(var))
            }
        }
    }
}

/// Batch normalisation in training mode (`x`: `[B, C, 10, 9]`, `gamma`, `beta`: `[C]`) on
/// whatever device `x` is: `(output, mean, variance)`, the statistics `[C]` and detached from
/// the graph (the variance biased), as burn's `batch_norm_train`.
pub fn board_batch_norm_train(
    x: Tensor<4>,
    gamma: Tensor<1>,
    beta: Tensor<1>,
    epsilon: f64,
) -> (Tensor<4>, Tensor<1>, Tensor<1>) {
    let (out, mean, var) = <Dispatch as BoardOps>::board_batch_norm_train(
        x.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
        epsilon,
    );
    (Tensor::from_dispatch(out), Tensor::from_dispatch(mean), Tensor::from_dispatch(var))
}

/// The backward step of [`BoardOps::board_batch_norm_train`] under autodiff: the input and
/// `gamma` are checkpointed, the statistics kept as the forward pass computed them.
#[derive(Debug)]
struct BatchNormBackward;

impl<B: Backend + BoardOps> Backward<B, 3> for BatchNormBackward {
    type State = (NodeId, NodeId, B::FloatTensorPrimitive, B::FloatTensorPrimitive, f64);

    fn backward(
        self,
        ops: Ops<Self::State, 3>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x, node_gamma, node_beta] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (x_state, gamma_state, mean, variance, epsilon) = ops.state;
        let x = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(x_state);
        let gamma = checkpointer.retrieve_node_output::<B::FloatTensorPrimitive>(gamma_state);
        let (dx, dgamma, dbeta) =
            B::board_batch_norm_train_backward(x, gamma, mean, variance, epsilon, grad);
        if let Some(node) = node_x {
            grads.register::<B>(node.id, dx);
        }
        if let Some(node) = node_gamma {
            grads.register::<B>(node.id, dgamma);
        }
        if let Some(node) = node_beta {
            grads.register::<B>(node.id, dbeta);
        }
    }
}

thread_local! {
    /// Whether this thread's tower convolutions run in bfloat16 ([`with_bf16_convolutions`]).
    static BF16: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the tower's 3 × 3 convolutions ([`board_conv3x3`]) in bfloat16 with `f32`
/// sums where `on` and the backend can (burn's CPU backend on a CPU with AMX), on this thread;
/// each convolution's backward step runs in the precision its forward pass had, on whichever
/// thread runs it. The training step sets it for `training.precision`.
pub fn with_bf16_convolutions<R>(on: bool, f: impl FnOnce() -> R) -> R {
    /// Restores the previous setting, also when `f` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            BF16.set(self.0);
        }
    }
    let _restore = Restore(BF16.replace(on));
    f()
}

/// Whether this thread's tower convolutions run in bfloat16 ([`with_bf16_convolutions`]).
pub(crate) fn bf16_convolutions() -> bool {
    BF16.get()
}

/// The 3 × 3 convolution with padding 1 and no bias of the tower, on whatever device `x` is
/// (see the module documentation); in bfloat16 inside [`with_bf16_convolutions`]`(true, …)` on
/// a CPU with AMX.
///
/// # Shapes
/// `x`: `[B, in, 10, 9]`, `weight`: `[out, in, 3, 3]` → `[B, out, 10, 9]`.
pub fn board_conv3x3(x: Tensor<4>, weight: Tensor<4>) -> Tensor<4> {
    Tensor::from_dispatch(<Dispatch as BoardOps>::board_conv3x3(
        x.into_dispatch(),
        weight.into_dispatch(),
        BF16.get(),
    ))
}

/// The training losses' softmax cross-entropy with its own backward step, on burn's CPU backend
/// ([`softmax_cross_entropy`]); the training step writes the loss with burn's operations on
/// other devices.
#[backend_extension(Flex, Autodiff)]
pub trait LossOps: Backend {
    /// `(loss, entropy, probabilities)` of rows of logits `[rows, width]` against target rows
    /// `[rows, width]` weighted per row (`weight`, `[rows]`): the loss `[1]` is
    /// `Σᵢ weightᵢ · Σⱼ targetᵢⱼ · −log softmax(zᵢ)ⱼ`, the entropy `[1]` the unweighted sum of
    /// the softmaxes' entropies, the probabilities `[rows, width]` the softmax itself. With
    /// `masked`, `zᵢ = logitsᵢ + (legalᵢ − 1) · 10⁹` (`legal` 1 or 0 per action, `[rows, width]`;
    /// a row with no allowed action is taken whole; the actions ruled out get probability 0
    /// even where the logits reach 10⁹); without, `zᵢ = logitsᵢ` and `legal` is
    /// not read.
    fn softmax_cross_entropy(
        logits: FloatTensor<Self>,
        target: FloatTensor<Self>,
        legal: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        masked: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);

    /// The gradient of [`LossOps::softmax_cross_entropy`]'s loss with respect to the logits,
    /// `[rows, width]`, given the loss's own gradient `grad` (`[1]`) and the probabilities the
    /// forward pass returned.
    fn softmax_cross_entropy_backward(
        probs: FloatTensor<Self>,
        target: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}

impl LossOps for Flex {
    fn softmax_cross_entropy(
        logits: FlexTensor,
        target: FlexTensor,
        legal: FlexTensor,
        weight: FlexTensor,
        masked: bool,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        let (z, dims) = host::<2>(&logits).expect("softmax_cross_entropy: f32 logits of rank 2");
        let (t, target_dims) =
            host::<2>(&target).expect("softmax_cross_entropy: f32 targets of rank 2");
        let w = vector(&weight).expect("softmax_cross_entropy: f32 weights of rank 1");
        assert!(
            target_dims == dims && w.len() == dims[0],
            "softmax_cross_entropy: logits {dims:?}, targets {target_dims:?}, {} weights",
            w.len()
        );
        let legal =
            masked.then(|| host::<2>(&legal).expect("softmax_cross_entropy: f32 mask of rank 2"));
        let (loss, entropy, probs) = kernels::softmax_cross_entropy(
            &z,
            &t,
            legal.as_ref().map(|(l, _)| &l[..]),
            &w,
            dims[1],
        );
        let probs = FlexTensor::from_data(TensorData::new(probs, dims));
        (flex1(vec![loss as f32]), flex1(vec![entropy as f32]), probs)
    }

    fn softmax_cross_entropy_backward(
        probs: FlexTensor,
        target: FlexTensor,
        weight: FlexTensor,
        grad: FlexTensor,
    ) -> FlexTensor {
        let (p, dims) = host::<2>(&probs).expect("softmax_cross_entropy_backward: probabilities");
        let (t, _) = host::<2>(&target).expect("softmax_cross_entropy_backward: targets");
        let w = vector(&weight).expect("softmax_cross_entropy_backward: weights");
        let scale = vector(&grad).expect("softmax_cross_entropy_backward: the loss's gradient");
        let g = kernels::softmax_cross_entropy_grad(&p, &t, &w, dims[1], scale[0]);
        FlexTensor::from_data(TensorData::new(g, dims))
    }
}

/// The backward step of [`LossOps::softmax_cross_entropy`] under autodiff: the probabilities,
/// targets and weights are kept from the forward pass.
#[derive(Debug)]
struct SoftmaxCrossEntropyBackward;

impl<B: Backend + LossOps> Backward<B, 1> for SoftmaxCrossEntropyBackward {
    type State = (B::FloatTensorPrimitive, B::FloatTensorPrimitive, B::FloatTensorPrimitive);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_logits] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (probs, target, weight) = ops.state;
        if let Some(node) = node_logits {
            let dz = B::softmax_cross_entropy_backward(probs, target, weight, grad);
            grads.register::<B>(node.id, dz);
        }
    }
}

impl<B: Backend + LossOps, C: CheckpointStrategy> LossOps for Autodiff<B, C> {
    fn softmax_cross_entropy(
        logits: FloatTensor<Self>,
        target: FloatTensor<Self>,
        legal: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        masked: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (target, legal, weight) =
            (target.into_primitive(), legal.into_primitive(), weight.into_primitive());
        match SoftmaxCrossEntropyBackward.prepare::<C>([logits.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (loss, entropy, probs) = B::softmax_cross_entropy(
                    logits.into_primitive(),
                    target.clone(),
                    legal,
                    weight.clone(),
                    masked,
                );
                let state = (probs.clone(), target, weight);
                (prep.finish(state, loss), Self::from_inner(entropy), Self::from_inner(probs))
            }
            OpsKind::UnTracked(prep) => {
                let (loss, entropy, probs) = B::softmax_cross_entropy(
                    logits.into_primitive(),
                    target,
                    legal,
                    weight,
                    masked,
                );
                (prep.finish(loss), Self::from_inner(entropy), Self::from_inner(probs))
            }
        }
    }

    fn softmax_cross_entropy_backward(
        probs: FloatTensor<Self>,
        target: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        Self::from_inner(B::softmax_cross_entropy_backward(
            probs.into_primitive(),
            target.into_primitive(),
            weight.into_primitive(),
            grad.into_primitive(),
        ))
    }
}

/// The softmax cross-entropy of the training losses on burn's CPU backend, in one pass per row
/// with a backward step of its own (`kernels::softmax_cross_entropy`): `(loss, entropy)`, the
/// loss `Σᵢ weightᵢ · Σⱼ targetᵢⱼ · −log softmax(zᵢ)ⱼ` (differentiable in `logits`), the
/// entropy the unweighted sum of the rows' softmax entropies (`[1]`, on the plain device).
/// With `legal`, `zᵢ = logitsᵢ + (legalᵢ − 1) · 10⁹`: actions ruled out (0) get probability 0,
/// as `log_softmax` of those logits gives them while the logits stay far below 10⁹ in magnitude
/// (beyond, where a diverging net's logits reach the offset, they still get exactly 0 here); a
/// row with none allowed is taken whole.
///
/// # Shapes
/// `logits`, `target`, `legal`: `[rows, width]`; `weight`: `[rows]` → `[1]`, `[1]`.
///
/// # Panics
/// On a device other than burn's CPU backend (with or without autodiff), or if the shapes do
/// not match.
pub fn softmax_cross_entropy(
    logits: Tensor<2>,
    target: Tensor<2>,
    legal: Option<Tensor<2>>,
    weight: Tensor<1>,
) -> (Tensor<1>, Tensor<1>) {
    let masked = legal.is_some();
    // Unread without the mask: any tensor of the batch's device stands in.
    let legal = legal.unwrap_or_else(|| target.clone());
    let (loss, entropy, _) = <Dispatch as LossOps>::softmax_cross_entropy(
        logits.into_dispatch(),
        target.into_dispatch(),
        legal.into_dispatch(),
        weight.into_dispatch(),
        masked,
    );
    let entropy: Tensor<1> = Tensor::from_dispatch(entropy);
    (Tensor::from_dispatch(loss), entropy.inner())
}

#[cfg(test)]
mod tests {
    use burn::tensor::module::conv2d;
    use burn::tensor::{Distribution, Tensor};

    use super::*;

    /// Equal within the rounding of two `f32` sums of `terms` products of unit size each, in
    /// different orders: the rounding of a running sum grows about as `ε · terms` (a random
    /// walk of `ε · √k` steps), so the bound is `(1 + |w|) · max(1e-4, 4 ε · terms)`. (1e-4
    /// alone failed about one run in 13 for weight gradients of 3,330 products, by 1.4e-4.) A
    /// wrong tap or channel is off by about the value itself, `√terms`.
    fn close(what: &str, got: Tensor<4>, want: Tensor<4>, terms: usize) {
        assert_eq!(got.dims(), want.dims(), "{what}: shape");
        let got = got.into_data().try_to_vec::<f32>().expect("f32");
        let want = want.into_data().try_to_vec::<f32>().expect("f32");
        let bound = (4.0 * f32::EPSILON * terms as f32).max(1e-4);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= bound * (1.0 + w.abs()), "{what}[{k}]: {g} vs burn's {w}");
        }
    }

    /// The value and both gradients equal burn's `conv2d` with padding 1, for channel counts
    /// with partial SIMD vectors and several strips, batches of one and of several chunks.
    #[test]
    fn the_board_convolution_and_its_gradients_are_burns() {
        let device = crate::cpu_device().autodiff();
        for (n, cin, cout) in [(1, 16, 24), (3, 5, 3), (37, 24, 24), (19, 40, 64), (2, 64, 70)] {
            let what = format!("n {n}, {cin} → {cout} channels");
            let x = Tensor::<4>::random([n, cin, 10, 9], Distribution::Normal(0.0, 1.0), &device);
            let w = Tensor::<4>::random([cout, cin, 3, 3], Distribution::Normal(0.0, 0.3), &device);
            // A loss whose gradient differs at every output: Σ y · r.
            let r = Tensor::<4>::random([n, cout, 10, 9], Distribution::Normal(0.0, 1.0), &device);

            let (x1, w1) = (x.clone().require_grad(), w.clone().require_grad());
            let ours = board_conv3x3(x1.clone(), w1.clone());
            let grads = (ours.clone() * r.clone()).sum().backward();
            let (dx1, dw1) = (x1.grad(&grads).expect("dx"), w1.grad(&grads).expect("dw"));

            let (x2, w2) = (x.require_grad(), w.require_grad());
            let theirs = conv2d(x2.clone(), w2.clone(), None, same());
            let grads = (theirs.clone() * r).sum().backward();
            let (dx2, dw2) = (x2.grad(&grads).expect("dx"), w2.grad(&grads).expect("dw"));

            // Each output sums 9 · cin products, each input gradient 9 · cout, each weight
            // gradient one per board point of the batch.
            close(&format!("{what}: output"), ours, theirs, 9 * cin);
            close(&format!("{what}: input gradient"), dx1, dx2, 9 * cout);
            close(&format!("{what}: weight gradient"), dw1, dw2, n * 90);
        }
    }

    /// Inside `with_bf16_convolutions(true, …)` on a CPU with AMX: the value and both gradients
    /// within bfloat16's rounding of burn's `conv2d` (the largest difference under 2% of the
    /// values' root mean square; a wrong tap is of the order of 100%), and not the `f32`
    /// kernels' bit for bit, the gradients included although `backward` runs after the closure
    /// (each convolution's backward step keeps its forward pass's precision).
    #[test]
    fn the_bfloat16_board_convolution_and_its_gradients_are_burns_to_bfloat16_rounding() {
        if !crate::kernels::bf16_training_available() {
            eprintln!("skipped: this CPU has no AMX with bfloat16");
            return;
        }
        fn near(what: &str, got: Tensor<4>, want: Tensor<4>, f32_kernels: Tensor<4>) {
            assert_eq!(got.dims(), want.dims(), "{what}: shape");
            let got = got.into_data().try_to_vec::<f32>().expect("f32");
            let want = want.into_data().try_to_vec::<f32>().expect("f32");
            let ours = f32_kernels.into_data().try_to_vec::<f32>().expect("f32");
            let rms = (want.iter().map(|&w| f64::from(w).powi(2)).sum::<f64>() / want.len() as f64)
                .sqrt();
            let worst =
                got.iter().zip(&want).map(|(&g, &w)| f64::from(g - w).abs()).fold(0.0, f64::max);
            assert!(worst < 0.02 * rms, "{what}: {worst} against a root mean square of {rms}");
            assert_ne!(got, ours, "{what}: the f32 kernels' values bit for bit");
        }
        let device = crate::cpu_device().autodiff();
        for (n, cin, cout) in [(1, 16, 24), (37, 24, 24), (19, 40, 64), (2, 64, 70), (5, 23, 24)] {
            let what = format!("n {n}, {cin} → {cout} channels");
            let x = Tensor::<4>::random([n, cin, 10, 9], Distribution::Normal(0.0, 1.0), &device);
            let w = Tensor::<4>::random([cout, cin, 3, 3], Distribution::Normal(0.0, 0.3), &device);
            let r = Tensor::<4>::random([n, cout, 10, 9], Distribution::Normal(0.0, 1.0), &device);
            let grads_of = |bf16: bool| {
                let (x, w) = (x.clone().require_grad(), w.clone().require_grad());
                let y = with_bf16_convolutions(bf16, || board_conv3x3(x.clone(), w.clone()));
                let grads = (y.clone() * r.clone()).sum().backward();
                (y, x.grad(&grads).expect("dx"), w.grad(&grads).expect("dw"))
            };
            let (y1, dx1, dw1) = grads_of(true);
            let (y0, dx0, dw0) = grads_of(false);
            let (x2, w2) = (x.clone().require_grad(), w.clone().require_grad());
            let theirs = conv2d(x2.clone(), w2.clone(), None, same());
            let grads = (theirs.clone() * r).sum().backward();
            let (dx2, dw2) = (x2.grad(&grads).expect("dx"), w2.grad(&grads).expect("dw"));
            near(&format!("{what}: output"), y1, theirs, y0);
            near(&format!("{what}: input gradient"), dx1, dx2, dx0);
            near(&format!("{what}: weight gradient"), dw1, dw2, dw0);
        }
    }

    /// Batch normalisation in training mode: the output, the statistics and the gradients of
    /// `x`, `gamma` and `beta` equal burn's `batch_norm_train`, for a batch of one and of several
    /// chunks, on values far from zero mean (the variance is taken about the mean).
    #[test]
    fn batch_norm_and_its_gradients_are_burns() {
        use burn::tensor::module::batch_norm_train;
        let device = crate::cpu_device().autodiff();
        for (n, c) in [(1, 3), (37, 24), (5, 64)] {
            let what = format!("n {n}, {c} channels");
            let x = Tensor::<4>::random([n, c, 10, 9], Distribution::Normal(3.0, 2.0), &device);
            let gamma = Tensor::<1>::random([c], Distribution::Normal(1.0, 0.5), &device);
            let beta = Tensor::<1>::random([c], Distribution::Normal(0.0, 0.5), &device);
            let r = Tensor::<4>::random([n, c, 10, 9], Distribution::Normal(0.0, 1.0), &device);

            let (x1, g1, b1) = (
                x.clone().require_grad(),
                gamma.clone().require_grad(),
                beta.clone().require_grad(),
            );
            let (ours, mean1, var1) =
                board_batch_norm_train(x1.clone(), g1.clone(), b1.clone(), 1e-5);
            let grads = (ours.clone() * r.clone()).sum().backward();
            let (dx1, dg1, db1) = (
                x1.grad(&grads).expect("dx"),
                g1.grad(&grads).expect("dg"),
                b1.grad(&grads).expect("db"),
            );

            let (x2, g2, b2) = (x.require_grad(), gamma.require_grad(), beta.require_grad());
            let theirs = batch_norm_train(x2.clone(), g2.clone(), b2.clone(), 1e-5);
            let grads = (theirs.output.clone() * r).sum().backward();
            let (dx2, dg2, db2) = (
                x2.grad(&grads).expect("dx"),
                g2.grad(&grads).expect("dg"),
                b2.grad(&grads).expect("db"),
            );

            // The statistics and the parameters' gradients sum one term per board point of the
            // batch, and the output and the input gradient are made of them.
            let terms = n * 90;
            close(&format!("{what}: output"), ours, theirs.output, terms);
            close(&format!("{what}: input gradient"), dx1, dx2, terms);
            let v = |t: Tensor<1>| t.reshape([1, 1, 1, -1]);
            close(&format!("{what}: mean"), v(mean1), v(theirs.mean), terms);
            close(&format!("{what}: variance"), v(var1), v(theirs.variance), terms);
            close(&format!("{what}: gamma gradient"), v(dg1), v(dg2), terms);
            close(&format!("{what}: beta gradient"), v(db1), v(db2), terms);
        }
    }

    /// The fused cross-entropy: its loss, entropy and logit gradient equal the same sums
    /// written with burn's `log_softmax` (the masked logits offset by 10⁹), for the policy's
    /// width with and without the mask and for the value's three outcomes, in batches of one
    /// task and of several.
    #[test]
    fn the_fused_cross_entropy_is_burns_log_softmax() {
        use burn::tensor::activation::log_softmax;
        let device = crate::cpu_device().autodiff();
        for (rows, width, masked) in
            [(37, 2166, true), (37, 2166, false), (5, 3, false), (1, 90, true)]
        {
            let what = format!("{rows} x {width}, masked {masked}");
            let logits =
                Tensor::<2>::random([rows, width], Distribution::Normal(0.0, 3.0), &device);
            let legal =
                Tensor::<2>::random([rows, width], Distribution::Uniform(0.0, 1.0), &device)
                    .lower_elem(0.1)
                    .float();
            // Targets on allowed actions: a softmax of other logits, times the mask.
            let raw = Tensor::<2>::random([rows, width], Distribution::Normal(0.0, 1.0), &device);
            let mut target = burn::tensor::activation::softmax(raw, 1);
            if masked {
                target = target * legal.clone();
            }
            let weight = Tensor::<1>::random([rows], Distribution::Uniform(0.0, 2.0), &device);
            // A loss with a factor, so that the gradient's scale is checked too.
            let ours_logits = logits.clone().require_grad();
            let (ours, entropy) = softmax_cross_entropy(
                ours_logits.clone(),
                target.clone(),
                masked.then(|| legal.clone()),
                weight.clone(),
            );
            let grads = ours.clone().mul_scalar(0.3).backward();
            let ours_grad = ours_logits.grad(&grads).expect("the logits' gradient");

            let theirs_logits = logits.require_grad();
            let z = if masked {
                theirs_logits.clone() + legal.sub_scalar(1.0).mul_scalar(1e9)
            } else {
                theirs_logits.clone()
            };
            let log_p = log_softmax(z, 1);
            let theirs =
                ((target * log_p.clone()).sum_dim(1) * weight.reshape([rows, 1])).sum().neg();
            let grads = theirs.clone().mul_scalar(0.3).backward();
            let theirs_grad = theirs_logits.grad(&grads).expect("the logits' gradient");
            let log_p = log_p.inner();
            let theirs_entropy = (log_p.clone().exp() * log_p).sum().neg();

            let scalar = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().expect("f32")[0];
            let (a, b) = (scalar(ours.inner()), scalar(theirs.inner()));
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{what}: loss {a} vs burn's {b}");
            let (a, b) = (scalar(entropy), scalar(theirs_entropy));
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{what}: entropy {a} vs burn's {b}");
            let v = |t: Tensor<2>| t.reshape([1, 1, rows, width]);
            close(&format!("{what}: logit gradient"), v(ours_grad), v(theirs_grad), 1);
        }
    }

    /// Shapes the kernels do not take (another board size, a 1 × 1 kernel) fall back to burn.
    #[test]
    fn other_shapes_fall_back_to_burns_convolution() {
        let device = crate::cpu_device();
        let x = Tensor::<4>::random([2, 4, 7, 5], Distribution::Normal(0.0, 1.0), &device);
        let w = Tensor::<4>::random([6, 4, 3, 3], Distribution::Normal(0.0, 0.3), &device);
        let theirs = conv2d(x.clone(), w.clone(), None, same());
        close("7 × 5 board", board_conv3x3(x, w), theirs, 9 * 4);
    }
}
