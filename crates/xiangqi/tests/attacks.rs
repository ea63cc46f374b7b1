//! Attack maps (`xiangqi::attacks`) and the tactical feature planes (`env::encode_features`):
//! facts derived by hand from the movement rules on small boards, and, on random games, the
//! symmetries every correct encoding has (colour flip, left-right mirror, shard rebuild).

mod common;
use common::{Lcg, colour_flip};
use xiangqi::attacks::AttackMap;
use xiangqi::env::{self, FEATURE_PLANES, FEATURE_SIZE, PLANE_SIZE, PlaneInputs};
use xiangqi::fen::parse_setup;
use xiangqi::{Board, Color, Game, Position, RuleSet, Square};

const RED: usize = 0;
const BLACK: usize = 1;

fn board(fen: &str) -> Board {
    parse_setup(fen).expect("a test FEN").board
}

/// Square index of a point named like `e0` (file letter, rank digit).
fn sq(name: &str) -> usize {
    let b = name.as_bytes();
    (b[1] - b'0') as usize * 9 + (b[0] - b'a') as usize
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

#[test]
fn start_position_attacks_follow_screens_legs_and_eyes() {
    let map = AttackMap::of_board(Position::start().board());
    let red = map.attacked[RED];
    // Cannon b2: the black cannon on b7 is its screen, so b8 and the horse on b9 are attacked,
    // the empty b3..b6 before the screen and the screen itself are not.
    assert!(has(red, "b8") && has(red, "b9"));
    assert!(!has(red, "b3") && !has(red, "b6") && !has(red, "b7"));
    // Along rank 2 the cannon's screen is the other cannon (h2): i2 beyond it is attacked.
    assert!(has(red, "i2"));
    // Horse b0: a2 and c2 through the empty leg b1; d1 is behind the elephant on c0.
    assert!(has(red, "a2") && has(red, "c2"));
    // The general e0 steps to d0, f0 and e1 (protecting the advisors there).
    assert!(has(red, "e1") && has(red, "d0") && has(red, "f0"));
    // Elephant c0: a2 and e2 through the empty eyes b1 and d1.
    assert!(has(red, "e2"));
    // Soldiers before the river attack only forward.
    assert!(has(red, "a4") && !has(red, "b3"));
    // Nothing hangs, nothing is pinned, nobody is in check.
    assert_eq!(map.hanging, [0, 0]);
    assert_eq!(map.pinned, [0, 0]);
    assert_eq!(map.in_check, [false, false]);
    // The position is symmetric: Black attacks the flipped points.
    for s in 0..90 {
        let flipped = Square::from_index(s).flip().index();
        assert_eq!(red >> s & 1, map.attacked[BLACK] >> flipped & 1, "point {s}");
    }
}

#[test]
fn d1_is_not_attacked_in_the_start_position() {
    // d1 (rank 1, file d): the general steps only inside the palace orthogonally (d0, f0, e1),
    // advisors only diagonally (from d0: e1), the horse on b0 needs the empty c0 as its leg for
    // d1 and the elephant stands there, and the chariot a0 is blocked by the horse b0.
    let map = AttackMap::of_board(Position::start().board());
    assert!(!has(map.attacked[RED], "d1"), "{:?}", names(map.attacked[RED]));
}

#[test]
fn an_unprotected_attacked_piece_hangs_and_a_protected_one_does_not() {
    // Red chariot a5 looks up the a-file at the black cannon a9 (unprotected: the black general
    // on d9 steps to d8 and e9 only). The cannon looks down at a5 with no screen: it attacks
    // a4..a0 beyond the chariot but not the chariot itself.
    let map = AttackMap::of_board(&board("c2k5/9/9/9/R8/9/9/9/9/4K4 w - - 0 1"));
    assert!(has(map.hanging[BLACK], "a9"));
    assert_eq!(names(map.hanging[BLACK]), ["a9"]);
    assert_eq!(map.hanging[RED], 0);
    assert!(has(map.attacked[BLACK], "a0") && !has(map.attacked[BLACK], "a5"));

    // A black chariot on b9 protects the cannon.
    let map = AttackMap::of_board(&board("cr1k5/9/9/9/R8/9/9/9/9/4K4 w - - 0 1"));
    assert_eq!(map.hanging[BLACK], 0);
}

#[test]
fn the_general_never_hangs() {
    // The black general on e9 is attacked by the chariot e5 (Black in check) and unprotected;
    // it is reported as check, not as a hanging piece.
    let map = AttackMap::of_board(&board("4k4/9/9/9/4R4/9/9/9/9/3K5 w - - 0 1"));
    assert!(map.in_check[BLACK]);
    assert!(has(map.attacked[RED], "e9"));
    assert_eq!(map.hanging[BLACK], 0);
}

#[test]
fn pins_by_a_chariot_a_horse_leg_and_a_double_screen() {
    // Chariot line: black chariot e5, red horse e1 in front of the red general e0. The horse is
    // attacked but protected by the general, so it is pinned and does not hang.
    let map = AttackMap::of_board(&board("3k5/9/9/9/4r4/9/9/9/4N4/4K4 w - - 0 1"));
    assert_eq!(names(map.pinned[RED]), ["e1"]);
    assert_eq!(map.hanging[RED], 0);
    assert!(!map.in_check[RED]);

    // Horse leg: a black horse on d2 would attack e0 through its leg d1, where a red chariot
    // stands; the chariot is pinned although it is on neither the general's file nor rank.
    let map = AttackMap::of_board(&board("3k5/9/9/9/9/9/9/3n5/3R5/4K4 w - - 0 1"));
    assert_eq!(names(map.pinned[RED]), ["d1"]);

    // Two screens: black cannon e6, red soldier e3 and red advisor e1 between it and the red
    // general e0. Taking either away leaves one screen and the general attacked.
    let map = AttackMap::of_board(&board("3k5/9/9/4c4/9/9/4P4/9/4A4/4K4 w - - 0 1"));
    assert_eq!(names(map.pinned[RED]), ["e1", "e3"]);
    assert!(!map.in_check[RED]);
    // The cannon attacks the advisor (its second piece) and e2 before it.
    assert!(has(map.attacked[BLACK], "e1") && has(map.attacked[BLACK], "e2"));

    // The flying general: a red chariot between the generals on the e-file is pinned by the
    // black general itself.
    let map = AttackMap::of_board(&board("4k4/9/9/9/9/4R4/9/9/9/4K4 w - - 0 1"));
    assert_eq!(names(map.pinned[RED]), ["e4"]);
    assert_eq!(names(map.pinned[BLACK]), Vec::<String>::new());
}

#[test]
fn facing_generals_attack_each_other_and_no_pins_are_reported_in_check() {
    let map = AttackMap::of_board(&board("4k4/9/9/9/9/9/9/9/9/4K4 w - - 0 1"));
    assert!(has(map.attacked[RED], "e9") && has(map.attacked[BLACK], "e0"));
    assert_eq!(map.in_check, [true, true]);
    // In check from the chariot e5 with a red horse on d1 on a black horse's leg: the pin is not
    // reported while the general is attacked.
    let map = AttackMap::of_board(&board("3k5/9/9/9/4r4/9/9/3n5/3R5/4K4 w - - 0 1"));
    assert!(map.in_check[RED]);
    assert_eq!(map.pinned[RED], 0);
}

#[test]
fn a_board_without_generals_is_accepted() {
    let map = AttackMap::of_board(&board("9/9/9/9/4r4/9/9/9/4N4/9 w - - 0 1"));
    assert_eq!(map.in_check, [false, false]);
    assert_eq!(map.pinned, [0, 0]);
    assert!(has(map.hanging[RED], "e1"));
}

#[test]
fn feature_planes_are_seen_from_the_side_to_move() {
    // The hanging black cannon of the test above, with Black to move: it is the mover's hanging
    // piece (plane 2) on a9 flipped = a0 of the mover's view.
    let setup = parse_setup("c2k5/9/9/9/R8/9/9/9/9/4K4 b - - 0 1").unwrap();
    let mut out = vec![f32::NAN; FEATURE_SIZE];
    env::write_features(&setup.board, setup.turn, &mut out);
    let plane = |p: usize| &out[p * PLANE_SIZE..(p + 1) * PLANE_SIZE];
    let hanging: Vec<usize> = (0..90).filter(|&i| plane(2)[i] == 1.0).collect();
    assert_eq!(hanging, [sq("a0")]);
    assert!(plane(3).iter().all(|&v| v == 0.0));
    assert!(plane(6).iter().all(|&v| v == 0.0));
    assert!(out.iter().all(|&v| v == 0.0 || v == 1.0));
    // With Red to move the same piece is the opponent's (plane 3), on a9 unflipped.
    env::write_features(&setup.board, Color::Red, &mut out);
    let plane = |p: usize| &out[p * PLANE_SIZE..(p + 1) * PLANE_SIZE];
    let hanging: Vec<usize> = (0..90).filter(|&i| plane(3)[i] == 1.0).collect();
    assert_eq!(hanging, [sq("a9")]);
}

fn features(pos: &Position) -> Vec<f32> {
    let mut out = vec![0.0; FEATURE_SIZE];
    env::write_features(pos.board(), pos.turn(), &mut out);
    out
}

#[test]
fn random_games_keep_the_symmetries_and_rebuild_from_shards() {
    let mut rng = Lcg(7);
    let mut checked = 0;
    let mut seen = [0usize; FEATURE_PLANES];
    for _ in 0..40 {
        let mut game = Game::new(Position::start(), RuleSet::Asian);
        for _ in 0..120 {
            let pos = *game.position();
            let live = {
                let mut out = vec![0.0; FEATURE_SIZE];
                env::encode_features(&game, &mut out);
                out
            };
            // Rebuilt from the compact inputs a shard stores.
            let mut rebuilt = vec![f32::NAN; FEATURE_SIZE];
            env::features_from_compact(&PlaneInputs::from_game(&game), &mut rebuilt).unwrap();
            assert_eq!(live, rebuilt);
            // The left-right mirror of the position has the mirrored planes.
            let mut mirrored = live.clone();
            env::mirror_planes(&mut mirrored);
            assert_eq!(features(&pos.mirror()), mirrored);
            // The colour flip (the same position seen by the other side) has the same planes.
            let flipped = colour_flip(&pos);
            assert_eq!(features(&flipped), live);
            // The check plane agrees with the rules.
            assert_eq!(live[6 * PLANE_SIZE] == 1.0, pos.is_check());
            for (p, n) in seen.iter_mut().enumerate() {
                *n += live[p * PLANE_SIZE..(p + 1) * PLANE_SIZE].contains(&1.0) as usize;
            }
            // Every legal capture lands on a point the mover attacks.
            let map = AttackMap::of_board(pos.board());
            for m in pos.legal_moves() {
                if pos.is_capture(m) {
                    assert!(has(map.attacked[pos.turn().index()], &m.to().to_string()));
                }
            }
            checked += 1;
            let moves = pos.legal_moves();
            if moves.is_empty() || game.outcome().is_some() {
                break;
            }
            game.play(moves[rng.below(moves.len())]).unwrap();
        }
    }
    assert!(checked > 1000, "{checked}");
    // Every plane is set somewhere in these games: none is stuck at zero.
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
}
