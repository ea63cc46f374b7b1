//! One test per movement rule of janggi (`docs/RULES.md`, "Janggi"), each with its illegal
//! counterpart, on small positions derived by hand from the rule text; plus FEN validation,
//! move text, the pass and the API around them.

use xiangqi::janggi::{self, CHO, GUARD, Game, HAN, Position, Rules};
use xiangqi::{
    Color, File, IllegalMoveReason, Move, OutcomeReason, Piece, PieceKind, RankBase, Setup, Square,
};

fn sq(s: &str) -> Square {
    let b = s.as_bytes();
    let file = File::from_char(b[0] as char).unwrap();
    let rank = xiangqi::Rank::new(s[1..].parse().unwrap()).unwrap();
    Square::from_coords(file, rank)
}

fn mv(s: &str) -> Move {
    Move::new(sq(&s[..2]), sq(&s[2..]))
}

/// A position from (FEN letter, point) pairs; generals must be among them.
fn pos(pieces: &[(char, &str)], turn: Color, rules: Rules) -> Position {
    let mut setup = Setup::empty();
    for &(c, s) in pieces {
        setup.board[sq(s).index()] = Piece::from_fen_char(c);
    }
    setup.turn = turn;
    Position::from_setup(&setup, rules).unwrap_or_else(|e| panic!("{pieces:?}: {e}"))
}

/// Whether `m` is legal, checked both ways (is_legal and the generated list agree).
fn legal(p: &Position, m: &str) -> bool {
    let m = mv(m);
    let listed = p.legal_moves().contains(&m);
    assert_eq!(p.is_legal(m), listed, "{p:?}: is_legal({m}) disagrees with legal_moves");
    listed
}

/// The two generals, out of the way of the tested lines.
const GENERALS: [(char, &str); 2] = [('K', "e1"), ('k', "e8")];

fn with(extra: &[(char, &str)]) -> Vec<(char, &'static str)> {
    let mut v: Vec<(char, &'static str)> = GENERALS.to_vec();
    for &(c, s) in extra {
        v.push((c, Box::leak(s.to_string().into_boxed_str())));
    }
    v
}

fn both(extra: &[(char, &str)]) -> [Position; 2] {
    Rules::ALL.map(|r| pos(&with(extra), CHO, r))
}

#[test]
fn elephant_jumps_one_straight_two_diagonal() {
    for p in both(&[('B', "c4")]) {
        // c4 → c5 → b6/d6 → a7/e7; and the other three directions.
        for m in ["c4a7", "c4e7", "c4a1", "c4e1", "c4f6", "c4f2"] {
            assert_eq!(legal(&p, m), m != "c4e1", "{m}"); // e1 holds the own general
        }
        assert!(!legal(&p, "c4e6"), "a xiangqi elephant step is not a janggi one");
        assert!(!legal(&p, "c4d6"), "a horse jump is not an elephant jump");
    }
}

#[test]
fn elephant_blocked_on_the_first_point() {
    for p in both(&[('B', "c4"), ('P', "c5")]) {
        assert!(!legal(&p, "c4a7"));
        assert!(!legal(&p, "c4e7"));
        assert!(legal(&p, "c4f6"), "the other directions stay open");
    }
}

#[test]
fn elephant_blocked_on_the_second_point() {
    for p in both(&[('B', "c4"), ('p', "d6")]) {
        assert!(!legal(&p, "c4e7"), "d6 blocks c4-c5-d6-e7");
        assert!(legal(&p, "c4a7"), "b6 is empty");
    }
}

#[test]
fn elephant_captures_on_the_last_point() {
    for p in both(&[('B', "c4"), ('r', "e7")]) {
        assert!(legal(&p, "c4e7"));
        assert!(p.is_capture(mv("c4e7")));
    }
}

#[test]
fn horse_jumps_and_is_blocked_on_the_leg() {
    for p in both(&[('N', "b4")]) {
        for m in ["b4a6", "b4c6", "b4d5", "b4d3", "b4a2", "b4c2"] {
            assert!(legal(&p, m), "{m}");
        }
    }
    for p in both(&[('N', "b4"), ('P', "b5")]) {
        assert!(!legal(&p, "b4a6") && !legal(&p, "b4c6"), "b5 blocks the forward jumps");
        assert!(legal(&p, "b4d5"), "c4 is empty");
    }
}

#[test]
fn chariot_slides_and_stops_at_the_first_piece() {
    for p in both(&[('R', "a0"), ('p', "a5")]) {
        assert!(legal(&p, "a0a4"));
        assert!(legal(&p, "a0a5"), "captures the first piece");
        assert!(!legal(&p, "a0a6"), "never beyond it");
        assert!(legal(&p, "a0d0"));
    }
}

#[test]
fn chariot_along_a_palace_diagonal() {
    // Han's general on d8, a side-middle point off the diagonals.
    let gens = [('K', "e1"), ('k', "d8")];
    for rules in Rules::ALL {
        let open = pos(&[gens[0], gens[1], ('R', "f9")], CHO, rules);
        assert!(legal(&open, "f9e8"), "corner to centre");
        assert!(legal(&open, "f9d7"), "corner to opposite corner through an empty centre");
        let blocked = pos(&[gens[0], gens[1], ('R', "f9"), ('p', "e8")], CHO, rules);
        assert!(legal(&blocked, "f9e8"), "captures on the centre");
        assert!(!legal(&blocked, "f9d7"), "an occupied centre stops it");
        let side = pos(&[gens[0], ('k', "d9"), ('R', "f8")], CHO, rules);
        assert!(!legal(&side, "f8e7") && !legal(&side, "f8e9"), "no diagonal off the lines");
        let outside = pos(&[gens[0], gens[1], ('R', "c6")], CHO, rules);
        assert!(!legal(&outside, "c6d7"), "no diagonal outside a palace");
        // In its own palace too, through its own general's point only when that is empty.
        let own = pos(&[('K', "e2"), ('k', "f8"), ('R', "d0")], CHO, rules);
        assert!(legal(&own, "d0e1") && legal(&own, "d0f2"));
        let blocked_by_own = pos(&[('K', "e1"), ('k', "f8"), ('R', "d0")], CHO, rules);
        assert!(!legal(&blocked_by_own, "d0e1") && !legal(&blocked_by_own, "d0f2"));
    }
}

#[test]
fn cannon_captures_over_one_non_cannon_screen() {
    for p in both(&[('C', "a0"), ('P', "a3"), ('r', "a6")]) {
        assert!(legal(&p, "a0a6"));
        assert!(!legal(&p, "a0a3"), "never captures or lands on its screen");
    }
}

#[test]
fn cannon_may_not_jump_a_cannon() {
    for screen in ['C', 'c'] {
        for p in both(&[('C', "a0"), (screen, "a3"), ('r', "a6")]) {
            assert!(!legal(&p, "a0a6"), "screen {screen}");
            assert!(!legal(&p, "a0a5"), "screen {screen}: no landing beyond a cannon either");
        }
    }
}

#[test]
fn cannon_may_not_capture_a_cannon() {
    for p in both(&[('C', "a0"), ('P', "a3"), ('c', "a6")]) {
        assert!(!legal(&p, "a0a6"));
    }
    // And a cannon on a point is not attacked by a cannon: Han's cannon on e5 with a screen on
    // e3 does not check... the general; but a Cho cannon there is safe from it.
    let p = pos(&with(&[('C', "e4"), ('P', "e6"), ('c', "e7")]), HAN, Rules::Site);
    assert!(!p.is_legal(mv("e7e4")), "Han's cannon cannot take Cho's cannon");
}

#[test]
fn cannon_without_a_screen_traditional_versus_site() {
    let [site, traditional] = both(&[('C', "a0")]);
    assert!(legal(&site, "a0a1") && legal(&site, "a0a9"), "site: slides like a chariot");
    assert!(legal(&site, "a0d0"));
    assert!(!legal(&traditional, "a0a1") && !legal(&traditional, "a0a9"));
    assert!(!legal(&traditional, "a0d0"), "traditional: every move needs a screen");
}

#[test]
fn cannon_with_a_screen_traditional_versus_site() {
    let [site, traditional] = both(&[('C', "a0"), ('P', "a3"), ('p', "a7")]);
    // Traditional: lands on any empty point beyond the screen up to the next piece.
    for m in ["a0a4", "a0a5", "a0a6", "a0a7"] {
        assert!(legal(&traditional, m), "traditional {m}");
    }
    assert!(!legal(&traditional, "a0a1") && !legal(&traditional, "a0a8"));
    // Site: slides up to the screen; beyond it only the capture.
    for m in ["a0a1", "a0a2", "a0a7"] {
        assert!(legal(&site, m), "site {m}");
    }
    assert!(!legal(&site, "a0a4") && !legal(&site, "a0a6") && !legal(&site, "a0a3"));
}

#[test]
fn cannon_along_a_palace_diagonal_over_the_centre() {
    let gens = [('K', "e1"), ('k', "d9")];
    for rules in Rules::ALL {
        let screened = pos(&[gens[0], gens[1], ('C', "d7"), ('P', "e8"), ('a', "f9")], CHO, rules);
        assert!(legal(&screened, "d7f9"), "{rules}: corner over the centre to the corner");
        let empty_target = pos(&[gens[0], gens[1], ('C', "d7"), ('P', "e8")], CHO, rules);
        assert_eq!(legal(&empty_target, "d7f9"), rules == Rules::Traditional, "{rules}");
        let no_screen = pos(&[gens[0], gens[1], ('C', "d7"), ('a', "f9")], CHO, rules);
        assert!(!legal(&no_screen, "d7f9"), "{rules}: no screen, no capture");
        assert_eq!(legal(&no_screen, "d7e8"), rules == Rules::Site, "{rules}: the slide");
        let cannon_screen =
            pos(&[gens[0], gens[1], ('C', "d7"), ('c', "e8"), ('a', "f9")], CHO, rules);
        assert!(!legal(&cannon_screen, "d7f9"), "{rules}: a cannon is no screen");
    }
}

#[test]
fn general_and_guard_stay_in_the_palace_on_its_lines() {
    for rules in Rules::ALL {
        let p = pos(&[('K', "d2"), ('k', "e8"), ('A', "f2"), ('A', "e0")], CHO, rules);
        assert!(!legal(&p, "d2d3") && !legal(&p, "d2c2"), "the general may not leave");
        assert!(legal(&p, "d2e1") && legal(&p, "d2d1") && legal(&p, "d2e2"));
        assert!(!legal(&p, "f2f3") && !legal(&p, "f2g2"), "the guard may not leave");
        assert!(legal(&p, "f2e1") && legal(&p, "f2f1"));
        // From a side-middle point there is no diagonal line.
        assert!(!legal(&p, "e0d1") && !legal(&p, "e0f1"));
        assert!(legal(&p, "e0e1") && legal(&p, "e0d0") && legal(&p, "e0f0"));
        let q = pos(&[('K', "d1"), ('k', "e8"), (GUARD.fen_char(), "e1")], CHO, rules);
        assert!(!legal(&q, "d1e2") && !legal(&q, "d1e0"), "general on d1: no diagonals");
        assert!(legal(&q, "e1d0") && legal(&q, "e1f2") && legal(&q, "e1f0"), "guard on the centre");
        assert!(!legal(&q, "e1e3"), "one point only");
    }
}

#[test]
fn soldier_steps_forward_or_sideways_only() {
    for p in both(&[('P', "c4")]) {
        assert!(legal(&p, "c4c5") && legal(&p, "c4b4") && legal(&p, "c4d4"));
        assert!(!legal(&p, "c4c3"), "never backward");
        assert!(!legal(&p, "c4b5") && !legal(&p, "c4d5"), "never diagonally");
        assert!(!legal(&p, "c4c6"), "one point");
    }
    // Han's soldiers go down the board.
    for p in Rules::ALL.map(|r| pos(&with(&[('p', "c5")]), HAN, r)) {
        assert!(legal(&p, "c5c4") && legal(&p, "c5b5"));
        assert!(!legal(&p, "c5c6"));
    }
}

#[test]
fn soldier_has_no_palace_diagonal_moves() {
    let gens = [('K', "e1"), ('k', "f9")];
    for rules in Rules::ALL {
        let p = pos(&[gens[0], gens[1], ('P', "d7")], CHO, rules);
        assert!(!legal(&p, "d7e8"), "{rules}: corner to centre refused");
        assert!(legal(&p, "d7d8") && legal(&p, "d7e7"));
        let centre = pos(&[gens[0], gens[1], ('P', "e8")], CHO, rules);
        assert!(!legal(&centre, "e8d9"), "{rules}: centre to corner refused");
        // ... and such a soldier does not give check diagonally either.
        assert!(!centre.general_attacked(HAN), "{rules}");
    }
}

#[test]
fn pass_is_legal_exactly_when_not_in_check() {
    for rules in Rules::ALL {
        let quiet = pos(&with(&[('R', "a0")]), CHO, rules);
        assert!(!quiet.is_check());
        let pass = quiet.pass();
        assert_eq!(pass, mv("e1e1"));
        assert!(janggi::is_pass(pass) && quiet.is_pass(pass));
        assert!(legal(&quiet, "e1e1"));
        assert_eq!(*quiet.legal_moves().last().unwrap(), pass, "the pass comes last");
        assert_eq!(quiet.parse_uci("e1e1"), Ok(pass));
        assert_eq!(quiet.parse_uci_with("e2e2", RankBase::One), Ok(pass));
        assert_eq!(janggi::move_to_uci(pass, RankBase::One), "e2e2");
        assert!(quiet.parse_uci("a0a0").is_err(), "a 'pass' of another piece");
        assert_eq!(
            quiet.check_legal(mv("a0a0")),
            Err(IllegalMoveReason::NotAPieceMove(PieceKind::Chariot))
        );
        assert!(quiet.parse_uci("b0b0").is_err(), "an empty point");

        let checked = pos(&with(&[('r', "e5")]), CHO, rules);
        assert!(checked.is_check());
        assert!(!legal(&checked, "e1e1"));
        assert_eq!(checked.check_legal(mv("e1e1")), Err(IllegalMoveReason::GeneralAttacked));

        let mut after = quiet;
        after.play(pass).unwrap();
        assert_eq!(after.turn(), HAN);
        assert_eq!(after.halfmove_clock(), 1);
        assert_eq!(after.fen().split(' ').next(), quiet.fen().split(' ').next());
        assert_ne!(after.key(), quiet.key(), "the side to move is in the key");
    }
}

#[test]
fn generals_may_face_each_other() {
    for rules in Rules::ALL {
        let p = pos(&[('K', "e1"), ('k', "e8")], CHO, rules);
        assert!(!p.is_check());
        assert!(legal(&p, "e1e2"), "stepping along the open file");
        let q = pos(&[('K', "e1"), ('k', "e8"), ('N', "e4")], CHO, rules);
        assert!(legal(&q, "e4c5"), "leaving the file between them");
        let r = pos(&[('K', "d1"), ('k', "e8")], CHO, rules);
        assert!(legal(&r, "d1e1"), "stepping onto the open file");
    }
}

#[test]
fn a_move_may_not_leave_the_own_general_attacked() {
    for rules in Rules::ALL {
        // Pinned chariot.
        let p = pos(&[('K', "e1"), ('k', "d8"), ('R', "e4"), ('r', "e7")], CHO, rules);
        assert!(!legal(&p, "e4d4"));
        assert_eq!(p.check_legal(mv("e4d4")), Err(IllegalMoveReason::GeneralAttacked));
        assert!(legal(&p, "e4e7") && legal(&p, "e4e5"));
        // An elephant's check, answered by blocking its second eye.
        let q = pos(&[('K', "e1"), ('k', "d8"), ('b', "c4"), ('R', "a3")], CHO, rules);
        assert!(q.is_check(), "c4-c3-d2-e1");
        assert!(!legal(&q, "e1e1"));
        assert!(legal(&q, "a3c3"), "blocks the first eye");
        assert!(!legal(&q, "a3b3"));
        // A horse's check through a palace corner.
        let r = pos(&[('K', "e1"), ('k', "d8"), ('n', "f3")], CHO, rules);
        assert!(r.is_check(), "f3-f2 leg empty, e1");
    }
}

#[test]
fn checkmate_ends_the_game_and_a_quiet_position_does_not() {
    // Two chariots: a9 covers rank 9... built by hand: Han general d9, Cho chariots on c8 and
    // b9 after the mating move, the corner diagonal blocked by its own guard on e8.
    let start =
        pos(&[('K', "e1"), ('k', "d9"), ('a', "e8"), ('R', "c8"), ('R', "b0")], CHO, Rules::Site);
    let mut game = Game::new(start);
    assert_eq!(game.outcome(), None);
    assert!(game.is_winning_move(mv("b0b9")));
    assert!(!game.is_winning_move(mv("b0b1")));
    let o = game.play(mv("b0b9")).unwrap().expect("mate");
    assert_eq!(o.winner(), Some(CHO));
    assert_eq!(o.reason(), OutcomeReason::Checkmate);
    assert_eq!(o.result_str(), "1-0");
    assert!(game.legal_moves().is_empty());
}

#[test]
fn no_capture_limit_draws_at_200_plies() {
    let fen = "4k4/9/9/9/9/9/9/9/4K4/R8 w - - 199 120";
    let mut game = Game::new(Position::from_fen(fen, Rules::Site).unwrap());
    assert_eq!(game.outcome(), None);
    let o = game.play(mv("e1e1")).unwrap().expect("draw");
    assert_eq!(o.reason(), OutcomeReason::NoCaptureLimit);
    assert_eq!(o.winner(), None);
    let decided =
        Game::new(Position::from_fen("4k4/9/9/9/9/9/9/9/4K4/9 w - - 200 1", Rules::Site).unwrap());
    assert!(decided.is_over(), "a start position at the limit is judged as it stands");
}

#[test]
fn repetitions_count_occurrences_since_the_last_capture() {
    let mut game = Game::new(Position::start(Rules::Traditional));
    assert_eq!(game.repetitions(), 1);
    for (k, m) in ["e1e1", "e8e8", "e1e1", "e8e8"].iter().enumerate() {
        let m = game.position().parse_uci(m).unwrap();
        game.play(m).unwrap();
        assert_eq!(game.repetitions(), [1, 2, 2, 3][k], "after {} plies", k + 1);
    }
    assert_eq!(game.len(), 4);
    assert_eq!(game.keys().len(), 5);
    assert_eq!(game.rules(), Rules::Traditional);
    assert_eq!(game.outcome(), None, "janggi has no repetition rule");
}

#[test]
fn fen_validation_names_the_problem() {
    let bad = [
        ("4k4/9/9/9/9/9/9/9/9/K8 w - - 0 1", "outside its palace"),
        ("4k4/9/9/9/9/9/4A4/9/9/3K5 w - - 0 1", "guard on e3 is outside its palace"),
        ("3k5/9/9/9/9/9/9/9/4K4/3K5 w - - 0 1", "2 generals"),
        ("9/9/9/9/9/9/9/9/4K4/9 w - - 0 1", "Han has no general"),
        ("4k4/9/9/9/9/9/9/4R4/4K4/9 w - - 0 1", "Han is in check"),
        ("4k4/9/PPPPPP3/9/9/9/9/9/4K4/9 w - - 0 1", "6 soldiers for Cho"),
        ("4k4/9/9/9 w - - 0 1", "field 1"),
        ("4k4/9/9/9/9/9/9/9/4K4/9 x - - 0 1", "field 2"),
        ("4k4/9/9/9/9/9/9/9/4K4/9 w - - z 1", "field 5"),
    ];
    for (fen, needle) in bad {
        let e = Position::from_fen(fen, Rules::Site).expect_err(fen).to_string();
        assert!(e.contains(needle), "{fen}: '{e}' lacks '{needle}'");
    }
}

#[test]
fn fen_round_trips_and_start_is_the_design_fen() {
    for rules in Rules::ALL {
        let start = Position::start(rules);
        assert_eq!(start.fen(), janggi::START_FEN);
        assert_eq!(start.rules(), rules);
        assert_eq!(start.turn(), CHO);
        assert_eq!(start.general(CHO), sq("e1"));
        assert_eq!(start.general(HAN), sq("e8"));
        assert_eq!(start.piece_at(sq("d0")), Some(Piece::new(CHO, GUARD)));
        assert_eq!(Position::from_fen(&start.fen(), rules), Ok(start));
    }
    // Another horse/elephant arrangement.
    let fen = "rbna1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR b - - 3 7";
    let p = Position::from_fen(fen, Rules::Traditional).unwrap();
    assert_eq!(p.fen(), fen);
    assert_eq!((p.halfmove_clock(), p.fullmove_number()), (3, 7));
}

#[test]
fn rules_names_parse_and_print() {
    for r in Rules::ALL {
        assert_eq!(r.to_string().parse::<Rules>(), Ok(r));
    }
    assert_eq!(Rules::default(), Rules::Site);
    let e = "asian".parse::<Rules>().unwrap_err().to_string();
    assert!(e.contains("asian") && e.contains("site") && e.contains("traditional"), "{e}");
}

#[test]
fn move_text_errors_do_not_panic() {
    let p = Position::start(Rules::Site);
    for text in ["", "e1", "z0z1", "e1e10", "e1e1e1", "é1e1", "a0a3", "e3e5", "a9a8"] {
        assert!(p.parse_uci(text).is_err(), "{text}");
    }
    assert_eq!(janggi::parse_uci_with("a10a9", RankBase::One), Ok(mv("a9a8")));
    assert!(janggi::parse_uci_with("a10a9", RankBase::Zero).is_err());
}

#[test]
fn piece_values_are_the_conventional_ones() {
    let v: Vec<i32> = PieceKind::ALL.iter().map(|&k| janggi::piece_value(k)).collect();
    assert_eq!(v, [0, 3, 3, 5, 13, 7, 2]);
}

#[test]
fn move_list_capacity_covers_an_open_position() {
    // Chariots and (site) cannons on open lines and a palace centre: far from the 156 bound of
    // `MAX_MOVES`, but every move is counted without overflow. Cho to move; Han has its general
    // alone, which attacks nothing outside its palace, so no Cho move is illegal for leaving
    // its general attacked, and Cho can pass (not in check). Counted by hand from
    // docs/RULES.md, "Janggi" (the palace is d0–f2, its diagonals d0–e1–f2 and f0–e1–d2):
    // - general d0 (a corner): e0, d1; the diagonal to e1 holds the own chariot = 2;
    // - guard f0: e0, f1 = 2; guard f2: e2, f1 = 2 (their diagonal point e1 is taken);
    // - chariot e1 (the centre): a1–d1 (4), f1–i1 (4), e2–e9 (8), e0 (1), and of the four
    //   diagonal points only d2 is empty = 18;
    // - chariot a5: b5–i5 (8), a0–a4 (5), a6–a9 (4) = 17;
    // - cannon c4 (site: a slide like a chariot's; the only enemy piece is the general, not
    //   in check, so no capture): a4, b4 (2), d4–h4 up to the own soldier on i4 (5), c5–c9 (5),
    //   c1–c3 up to the own elephant on c0 (3) = 15;
    // - cannon h6: a6–g6 (7), i6 (1), h7–h9 (3), h3–h5 up to the own horse on h2 (3) = 14;
    // - horse b2: over b3 to a4 (c4 is the own cannon), over b1 to a0 (c0 the own elephant),
    //   over c2 to d3 and d1, over a2 off the board = 4;
    // - horse h2: over h3 to g4 (i4 the own soldier), over h1 to g0 and i0, over g2 to f3 and
    //   f1, over i2 off the board = 5;
    // - elephant c0: over c1 and d2 to e3 (over c1 and b2 to a3 is blocked by the own horse),
    //   d0 the own general, b0's way off the board = 1;
    // - elephant g3: e6 (over g4, f5), i6 (g4, h5), e0 (g2, f1), i0 (g2, h1), d5 (f3, e4), d1
    //   (f3, e2), h3's way off the board = 6;
    // - soldier i4: i5, h4 = 2;
    // - the pass = 1.
    // Total 2 + 2 + 2 + 18 + 17 + 15 + 14 + 4 + 5 + 1 + 6 + 2 + 1 = 89. Under `traditional`
    // every cannon move jumps a screen: c4 has none on its four lines before the edge or a
    // piece with nothing beyond it (i4, c0 stand on the edge), h6 jumps the horse on h2 to h1
    // and h0 = 0 + 2 instead of 15 + 14: 62, as Fairy-Stockfish counts it (`UCI_Variant
    // janggi`, `go perft 1` on the FEN below).
    let pieces = [
        ('K', "d0"),
        ('A', "f0"),
        ('A', "f2"),
        ('R', "e1"),
        ('R', "a5"),
        ('C', "c4"),
        ('C', "h6"),
        ('N', "b2"),
        ('N', "h2"),
        ('B', "c0"),
        ('B', "g3"),
        ('P', "i4"),
        ('k', "f9"),
    ];
    let p = pos(&pieces, CHO, Rules::Site);
    assert_eq!(p.fen(), "5k3/9/9/7C1/R8/2C5P/6B2/1N3A1N1/4R4/2BK1A3 w - - 0 1");
    let n = p.legal_moves().len();
    assert_eq!(n, 89);
    assert!(n <= janggi::MAX_MOVES);
    assert_eq!(n, p.count_legal_moves());
    let counts: Vec<usize> = pieces[..12].iter().map(|&(_, s)| from_in(&p, s)).collect();
    assert_eq!(counts, [2, 2, 2, 18, 17, 15, 14, 4, 5, 1, 6, 2]);
    assert!(janggi::is_pass(*p.legal_moves().last().unwrap()));
    let t = pos(&pieces, CHO, Rules::Traditional);
    assert_eq!(t.legal_moves().len(), 62);
    assert_eq!((from_in(&t, "c4"), from_in(&t, "h6")), (0, 2));
}

/// The moves of `p` from the point `s` (the pass left out).
fn from_in(p: &Position, s: &str) -> usize {
    p.legal_moves().iter().filter(|&&m| m.from() == sq(s) && !janggi::is_pass(m)).count()
}
