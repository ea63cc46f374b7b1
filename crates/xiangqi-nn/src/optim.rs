//! AdamW's step in one pass over each parameter on the CPU.
//!
//! burn's `AdamW` (Loshchilov and Hutter, "Decoupled Weight Decay Regularization", ICLR 2019;
//! Adam's moments and bias correction from Kingma and Ba, 2015) writes a parameter's update as
//! about fifteen tensor operations, each a pass over the parameter's values. The main job's net
//! trains about 820,000 parameters, most of them in the policy and opponent-reply layers; with
//! this module and two other changes its training step runs 1.10 times as fast
//! (`experiments/2026-12-07-training-step-passes/`).
//!
//! [`FusedAdamW`] computes the same values in one pass over the parameter, its gradient and its
//! two moments, where all of them are `f32` tensors on burn's CPU backend: the same `f32`
//! operations in the same order, element by element, so the results are burn's bit for bit (the
//! tests compare them). Anywhere else (the GPU backends, another dtype, AMSGrad's state) it is
//! burn's `AdamW`. Its state is burn's [`AdamWState`], so an optimizer state saved with either
//! loads into the other.
//!
//! For each element, with `t` the step (from 1), `g` the gradient and `lr` the learning rate:
//! ```text
//! m ← β₁·m + (1 − β₁)·g        (at t = 1: (1 − β₁)·g)
//! v ← β₂·v + (1 − β₂)·g²       (at t = 1: (1 − β₂)·g²)
//! θ ← θ·(1 − lr·λ) − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)
//! ```
//! where `λ` is the weight decay (the factor `1 − lr·λ` is left out when `lr·λ` is 0).

use burn::optim::{AdamW, AdamWConfig, AdamWState, AdaptiveMomentumState, LearningRate, Optimizer};
use burn::tensor::{DType, Device, Tensor, TensorData};
use rayon::prelude::*;

/// Elements one rayon task updates: large parameters are split across the pool's threads.
const CHUNK: usize = 1 << 15;

/// AdamW with burn's arithmetic, in one pass per parameter on the CPU (see the
/// [module documentation](self)).
#[derive(Clone)]
pub struct FusedAdamW {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: f32,
    /// burn's `AdamW` with the same settings, for tensors the fused step does not take.
    burn: AdamW,
}

impl FusedAdamW {
    /// AdamW with moment decays `beta_1` and `beta_2`, `epsilon` added to the root of the second
    /// moment, and decoupled weight decay `weight_decay` (per unit of learning rate); no AMSGrad.
    pub fn new(beta_1: f32, beta_2: f32, epsilon: f32, weight_decay: f32) -> FusedAdamW {
        let burn = AdamWConfig::new()
            .with_beta_1(beta_1)
            .with_beta_2(beta_2)
            .with_epsilon(epsilon)
            .with_weight_decay(weight_decay)
            .build();
        FusedAdamW { beta_1, beta_2, epsilon, weight_decay, burn }
    }
}

/// The step's scalars, each as burn's tensor operations round it to `f32`.
#[derive(Clone, Copy)]
struct Coefficients {
    beta_1: f32,
    beta_2: f32,
    /// `1 − β₁`, `1 − β₂`.
    rest_1: f32,
    rest_2: f32,
    /// The bias corrections `1 − β₁ᵗ`, `1 − β₂ᵗ`.
    correct_1: f32,
    correct_2: f32,
    epsilon: f32,
    /// `1 − lr·λ`, or `None` when `lr·λ` is 0.
    keep: Option<f32>,
    lr: f32,
    /// Whether this is the first step (no moments yet).
    first: bool,
}

/// One parameter's update in place (see the [module documentation](self)); `param`, `grad`,
/// `m` and `v` have the same length.
fn update(param: &mut [f32], grad: &[f32], m: &mut [f32], v: &mut [f32], c: Coefficients) {
    for (((p, &g), m), v) in param.iter_mut().zip(grad).zip(m.iter_mut()).zip(v.iter_mut()) {
        let (m1, v1) = if c.first {
            (g * c.rest_1, (g * g) * c.rest_2)
        } else {
            (*m * c.beta_1 + g * c.rest_1, *v * c.beta_2 + (g * g) * c.rest_2)
        };
        *m = m1;
        *v = v1;
        let delta = (m1 / c.correct_1) / ((v1 / c.correct_2).sqrt() + c.epsilon);
        let decayed = match c.keep {
            Some(k) => *p * k,
            None => *p,
        };
        *p = decayed - delta * c.lr;
    }
}

/// Whether `t` is an `f32` tensor on burn's CPU backend.
fn on_cpu<const D: usize>(t: &Tensor<D>) -> bool {
    t.dtype() == DType::F32 && t.device() == Device::flex()
}

/// The values of a tensor that [`on_cpu`] accepted; a unique tensor (the moments, usually) gives
/// up its buffer without a copy.
///
/// # Panics
/// If the tensor's data is not `f32`, which [`on_cpu`] rules out.
fn f32_values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_into_vec::<f32>().expect("an f32 tensor's data is f32")
}

impl Optimizer for FusedAdamW {
    type State<const D: usize> = AdamWState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<AdamWState<D>>,
    ) -> (Tensor<D>, Option<AdamWState<D>>) {
        let dims = tensor.dims();
        let fused = on_cpu(&tensor)
            && on_cpu(&grad)
            && grad.dims() == dims
            && state.as_ref().is_none_or(|s| {
                let m = &s.momentum;
                m.max_moment_2.is_none()
                    && on_cpu(&m.moment_1)
                    && on_cpu(&m.moment_2)
                    && m.moment_1.dims() == dims
                    && m.moment_2.dims() == dims
            });
        if !fused {
            return self.burn.step(lr, tensor, grad, state);
        }
        let device = tensor.device();
        let shape = tensor.shape();
        let n = shape.num_elements();
        let (time, moments) = match state {
            Some(s) => (s.momentum.time + 1, Some((s.momentum.moment_1, s.momentum.moment_2))),
            None => (1, None),
        };
        let (mut param, g) = (f32_values(tensor), f32_values(grad));
        let (mut m, mut v) = match moments {
            Some((m, v)) => (f32_values(m), f32_values(v)),
            None => (vec![0.0; n], vec![0.0; n]),
        };
        // The scalars as burn's operations round them: f64 to f32, the corrections in f32.
        let decay_rate = lr * f64::from(self.weight_decay);
        let exponent = i32::try_from(time).unwrap_or(i32::MAX);
        let c = Coefficients {
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            rest_1: 1.0 - self.beta_1,
            rest_2: 1.0 - self.beta_2,
            correct_1: 1.0 - self.beta_1.powi(exponent),
            correct_2: 1.0 - self.beta_2.powi(exponent),
            epsilon: self.epsilon,
            keep: (decay_rate != 0.0).then_some((1.0 - decay_rate) as f32),
            lr: lr as f32,
            first: time == 1,
        };
        param
            .par_chunks_mut(CHUNK)
            .zip(g.par_chunks(CHUNK))
            .zip(m.par_chunks_mut(CHUNK))
            .zip(v.par_chunks_mut(CHUNK))
            .for_each(|(((p, g), m), v)| update(p, g, m, v, c));
        let tensor = |values: Vec<f32>| {
            Tensor::<D>::from_data(TensorData::new(values, shape.clone()), &device)
        };
        let momentum = AdaptiveMomentumState {
            time,
            moment_1: tensor(m),
            moment_2: tensor(v),
            max_moment_2: None,
        };
        (tensor(param), Some(AdamWState { momentum }))
    }

    fn to_device<const D: usize>(state: AdamWState<D>, device: &Device) -> AdamWState<D> {
        <AdamW as Optimizer>::to_device(state, device)
    }
}

#[cfg(test)]
mod tests {
    use burn::nn::{Linear, LinearConfig};
    use burn::optim::{GradientsParams, ModuleOptimizer};
    use burn::tensor::Distribution;

    use super::*;

    fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_into_vec::<f32>().unwrap()
    }

    /// The fused step against burn's `AdamW`, parameter by parameter: equal bit for bit over
    /// steps with changing learning rates, with and without decay, on small parameters and on
    /// one split across rayon tasks (rank 1 here; ranks 1 and 2 through whole modules below).
    #[test]
    fn the_fused_step_is_burns_adamw_bit_for_bit() {
        let dev = Device::flex();
        for wd in [0.0f32, 1e-4, 0.3] {
            let ours = FusedAdamW::new(0.9, 0.999, 1e-5, wd);
            let burns = AdamWConfig::new()
                .with_beta_1(0.9)
                .with_beta_2(0.999)
                .with_epsilon(1e-5)
                .with_weight_decay(wd)
                .build();
            let check = |n: usize| {
                let mut a = Tensor::<1>::random([n], Distribution::Normal(0.0, 1.0), &dev);
                let mut b = a.clone();
                let (mut sa, mut sb) = (None, None);
                for (step, lr) in [2e-3, 2e-3, 5e-4, 0.1, 1e-6, 0.0].into_iter().enumerate() {
                    // Gradients of every scale, zeros and negative zeros among them.
                    let scale = [1.0, 1e-6, 30.0, 1.0, 1e-3, 1.0][step];
                    let g = Tensor::<1>::random([n], Distribution::Normal(0.0, scale), &dev)
                        .mask_fill(
                            Tensor::<1>::random([n], Distribution::Uniform(0.0, 1.0), &dev)
                                .lower_elem(0.1),
                            if step % 2 == 0 { 0.0 } else { -0.0 },
                        );
                    let (na, nsa) = ours.step(lr, a, g.clone(), sa);
                    let (nb, nsb) = burns.step(lr, b, g, sb);
                    let (x, y) = (host(na.clone()), host(nb.clone()));
                    let differ = x.iter().zip(&y).filter(|(p, q)| p.to_bits() != q.to_bits());
                    assert_eq!(differ.count(), 0, "n {n}, wd {wd}, step {step}: parameters");
                    let (s1, s2): (AdamWState<1>, AdamWState<1>) = (nsa.unwrap(), nsb.unwrap());
                    assert_eq!(s1.momentum.time, s2.momentum.time);
                    for (u, w) in [
                        (&s1.momentum.moment_1, &s2.momentum.moment_1),
                        (&s1.momentum.moment_2, &s2.momentum.moment_2),
                    ] {
                        let (u, w) = (host(u.clone()), host(w.clone()));
                        assert!(u.iter().zip(&w).all(|(p, q)| p.to_bits() == q.to_bits()));
                    }
                    (a, b, sa, sb) = (na, nb, Some(s1), Some(s2));
                }
            };
            for n in [1, 7, 3 * CHUNK + 5] {
                check(n);
            }
        }
    }

    fn grads(model: &Linear, x: &Tensor<2>, scale: f32) -> GradientsParams {
        let y = model.forward(x.clone());
        GradientsParams::from_grads((y.clone() * y).sum().mul_scalar(scale).backward(), model)
    }

    /// Whole modules: the same steps through `ModuleOptimizer` (rank-2 weights with decay in a
    /// group of their own, as the trainer builds it) give burn's parameters, and a state saved by
    /// one optimizer continues in the other.
    #[test]
    fn module_steps_and_saved_states_match_burns_adamw() {
        let dev = Device::flex().autodiff();
        let model0 = LinearConfig::new(6, 5).init(&dev);
        let x = Tensor::<2>::random([4, 6], Distribution::Normal(0.0, 1.0), &dev);
        let fused = || {
            let ids = burn::module::ParamGroup::from_ids(vec![model0.weight.id]);
            ModuleOptimizer::from(FusedAdamW::new(0.9, 0.99, 1e-8, 0.0)).with_group(
                ids,
                FusedAdamW::new(0.9, 0.99, 1e-8, 0.01),
                None,
            )
        };
        let burns = || {
            let ids = burn::module::ParamGroup::from_ids(vec![model0.weight.id]);
            let c =
                |wd| AdamWConfig::new().with_beta_2(0.99).with_epsilon(1e-8).with_weight_decay(wd);
            c(0.0).init().with_group(ids, c(0.01).build(), None)
        };
        let weights = |m: &Linear| {
            [host(m.weight.val().inner()), host(m.bias.as_ref().unwrap().val().inner())]
        };
        let (mut a, mut b) = (fused(), burns());
        let (mut ma, mut mb) = (model0.clone(), model0.clone());
        for (step, lr) in [0.01, 0.02, 0.005].into_iter().enumerate() {
            let scale = 1.0 + step as f32;
            ma = a.step(lr, ma.clone(), grads(&ma, &x, scale));
            mb = b.step(lr, mb.clone(), grads(&mb, &x, scale));
            assert_eq!(weights(&ma), weights(&mb), "step {step}");
            assert_ne!(weights(&ma), weights(&model0), "the step moved the weights");
        }
        // Each state saved and loaded into the other kind, then one more step of each: equal
        // to burn's own next step, and unlike a fresh optimizer's (the moments carried over).
        let g = grads(&ma, &x, 1.0);
        let mut a_in_burns = burns().from_bytes(a.into_bytes().unwrap()).unwrap();
        let mut b_in_fused = fused().from_bytes(b.into_bytes().unwrap()).unwrap();
        let reference = weights(&b.step(0.01, mb.clone(), g));
        for (what, o) in
            [("fused into burn's", &mut a_in_burns), ("burn's into fused", &mut b_in_fused)]
        {
            let next = o.step(0.01, ma.clone(), grads(&ma, &x, 1.0));
            assert_eq!(weights(&next), reference, "{what}");
        }
        let fresh = fused().step(0.01, ma.clone(), grads(&ma, &x, 1.0));
        assert_ne!(weights(&fresh), reference);
    }
}
