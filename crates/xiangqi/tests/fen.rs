//! FEN reading, validation and writing: each error names the right field or rule, lenient mode
//! accepts exactly the unreachable points, and printing then parsing gives the position back.

use xiangqi::fen::parse_setup;
use xiangqi::{
    Color, FenError, FenField, ParseFenError, Piece, PieceKind, Position, PositionError, Square,
    Validation,
};

/// A legal placement (k d9, K e0) to hang other fields on.
const PLACEMENT: &str = "3k5/9/9/9/9/9/9/9/9/4K4";

fn sq(text: &str) -> Square {
    let b = text.as_bytes();
    Square::from_index(usize::from(b[1] - b'0') * 9 + usize::from(b[0] - b'a'))
}

fn red(kind: PieceKind) -> Piece {
    Piece::new(Color::Red, kind)
}

fn black(kind: PieceKind) -> Piece {
    Piece::new(Color::Black, kind)
}

/// The rule `fen` breaks under `validation`; also checks the error's text.
#[track_caller]
fn position_error(fen: &str, validation: Validation) -> PositionError {
    match Position::from_fen_with(fen, validation) {
        Err(FenError::Position(e)) => {
            let text = FenError::Position(e.clone()).to_string();
            assert!(text.contains("field 1 (placement)"), "{text}");
            // The setup parses; only from_setup refuses it, with the same error.
            let setup = parse_setup(fen).unwrap();
            assert_eq!(Position::from_setup(&setup, validation), Err(e.clone()));
            e
        }
        other => panic!("{fen}: expected a position error, got {other:?}"),
    }
}

/// The parse error of `fen`, the same from every entry point.
#[track_caller]
fn parse_error(fen: &str) -> ParseFenError {
    let e = parse_setup(fen).expect_err(fen);
    assert_eq!(Position::from_fen(fen), Err(FenError::Parse(e.clone())));
    assert_eq!(Position::from_fen_with(fen, Validation::Lenient), Err(FenError::Parse(e.clone())));
    let text = FenError::Parse(e.clone()).to_string();
    assert!(text.contains(&e.field.to_string()), "{text} does not name {:?}", e.field);
    e
}

#[track_caller]
fn strict_only(fen: &str) -> PositionError {
    let e = position_error(fen, Validation::Strict);
    let lenient = Position::from_fen_with(fen, Validation::Lenient)
        .unwrap_or_else(|err| panic!("{fen} must pass lenient validation: {err}"));
    assert_eq!(Position::from_fen_with(&lenient.fen(), Validation::Lenient), Ok(lenient));
    e
}

#[track_caller]
fn both_modes(fen: &str) -> PositionError {
    let e = position_error(fen, Validation::Strict);
    assert_eq!(position_error(fen, Validation::Lenient), e, "{fen}");
    e
}

// ---------------------------------------------------------------- rules of the position

#[test]
fn missing_general() {
    let e = both_modes("9/9/9/9/9/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(e, PositionError::MissingGeneral(Color::Black));
    assert!(e.to_string().contains("black has no general"), "{e}");
    let e = both_modes("4k4/9/9/9/9/9/9/9/9/9 w - - 0 1");
    assert_eq!(e, PositionError::MissingGeneral(Color::Red));
    assert!(e.to_string().contains("red"), "{e}");
}

#[test]
fn two_generals() {
    let e = both_modes("3k1k3/9/9/9/9/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(e, PositionError::TooManyPieces { piece: black(PieceKind::General), count: 2 });
    let text = e.to_string();
    assert!(text.contains("2 generals for black"), "{text}");
}

#[test]
fn general_outside_its_palace() {
    let e = both_modes("k8/9/9/9/9/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(
        e,
        PositionError::OutsidePalace { piece: black(PieceKind::General), square: sq("a9") }
    );
    assert!(e.to_string().contains("a9") && e.to_string().contains("palace"), "{e}");
    // A red general on e3, one step above its palace.
    let e = both_modes("3k5/9/9/9/9/9/4K4/9/9/9 w - - 0 1");
    assert_eq!(
        e,
        PositionError::OutsidePalace { piece: red(PieceKind::General), square: sq("e3") }
    );
    // A general in the other side's palace is outside its own.
    let e = both_modes("3kK4/9/9/9/9/9/9/9/9/9 w - - 0 1");
    assert_eq!(
        e,
        PositionError::OutsidePalace { piece: red(PieceKind::General), square: sq("e9") }
    );
}

#[test]
fn advisor_outside_its_palace() {
    let e = both_modes("5k3/9/9/9/9/9/9/9/9/2AK5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::OutsidePalace { piece: red(PieceKind::Advisor), square: sq("c0") }
    );
    let text = e.to_string();
    assert!(text.contains("red advisor on c0") && text.contains("palace"), "{text}");
    let e = both_modes("5k3/9/9/5a3/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::OutsidePalace { piece: black(PieceKind::Advisor), square: sq("f6") }
    );
}

#[test]
fn advisor_off_its_diagonals_is_refused_only_in_strict_mode() {
    // d1 is inside Red's palace but no advisor can ever stand there.
    let e = strict_only("5k3/9/9/9/9/9/9/9/3A5/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: red(PieceKind::Advisor), square: sq("d1") }
    );
}

#[test]
fn elephant_on_an_unreachable_point() {
    // Red elephant across the river on c6.
    let e = strict_only("5k3/9/9/2B6/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: red(PieceKind::Elephant), square: sq("c6") }
    );
    assert!(e.to_string().contains("c6") && e.to_string().contains("lenient"), "{e}");
    // Red elephant on its own half but off the elephant points (b0).
    let e = strict_only("5k3/9/9/9/9/9/9/9/9/1B1K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: red(PieceKind::Elephant), square: sq("b0") }
    );
    // Black elephant across the river on g4.
    let e = strict_only("5k3/9/9/9/9/6b2/9/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: black(PieceKind::Elephant), square: sq("g4") }
    );
}

#[test]
fn soldier_on_an_unreachable_point() {
    // A red soldier behind its start rank (e1).
    let e = strict_only("5k3/9/9/9/9/9/9/9/4P4/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: red(PieceKind::Soldier), square: sq("e1") }
    );
    // On its start rank but on a file where no soldier starts (b3), and on b4.
    let e = strict_only("5k3/9/9/9/9/9/1P7/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: red(PieceKind::Soldier), square: sq("b3") }
    );
    let e = strict_only("5k3/9/9/9/9/1P7/9/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: red(PieceKind::Soldier), square: sq("b4") }
    );
    // Across the river every file is reachable: b5 is fine.
    assert!(Position::from_fen("5k3/9/9/9/1P7/9/9/9/9/3K5 w - - 0 1").is_ok());
    // Black soldiers: b6 and e8 are unreachable, e6 and b4 are fine.
    let e = strict_only("5k3/9/9/1p7/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: black(PieceKind::Soldier), square: sq("b6") }
    );
    let e = strict_only("5k3/4p4/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        PositionError::UnreachablePoint { piece: black(PieceKind::Soldier), square: sq("e8") }
    );
    assert!(Position::from_fen("5k3/9/9/4p4/9/1p7/9/9/9/3K5 w - - 0 1").is_ok());
}

#[test]
fn more_pieces_than_the_set_holds() {
    let e = both_modes("5k3/9/9/9/9/9/9/9/R1R1R4/3K5 w - - 0 1");
    assert_eq!(e, PositionError::TooManyPieces { piece: red(PieceKind::Chariot), count: 3 });
    assert!(e.to_string().contains("3 chariots for red, the set has 2"), "{e}");
    let e = both_modes("5k3/9/9/p1p1p1p1p/p8/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(e, PositionError::TooManyPieces { piece: black(PieceKind::Soldier), count: 6 });
    let e = both_modes("5k3/9/9/9/9/9/9/9/9/1NNK1N3 w - - 0 1");
    assert_eq!(e, PositionError::TooManyPieces { piece: red(PieceKind::Horse), count: 3 });
    // Two of each is fine.
    assert!(Position::from_fen("5k3/9/9/9/9/9/9/9/9/RR1K3CC w - - 0 1").is_ok());
}

#[test]
fn side_not_to_move_in_check() {
    // Red chariot d4 attacks k d9 with Red to move.
    let fen = "3k5/9/9/9/9/3R5/9/9/9/4K4 w - - 0 1";
    let e = both_modes(fen);
    assert_eq!(e, PositionError::OpponentInCheck(Color::Black));
    assert!(e.to_string().contains("black is in check"), "{e}");
    // With Black to move it is an ordinary check.
    let pos = Position::from_fen(&fen.replace(" w ", " b ")).unwrap();
    assert!(pos.is_check());
    // Check by a cannon over a screen, by a horse, by a soldier.
    let e = both_modes("3k5/9/9/3n5/9/9/9/3C5/9/4K4 w - - 0 1");
    assert_eq!(e, PositionError::OpponentInCheck(Color::Black));
    let e = both_modes("3k5/9/4N4/9/9/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(e, PositionError::OpponentInCheck(Color::Black));
    let e = both_modes("3k5/3P5/9/9/9/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(e, PositionError::OpponentInCheck(Color::Black));
    // Red in check with Black to move: by a chariot, and sideways by a crossed soldier.
    let e = both_modes("3k5/9/9/9/9/9/9/9/9/3rK4 b - - 0 1");
    assert_eq!(e, PositionError::OpponentInCheck(Color::Red));
    let e = both_modes("3k5/9/9/9/9/9/9/9/9/3pK4 b - - 0 1");
    assert_eq!(e, PositionError::OpponentInCheck(Color::Red));
    // A horse with a blocked leg gives no check: the red horse e7 reaches d9 only through e8,
    // where a red soldier stands (the soldier attacks e9, d8 and f8, not d9). Accepted.
    assert!(Position::from_fen("3k5/4P4/4N4/9/9/9/9/9/9/4K4 w - - 0 1").is_ok());
    // A cannon without a screen gives no check either.
    assert!(Position::from_fen("3k5/9/9/9/9/9/9/3C5/9/4K4 w - - 0 1").is_ok());
}

#[test]
fn generals_facing() {
    for fen in ["4k4/9/9/9/9/9/9/9/9/4K4 w - - 0 1", "3k5/9/9/9/9/9/9/9/9/3K5 b - - 0 1"] {
        let e = both_modes(fen);
        assert_eq!(e, PositionError::GeneralsFacing, "{fen}");
        assert!(e.to_string().contains("face"), "{e}");
    }
    // Any piece between them closes the file.
    assert!(Position::from_fen("4k4/9/9/9/4n4/9/9/9/9/4K4 w - - 0 1").is_ok());
}

/// Every point for every advisor, elephant and soldier, against the points a game can bring
/// them to (listed by hand from the rules): those pass both modes; other palace points (for an
/// advisor) and other points (for an elephant or soldier) pass only lenient mode; an advisor
/// outside its palace fails both.
#[test]
fn every_point_is_judged_as_the_rules_say() {
    let names = |list: &str| list.split(' ').map(sq).collect::<Vec<_>>();
    let mut red_soldier = names("a3 c3 e3 g3 i3 a4 c4 e4 g4 i4");
    red_soldier.extend((45..90).map(Square::from_index));
    let mut black_soldier = names("a6 c6 e6 g6 i6 a5 c5 e5 g5 i5");
    black_soldier.extend((0..45).map(Square::from_index));
    let cases = [
        (red(PieceKind::Advisor), names("d0 f0 e1 d2 f2")),
        (black(PieceKind::Advisor), names("d9 f9 e8 d7 f7")),
        (red(PieceKind::Elephant), names("c0 g0 a2 e2 i2 c4 g4")),
        (black(PieceKind::Elephant), names("c9 g9 a7 e7 i7 c5 g5")),
        (red(PieceKind::Soldier), red_soldier),
        (black(PieceKind::Soldier), black_soldier),
    ];
    // Generals on e0 and d8: different files, and neither point is one of the listed ones for
    // advisors or elephants.
    let (red_general, black_general) = (sq("e0"), sq("d8"));
    for (piece, reachable) in cases {
        let mut seen = 0;
        for s in Square::all() {
            if s == red_general || s == black_general {
                continue;
            }
            let mut setup = xiangqi::Setup::empty();
            setup.board[red_general.index()] = Some(red(PieceKind::General));
            setup.board[black_general.index()] = Some(black(PieceKind::General));
            setup.board[s.index()] = Some(piece);
            // The piece's owner is not to move, so it may attack the other general freely.
            setup.turn = piece.color.other();
            let strict = Position::from_setup(&setup, Validation::Strict);
            let lenient = Position::from_setup(&setup, Validation::Lenient);
            if reachable.contains(&s) {
                assert!(strict.is_ok(), "{piece:?} on {s}: {strict:?}");
                assert_eq!(strict, lenient);
                seen += 1;
            } else if piece.kind == PieceKind::Advisor && !s.in_palace(piece.color) {
                let e = PositionError::OutsidePalace { piece, square: s };
                assert_eq!(strict, Err(e.clone()), "{piece:?} on {s}");
                assert_eq!(lenient, Err(e), "{piece:?} on {s}");
            } else {
                let e = PositionError::UnreachablePoint { piece, square: s };
                assert_eq!(strict, Err(e), "{piece:?} on {s}");
                assert!(lenient.is_ok(), "{piece:?} on {s}: {lenient:?}");
            }
        }
        assert_eq!(
            seen,
            reachable.iter().filter(|&&s| s != red_general && s != black_general).count()
        );
    }
}

// ---------------------------------------------------------------- syntax

#[test]
fn bad_side_to_move() {
    for turn in ["x", "wb", "red", "-", "0"] {
        let e = parse_error(&format!("{PLACEMENT} {turn} - - 0 1"));
        assert_eq!(e.field, FenField::Turn, "{turn}");
        assert!(e.to_string().contains("field 2 (side to move)"), "{e}");
    }
    let e = parse_error(PLACEMENT);
    assert_eq!(e.field, FenField::Turn);
    assert!(e.reason.contains("missing"), "{e}");
}

#[test]
fn wrong_number_of_ranks() {
    let e = parse_error("3k5/9/9/9/9/9/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(e.field, FenField::Placement);
    assert!(e.reason.contains("11"), "{e}");
    let e = parse_error("3k5/9/9/9/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(e.field, FenField::Placement);
    assert!(e.reason.contains('9'), "{e}");
    assert!(e.to_string().contains("field 1 (placement)"), "{e}");
}

#[test]
fn rank_of_the_wrong_width() {
    // Rank 9 with 10 points, by digits and by letters.
    for fen in ["3k6/9/9/9/9/9/9/9/9/4K4 w", "3k5p/9/9/9/9/9/9/9/9/4K4 w"] {
        let e = parse_error(fen);
        assert_eq!(e.field, FenField::Placement);
        assert!(e.reason.contains("rank 9"), "{e}");
    }
    // Rank 0 with 10 points, and with 8.
    let e = parse_error("3k5/9/9/9/9/9/9/9/9/4K41 w");
    assert!(e.reason.contains("rank 0"), "{e}");
    let e = parse_error("3k5/9/9/9/9/9/9/9/9/4K3 w");
    assert!(e.reason.contains("rank 0") && e.reason.contains('8'), "{e}");
    // Rank 5 empty.
    let e = parse_error("3k5/9/9/9//9/9/9/9/4K4 w");
    assert!(e.reason.contains("rank 5"), "{e}");
    // '0' is not a run of empty points.
    let e = parse_error("3k5/9/9/9/9/9/9/9/9/4K04 w");
    assert_eq!(e.field, FenField::Placement);
}

#[test]
fn unknown_letter() {
    for (fen, shown) in [
        ("3k5/9/9/9/9/9/9/9/9/4K3X w", "'X'"),
        ("3k5/9/9/9/9/9/9/9/9/4K3q w", "'q'"),
        ("3k5/9/9/9/9/9/9/9/9/4K3\u{9a6c} w", "\u{9a6c}"),
    ] {
        let e = parse_error(fen);
        assert_eq!(e.field, FenField::Placement);
        assert!(e.reason.contains("unknown piece letter") && e.reason.contains(shown), "{e}");
        assert!(e.reason.contains("rank 0"), "{e}");
    }
}

#[test]
fn bad_trailing_fields() {
    let cases = [
        ("w K - 0 1", FenField::Castling),
        ("w - e3 0 1", FenField::EnPassant),
        ("w - - x 1", FenField::HalfmoveClock),
        ("w - - -1 1", FenField::HalfmoveClock),
        ("w - - 1000001 1", FenField::HalfmoveClock),
        ("w - - 0 y", FenField::FullmoveNumber),
        ("w - - 0 1.5", FenField::FullmoveNumber),
        ("w - - 0 1 extra", FenField::FullmoveNumber),
    ];
    for (tail, field) in cases {
        let e = parse_error(&format!("{PLACEMENT} {tail}"));
        assert_eq!(e.field, field, "{tail}");
    }
    let e = parse_error("");
    assert_eq!(e.field, FenField::Placement);
}

// ---------------------------------------------------------------- accepted variants

#[test]
fn elephant_and_horse_letters_e_and_h_are_accepted() {
    let fen = "rheakaehr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RHEAKAEHR w - - 0 1";
    assert_eq!(Position::from_fen(fen), Ok(Position::start()));
    // They print as B and N.
    assert_eq!(Position::from_fen(fen).unwrap().fen(), xiangqi::START_FEN);
}

#[test]
fn r_is_accepted_for_red_to_move() {
    let placement = xiangqi::START_FEN.split(' ').next().unwrap();
    let pos = Position::from_fen(&format!("{placement} r - - 0 1")).unwrap();
    assert_eq!(pos, Position::start());
    assert_eq!(pos.turn(), Color::Red);
    let black = Position::from_fen(&format!("{placement} b - - 0 1")).unwrap();
    assert_eq!(black.turn(), Color::Black);
    assert_ne!(black.key(), pos.key());
}

#[test]
fn last_four_fields_are_optional() {
    let full = Position::from_fen(&format!("{PLACEMENT} w - - 0 1")).unwrap();
    assert_eq!(Position::from_fen(&format!("{PLACEMENT} w")), Ok(full));
    assert_eq!(Position::from_fen(&format!("{PLACEMENT} w -")), Ok(full));
    assert_eq!(Position::from_fen(&format!("{PLACEMENT} w - -")), Ok(full));
    let clock = Position::from_fen(&format!("{PLACEMENT} w - - 7")).unwrap();
    assert_eq!((clock.halfmove_clock(), clock.fullmove_number()), (7, 1));
    let both = Position::from_fen(&format!("{PLACEMENT}  b  -  -  7  12 ")).unwrap();
    assert_eq!((both.halfmove_clock(), both.fullmove_number()), (7, 12));
    assert_eq!(both.turn(), Color::Black);
    // Ply = 2 · (12 − 1) + 1 with Black to move.
    assert_eq!(both.ply(), 23);
    assert_eq!(both.fen(), format!("{PLACEMENT} b - - 7 12"));
}

#[test]
fn parse_setup_places_pieces_by_rank_and_file() {
    let setup = parse_setup(xiangqi::START_FEN).unwrap();
    assert_eq!(setup.turn, Color::Red);
    assert_eq!((setup.halfmove_clock, setup.fullmove_number), (0, 1));
    assert_eq!(setup.board[sq("a0").index()], Some(red(PieceKind::Chariot)));
    assert_eq!(setup.board[sq("b0").index()], Some(red(PieceKind::Horse)));
    assert_eq!(setup.board[sq("c0").index()], Some(red(PieceKind::Elephant)));
    assert_eq!(setup.board[sq("d0").index()], Some(red(PieceKind::Advisor)));
    assert_eq!(setup.board[sq("e0").index()], Some(red(PieceKind::General)));
    assert_eq!(setup.board[sq("h2").index()], Some(red(PieceKind::Cannon)));
    assert_eq!(setup.board[sq("g3").index()], Some(red(PieceKind::Soldier)));
    assert_eq!(setup.board[sq("b3").index()], None);
    assert_eq!(setup.board[sq("e9").index()], Some(black(PieceKind::General)));
    assert_eq!(setup.board[sq("b7").index()], Some(black(PieceKind::Cannon)));
    assert_eq!(setup.board[sq("i6").index()], Some(black(PieceKind::Soldier)));
    assert_eq!(setup.board.iter().flatten().count(), 32);
    // The same board as Position::start.
    assert_eq!(Position::from_setup(&setup, Validation::Strict), Ok(Position::start()));
}

// ---------------------------------------------------------------- round trips

#[test]
fn print_then_parse_gives_the_position_back() {
    let data = include_str!("data/xiangqi-perft.tsv");
    let mut checked = 0;
    for line in data.lines().skip(1) {
        let fen = line.split('\t').next().unwrap();
        let pos = Position::from_fen(fen).unwrap();
        // The data are written in the canonical six-field form.
        assert_eq!(pos.fen(), fen);
        assert_eq!(Position::from_fen(&pos.fen()), Ok(pos));
        assert_eq!(parse_setup(&pos.fen()), Ok(pos.to_setup()));
        checked += 1;
    }
    assert!(checked > 600);
    // Short input comes back in the full form.
    let pos = Position::from_fen("4k4/9/9/9/9/9/9/9/4A4/3K5 w").unwrap();
    assert_eq!(pos.fen(), "4k4/9/9/9/9/9/9/9/4A4/3K5 w - - 0 1");
    // Lenient positions round-trip too.
    let odd = "5k3/9/9/2B6/9/9/9/9/4P4/3K5 b - - 3 40";
    let pos = Position::from_fen_with(odd, Validation::Lenient).unwrap();
    assert_eq!(pos.fen(), odd);
    assert_eq!(Position::from_fen_with(&pos.fen(), Validation::Lenient), Ok(pos));
}

#[test]
fn setup_with_huge_clocks_is_refused_not_overflowed() {
    let mut setup = xiangqi::fen::parse_setup("4k4/9/9/9/9/9/9/9/9/3K5 w - - 0 1").unwrap();
    setup.fullmove_number = u32::MAX;
    let err = Position::from_setup(&setup, Validation::Strict).unwrap_err();
    assert!(matches!(err, PositionError::CounterOutOfRange { .. }), "{err}");
    setup.fullmove_number = 1;
    setup.halfmove_clock = u32::MAX;
    assert!(Position::from_setup(&setup, Validation::Lenient).is_err());
    setup.halfmove_clock = xiangqi::fen::MAX_COUNTER;
    assert!(Position::from_setup(&setup, Validation::Strict).is_ok());
}
