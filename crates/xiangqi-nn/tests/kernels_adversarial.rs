//! Adversarial checks of the CPU kernels against burn's folded forward pass (temporary).

mod common;
use common::real_planes;
use xiangqi::Game;
use xiangqi_nn::{
    GlobalKind, InferenceNet, InferencePath, Logits, Net, NetConfig, NnError, Precision,
    TrainBatch, TrainConfig, Trainer, cpu_device,
};
use xiangqi_search::{Encoding, GameEnv, SearchGame};

type Janggi = xiangqi::janggi::Game;

fn no_warmup() -> TrainConfig {
    TrainConfig { warmup_steps: 0, ..TrainConfig::default() }
}

fn planes_of(encoding: Encoding, n: usize, seed: u64) -> Vec<f32> {
    if encoding.policy_size == Encoding::of::<Game>().policy_size {
        real_planes::<Game>(n, seed)
    } else {
        real_planes::<Janggi>(n, seed)
    }
}

fn noise(n: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            lo + (hi - lo) * (s as f32 / u32::MAX as f32)
        })
        .collect()
}

/// A net of `config` for `encoding` after `steps` optimizer steps (so the folded batch norms are
/// not the identity).
fn trained(config: &NetConfig, encoding: Encoding, steps: usize, seed: u64) -> InferenceNet {
    let device = cpu_device();
    let mut trainer = Trainer::for_encoding(config, encoding, &no_warmup(), &device, seed).unwrap();
    let planes = planes_of(encoding, 8, seed);
    let mut b = TrainBatch::for_encoding(encoding, 8);
    for (j, p) in planes.chunks_exact(encoding.input_size()).enumerate() {
        let mut policy = vec![0.0; encoding.policy_size];
        policy[(j * 131 + 7) % encoding.policy_size] = 1.0;
        b.push(p, &policy, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]][j % 2], true);
    }
    for _ in 0..steps {
        trainer.step(&b).unwrap();
    }
    let net = trainer.inference_net(&device).unwrap();
    assert_eq!(net.path(), InferencePath::Kernels);
    net
}

fn compare(k: &Logits, e: &Logits, what: &str) {
    assert_eq!(
        (k.batch, k.policy_size, k.policy.len(), k.wdl.len()),
        (e.batch, e.policy_size, e.policy.len(), e.wdl.len()),
        "{what}: shapes"
    );
    let scale =
        e.policy.iter().chain(&e.wdl).filter(|v| v.is_finite()).fold(1.0f32, |m, v| m.max(v.abs()));
    for (name, a, b) in [("policy", &k.policy, &e.policy), ("wdl", &k.wdl, &e.wdl)] {
        for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            assert_eq!(
                x.is_nan(),
                y.is_nan(),
                "{what}: {name}[{i}] NaN-ness differs: kernels {x}, backend {y}"
            );
            if x.is_nan() {
                continue;
            }
            if x.is_infinite() || y.is_infinite() {
                assert_eq!(x, y, "{what}: {name}[{i}]: kernels {x}, backend {y}");
                continue;
            }
            assert!(
                (x - y).abs() <= 1e-4 * scale,
                "{what}: {name}[{i}]: kernels {x}, backend {y} (scale {scale})"
            );
        }
    }
}

fn check(net: &InferenceNet, input: &[f32], what: &str) {
    let backend = net.clone().with_path(InferencePath::Backend);
    let k = net.predict(input.to_vec()).unwrap();
    let e = backend.predict(input.to_vec()).unwrap();
    compare(&k, &e, what);
    // predict_into gives the same as predict.
    let mut out = Logits::empty(1);
    net.predict_into(input, &mut out).unwrap();
    assert_eq!(out, k, "{what}: predict_into vs predict");
}

fn encodings() -> [(&'static str, Encoding); 2] {
    [("xiangqi", Encoding::of::<Game>()), ("janggi", Encoding::of::<Janggi>())]
}

fn configs() -> Vec<NetConfig> {
    let se = |f, g, every, blocks| NetConfig {
        global: GlobalKind::SqueezeExcitation,
        global_channels: g,
        global_every: every,
        ..NetConfig::new(blocks, f)
    };
    let gp = |f, g, every, blocks| NetConfig {
        global: GlobalKind::GlobalPooling,
        global_channels: g,
        global_every: every,
        ..NetConfig::new(blocks, f)
    };
    vec![
        NetConfig {
            policy_channels: 1,
            value_channels: 5,
            value_hidden: 1,
            ..NetConfig::new(1, 1)
        },
        NetConfig {
            policy_channels: 7,
            value_channels: 1,
            value_hidden: 130,
            ..NetConfig::new(1, 3)
        },
        NetConfig {
            policy_channels: 1,
            value_channels: 5,
            value_hidden: 130,
            ..NetConfig::new(2, 15)
        },
        NetConfig {
            policy_channels: 7,
            value_channels: 5,
            value_hidden: 1,
            ..NetConfig::new(1, 17)
        },
        NetConfig { value_hidden: 130, ..NetConfig::new(1, 33) },
        NetConfig { policy_channels: 7, ..NetConfig::new(1, 100) },
        se(1, 1, 1, 1),
        se(1, 33, 1, 2),
        se(17, 1, 2, 3),
        se(33, 33, 3, 3),
        se(15, 33, 1, 1),
        gp(1, 1, 1, 1),
        gp(1, 33, 1, 2),
        gp(17, 1, 2, 3),
        gp(33, 33, 3, 3),
        gp(15, 33, 1, 2),
        gp(100, 33, 1, 1),
        se(100, 33, 1, 1),
    ]
}

#[test]
fn shapes_agree() {
    for (game, enc) in encodings() {
        for (i, config) in configs().iter().enumerate() {
            config.validate().unwrap();
            let net = trained(config, enc, 2, 3 + i as u64);
            let real = planes_of(enc, 17, i as u64);
            let rand = noise(17 * enc.input_size(), i as u32, -3.0, 3.0);
            for n in [0, 1, 2, 17] {
                let x = &real[..n * enc.input_size()];
                check(&net, x, &format!("{game} net {i} {config:?} real batch {n}"));
                let x = &rand[..n * enc.input_size()];
                check(&net, x, &format!("{game} net {i} {config:?} noise batch {n}"));
            }
        }
    }
}

#[test]
fn large_batches_and_chunk_sizes_agree() {
    for (game, enc) in encodings() {
        let config = NetConfig {
            global: GlobalKind::GlobalPooling,
            global_channels: 5,
            global_every: 1,
            value_hidden: 7,
            ..NetConfig::new(1, 9)
        };
        let net = trained(&config, enc, 2, 77);
        let real = planes_of(enc, 1000, 5);
        for n in [100, 1000] {
            check(&net, &real[..n * enc.input_size()], &format!("{game} batch {n}"));
        }
        let reference = net.predict(real[..100 * enc.input_size()].to_vec()).unwrap();
        for chunk in [1, 3, 7, 16, 99, 100, 1000, usize::MAX] {
            let k = net.clone().with_chunk_size(chunk);
            let got = k.predict(real[..100 * enc.input_size()].to_vec()).unwrap();
            assert_eq!(got, reference, "{game}: chunk size {chunk} changes the kernels' output");
        }
    }
}

#[test]
fn blocks_zero_and_global_every_beyond_blocks() {
    // Not valid configs, but Net::seeded_for accepts them: must not panic and must agree.
    let device = cpu_device();
    for (game, enc) in encodings() {
        for config in [
            NetConfig::new(0, 8),
            NetConfig { global: GlobalKind::SqueezeExcitation, ..NetConfig::new(0, 8) },
            NetConfig {
                global: GlobalKind::GlobalPooling,
                global_every: 5,
                global_channels: 4,
                ..NetConfig::new(2, 8)
            },
        ] {
            let net = Net::seeded_for(&config, enc, &device, 3);
            let folded = InferenceNet::from_net(&net, &device).unwrap();
            let x = planes_of(enc, 5, 1);
            check(&folded, &x, &format!("{game} {config:?}"));
        }
    }
}

fn nan_pattern(l: &Logits, i: usize) -> (usize, usize) {
    let row = l.policy(i).iter().chain(&l.wdl[i * 3..i * 3 + 3]);
    (row.clone().filter(|v| v.is_nan()).count(), row.filter(|v| v.is_infinite()).count())
}

/// Non-finite and huge inputs: no panic, the other positions of the batch are untouched, bit
/// for bit, and the position's logits are NaN or infinite where burn's are (a NaN input must
/// reach the logits, so that the evaluator's NaN fallback sees it).
#[test]
fn non_finite_inputs() {
    for (game, enc) in encodings() {
        for config in [
            NetConfig::new(1, 8),
            NetConfig {
                global: GlobalKind::SqueezeExcitation,
                global_channels: 4,
                ..NetConfig::new(2, 8)
            },
            NetConfig {
                global: GlobalKind::GlobalPooling,
                global_channels: 4,
                ..NetConfig::new(2, 8)
            },
        ] {
            let net = trained(&config, enc, 2, 9);
            let backend = net.clone().with_path(InferencePath::Backend);
            let base = planes_of(enc, 3, 2);
            let clean = net.predict(base.clone()).unwrap();
            for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, f32::MAX] {
                for idx in [enc.input_size() + 5 * 90 + 44, 0, 3 * enc.input_size() - 1] {
                    let mut x = base.clone();
                    x[idx] = v;
                    let k = net.predict(x.clone()).unwrap();
                    let hit = idx / enc.input_size();
                    for i in (0..3).filter(|&i| i != hit) {
                        assert_eq!(k.policy(i), clean.policy(i), "{game} {v}: position {i}");
                        assert_eq!(k.wdl[i * 3..i * 3 + 3], clean.wdl[i * 3..i * 3 + 3]);
                    }
                    {
                        let e = backend.predict(x).unwrap();
                        assert_eq!(
                            nan_pattern(&k, hit),
                            nan_pattern(&e, hit),
                            "{game} {:?} {v} at {idx}: (NaN, inf) counts",
                            config.global
                        );
                    }
                }
            }
            for v in [f32::NAN, 1e20, f32::INFINITY] {
                net.predict(vec![v; 2 * enc.input_size()]).unwrap();
            }
        }
    }
}

#[test]
fn threads_and_determinism() {
    for (game, enc) in encodings() {
        for config in [
            NetConfig { policy_channels: 3, ..NetConfig::new(2, 20) },
            NetConfig {
                global: GlobalKind::SqueezeExcitation,
                global_channels: 5,
                global_every: 1,
                ..NetConfig::new(2, 17)
            },
            NetConfig {
                global: GlobalKind::GlobalPooling,
                global_channels: 7,
                global_every: 1,
                ..NetConfig::new(2, 33)
            },
        ] {
            let net = trained(&config, enc, 2, 21);
            let x = planes_of(enc, 100, 8);
            let first = net.predict(x.clone()).unwrap();
            assert_eq!(net.predict(x.clone()).unwrap(), first, "{game}: same input twice");
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                for n in [1, 2, 17, 100] {
                    let xs = &x[..n * enc.input_size()];
                    let got = pool.install(|| net.predict(xs.to_vec())).unwrap();
                    for i in 0..n {
                        assert_eq!(
                            got.policy(i),
                            first.policy(i),
                            "{game} {:?}: {threads} threads, batch {n}, position {i}",
                            config.global
                        );
                        assert_eq!(got.wdl[i * 3..i * 3 + 3], first.wdl[i * 3..i * 3 + 3]);
                    }
                    let mut out = Logits::empty(7);
                    pool.install(|| net.predict_into(xs, &mut out)).unwrap();
                    assert_eq!(out, got);
                    // Backend in this pool agrees too.
                    let e = pool
                        .install(|| {
                            net.clone().with_path(InferencePath::Backend).predict(xs.to_vec())
                        })
                        .unwrap();
                    compare(
                        &got,
                        &e,
                        &format!("{game} backend in {threads}-thread pool, batch {n}"),
                    );
                }
            }
            // Many concurrent callers on one net (shared Arc<HostNet>, thread-local scratch).
            let results: Vec<Logits> = {
                use rayon::prelude::*;
                (0..12)
                    .into_par_iter()
                    .map(|j| net.predict(x[..(1 + j % 5) * enc.input_size()].to_vec()).unwrap())
                    .collect()
            };
            for (j, r) in results.iter().enumerate() {
                for i in 0..r.batch {
                    assert_eq!(r.policy(i), first.policy(i), "{game}: concurrent call {j}");
                }
            }
        }
    }
}

#[test]
fn predict_errors_and_buffer_reuse() {
    let (_, xq) = encodings()[0];
    let (_, jg) = encodings()[1];
    let a = trained(&NetConfig::new(1, 8), xq, 1, 1);
    let b = trained(
        &NetConfig {
            global: GlobalKind::GlobalPooling,
            global_channels: 3,
            global_every: 1,
            ..NetConfig::new(1, 24)
        },
        jg,
        1,
        2,
    );
    for net in [&a, &b] {
        let size = net.encoding().input_size();
        for path in [InferencePath::Kernels, InferencePath::Backend] {
            let n = net.clone().with_path(path);
            for len in [1, size - 1, size + 1, 2 * size + 7, 89] {
                let e = n.predict(vec![0.0; len]).unwrap_err();
                assert!(e.to_string().contains("not a multiple"), "{path:?} {len}: {e}");
                let mut out = Logits::empty(3);
                let e = n.predict_into(&vec![0.0; len], &mut out).unwrap_err();
                assert!(e.to_string().contains("not a multiple"), "{e}");
                // A failed call leaves the buffer as it was.
                assert_eq!(out, Logits::empty(3));
            }
        }
    }
    // One buffer across batch sizes and nets of both games, both paths.
    let xa = planes_of(xq, 30, 4);
    let xb = planes_of(jg, 30, 4);
    let mut out = Logits::empty(0);
    for (step, n) in [17usize, 1, 30, 0, 2, 30, 5].iter().enumerate() {
        for (net, x) in [(&a, &xa), (&b, &xb)] {
            for path in [InferencePath::Kernels, InferencePath::Backend] {
                let net = net.clone().with_path(path);
                let xs = &x[..n * net.encoding().input_size()];
                net.predict_into(xs, &mut out).unwrap();
                let fresh = net.predict(xs.to_vec()).unwrap();
                assert_eq!(out.batch, *n);
                assert_eq!(out.policy_size, net.encoding().policy_size);
                assert_eq!(out, fresh, "step {step}: batch {n}, {path:?}");
            }
        }
    }
}

fn games_of<G: GameEnv + Clone>(n: usize, seed: u64) -> Vec<G> {
    let new = || G::new_game(G::start_position(G::default_rules()), G::default_rules());
    let mut game = new();
    let mut state = seed;
    let mut out = Vec::new();
    while out.len() < n {
        let moves = game.legal_moves_vec();
        if moves.is_empty() || game.moves().len() > 100 {
            game = new();
            continue;
        }
        out.push(game.clone());
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        SearchGame::play(&mut game, moves[(state >> 33) as usize % moves.len()]);
    }
    out
}

fn evaluate<G: GameEnv + Clone>(
    ev: &mut xiangqi_nn::NnEvaluator,
    games: &[G],
) -> Result<(Vec<Vec<f32>>, Vec<f32>), xiangqi_nn::NnError> {
    use xiangqi_search::{EvalBuffer, EvalRequest, Evaluator};
    let moves: Vec<Vec<xiangqi::Move>> = games.iter().map(|g| g.legal_moves_vec()).collect();
    let requests: Vec<EvalRequest<'_, G>> =
        games.iter().zip(&moves).map(|(game, moves)| EvalRequest { game, moves }).collect();
    let mut out = EvalBuffer::new();
    out.prepare(&requests);
    ev.evaluate(&requests, &mut out)?;
    let priors = (0..games.len()).map(|i| out.priors(i).to_vec()).collect();
    let values = (0..games.len()).map(|i| out.value(i)).collect();
    Ok((priors, values))
}

#[test]
fn evaluator_switches_nets_and_batch_sizes() {
    let (_, xq) = encodings()[0];
    let (_, jg) = encodings()[1];
    let a = trained(&NetConfig { value_hidden: 130, ..NetConfig::new(1, 17) }, xq, 2, 1);
    let b = trained(
        &NetConfig {
            global: GlobalKind::SqueezeExcitation,
            global_channels: 33,
            global_every: 1,
            ..NetConfig::new(1, 15)
        },
        jg,
        2,
        2,
    );
    let gx = games_of::<Game>(30, 3);
    let gj = games_of::<Janggi>(30, 3);
    let mut ev = xiangqi_nn::NnEvaluator::new(a.clone());
    let mut backend = xiangqi_nn::NnEvaluator::new(a.clone().with_path(InferencePath::Backend));
    for n in [30, 1, 17, 0, 2] {
        let (p, v) = evaluate(&mut ev, &gx[..n]).unwrap();
        let (pe, ve) = evaluate(&mut backend, &gx[..n]).unwrap();
        for i in 0..n {
            assert!((v[i] - ve[i]).abs() < 1e-4, "xiangqi value {i}: {} vs {}", v[i], ve[i]);
            assert!(p[i].iter().zip(&pe[i]).all(|(x, y)| (x - y).abs() < 1e-4));
        }
        // The xiangqi net refuses janggi games cleanly.
        if n > 0 {
            assert!(evaluate(&mut ev, &gj[..n]).is_err());
        }
    }
    // A batch of other games in the places of the last call's: the evaluator's reused input
    // buffer must not let those games show through (what a fresh evaluator computes). Both
    // games, each with the base planes and with the feature planes after them.
    let features = NetConfig { input_features: true, ..NetConfig::new(1, 9) };
    let xf = trained(&features, xq.with_features(true).unwrap(), 2, 3);
    let jf = trained(&features, jg.with_features(true).unwrap(), 2, 4);
    fn reuse_matches_fresh<G: GameEnv + Clone>(net: &InferenceNet, games: &[G]) {
        let mut reused = xiangqi_nn::NnEvaluator::new(net.clone());
        let _ = evaluate(&mut reused, &games[..17]).unwrap();
        let got = evaluate(&mut reused, &games[13..30]).unwrap();
        let fresh = evaluate(&mut xiangqi_nn::NnEvaluator::new(net.clone()), &games[13..30]);
        assert_eq!(got, fresh.unwrap(), "a reused evaluator differs from a fresh one");
    }
    for net in [&a, &xf] {
        reuse_matches_fresh(net, &gx);
    }
    for net in [&b, &jf] {
        reuse_matches_fresh(net, &gj);
    }
    ev.set_net(b.clone());
    backend.set_net(b.clone().with_path(InferencePath::Backend));
    for n in [2, 30, 1] {
        let (p, v) = evaluate(&mut ev, &gj[..n]).unwrap();
        let (pe, ve) = evaluate(&mut backend, &gj[..n]).unwrap();
        for i in 0..n {
            assert!((v[i] - ve[i]).abs() < 1e-4, "janggi value {i}: {} vs {}", v[i], ve[i]);
            assert!(p[i].iter().zip(&pe[i]).all(|(x, y)| (x - y).abs() < 1e-4));
            let s: f32 = p[i].iter().sum();
            assert!((s - 1.0).abs() < 1e-4);
        }
        assert!(evaluate(&mut ev, &gx[..n]).is_err());
    }
}

/// Pseudo-random policy indices for `n` positions: position `i` gets `(7 · i) % 23` of them
/// (none for some), duplicates and the policy's first and last index among them.
fn chosen_indices(n: usize, policy_size: usize, seed: u64) -> (Vec<usize>, Vec<u32>) {
    let mut state = seed;
    let (mut offsets, mut indices) = (vec![0], Vec::new());
    for i in 0..n {
        for j in 0..(7 * i) % 23 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let k = match j {
                0 => 0,
                1 => policy_size - 1,
                2 if i % 2 == 0 => indices.last().map_or(3, |&k| k as usize),
                _ => (state >> 33) as usize % policy_size,
            };
            indices.push(k as u32);
        }
        offsets.push(indices.len());
    }
    (offsets, indices)
}

/// `predict_chosen_into` gives `predict`'s logits at the chosen indices, and its WDL logits:
/// both games, heads of 1, 2 and 7 policy channels (linear layers of 90, 180 and 630 inputs,
/// none a multiple of a SIMD width), `f32` and bfloat16 (where the CPU has AMX), the backend
/// path, one chunk and many (chunks of 5 on 3 threads, so uneven ranges split across them).
#[test]
fn chosen_logits_equal_the_full_policy() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    for (game, enc) in encodings() {
        let configs = [
            NetConfig { policy_channels: 1, value_hidden: 1, ..NetConfig::new(1, 3) },
            NetConfig::new(2, 24),
            NetConfig { policy_channels: 7, ..NetConfig::new(1, 17) },
            NetConfig {
                global: GlobalKind::GlobalPooling,
                global_channels: 8,
                global_every: 1,
                ..NetConfig::new(1, 15)
            },
        ];
        for (c, config) in configs.iter().enumerate() {
            let net = trained(config, enc, 1, 10 + c as u64);
            let nets = [
                ("f32", net.clone()),
                ("bf16", net.clone().with_precision(Precision::Bf16)),
                ("backend", net.clone().with_path(InferencePath::Backend)),
                ("chunks of 5", net.clone().with_chunk_size(5)),
            ];
            for (name, net) in &nets {
                for n in [0, 1, 9, 70] {
                    let what = format!("{game}, config {c}, {name}, batch {n}");
                    let planes = planes_of(enc, n, 20 + n as u64);
                    let full = net.predict(planes.clone()).unwrap();
                    let (offsets, indices) = chosen_indices(n, enc.policy_size, n as u64);
                    let (mut policy, mut wdl) = (vec![f32::NAN; 3], Vec::new());
                    pool.install(|| {
                        net.predict_chosen_into(&planes, &offsets, &indices, &mut policy, &mut wdl)
                    })
                    .unwrap();
                    assert_eq!(policy.len(), indices.len(), "{what}");
                    assert_eq!(wdl, full.wdl, "{what}: WDL logits");
                    for i in 0..n {
                        let row = full.policy(i);
                        let scale = row.iter().fold(1.0f32, |m, v| m.max(v.abs()));
                        for j in offsets[i]..offsets[i + 1] {
                            let (got, want) = (policy[j], row[indices[j] as usize]);
                            assert!(
                                (got - want).abs() <= 1e-5 * scale,
                                "{what}: position {i}, index {}: {got} against {want}",
                                indices[j]
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Offsets that do not fit the batch or the indices, and indices outside the policy, are
/// refused with the reason, and the net still answers afterwards.
#[test]
fn chosen_logits_refuse_bad_offsets_and_indices() {
    let (_, enc) = encodings()[0];
    let net = trained(&NetConfig::new(1, 8), enc, 1, 5);
    let planes = planes_of(enc, 2, 1);
    let size = enc.policy_size as u32;
    let (mut policy, mut wdl) = (Vec::new(), Vec::new());
    for (offsets, indices, said) in [
        (vec![0, 1], vec![4], "2 offsets for 2 positions"),
        (vec![1, 1, 2], vec![4, 5], "want 3 offsets, from 0 to 2"),
        (vec![0, 2, 1], vec![4, 5], "not decreasing"),
        (vec![0, 1, 3], vec![4, 5], "want 3 offsets, from 0 to 2"),
        (vec![0, 1, 2], vec![4, size], &format!("policy index {size} is outside") as &str),
        (vec![0, 1, 2], vec![u32::MAX, 4], "is outside the policy's"),
    ] {
        for net in [net.clone(), net.clone().with_path(InferencePath::Backend)] {
            let e = net
                .predict_chosen_into(&planes, &offsets, &indices, &mut policy, &mut wdl)
                .unwrap_err();
            assert!(
                matches!(&e, NnError::Batch(m) if m.contains(said)),
                "{offsets:?} {indices:?}: {e}"
            );
        }
    }
    let e = net.predict_chosen_into(&planes[1..], &[0, 0, 0], &[], &mut policy, &mut wdl);
    assert!(matches!(e, Err(NnError::Batch(_))), "a ragged plane buffer: {e:?}");
    net.predict_chosen_into(&planes, &[0, 1, 2], &[0, size - 1], &mut policy, &mut wdl).unwrap();
    assert_eq!((policy.len(), wdl.len()), (2, 6));
}
