//! The environment view (`xiangqi::env`) checked against the rules on random games: every legal
//! move has a policy index, the index table is a bijection, the Black flip and the left–right
//! mirror agree with the move generator, and planes rebuilt from a shard sample equal the planes of
//! the game.

use std::collections::BTreeSet;

mod common;
use common::{Lcg, colour_flip};

use xiangqi::env::{
    self, CLOCK_PLANE, INPUT_SIZE, PLANE_SIZE, PLANES, POLICY_SIZE, PlaneInputs, REPETITION_PLANE,
};
use xiangqi::{Color, Game, Move, Piece, PieceKind, Position, RuleSet, Setup, Square, Validation};

fn planes_of(game: &Game) -> Vec<f32> {
    let mut out = vec![0.0; INPUT_SIZE];
    env::encode_planes(game, &mut out);
    out
}

fn sorted(moves: impl IntoIterator<Item = Move>) -> Vec<Move> {
    let mut v: Vec<Move> = moves.into_iter().collect();
    v.sort_unstable();
    v
}

/// Checks one position (of `game`, whose mirror image is `mirrored`). Returns the number of
/// legal moves checked.
fn check_position(game: &Game, mirrored: &Game) -> usize {
    let pos = game.position();
    let turn = pos.turn();
    let moves = pos.legal_moves();

    // The mirror game is the mirror of the game, and its legal moves are the mirrored moves.
    assert_eq!(*mirrored.position(), pos.mirror());
    assert_eq!(mirrored.repetitions(), game.repetitions());
    assert_eq!(sorted(pos.mirror().legal_moves()), sorted(moves.iter().map(|m| m.mirror())));

    // Every legal move has an index, distinct moves distinct indices, and the tables invert.
    let mut indices = BTreeSet::new();
    let mut policy = vec![0.0f32; POLICY_SIZE];
    for (k, &m) in moves.iter().enumerate() {
        let i = env::move_to_index(m, turn)
            .unwrap_or_else(|| panic!("{pos:?}: legal move {m} has no index"));
        assert!(i < POLICY_SIZE);
        assert!(indices.insert(i), "{pos:?}: two legal moves share index {i}");
        assert_eq!(env::index_to_move(i, turn), Some(m));
        assert_eq!(env::move_to_index(m.mirror(), turn), Some(env::mirror_index(i)));
        // A Black move and the flipped move share an index (and likewise the other way round).
        assert_eq!(env::move_to_index(m.flip(), turn.other()), Some(i));
        policy[i] = 1.0 + k as f32;
    }

    // The mirrored policy puts each move's prior on its mirror image.
    let mut mirrored_policy = vec![0.0f32; POLICY_SIZE];
    env::mirror_policy(&policy, &mut mirrored_policy);
    for &m in &moves {
        let i = env::move_to_index(m, turn).unwrap();
        let j = env::move_to_index(m.mirror(), turn).unwrap();
        assert_eq!(mirrored_policy[j], policy[i]);
    }
    let mut in_place = policy.clone();
    env::mirror_policy_in_place(&mut in_place);
    assert_eq!(in_place, mirrored_policy);

    // Planes: the shard path gives the same planes, and the mirror commutes with encoding.
    let planes = planes_of(game);
    let sample = PlaneInputs::from_game(game);
    assert_eq!(sample.turn, turn);
    assert_eq!(sample.repeated, game.repetitions() >= 2);
    let mut rebuilt = vec![f32::NAN; INPUT_SIZE];
    env::planes_from_compact(&sample, &mut rebuilt).unwrap();
    assert_eq!(rebuilt, planes);
    assert_eq!(env::decode_board_compact(&sample.board).unwrap(), *pos.board());
    let mut flipped_lr = planes.clone();
    env::mirror_planes(&mut flipped_lr);
    assert_eq!(planes_of(mirrored), flipped_lr);

    // The side-to-move view: the colour-flipped position (other side to move) has the flipped
    // legal moves, with the same indices, and exactly the same planes.
    let other = colour_flip(pos);
    assert_eq!(sorted(other.legal_moves()), sorted(moves.iter().map(|m| m.flip())));
    for &m in &moves {
        assert_eq!(env::move_to_index(m.flip(), other.turn()), env::move_to_index(m, turn));
    }
    let mut other_planes = vec![0.0; INPUT_SIZE];
    let other_sample = PlaneInputs::from_position(&other, sample.repeated);
    env::planes_from_compact(&other_sample, &mut other_planes).unwrap();
    assert_eq!(other_planes, planes);

    // Plane contents: one 1.0 per piece, the mover's general in its palace at the bottom.
    let ones = planes[..14 * PLANE_SIZE].iter().filter(|&&v| v == 1.0).count();
    let pieces = pos.board().iter().flatten().count();
    assert_eq!(ones, pieces);
    assert_eq!(planes[..14 * PLANE_SIZE].iter().filter(|&&v| v != 0.0).count(), pieces);
    let g = planes[..PLANE_SIZE].iter().position(|&v| v == 1.0).unwrap();
    assert!(g / 9 <= 2 && (3..=5).contains(&(g % 9)), "{pos:?}: mover's general at cell {g}");
    moves.len()
}

#[test]
fn random_games_agree_with_the_rules() {
    let mut rng = Lcg(0x2545_F491_4F6C_DD1D);
    let (mut positions, mut moves_checked, mut black) = (0, 0, 0);
    for game_no in 0..60 {
        let rules = if game_no % 2 == 0 { RuleSet::Asian } else { RuleSet::Simple };
        let start = Position::start();
        let mut game = Game::new(start, rules);
        let mut mirrored = Game::new(start.mirror(), rules);
        for _ply in 0..300 {
            moves_checked += check_position(&game, &mirrored);
            positions += 1;
            black += usize::from(game.position().turn() == Color::Black);
            let moves = game.legal_moves();
            if moves.is_empty() {
                break;
            }
            let m = moves[rng.below(moves.len())];
            game.play(m).unwrap();
            mirrored.play(m.mirror()).unwrap();
        }
    }
    assert!(positions > 10_000, "only {positions} positions");
    assert!(black > positions / 3);
    assert!(moves_checked > 300_000);
}

#[test]
fn index_table_is_a_bijection_for_both_colours() {
    for turn in Color::ALL {
        let mut seen = vec![false; POLICY_SIZE];
        for from in Square::all() {
            for to in Square::all() {
                let m = Move::new(from, to);
                if let Some(i) = env::move_to_index(m, turn) {
                    assert!(!std::mem::replace(&mut seen[i], true), "index {i} used twice");
                    assert_eq!(env::index_to_move(i, turn), Some(m));
                }
                assert_eq!(env::move_to_index(m, turn), env::move_to_index(m.flip(), turn.other()));
            }
        }
        assert!(seen.iter().all(|&s| s), "some index has no move");
        for i in 0..POLICY_SIZE {
            let m = env::index_to_move(i, turn).unwrap();
            assert_eq!(env::move_to_index(m, turn), Some(i));
            let j = env::mirror_index(i);
            assert_eq!(env::mirror_index(j), i);
            assert_eq!(env::index_to_move(j, turn), Some(m.mirror()));
        }
        assert_eq!(env::index_to_move(POLICY_SIZE, turn), None);
    }
}

/// The action space is exactly the set of moves some piece of the side to move can play on a
/// board holding only it and the two generals, from any point where lenient validation lets it
/// stand (union over every placement of the generals).
#[test]
fn action_space_is_every_lenient_piece_move() {
    let mut reached = vec![false; POLICY_SIZE];
    let palace = |color: Color| Square::all().filter(move |s| s.in_palace(color));
    for turn in Color::ALL {
        for kind in PieceKind::ALL {
            for s in Square::all() {
                for own in palace(turn) {
                    for their in palace(turn.other()) {
                        if own == s || their == s {
                            continue;
                        }
                        let mut setup = Setup::empty();
                        setup.turn = turn;
                        setup.board[own.index()] = Some(Piece::new(turn, PieceKind::General));
                        setup.board[their.index()] =
                            Some(Piece::new(turn.other(), PieceKind::General));
                        if kind != PieceKind::General {
                            setup.board[s.index()] = Some(Piece::new(turn, kind));
                        }
                        let Ok(pos) = Position::from_setup(&setup, Validation::Lenient) else {
                            continue;
                        };
                        for m in pos.legal_moves() {
                            let i = env::move_to_index(m, turn)
                                .unwrap_or_else(|| panic!("{pos:?}: legal move {m} has no index"));
                            reached[i] = true;
                        }
                    }
                }
            }
        }
    }
    let missing: Vec<String> = (0..POLICY_SIZE)
        .filter(|&i| !reached[i])
        .map(|i| env::index_to_move(i, Color::Red).unwrap().to_string())
        .collect();
    assert!(missing.is_empty(), "indices no piece can play: {missing:?}");
}

#[test]
fn repetition_and_clock_planes() {
    let mut game = Game::new(Position::start(), RuleSet::Asian);
    let plane = |planes: &[f32], p: usize| planes[p * PLANE_SIZE..(p + 1) * PLANE_SIZE].to_vec();
    let planes = planes_of(&game);
    assert!(plane(&planes, REPETITION_PLANE).iter().all(|&v| v == 0.0));
    assert!(plane(&planes, CLOCK_PLANE).iter().all(|&v| v == 0.0));
    for uci in ["h0g2", "h9g7", "g2h0", "g7h9"] {
        let m = game.position().parse_uci(uci).unwrap();
        game.play(m).unwrap();
    }
    assert_eq!(game.repetitions(), 2);
    let planes = planes_of(&game);
    assert!(plane(&planes, REPETITION_PLANE).iter().all(|&v| v == 1.0));
    assert!(plane(&planes, CLOCK_PLANE).iter().all(|&v| v == 4.0 / 120.0));
    // The piece planes are those of the start position.
    let start = planes_of(&Game::new(Position::start(), RuleSet::Asian));
    assert_eq!(planes[..14 * PLANE_SIZE], start[..14 * PLANE_SIZE]);

    // The clock plane saturates at 1.0.
    let mut sample = PlaneInputs::from_game(&game);
    sample.halfmove_clock = 500;
    let mut out = vec![0.0; INPUT_SIZE];
    env::planes_from_compact(&sample, &mut out).unwrap();
    assert!(plane(&out, CLOCK_PLANE).iter().all(|&v| v == 1.0));
}

#[test]
fn start_position_planes_from_both_sides() {
    let pos = Position::start();
    let red = planes_of(&Game::new(pos, RuleSet::Asian));
    let at = |planes: &[f32], p: usize, sq: &str| {
        let (f, r) = (sq.as_bytes()[0] - b'a', sq.as_bytes()[1] - b'0');
        planes[p * PLANE_SIZE + r as usize * 9 + f as usize]
    };
    assert_eq!(at(&red, env::piece_plane(PieceKind::General, true), "e0"), 1.0);
    assert_eq!(at(&red, env::piece_plane(PieceKind::General, false), "e9"), 1.0);
    assert_eq!(at(&red, env::piece_plane(PieceKind::Cannon, true), "b2"), 1.0);
    assert_eq!(at(&red, env::piece_plane(PieceKind::Soldier, false), "a6"), 1.0);
    assert_eq!(red.len(), PLANES * 90);

    // After h2e2, Black to move sees its own pieces at the bottom and Red's cannon on e7.
    let mut game = Game::new(pos, RuleSet::Asian);
    game.play(pos.parse_uci("h2e2").unwrap()).unwrap();
    let black = planes_of(&game);
    assert_eq!(at(&black, env::piece_plane(PieceKind::General, true), "e0"), 1.0);
    assert_eq!(at(&black, env::piece_plane(PieceKind::Cannon, true), "h2"), 1.0);
    assert_eq!(at(&black, env::piece_plane(PieceKind::Cannon, false), "e7"), 1.0);
    assert_eq!(at(&black, env::piece_plane(PieceKind::Cannon, false), "h7"), 0.0);
    assert_eq!(at(&black, CLOCK_PLANE, "a0"), 1.0 / 120.0);
}

#[test]
fn compact_board_is_absolute_and_rejects_bad_codes() {
    let codes = env::encode_board_compact(&Position::start());
    assert_eq!(codes[4], 1); // Red general on e0: Piece::index 0 + 1
    assert_eq!(codes[81 + 4], 8); // Black general on e9
    assert_eq!(codes[9 * 2 + 1], 6); // Red cannon on b2
    assert_eq!(codes[9 * 4], 0);
    let mut sample = PlaneInputs::from_position(&Position::start(), false);
    sample.board[17] = 15;
    let mut out = vec![0.5; INPUT_SIZE];
    let err = env::planes_from_compact(&sample, &mut out).unwrap_err();
    assert_eq!((err.square.to_string(), err.code), ("i1".to_string(), 15));
    assert!(out.iter().all(|&v| v == 0.5), "out must be untouched on error");
    assert_eq!(env::decode_board_compact(&sample.board), Err(err));
}

#[test]
fn mirror_planes_is_an_involution_on_batches() {
    let mut batch: Vec<f32> = (0..3 * INPUT_SIZE).map(|i| i as f32).collect();
    let original = batch.clone();
    env::mirror_planes(&mut batch);
    assert_eq!(batch[0], 8.0);
    assert_eq!(batch[INPUT_SIZE + 9], (INPUT_SIZE + 17) as f32);
    env::mirror_planes(&mut batch);
    assert_eq!(batch, original);
}
