//! Janggi attack maps (`AttackMap::of_janggi_board`) and janggi's tactical feature planes:
//! facts derived by hand from janggi's movement (`docs/RULES.md`, "Janggi") on small boards,
//! and, on random games, agreement with the rules' own check detection and legal captures and
//! the symmetries every correct encoding has.

mod common;
use common::Lcg;
use xiangqi::attacks::AttackMap;
use xiangqi::env::{FEATURE_SIZE, PlaneInputs};
use xiangqi::janggi::{Game, Position, Rules, env};
use xiangqi::{Color, Piece, Setup, Square};

const CHO: usize = 0;
const HAN: usize = 1;

fn pos(fen: &str) -> Position {
    Position::from_fen(fen, Rules::Site).expect("a test FEN")
}

fn map(fen: &str) -> AttackMap {
    AttackMap::of_janggi_board(pos(fen).board())
}

/// Square index of a point named like `e0` (file letter, rank digit).
fn sq(name: &str) -> usize {
    let b = name.as_bytes();
    (b[1] - b'0') as usize * 9 + (b[0] - b'a') as usize
}

fn set(names: &[&str]) -> u128 {
    names.iter().fold(0, |acc, n| acc | 1u128 << sq(n))
}

fn has(set: u128, name: &str) -> bool {
    set >> sq(name) & 1 == 1
}

fn names(set: u128) -> Vec<String> {
    (0..90)
        .filter(|s| set >> s & 1 == 1)
        .map(|s| format!("{}{}", (b'a' + (s % 9) as u8) as char, s / 9))
        .collect()
}

/// The eight points of a palace around its centre `c` (`e1` or `e8`).
fn palace_around(c: &str) -> u128 {
    let r = c.as_bytes()[1] - b'0';
    let mut out = 0;
    for f in [b'd', b'e', b'f'] {
        for rank in [r - 1, r, r + 1] {
            let name = format!("{}{}", f as char, rank);
            if name != c {
                out |= set(&[&name]);
            }
        }
    }
    out
}

#[test]
fn a_general_steps_along_its_palace_lines_and_an_elephant_needs_both_points_empty() {
    // Cho: general e1 (palace centre), elephant c0. Han: general e8.
    let m = map("9/4k4/9/9/9/9/9/9/4K4/2B6 w - - 0 1");
    // The elephant: up one (c1), then diagonally (d2 or b2), then once more: e3 and a3. To the
    // right it would pass d0 and e1, where the general stands: blocked. Every other jump
    // leaves the board.
    let expected = palace_around("e1") | set(&["e3", "a3"]);
    assert_eq!(names(m.attacked[CHO]), names(expected));
    assert_eq!(names(m.attacked[HAN]), names(palace_around("e8")));
    // Generals facing each other on an open file do not attack each other in janggi.
    assert!(!has(m.attacked[CHO], "e8") && !has(m.attacked[HAN], "e1"));
    assert_eq!((m.hanging, m.pinned, m.in_check), ([0, 0], [0, 0], [false, false]));

    // A soldier on c1 blocks the elephant's first point: both upward jumps are gone; the soldier
    // attacks forward (c2) and sideways (b1, d1).
    let m = map("9/4k4/9/9/9/9/9/9/2P1K4/2B6 w - - 0 1");
    let expected = palace_around("e1") | set(&["c2", "b1", "d1"]);
    assert_eq!(names(m.attacked[CHO]), names(expected));
    // Han's soldier moves down the board: from c8 it attacks c7, b8 and d8.
    let m = map("9/2p1k4/9/9/9/9/9/9/4K4/9 w - - 0 1");
    assert!(has(m.attacked[HAN], "c7") && has(m.attacked[HAN], "b8") && has(m.attacked[HAN], "d8"));
    assert!(!has(m.attacked[HAN], "c9"));
}

#[test]
fn a_cannon_needs_a_screen_that_is_not_a_cannon_and_never_attacks_a_cannon() {
    // Cho cannon a0; on the a-file a Han soldier a3 (the screen) and a Han soldier a6.
    let m = map("9/4k4/9/p8/9/9/p8/9/4K4/C8 w - - 0 1");
    for p in ["a4", "a5", "a6"] {
        assert!(has(m.attacked[CHO], p), "{p}");
    }
    for p in ["a1", "a2", "a3", "a7"] {
        assert!(!has(m.attacked[CHO], p), "{p}");
    }
    // The soldier on a6 is attacked and unprotected: it hangs; a3 (the screen) does not.
    assert!(has(m.hanging[HAN], "a6") && !has(m.hanging[HAN], "a3"));
    // A cannon as the screen: nothing beyond it is attacked.
    let m = map("9/4k4/9/p8/9/9/c8/9/4K4/C8 w - - 0 1");
    assert!(!has(m.attacked[CHO], "a4") && !has(m.attacked[CHO], "a6"));
    // A cannon beyond the screen is not attacked; the empty points before it are.
    let m = map("9/4k4/9/c8/9/9/p8/9/4K4/C8 w - - 0 1");
    assert!(has(m.attacked[CHO], "a4") && has(m.attacked[CHO], "a5"));
    assert!(!has(m.attacked[CHO], "a6"));
}

#[test]
fn chariots_and_cannons_run_along_the_palace_diagonals() {
    // Cho chariot d7 in Han's palace, Han general f9 at the far corner, e8 empty: check along
    // the diagonal d7-e8-f9.
    let fen = "5k3/9/3R5/9/9/9/9/9/4K4/9 b - - 0 1";
    let m = map(fen);
    assert!(has(m.attacked[CHO], "e8") && has(m.attacked[CHO], "f9"));
    assert!(m.in_check[HAN] && pos(fen).is_check());
    // Cho general d0, guard e1, Han chariot f2: the guard is pinned on the diagonal, and
    // protected by the general (it does not hang).
    let m = map("9/4k4/9/9/9/9/9/5r3/4A4/3K5 w - - 0 1");
    assert_eq!(names(m.pinned[CHO]), vec!["e1".to_string()]);
    assert!(has(m.attacked[HAN], "e1") && !has(m.hanging[CHO], "e1"));
    assert!(!m.in_check[CHO]);
    // A Han cannon f2 over the guard on e1 gives check on d0; over a cannon it does not.
    let fen = "9/4k4/9/9/9/9/9/5c3/4A4/3K5 w - - 0 1";
    assert!(map(fen).in_check[CHO] && pos(fen).is_check());
    let fen = "9/4k4/9/9/9/9/9/5c3/4C4/3K5 w - - 0 1";
    assert!(!map(fen).in_check[CHO] && !pos(fen).is_check());
    // No pins are reported for a side in check.
    assert_eq!(map("9/4k4/9/9/9/9/9/5c3/4A4/3K5 w - - 0 1").pinned[CHO], 0);
}

#[test]
fn the_feature_planes_are_seen_from_the_side_to_move() {
    // Han to move in the pinned-guard position seen from Cho: Han's planes put Han's attacks on
    // plane 0, flipped (rank r -> 9 - r).
    let p = pos("9/4k4/9/9/9/9/9/5r3/4A4/3K5 b - - 0 1");
    let mut out = vec![0.0; FEATURE_SIZE];
    env::write_features(p.board(), Color::Black, &mut out);
    let m = AttackMap::of_janggi_board(p.board());
    for s in 0..90 {
        let view = Square::from_index(s).flip().index();
        assert_eq!(out[view] == 1.0, m.attacked[HAN] >> s & 1 == 1, "mover attacks at {s}");
        assert_eq!(out[90 + view] == 1.0, m.attacked[CHO] >> s & 1 == 1, "opponent at {s}");
        assert_eq!(out[5 * 90 + view] == 1.0, m.pinned[CHO] >> s & 1 == 1, "opponent pins");
    }
    assert!(out[6 * 90..].iter().all(|&x| x == 0.0));
}

/// The position seen by the other side: ranks flipped, colours swapped, the other side to move.
fn colour_flip(p: &Position) -> Position {
    let mut setup = Setup::empty();
    for s in Square::all() {
        setup.board[s.flip().index()] = p.piece_at(s).map(|q| Piece::new(q.color.other(), q.kind));
    }
    setup.turn = p.turn().other();
    setup.halfmove_clock = p.halfmove_clock();
    Position::from_setup(&setup, p.rules()).expect("the colour flip of a legal position")
}

fn flip_set(set: u128) -> u128 {
    (0..90)
        .filter(|s| set >> s & 1 == 1)
        .fold(0, |acc, s| acc | 1u128 << Square::from_index(s).flip().index())
}

fn mirror_set(set: u128) -> u128 {
    (0..90).filter(|s| set >> s & 1 == 1).fold(0, |acc, s| acc | 1u128 << (s - s % 9 + 8 - s % 9))
}

#[test]
fn random_games_agree_with_the_rules_and_keep_the_symmetries() {
    let mut rng = Lcg(0x6a67);
    let mut positions = 0;
    let mut pins = 0;
    for rules in [Rules::Site, Rules::Traditional] {
        for _ in 0..20 {
            let mut game = Game::new(Position::start(rules));
            for _ in 0..120 {
                let p = *game.position();
                let m = AttackMap::of_janggi_board(p.board());
                let (me, them) = (p.turn().index(), p.turn().other().index());
                // Check as the rules see it, for both sides.
                assert_eq!(m.in_check[me], p.is_check(), "{}", p.fen());
                for c in Color::ALL {
                    assert_eq!(m.in_check[c.index()], p.general_attacked(c), "{}", p.fen());
                }
                // Every legal capture lands on a point the mover attacks.
                let moves = game.legal_moves();
                for &mv in moves.iter() {
                    if p.is_capture(mv) {
                        assert!(m.attacked[me] >> mv.to().index() & 1 == 1, "{mv} in {}", p.fen());
                    }
                }
                // Hanging: attacked, unprotected, not the general.
                for s in 0..90 {
                    let Some(q) = p.piece_at(Square::from_index(s)) else { continue };
                    let c = q.color.index();
                    let hangs = q.kind != xiangqi::PieceKind::General
                        && m.attacked[1 - c] >> s & 1 == 1
                        && m.attacked[c] >> s & 1 == 0;
                    assert_eq!(m.hanging[c] >> s & 1 == 1, hangs, "{s} in {}", p.fen());
                }
                // The mover's pins, by removing the piece: its general is then attacked.
                if !m.in_check[me] {
                    for s in 0..90 {
                        let sq = Square::from_index(s);
                        let Some(q) = p.piece_at(sq) else { continue };
                        if q.color != p.turn() || q.kind == xiangqi::PieceKind::General {
                            continue;
                        }
                        let mut setup = Setup::empty();
                        setup.board = *p.board();
                        setup.board[s] = None;
                        setup.turn = p.turn();
                        // Refused only when the removal gives the opponent check (a discovered
                        // attack of the mover's own): not a pin question the rules can answer.
                        let Ok(removed) = Position::from_setup(&setup, rules) else { continue };
                        let pinned = removed.general_attacked(p.turn());
                        assert_eq!(m.pinned[me] >> s & 1 == 1, pinned, "{s} in {}", p.fen());
                        pins += usize::from(pinned);
                    }
                }
                // The colour flip and the left-right mirror move every set with the board.
                let f = AttackMap::of_janggi_board(colour_flip(&p).board());
                for (a, b) in [(me, them), (them, me)] {
                    assert_eq!(f.attacked[b], flip_set(m.attacked[a]));
                    assert_eq!(f.hanging[b], flip_set(m.hanging[a]));
                    assert_eq!(f.pinned[b], flip_set(m.pinned[a]));
                }
                let r = AttackMap::of_janggi_board(p.mirror().board());
                for c in [CHO, HAN] {
                    assert_eq!(r.attacked[c], mirror_set(m.attacked[c]));
                    assert_eq!(r.pinned[c], mirror_set(m.pinned[c]));
                }
                // The planes rebuilt from a shard's compact board equal the live ones.
                let mut live = vec![0.0; FEATURE_SIZE];
                env::encode_features(&game, &mut live);
                let inputs: PlaneInputs = env::plane_inputs(&game);
                let mut rebuilt = vec![1.0; FEATURE_SIZE];
                env::features_from_compact(&inputs, &mut rebuilt).unwrap();
                assert_eq!(live, rebuilt);
                positions += 1;

                if game.is_over() || moves.is_empty() {
                    break;
                }
                let mv = moves[rng.below(moves.len())];
                game.play(mv).unwrap();
            }
        }
    }
    assert!(positions > 2000, "{positions} positions");
    assert!(pins > 0, "no pin met in {positions} positions: the check above saw nothing");
}
