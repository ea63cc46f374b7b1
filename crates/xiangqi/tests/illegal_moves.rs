//! One test per illegal move the rule texts warn about, each in a small hand-made position, with
//! its legal counterpart.
//!
//! Every FEN here passes strict validation (one general per side inside its palace, generals not
//! facing, the side not to move not in check); every expectation was worked out by hand from the
//! rules. Board diagrams in the comments list ranks 9 (top, Black) to 0 (bottom, Red).

use std::collections::BTreeSet;

use xiangqi::{IllegalMoveReason, Move, PieceKind, PlayError, Position, RankBase, Square};

use IllegalMoveReason::{GeneralAttacked, GeneralsFacing, NotAPieceMove};

fn pos(fen: &str) -> Position {
    Position::from_fen(fen)
        .unwrap_or_else(|e| panic!("test FEN must be strictly valid: {fen}: {e}"))
}

fn mv(text: &str) -> Move {
    Move::from_uci(text, RankBase::Zero).unwrap_or_else(|e| panic!("{e}"))
}

/// `text` is illegal in `pos` for `reason`, by every route that asks.
#[track_caller]
fn assert_illegal(pos: &Position, text: &str, reason: IllegalMoveReason) {
    let m = mv(text);
    assert!(!pos.is_legal(m), "{text} must be illegal in {}", pos.fen());
    assert_eq!(pos.check_legal(m), Err(reason), "{text} in {}", pos.fen());
    assert!(!pos.legal_moves().contains(&m), "{text} generated in {}", pos.fen());
    assert!(pos.parse_uci(text).is_err(), "parse_uci accepted {text} in {}", pos.fen());
    let mut copy = *pos;
    assert_eq!(copy.play(m), Err(PlayError { mv: m, reason }));
    assert_eq!(copy, *pos, "a refused play must leave the position unchanged");
}

/// `text` is legal in `pos`, by every route that asks.
#[track_caller]
fn assert_legal(pos: &Position, text: &str) {
    let m = mv(text);
    assert_eq!(pos.check_legal(m), Ok(()), "{text} must be legal in {}", pos.fen());
    assert!(pos.is_legal(m), "{text} in {}", pos.fen());
    assert!(pos.legal_moves().contains(&m), "{text} not generated in {}", pos.fen());
    assert_eq!(pos.parse_uci(text), Ok(m));
    let mut copy = *pos;
    assert!(copy.play(m).is_ok());
    let mover = pos.turn();
    assert!(!copy.general_attacked(mover), "{text} leaves the mover's general attacked");
}

fn moves(list: &[&str]) -> BTreeSet<Move> {
    list.iter().map(|t| mv(t)).collect()
}

fn legal_set(pos: &Position) -> BTreeSet<Move> {
    pos.legal_moves().iter().copied().collect()
}

/// The square named `text` (`e4`), computed from the convention index = rank * 9 + file.
fn sq(text: &str) -> Square {
    let b = text.as_bytes();
    Square::from_index(usize::from(b[1] - b'0') * 9 + usize::from(b[0] - b'a'))
}

fn moves_from(pos: &Position, from: &str) -> Vec<Move> {
    let from = sq(from);
    pos.legal_moves().iter().copied().filter(|m| m.from() == from).collect()
}

// ---------------------------------------------------------------- horse

#[test]
fn horse_with_blocked_leg_cannot_jump() {
    // k on f9; black soldier e5 on the leg of the red horse e4 towards d6/f6; K on d0.
    let p = pos("5k3/9/9/9/4p4/4N4/9/9/9/3K5 w - - 0 1");
    assert_illegal(&p, "e4f6", NotAPieceMove(PieceKind::Horse));
    assert_illegal(&p, "e4d6", NotAPieceMove(PieceKind::Horse));
    // Capturing the blocker is not a horse move either.
    assert_illegal(&p, "e4e5", NotAPieceMove(PieceKind::Horse));
    // The other six jumps have free legs (d4, f4, e3).
    for t in ["e4c5", "e4c3", "e4g5", "e4g3", "e4d2", "e4f2"] {
        assert_legal(&p, t);
    }
    assert_eq!(moves_from(&p, "e4").len(), 6);
}

#[test]
fn horse_leg_blocked_by_own_piece() {
    // As above plus a red cannon on f4, the leg towards g5 and g3.
    let p = pos("5k3/9/9/9/4p4/4NC3/9/9/9/3K5 w - - 0 1");
    assert_illegal(&p, "e4g5", NotAPieceMove(PieceKind::Horse));
    assert_illegal(&p, "e4g3", NotAPieceMove(PieceKind::Horse));
    assert_legal(&p, "e4c5");
    assert_legal(&p, "e4c3");
    assert_eq!(moves_from(&p, "e4").len(), 4);
}

#[test]
fn horses_in_the_start_position_are_blocked_by_their_elephants() {
    let red = Position::start();
    assert_illegal(&red, "b0d1", NotAPieceMove(PieceKind::Horse)); // leg c0 (elephant)
    assert_illegal(&red, "h0f1", NotAPieceMove(PieceKind::Horse)); // leg g0
    assert_legal(&red, "b0c2");
    assert_legal(&red, "b0a2");
    let black = pos("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b - - 0 1");
    assert_illegal(&black, "b9d8", NotAPieceMove(PieceKind::Horse)); // leg c9
    assert_legal(&black, "b9c7");
    assert_legal(&black, "b9a7");
}

#[test]
fn moving_a_horse_leg_blocker_that_shields_the_general_is_illegal() {
    // Black horse d2 would give check to K e0 through its leg d1, where a red horse stands.
    let p = pos("3k5/9/9/9/9/9/9/3n5/3N5/4K4 w - - 0 1");
    assert!(!p.is_check());
    for t in ["d1b0", "d1b2", "d1f0", "d1f2"] {
        assert_illegal(&p, t, GeneralAttacked);
    }
    // d1c3 and d1e3 need the leg d2, where the black horse stands.
    assert_illegal(&p, "d1c3", NotAPieceMove(PieceKind::Horse));
    assert_legal(&p, "e0f0");
    assert_legal(&p, "e0d0");
}

// ---------------------------------------------------------------- elephant

#[test]
fn elephant_with_blocked_eye_cannot_move() {
    // Red elephant c0, red horse d1 on its eye towards e2; K e0, k d9.
    let p = pos("3k5/9/9/9/9/9/9/9/3N5/2B1K4 w - - 0 1");
    assert_illegal(&p, "c0e2", NotAPieceMove(PieceKind::Elephant));
    assert_legal(&p, "c0a2");
    assert_eq!(moves_from(&p, "c0"), vec![mv("c0a2")]);
}

#[test]
fn elephant_cannot_cross_the_river() {
    // Red elephant c4 on the river bank.
    let p = pos("3k5/9/9/9/9/2B6/9/9/9/4K4 w - - 0 1");
    assert_illegal(&p, "c4e6", NotAPieceMove(PieceKind::Elephant));
    assert_illegal(&p, "c4a6", NotAPieceMove(PieceKind::Elephant));
    assert_legal(&p, "c4e2");
    assert_legal(&p, "c4a2");
    // A black elephant on g5 may not cross downwards.
    let b = pos("3k5/9/9/9/6b2/9/9/9/9/4K4 b - - 0 1");
    assert_illegal(&b, "g5e3", NotAPieceMove(PieceKind::Elephant));
    assert_illegal(&b, "g5i3", NotAPieceMove(PieceKind::Elephant));
    assert_legal(&b, "g5e7");
    assert_legal(&b, "g5i7");
}

// ---------------------------------------------------------------- cannon

#[test]
fn cannon_cannot_capture_without_a_screen() {
    // Red cannon b2, black horse b7, nothing between.
    let p = pos("3k5/9/1n7/9/9/9/9/1C7/9/4K4 w - - 0 1");
    assert_illegal(&p, "b2b7", NotAPieceMove(PieceKind::Cannon));
    // Without capturing it moves like a chariot.
    assert_legal(&p, "b2b6");
    assert_legal(&p, "b2b3");
    assert_legal(&p, "b2i2");
}

#[test]
fn cannon_cannot_capture_over_two_screens() {
    // Red cannon b2; red horse b3 (screen), black chariot b5, black horse b7.
    let p = pos("3k5/9/1n7/9/1r7/9/1N7/1C7/9/4K4 w - - 0 1");
    assert_illegal(&p, "b2b7", NotAPieceMove(PieceKind::Cannon));
    // Behind the screen it may only capture; it may not move to an empty point.
    assert_illegal(&p, "b2b4", NotAPieceMove(PieceKind::Cannon));
    assert_illegal(&p, "b2b9", NotAPieceMove(PieceKind::Cannon));
    // Legal counterpart: the own horse b3 serves as the screen for capturing b5.
    assert_legal(&p, "b2b5");
}

#[test]
fn cannon_captures_only_the_first_piece_behind_the_screen() {
    // Rank 4: red cannon a4, black soldier c4 (screen), empty d4, black horse e4, black chariot g4.
    let p = pos("3k5/9/9/9/9/C1p1n1r2/9/9/9/4K4 w - - 0 1");
    assert_legal(&p, "a4e4"); // the gap d4 does not matter
    assert_illegal(&p, "a4g4", NotAPieceMove(PieceKind::Cannon));
    assert_illegal(&p, "a4c4", NotAPieceMove(PieceKind::Cannon)); // no screen before c4
    assert_illegal(&p, "a4d4", NotAPieceMove(PieceKind::Cannon)); // quiet move past a screen
    assert_legal(&p, "a4b4");
}

#[test]
fn cannon_may_not_capture_its_own_piece() {
    let p = pos("3k5/9/9/9/9/9/9/1C7/1N7/1R2K4 w - - 0 1");
    // b2 cannon, b1 horse screen, b0 own chariot.
    assert_eq!(p.check_legal(mv("b2b0")), Err(IllegalMoveReason::OwnPieceOnTarget));
    assert!(!p.is_legal(mv("b2b0")));
}

// ---------------------------------------------------------------- general and advisor

#[test]
fn general_cannot_leave_the_palace() {
    let p = pos("5k3/9/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_illegal(&p, "d0c0", NotAPieceMove(PieceKind::General));
    assert_illegal(&p, "d0e1", NotAPieceMove(PieceKind::General)); // diagonal
    assert_illegal(&p, "d0d2", NotAPieceMove(PieceKind::General)); // two points
    assert_legal(&p, "d0d1");
    assert_legal(&p, "d0e0");

    let top = pos("5k3/9/9/9/9/9/9/3K5/9/9 w - - 0 1");
    assert_illegal(&top, "d2d3", NotAPieceMove(PieceKind::General));
    assert_illegal(&top, "d2c2", NotAPieceMove(PieceKind::General));
    assert_legal(&top, "d2e2");
    assert_legal(&top, "d2d1");

    let black = pos("9/9/3k5/9/9/9/9/9/9/5K3 b - - 0 1");
    assert_illegal(&black, "d7d6", NotAPieceMove(PieceKind::General));
    assert_illegal(&black, "d7c7", NotAPieceMove(PieceKind::General));
    assert_legal(&black, "d7d8");
    assert_legal(&black, "d7e7");
}

#[test]
fn advisor_cannot_leave_the_palace() {
    // Red advisor f2, K e0, k d9.
    let p = pos("3k5/9/9/9/9/9/9/5A3/9/4K4 w - - 0 1");
    assert_illegal(&p, "f2g3", NotAPieceMove(PieceKind::Advisor));
    assert_illegal(&p, "f2f1", NotAPieceMove(PieceKind::Advisor)); // orthogonal
    assert_legal(&p, "f2e1");
    assert_eq!(moves_from(&p, "f2"), vec![mv("f2e1")]);
}

// ---------------------------------------------------------------- soldier

#[test]
fn red_soldier_moves() {
    // Red soldiers c5 (crossed) and e3 (not crossed); K d0, k f9.
    let p = pos("5k3/9/9/9/2P6/9/4P4/9/9/3K5 w - - 0 1");
    let soldier = NotAPieceMove(PieceKind::Soldier);
    assert_illegal(&p, "c5c4", soldier); // backward
    assert_illegal(&p, "c5d6", soldier); // diagonal
    assert_illegal(&p, "c5b6", soldier); // diagonal
    assert_illegal(&p, "c5c7", soldier); // two points
    assert_legal(&p, "c5c6");
    assert_legal(&p, "c5b5"); // sideways after crossing
    assert_legal(&p, "c5d5");
    assert_illegal(&p, "e3d3", soldier); // sideways before the river
    assert_illegal(&p, "e3f3", soldier);
    assert_illegal(&p, "e3e2", soldier); // backward
    assert_illegal(&p, "e3f4", soldier); // diagonal
    assert_legal(&p, "e3e4");
    assert_eq!(moves_from(&p, "e3"), vec![mv("e3e4")]);
    assert_eq!(moves_from(&p, "c5").len(), 3);
}

#[test]
fn red_soldier_on_the_river_bank_has_not_crossed() {
    // Red soldier e4 (rank 4 is still Red's half).
    let p = pos("5k3/9/9/9/9/4P4/9/9/9/3K5 w - - 0 1");
    assert_illegal(&p, "e4d4", NotAPieceMove(PieceKind::Soldier));
    assert_legal(&p, "e4e5");
}

#[test]
fn black_soldier_moves() {
    // Black soldiers e6 (not crossed) and c4 (crossed); forward is downwards.
    let p = pos("5k3/9/9/4p4/9/2p6/9/9/9/3K5 b - - 0 1");
    let soldier = NotAPieceMove(PieceKind::Soldier);
    assert_legal(&p, "e6e5");
    assert_illegal(&p, "e6e7", soldier);
    assert_illegal(&p, "e6d6", soldier);
    assert_illegal(&p, "e6d5", soldier);
    assert_legal(&p, "c4c3");
    assert_legal(&p, "c4b4");
    assert_legal(&p, "c4d4");
    assert_illegal(&p, "c4c5", soldier);
    assert_illegal(&p, "c4b3", soldier);
}

#[test]
fn general_may_not_step_beside_a_crossed_soldier() {
    // K e1, black soldier c1 (crossed: it attacks b1, d1 and c0), k f9.
    let p = pos("5k3/9/9/9/9/9/9/9/2p1K4/9 w - - 0 1");
    assert!(!p.is_check());
    assert_illegal(&p, "e1d1", GeneralAttacked);
    assert_illegal(&p, "e1f1", GeneralsFacing);
    assert_legal(&p, "e1e0");
    assert_legal(&p, "e1e2");
    assert_eq!(legal_set(&p), moves(&["e1e0", "e1e2"]));
}

// ---------------------------------------------------------------- pins

#[test]
fn chariot_pinned_by_chariot_may_move_only_along_the_pin() {
    // K e0, red chariot e2, black chariot e7, k d9.
    let p = pos("3k5/9/4r4/9/9/9/9/4R4/9/4K4 w - - 0 1");
    assert_illegal(&p, "e2a2", GeneralAttacked);
    assert_illegal(&p, "e2i2", GeneralAttacked);
    assert_legal(&p, "e2e5");
    assert_legal(&p, "e2e1");
    assert_legal(&p, "e2e7"); // capture the pinner
    assert_legal(&p, "e0f0");
    assert_illegal(&p, "e0d0", GeneralsFacing); // d file open up to k d9
}

#[test]
fn pinned_horse_has_no_legal_move() {
    let p = pos("3k5/9/4r4/9/9/9/9/4N4/9/4K4 w - - 0 1");
    for t in ["e2c1", "e2c3", "e2g1", "e2g3", "e2d4", "e2f4", "e2d0", "e2f0"] {
        assert_illegal(&p, t, GeneralAttacked);
    }
    assert!(moves_from(&p, "e2").is_empty());
}

#[test]
fn moving_onto_the_generals_file_as_a_cannon_screen_is_illegal() {
    // Black cannon e7 looks at K e0 over an empty file: no check. A red chariot stepping onto
    // the file between them becomes the screen.
    let p = pos("3k5/9/4c4/9/9/9/R8/9/9/4K4 w - - 0 1");
    assert!(!p.is_check());
    assert_illegal(&p, "a3e3", GeneralAttacked);
    assert_legal(&p, "a3d3");
    assert_legal(&p, "a3a4");
}

#[test]
fn removing_one_of_two_cannon_screens_is_illegal() {
    // Black cannon e7, red soldier e4 and red horse e2 between it and K e0.
    let p = pos("3k5/9/4c4/9/9/4P4/9/4N4/9/4K4 w - - 0 1");
    assert!(!p.is_check());
    for t in ["e2c1", "e2c3", "e2g1", "e2g3", "e2d4", "e2f4", "e2d0", "e2f0"] {
        assert_illegal(&p, t, GeneralAttacked);
    }
    assert_legal(&p, "e4e5"); // stays on the file
}

#[test]
fn general_may_not_step_into_a_screened_cannon_line() {
    // K f0, k d9; black cannon e7 with a red soldier e4 as screen on the e file.
    let p = pos("3k5/9/4c4/9/9/4P4/9/9/9/5K3 w - - 0 1");
    // f0 -> e0 walks into the cannon line.
    assert_illegal(&p, "f0e0", GeneralAttacked);
    assert_legal(&p, "f0f1");
}

#[test]
fn general_cannot_retreat_along_the_checking_line() {
    // K e1 in check from the black chariot e7; e0 is still on the line.
    let p = pos("3k5/9/4r4/9/9/9/9/9/4K4/9 w - - 0 1");
    assert!(p.is_check());
    assert_illegal(&p, "e1e0", GeneralAttacked);
    assert_illegal(&p, "e1e2", GeneralAttacked);
    assert_illegal(&p, "e1d1", GeneralsFacing);
    assert_legal(&p, "e1f1");
    assert_eq!(legal_set(&p), moves(&["e1f1"]));
}

// ---------------------------------------------------------------- facing generals

#[test]
fn only_piece_between_the_generals_may_not_leave_the_file() {
    // K e0, k e9, red soldier e5 alone between them.
    let p = pos("4k4/9/9/9/4P4/9/9/9/9/4K4 w - - 0 1");
    assert_illegal(&p, "e5d5", GeneralsFacing);
    assert_illegal(&p, "e5f5", GeneralsFacing);
    assert_legal(&p, "e5e6");

    // A black horse e7 alone between them: every jump leaves the file.
    let b = pos("4k4/9/4n4/9/9/9/9/9/9/4K4 b - - 0 1");
    for t in ["e7c8", "e7c6", "e7g8", "e7g6", "e7d9", "e7f9", "e7d5", "e7f5"] {
        assert_illegal(&b, t, GeneralsFacing);
    }
    assert!(moves_from(&b, "e7").is_empty());
    assert_legal(&b, "e9e8"); // the horse still stands between
    assert_legal(&b, "e9d9");
}

#[test]
fn piece_moving_along_the_file_between_the_generals_is_legal() {
    // Red cannon e3 alone between K e0 and k e9 (no screen, so no check).
    let p = pos("4k4/9/9/9/9/9/4C4/9/9/4K4 w - - 0 1");
    assert_legal(&p, "e3e6");
    assert_legal(&p, "e3e8");
    assert_legal(&p, "e3e1");
    assert_illegal(&p, "e3a3", GeneralsFacing);
    assert_illegal(&p, "e3i3", GeneralsFacing);
}

#[test]
fn general_may_not_step_onto_an_open_file_facing_the_other() {
    let p = pos("4k4/9/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_illegal(&p, "d0e0", GeneralsFacing);
    assert_legal(&p, "d0d1");
    assert_eq!(legal_set(&p), moves(&["d0d1"]));

    // With a black horse on e7 the file is closed.
    let closed = pos("4k4/9/4n4/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_legal(&closed, "d0e0");

    let black = pos("3k5/9/9/9/9/9/9/9/9/4K4 b - - 0 1");
    assert_illegal(&black, "d9e9", GeneralsFacing);
    assert_legal(&black, "d9d8");
}

// ---------------------------------------------------------------- answering check

#[test]
fn only_moves_that_answer_a_chariot_check_are_legal() {
    // Black chariot e7 checks K e0. Red horse d5 can capture it (e7) or block (e3); red chariot
    // a3 can block on e3; the general can step aside to d0 (the horse d5 closes the d file
    // towards k d9) or f0, but not to e1 (still on the checking file).
    let p = pos("3k5/9/4r4/9/3N5/9/R8/9/9/4K4 w - - 0 1");
    assert!(p.is_check());
    assert_illegal(&p, "d5b6", GeneralAttacked);
    assert_illegal(&p, "d5c7", GeneralAttacked);
    assert_illegal(&p, "a3a4", GeneralAttacked);
    assert_illegal(&p, "a3d3", GeneralAttacked);
    assert_illegal(&p, "e0e1", GeneralAttacked);
    assert_legal(&p, "d5e7"); // capture the checker
    assert_legal(&p, "d5e3"); // block
    assert_legal(&p, "a3e3"); // block
    assert_legal(&p, "e0f0"); // move the general
    assert_legal(&p, "e0d0");
    assert_eq!(legal_set(&p), moves(&["d5e7", "d5e3", "a3e3", "e0f0", "e0d0"]));
}

#[test]
fn only_moves_that_answer_a_cannon_check_are_legal() {
    // Black cannon e7 checks K e0 over the red advisor e1. Answers: move the screen away (any
    // advisor move), add a second screen (a4e4), capture the cannon (a7e7), step to d0 (f0 faces
    // k f9).
    let p = pos("5k3/9/R3c4/9/9/R8/9/9/4A4/4K4 w - - 0 1");
    assert!(p.is_check());
    assert_legal(&p, "e1d2"); // removing the screen answers a cannon check
    assert_legal(&p, "e1f2");
    assert_legal(&p, "e1d0");
    assert_legal(&p, "e1f0");
    assert_legal(&p, "a4e4");
    assert_legal(&p, "a7e7");
    assert_legal(&p, "e0d0");
    assert_illegal(&p, "e0f0", GeneralsFacing);
    assert_illegal(&p, "a4a5", GeneralAttacked);
    assert_illegal(&p, "a7d7", GeneralAttacked);
    assert_eq!(legal_set(&p), moves(&["e1d2", "e1f2", "e1d0", "e1f0", "a4e4", "a7e7", "e0d0"]));
}

#[test]
fn general_may_capture_an_unprotected_attacker() {
    // Black chariot e1 checks K e0; nothing protects it.
    let p = pos("3k5/9/9/9/9/9/9/9/4r4/4K4 w - - 0 1");
    assert!(p.is_check());
    assert_legal(&p, "e0e1");
    assert_legal(&p, "e0f0");
    assert_illegal(&p, "e0d0", GeneralsFacing);
    assert_eq!(legal_set(&p), moves(&["e0e1", "e0f0"]));
}

#[test]
fn general_may_not_capture_a_protected_attacker() {
    // As above, with a second black chariot on e5 guarding e1.
    let p = pos("3k5/9/9/9/4r4/9/9/9/4r4/4K4 w - - 0 1");
    assert_illegal(&p, "e0e1", GeneralAttacked);
    assert_legal(&p, "e0f0");
}

#[test]
fn general_may_not_capture_the_only_piece_between_the_generals() {
    // Black chariot e1 checks K e0 and is the only piece between K e0 and k e9: capturing it
    // would leave the generals facing.
    let p = pos("4k4/9/9/9/9/9/9/9/4r4/4K4 w - - 0 1");
    assert_illegal(&p, "e0e1", GeneralsFacing);
    assert_legal(&p, "e0d0");
    assert_legal(&p, "e0f0");
}

#[test]
fn capturing_the_checker_that_stands_between_the_generals() {
    // Black chariot e3 checks K e0 and stands between the generals; red chariot a3 captures it
    // and then stands between them itself.
    let p = pos("4k4/9/9/9/9/9/R3r4/9/9/4K4 w - - 0 1");
    assert!(p.is_check());
    assert_legal(&p, "a3e3");
    assert_illegal(&p, "a3a4", GeneralAttacked);
    assert_illegal(&p, "e0e1", GeneralAttacked);
    let mut after = p;
    after.play(mv("a3e3")).unwrap();
    assert!(!after.general_attacked(xiangqi::Color::Red));
    // ... and now checks k e9 itself along the open file.
    assert!(after.is_check());
}

// ---------------------------------------------------------------- trivial reasons

#[test]
fn moves_that_are_not_moves_of_the_side_to_move() {
    let p = Position::start();
    assert_eq!(p.check_legal(mv("e5e6")), Err(IllegalMoveReason::NoPiece));
    assert_eq!(p.check_legal(mv("a9a8")), Err(IllegalMoveReason::NotYourPiece));
    assert_eq!(p.check_legal(mv("a0b0")), Err(IllegalMoveReason::OwnPieceOnTarget));
    assert_eq!(p.check_legal(mv("a0a3")), Err(IllegalMoveReason::OwnPieceOnTarget));
    assert_eq!(p.check_legal(mv("a0a1")), Ok(()));
    // is_legal_by ignores whose turn it is.
    assert!(p.is_legal_by(xiangqi::Color::Black, mv("a9a8")));
    assert!(!p.is_legal_by(xiangqi::Color::Black, mv("a0a1")));
    // UCI names agree with the square numbering index = rank * 9 + file.
    assert_eq!(mv("e0e1").from(), Square::from_index(4));
    assert_eq!(mv("e0e1").to(), Square::from_index(13));
    assert_eq!(mv("e9e8").from(), Square::from_index(85));
    assert_eq!(mv("i9a0").from(), sq("i9"));
    assert_eq!(mv("i9a0").to(), sq("a0"));
}
