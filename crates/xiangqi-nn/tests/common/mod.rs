//! Helpers shared by the network crate's integration tests.

#![allow(dead_code)] // each test binary uses some of the helpers

use xiangqi_search::{GameEnv, SearchGame};

/// Input planes of `n` positions of game `G` along a pseudo-random line of legal moves (a new
/// game after 150 plies or at a game's end), seeded by `seed`.
pub fn real_planes<G: GameEnv>(n: usize, seed: u64) -> Vec<f32> {
    real_planes_for::<G>(&xiangqi_search::Encoding::of::<G>(), n, seed)
}

/// [`real_planes`] in `encoding` (with the feature planes where it takes them).
pub fn real_planes_for<G: GameEnv>(
    encoding: &xiangqi_search::Encoding,
    n: usize,
    seed: u64,
) -> Vec<f32> {
    let new = || G::new_game(G::start_position(G::default_rules()), G::default_rules());
    let mut game = new();
    let mut state = seed;
    let mut out = vec![0.0; n * encoding.input_size()];
    for chunk in out.chunks_exact_mut(encoding.input_size()) {
        encoding.encode(&game, chunk);
        let moves = game.legal_moves_vec();
        if moves.is_empty() || game.moves().len() > 150 {
            game = new();
            continue;
        }
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        SearchGame::play(&mut game, moves[(state >> 33) as usize % moves.len()]);
    }
    out
}
