//! Untrusted text never makes the rules crate panic: random bytes and FEN-like or move-like
//! strings go to every parser, which must answer with a value or an error. Whatever is accepted
//! must then behave (round trips, legal moves, make and unmake).

use proptest::prelude::*;
use proptest::sample::Index;
use xiangqi::{Move, Position, RankBase, Validation, fen::parse_setup, fen::write_fen};

/// Case counts are sized for the release profile (the project's test profile); unoptimised
/// builds run a quarter of them.
fn config(cases: u32) -> ProptestConfig {
    let cases = if cfg!(debug_assertions) { cases / 4 } else { cases };
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Everything a FEN reader can be asked, with checks on what it accepts.
fn feed_fen(text: &str) -> Result<(), TestCaseError> {
    if let Ok(setup) = parse_setup(text) {
        // Whatever parses prints as a FEN that parses back to the same setup.
        let printed = write_fen(&setup);
        prop_assert_eq!(parse_setup(&printed), Ok(setup), "{}", printed);
    }
    let strict = Position::from_fen(text);
    let lenient = Position::from_fen_with(text, Validation::Lenient);
    if let Ok(pos) = strict {
        // Strict acceptance implies lenient acceptance of the same position.
        prop_assert_eq!(lenient.clone(), Ok(pos));
        prop_assert_eq!(Position::from_fen(&pos.fen()), Ok(pos));
    }
    if let Ok(pos) = lenient {
        prop_assert_eq!(Position::from_fen_with(&pos.fen(), Validation::Lenient), Ok(pos));
        exercise(&pos)?;
    }
    Ok(())
}

/// Legal moves, make and unmake on an accepted (possibly lenient) position.
fn exercise(pos: &Position) -> Result<(), TestCaseError> {
    let moves = pos.legal_moves();
    prop_assert_eq!(moves.len(), pos.count_legal_moves());
    for &m in &moves {
        let mut next = *pos;
        let undo = next.play_unchecked(m);
        prop_assert!(!next.general_attacked(pos.turn()));
        next.undo(undo);
        prop_assert_eq!(next, *pos);
        prop_assert_eq!(pos.parse_uci(&m.to_string()), Ok(m));
    }
    let _ = pos.mirror();
    Ok(())
}

/// Every move parser, with checks on what it accepts.
fn feed_move(text: &str, positions: &[Position]) -> Result<(), TestCaseError> {
    for base in [RankBase::Zero, RankBase::One] {
        if let Ok(m) = Move::from_uci(text, base) {
            prop_assert_ne!(m.from(), m.to());
            prop_assert_eq!(Move::from_uci(&m.to_uci(base), base), Ok(m));
        }
        for pos in positions {
            if let Ok(m) = pos.parse_uci_with(text, base) {
                prop_assert!(pos.is_legal(m));
                prop_assert_eq!(Move::from_uci(text, base), Ok(m));
            }
        }
    }
    for pos in positions {
        if let Ok(m) = pos.parse_uci(text) {
            prop_assert!(pos.is_legal(m));
        }
    }
    Ok(())
}

fn move_positions() -> Vec<Position> {
    [
        xiangqi::START_FEN,
        "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b - - 0 1",
        "4k4/9/9/9/9/9/9/9/4A4/3K5 w - - 0 1",
    ]
    .iter()
    .map(|f| Position::from_fen(f).unwrap())
    .collect()
}

/// A random board written as FEN: pieces on about one point in fourteen, generals usually placed
/// in their palaces so that validation is reached, a side-to-move and counter tail (some of them
/// bad), then up to two random edits of the text. About one in seven passes lenient validation.
fn board_fen() -> impl Strategy<Value = String> {
    let cell = prop_oneof![
        1100 => Just(None),
        1 => Just(Some('K')),
        1 => Just(Some('k')),
        4 => prop::sample::select(vec!['A', 'a']).prop_map(Some),
        80 => prop::sample::select("BNRCPbnrcpEHeh".chars().collect::<Vec<_>>()).prop_map(Some),
    ];
    (
        prop::collection::vec(cell, 90),
        prop::bool::weighted(0.9),
        0..9usize,
        0..9usize,
        prop::sample::select(vec![
            "w",
            "b",
            "r",
            "W",
            "B",
            "x",
            "",
            "w - -",
            "b - - 3 9",
            "w - - 0 0",
            "w x - 0 1",
            "w - - 1000001 1",
            "b - - 1 2 3",
        ]),
        prop::collection::vec(
            (
                any::<Index>(),
                0..9u8,
                prop::sample::select("/1 9wb-kK0é".chars().collect::<Vec<_>>()),
            ),
            0..3,
        ),
    )
        .prop_map(|(cells, generals, rg, bg, tail, edits)| {
            let mut board = cells;
            if generals {
                board[(rg / 3) * 9 + 3 + rg % 3] = Some('K');
                board[(7 + bg / 3) * 9 + 3 + bg % 3] = Some('k');
            }
            let mut fen = String::new();
            for rank in (0..10).rev() {
                let mut empty = 0;
                for file in 0..9 {
                    match board[rank * 9 + file] {
                        None => empty += 1,
                        Some(c) => {
                            if empty > 0 {
                                fen.push(char::from(b'0' + empty));
                                empty = 0;
                            }
                            fen.push(c);
                        }
                    }
                }
                if empty > 0 {
                    fen.push(char::from(b'0' + empty));
                }
                if rank > 0 {
                    fen.push('/');
                }
            }
            fen.push(' ');
            fen.push_str(tail);
            let mut chars: Vec<char> = fen.chars().collect();
            for (at, op, c) in edits {
                let i = at.index(chars.len() + 1);
                match op {
                    0 => chars.insert(i, c),
                    1 if i < chars.len() => {
                        chars.remove(i);
                    }
                    2 if i < chars.len() => chars[i] = c,
                    _ => {}
                }
            }
            chars.into_iter().collect()
        })
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..160)) {
        let text = String::from_utf8_lossy(&bytes);
        feed_fen(&text)?;
        feed_move(&text, &move_positions())?;
    }

    #[test]
    fn fen_alphabet_strings_never_panic(text in "[0-9kabnrcpehKABNRCPEH/ wbrW\\-\t\u{e9}\u{4e2d}\u{1f600}]{0,120}") {
        feed_fen(&text)?;
    }

    #[test]
    fn fen_like_strings_never_panic(ranks in prop::collection::vec("[0-9kabnrcpKABNRCPEHx\u{e9}]{0,11}", 0..13),
                                    rest in "( {1,2}[-0-9wbrx\u{4e2d}]{0,8}){0,7}") {
        let text = ranks.join("/") + &rest;
        feed_fen(&text)?;
    }

    #[test]
    fn board_fens_never_panic_and_accepted_ones_behave(text in board_fen()) {
        feed_fen(&text)?;
    }

    #[test]
    fn move_like_strings_never_panic(text in "[a-jA-J0-9 \\-x+=\u{e9}\u{4e2d}]{0,8}") {
        feed_move(&text, &move_positions())?;
    }

    #[test]
    fn coordinate_shaped_strings_never_panic(text in "[a-j][0-9]{0,3}[a-j]?[0-9]{0,3}") {
        feed_move(&text, &move_positions())?;
    }
}

#[test]
fn hand_picked_nasty_inputs_are_errors() {
    let fens = [
        "",
        " ",
        "/",
        "//////////",
        "9/9/9/9/9/9/9/9/9/9",
        "99/9/9/9/9/9/9/9/9/9 w",
        "4k4/9/9/9/9/9/9/9/9/3K5 w - - 18446744073709551616 1",
        "4k4/9/9/9/9/9/9/9/9/3K5 w - - -1 1",
        "4k4/9/9/9/9/9/9/9/9/3K5 w - - 0 4294967296",
        "4k4/9/9/9/9/9/9/9/9/3K5\u{0}w",
        "4k4/9/9/9/9/9/9/9/9/3K5 \u{e9}",
        "4\u{e9}k4/9/9/9/9/9/9/9/9/3K5 w",
        "111111111k/9/9/9/9/9/9/9/9/3K5 w",
        "kkkkkkkkk/9/9/9/9/9/9/9/9/3K5 w",
        "4k4/9/9/9/9/9/9/9/9/3K5 w - - 0 1 extra",
    ];
    for f in fens {
        assert!(Position::from_fen(f).is_err(), "{f:?} accepted");
        assert!(Position::from_fen_with(f, Validation::Lenient).is_err(), "{f:?} accepted");
    }
    let moves = [
        "",
        "h",
        "h2",
        "h2e",
        "h2e2e",
        "h2h2",
        "h-1e2",
        "h2e10",
        "i9j9",
        "\u{e9}2e2",
        "h2\u{e9}2",
        "h+2e2",
        "a99a1",
    ];
    let start = Position::start();
    for m in moves {
        assert!(Move::from_uci(m, RankBase::Zero).is_err(), "{m:?} accepted");
        assert!(start.parse_uci(m).is_err(), "{m:?} accepted");
    }
    // `h2e10` is fine in the 1–10 dialect, and `a10a9` names a9a8.
    assert!(Move::from_uci("h2e10", RankBase::One).is_ok());
    assert_eq!(Move::from_uci("a10a9", RankBase::One), Move::from_uci("a9a8", RankBase::Zero));
}
