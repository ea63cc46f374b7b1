//! Property tests of the rules crate over random playouts and random placements.
//!
//! The reference for "legal" is [`oracle`], a deliberately naive move generator written here from
//! the rule texts alone (every piece's geometry spelled out, legality by "can any enemy piece
//! capture my general afterwards, or do the generals face"). It shares no code or tables with the
//! crate, so agreement between the two is evidence, not tautology.
//!
//! Playouts start from the start position and from every position of
//! `tests/data/xiangqi-perft.tsv` (random middlegames from real games), and follow random move
//! indices chosen by proptest (0 to 149 plies).

use std::collections::BTreeSet;
use std::sync::OnceLock;

mod common;

use proptest::prelude::*;
use proptest::sample::Index;
use xiangqi::{
    Color, Game, MAX_MOVES, Move, Piece, PieceKind, Position, RankBase, RuleSet, Setup, Square,
    Validation, perft,
};

const PERFT_DATA: &str = include_str!("data/xiangqi-perft.tsv");

/// The start position followed by every distinct position of the perft data.
fn start_positions() -> &'static [Position] {
    static CELL: OnceLock<Vec<Position>> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut fens: Vec<&str> = vec![xiangqi::START_FEN];
        for line in PERFT_DATA.lines().skip(1) {
            let fen = line.split('\t').next().unwrap();
            if !fen.is_empty() && !fens.contains(&fen) {
                fens.push(fen);
            }
        }
        assert!(fens.len() > 100, "perft data has too few positions");
        fens.iter().map(|f| Position::from_fen(f).unwrap_or_else(|e| panic!("{f}: {e}"))).collect()
    })
}

/// A rule-text move generator, slow and simple on purpose.
mod oracle {
    use std::collections::BTreeSet;

    use xiangqi::{Board, Color, Move, Piece, PieceKind, Position, Square};

    const ORTHOGONAL: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
    const DIAGONAL: [(i32, i32); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];

    fn on_board(f: i32, r: i32) -> bool {
        (0..9).contains(&f) && (0..10).contains(&r)
    }

    fn at(b: &Board, f: i32, r: i32) -> Option<Piece> {
        b[(r * 9 + f) as usize]
    }

    /// Files d–f; ranks 0–2 for Red, 7–9 for Black.
    fn in_palace(c: Color, f: i32, r: i32) -> bool {
        (3..=5).contains(&f)
            && match c {
                Color::Red => (0..=2).contains(&r),
                Color::Black => (7..=9).contains(&r),
            }
    }

    /// Ranks 0–4 are Red's half, 5–9 Black's.
    fn own_half(c: Color, r: i32) -> bool {
        match c {
            Color::Red => r <= 4,
            Color::Black => r >= 5,
        }
    }

    /// Points the piece on (f, r) may move to, ignoring the safety of its own general.
    pub fn targets(b: &Board, f: i32, r: i32) -> Vec<(i32, i32)> {
        let p = at(b, f, r).expect("a piece");
        let c = p.color;
        let open =
            |tf: i32, tr: i32| on_board(tf, tr) && at(b, tf, tr).is_none_or(|q| q.color != c);
        let mut out = Vec::new();
        match p.kind {
            PieceKind::General => {
                for (df, dr) in ORTHOGONAL {
                    if in_palace(c, f + df, r + dr) && open(f + df, r + dr) {
                        out.push((f + df, r + dr));
                    }
                }
            }
            PieceKind::Advisor => {
                for (df, dr) in DIAGONAL {
                    if in_palace(c, f + df, r + dr) && open(f + df, r + dr) {
                        out.push((f + df, r + dr));
                    }
                }
            }
            PieceKind::Elephant => {
                for (df, dr) in DIAGONAL {
                    let (tf, tr) = (f + 2 * df, r + 2 * dr);
                    if on_board(tf, tr)
                        && own_half(c, tr)
                        && at(b, f + df, r + dr).is_none()
                        && open(tf, tr)
                    {
                        out.push((tf, tr));
                    }
                }
            }
            PieceKind::Horse => {
                for (df, dr) in
                    [(1, 2), (-1, 2), (1, -2), (-1, -2), (2, 1), (2, -1), (-2, 1), (-2, -1)]
                {
                    let (tf, tr) = (f + df, r + dr);
                    // The leg is the orthogonal neighbour in the direction of the long step.
                    let (lf, lr) = if df.abs() == 2 { (f + df / 2, r) } else { (f, r + dr / 2) };
                    if on_board(tf, tr) && at(b, lf, lr).is_none() && open(tf, tr) {
                        out.push((tf, tr));
                    }
                }
            }
            PieceKind::Chariot => {
                for (df, dr) in ORTHOGONAL {
                    let (mut tf, mut tr) = (f + df, r + dr);
                    while on_board(tf, tr) {
                        match at(b, tf, tr) {
                            None => out.push((tf, tr)),
                            Some(q) => {
                                if q.color != c {
                                    out.push((tf, tr));
                                }
                                break;
                            }
                        }
                        tf += df;
                        tr += dr;
                    }
                }
            }
            PieceKind::Cannon => {
                for (df, dr) in ORTHOGONAL {
                    let (mut tf, mut tr) = (f + df, r + dr);
                    let mut jumped = false;
                    while on_board(tf, tr) {
                        match (at(b, tf, tr), jumped) {
                            (None, false) => out.push((tf, tr)),
                            (None, true) => {}
                            (Some(_), false) => jumped = true,
                            (Some(q), true) => {
                                if q.color != c {
                                    out.push((tf, tr));
                                }
                                break;
                            }
                        }
                        tf += df;
                        tr += dr;
                    }
                }
            }
            PieceKind::Soldier => {
                let forward = if c == Color::Red { 1 } else { -1 };
                if open(f, r + forward) {
                    out.push((f, r + forward));
                }
                if !own_half(c, r) {
                    for df in [-1, 1] {
                        if open(f + df, r) {
                            out.push((f + df, r));
                        }
                    }
                }
            }
        }
        out
    }

    fn general_of(b: &Board, c: Color) -> (i32, i32) {
        let i = b
            .iter()
            .position(|&p| p == Some(Piece::new(c, PieceKind::General)))
            .expect("a general");
        ((i % 9) as i32, (i / 9) as i32)
    }

    /// Whether the generals stand on one file with nothing between them.
    pub fn facing(b: &Board) -> bool {
        let (rf, rr) = general_of(b, Color::Red);
        let (bf, br) = general_of(b, Color::Black);
        rf == bf && (rr.min(br) + 1..rr.max(br)).all(|r| at(b, rf, r).is_none())
    }

    /// Whether `c`'s general could be captured by an enemy piece, or the generals face.
    pub fn exposed(b: &Board, c: Color) -> bool {
        if facing(b) {
            return true;
        }
        let g = general_of(b, c);
        (0..90usize).any(|i| {
            let (f, r) = ((i % 9) as i32, (i / 9) as i32);
            matches!(b[i], Some(p) if p.color != c) && targets(b, f, r).contains(&g)
        })
    }

    /// The legal moves of `c` on `b`.
    pub fn legal_on(b: &Board, c: Color) -> BTreeSet<Move> {
        let mut out = BTreeSet::new();
        for i in 0..90i32 {
            let (f, r) = (i % 9, i / 9);
            if !matches!(b[i as usize], Some(p) if p.color == c) {
                continue;
            }
            for (tf, tr) in targets(b, f, r) {
                let t = (tr * 9 + tf) as usize;
                let mut next = *b;
                next[t] = next[i as usize].take();
                if !exposed(&next, c) {
                    out.insert(Move::new(Square::from_index(i as usize), Square::from_index(t)));
                }
            }
        }
        out
    }

    /// The legal moves of the side to move.
    pub fn legal(pos: &Position) -> BTreeSet<Move> {
        legal_on(pos.board(), pos.turn())
    }
}

fn legal_set(pos: &Position) -> BTreeSet<Move> {
    let list = pos.legal_moves();
    let set: BTreeSet<Move> = list.iter().copied().collect();
    assert_eq!(set.len(), list.len(), "duplicate moves generated in {pos:?}");
    set
}

fn all_pairs() -> impl Iterator<Item = Move> {
    Square::all().flat_map(|a| Square::all().map(move |b| Move::new(a, b)))
}

/// The position with colours swapped and the board turned upside down (rank r ↔ 9 − r).
fn color_flip(pos: &Position) -> Position {
    let mut setup = Setup::empty();
    for s in Square::all() {
        if let Some(p) = pos.piece_at(s) {
            setup.board[s.flip().index()] = Some(Piece::new(p.color.other(), p.kind));
        }
    }
    setup.turn = pos.turn().other();
    setup.halfmove_clock = pos.halfmove_clock();
    Position::from_setup(&setup, Validation::Lenient)
        .unwrap_or_else(|e| panic!("colour flip of {pos:?} refused: {e}"))
}

/// Cheap checks, run at every ply of every playout.
fn check_every_ply(pos: &Position, validation: Validation) -> Result<(), TestCaseError> {
    let legal = legal_set(pos);
    prop_assert_eq!(
        &legal,
        &oracle::legal(pos),
        "legal moves differ from the rule oracle in {:?}",
        pos
    );
    prop_assert_eq!(pos.count_legal_moves(), legal.len());
    prop_assert_eq!(pos.has_legal_move(), !legal.is_empty());
    prop_assert!(legal.len() < MAX_MOVES);
    prop_assert_eq!(pos.is_check(), oracle::exposed(pos.board(), pos.turn()));
    prop_assert_eq!(pos.is_check(), pos.general_attacked(pos.turn()));
    prop_assert!(!pos.general_attacked(pos.turn().other()), "side not to move in check: {:?}", pos);
    prop_assert!(!oracle::facing(pos.board()));
    prop_assert_eq!(pos.key(), pos.compute_key());
    let mut for_turn = xiangqi::MoveList::new();
    pos.legal_moves_for(pos.turn(), &mut for_turn);
    prop_assert_eq!(for_turn, pos.legal_moves());

    // FEN round trip.
    let fen = pos.fen();
    let back = Position::from_fen_with(&fen, validation);
    prop_assert_eq!(back, Ok(*pos), "FEN round trip of {}", fen);

    let mover = pos.turn();
    for &m in &legal {
        prop_assert!(pos.is_legal(m));
        prop_assert_eq!(pos.check_legal(m), Ok(()));
        // Encodings.
        prop_assert_eq!(Move::from_u16(m.to_u16()), Some(m));
        for base in [RankBase::Zero, RankBase::One] {
            let text = m.to_uci(base);
            prop_assert_eq!(Move::from_uci(&text, base), Ok(m));
            prop_assert_eq!(pos.parse_uci_with(&text, base), Ok(m));
        }
        prop_assert_eq!(m.to_uci(RankBase::Zero), m.to_string());
        // Make and unmake.
        let captured = pos.piece_at(m.to());
        prop_assert_eq!(pos.is_capture(m), captured.is_some());
        let mut next = *pos;
        let undo = next.play_unchecked(m);
        prop_assert_eq!(undo.mv, m);
        prop_assert_eq!(undo.captured, captured);
        prop_assert!(!next.general_attacked(mover), "{} leaves the mover attacked in {:?}", m, pos);
        prop_assert!(
            !oracle::facing(next.board()),
            "{} leaves the generals facing in {:?}",
            m,
            pos
        );
        prop_assert_eq!(next.key(), next.compute_key());
        prop_assert_eq!(next.turn(), mover.other());
        prop_assert_eq!(next.ply(), pos.ply() + 1);
        prop_assert_eq!(
            next.halfmove_clock(),
            if captured.is_some() { 0 } else { pos.halfmove_clock() + 1 }
        );
        prop_assert_eq!(next.piece_at(m.to()), pos.piece_at(m.from()));
        prop_assert_eq!(next.piece_at(m.from()), None);
        prop_assert_eq!(pos.gives_check(m), next.is_check());
        next.undo(undo);
        prop_assert_eq!(next, *pos);
        prop_assert_eq!(next.key(), pos.key());
    }
    Ok(())
}

/// Dearer checks: every from/to pair, the mirror and the colour flip.
fn check_deep(pos: &Position) -> Result<(), TestCaseError> {
    let legal = legal_set(pos);
    for m in all_pairs() {
        prop_assert_eq!(pos.is_legal(m), legal.contains(&m), "is_legal({}) in {:?}", m, pos);
        prop_assert_eq!(pos.check_legal(m).is_ok(), legal.contains(&m));
    }

    let mirror = pos.mirror();
    prop_assert_eq!(mirror.mirror(), *pos);
    prop_assert_eq!(mirror.key(), mirror.compute_key());
    prop_assert_eq!(mirror.turn(), pos.turn());
    let mirrored: BTreeSet<Move> = legal.iter().map(|m| m.mirror()).collect();
    prop_assert_eq!(legal_set(&mirror), mirrored, "mirror of {:?}", pos);
    prop_assert_eq!(perft(&mirror, 2), perft(pos, 2));

    let flipped = color_flip(pos);
    let flipped_moves: BTreeSet<Move> = legal.iter().map(|m| m.flip()).collect();
    prop_assert_eq!(legal_set(&flipped), flipped_moves, "colour flip of {:?}", pos);
    prop_assert_eq!(perft(&flipped, 2), perft(pos, 2));

    // perft(2) is the sum of the children's legal move counts (as the oracle counts them).
    let mut sum = 0u64;
    for &m in &legal {
        let mut next = *pos;
        next.play(m).unwrap();
        sum += oracle::legal(&next).len() as u64;
    }
    prop_assert_eq!(perft(pos, 2), sum);
    Ok(())
}

/// Case counts are sized for the release profile (the project's test profile); unoptimised
/// builds run a quarter of them.
fn config(cases: u32) -> ProptestConfig {
    let cases = if cfg!(debug_assertions) { cases / 4 } else { cases };
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn random_playouts_keep_every_invariant(
        start in any::<Index>(),
        choices in prop::collection::vec(any::<Index>(), 0..150),
    ) {
        let starts = start_positions();
        let mut pos = starts[start.index(starts.len())];
        for (ply, choice) in choices.iter().enumerate() {
            check_every_ply(&pos, Validation::Strict)?;
            if ply % 25 == 0 {
                check_deep(&pos)?;
            }
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let m = legal[choice.index(legal.len())];
            prop_assert!(pos.play(m).is_ok());
        }
        check_every_ply(&pos, Validation::Strict)?;
        check_deep(&pos)?;
    }
}

/// A strategy for placements: both generals somewhere in their palaces, then up to 32 pieces
/// dropped on random points, kept only while the set allows another of that kind.
fn placements() -> impl Strategy<Value = Setup> {
    (0..9usize, 0..9usize, prop::collection::vec((0..90usize, 0..14usize), 0..32), any::<bool>())
        .prop_map(|(red_general, black_general, drops, black_to_move)| {
            let mut setup = Setup::empty();
            let palace = |i: usize, base_rank: usize| (base_rank + i / 3) * 9 + 3 + i % 3;
            setup.board[palace(red_general, 0)] = Some(Piece::new(Color::Red, PieceKind::General));
            setup.board[palace(black_general, 7)] =
                Some(Piece::new(Color::Black, PieceKind::General));
            for (sq, p) in drops {
                let color = if p < 7 { Color::Red } else { Color::Black };
                let kind = PieceKind::ALL[p % 7];
                let count =
                    setup.board.iter().filter(|&&q| q == Some(Piece::new(color, kind))).count();
                // Advisors outside the palace are refused even in lenient mode: keep them inside.
                let square = Square::from_index(sq);
                let placeable = kind != PieceKind::Advisor || square.in_palace(color);
                if placeable && setup.board[sq].is_none() && count < usize::from(kind.max_count()) {
                    setup.board[sq] = Some(Piece::new(color, kind));
                }
            }
            setup.turn = if black_to_move { Color::Black } else { Color::Red };
            setup
        })
}

proptest! {
    #![proptest_config(config(1500))]

    /// Random placements, including the odd ones lenient mode admits (soldiers behind their start
    /// rank, elephants across the river, advisors anywhere in the palace). About 60% of the
    /// generated setups pass lenient validation, most of those only in lenient mode.
    #[test]
    fn random_placements_agree_with_the_oracle(setup in placements()) {
        let Ok(pos) = Position::from_setup(&setup, Validation::Lenient) else {
            return Ok(());
        };
        // Strict acceptance implies lenient acceptance of the same position.
        if let Ok(strict) = Position::from_setup(&setup, Validation::Strict) {
            prop_assert_eq!(strict, pos);
        }
        check_every_ply(&pos, Validation::Lenient)?;
        check_deep(&pos)?;
    }
}

/// `Game::winning_moves` (the search's win check, which clears most moves without generating
/// the opponent's replies) against playing every legal move on a copy of the game and reading
/// its verdict. Returns how many winning moves the position had.
fn check_winning_moves(game: &Game) -> Result<usize, TestCaseError> {
    let legal = game.legal_moves();
    let expected = common::winning_moves_by_playing(game);
    let fast: Vec<Move> = game.winning_moves(&legal).collect();
    prop_assert_eq!(&fast, &expected, "winning moves in {:?}", game.position());
    prop_assert_eq!(game.has_winning_move(&legal), !expected.is_empty());
    Ok(expected.len())
}

proptest! {
    #![proptest_config(config(600))]

    /// Sparse random placements, then up to 60 random plies under both rule sets: mates,
    /// positions without a legal move and repetitions are common there, so the win check meets
    /// every way a move can win.
    #[test]
    fn winning_moves_agree_with_playing_each_move(
        setup in placements(),
        simple in any::<bool>(),
        choices in prop::collection::vec(any::<Index>(), 0..60),
    ) {
        let Ok(pos) = Position::from_setup(&setup, Validation::Lenient) else {
            return Ok(());
        };
        let rules = if simple { RuleSet::Simple } else { RuleSet::Asian };
        let mut game = Game::new(pos, rules);
        for choice in &choices {
            check_winning_moves(&game)?;
            let legal = game.legal_moves();
            if legal.is_empty() {
                break;
            }
            game.play(next_move(&game, &legal, choice)).unwrap();
        }
        check_winning_moves(&game)?;
    }
}

/// The playouts' next move: at random, but every other time the move that takes back the mover's
/// last one when it is legal, so that positions repeat and repetition verdicts occur.
fn next_move(game: &Game, legal: &[Move], choice: &Index) -> Move {
    let moves = game.moves();
    if choice.index(2) == 0 && moves.len() >= 2 {
        let last = moves[moves.len() - 2];
        let back = Move::new(last.to(), last.from());
        if legal.contains(&back) {
            return back;
        }
    }
    legal[choice.index(legal.len())]
}

/// The property above is not vacuous: its placements and playouts meet checkmates, wins by no
/// legal moves and repetition wins.
#[test]
fn the_win_check_sources_meet_every_kind_of_win() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (placements(), prop::collection::vec(any::<Index>(), 0..60));
    let mut reasons = BTreeSet::new();
    let mut positions_with_a_win = 0;
    for _ in 0..2000 {
        let (setup, choices) = strategy.new_tree(&mut runner).unwrap().current();
        let Ok(pos) = Position::from_setup(&setup, Validation::Lenient) else { continue };
        let mut game = Game::new(pos, RuleSet::Asian);
        for choice in &choices {
            let legal = game.legal_moves();
            if legal.is_empty() {
                break;
            }
            let mover = game.position().turn();
            for &m in &legal {
                let mut copy = game.clone();
                if let Some(o) = copy.play(m).unwrap() {
                    if o.winner() == Some(mover) {
                        reasons.insert(o.reason().name().to_string());
                    }
                }
            }
            positions_with_a_win += usize::from(check_winning_moves(&game).unwrap() > 0);
            game.play(next_move(&game, &legal, choice)).unwrap();
        }
    }
    assert!(positions_with_a_win > 100, "{positions_with_a_win} positions with a winning move");
    for reason in ["checkmate", "no_legal_moves"] {
        assert!(reasons.contains(reason), "no {reason} win among {reasons:?}");
    }
    assert!(
        reasons.iter().any(|r| r.starts_with("perpetual")),
        "no repetition win among {reasons:?}"
    );
}

#[test]
fn the_playout_sources_really_include_middlegames() {
    let starts = start_positions();
    assert_eq!(starts[0], Position::start());
    // Some of them have Black to move and some have fewer pieces than the start position.
    assert!(starts.iter().any(|p| p.turn() == Color::Black));
    assert!(starts.iter().any(|p| p.board().iter().flatten().count() < 20));
}

#[test]
fn every_u16_decodes_to_a_move_exactly_when_both_points_are_on_the_board() {
    let mut decoded = 0;
    for v in 0..=u16::MAX {
        let (from, to, high) = (v & 0x7f, (v >> 7) & 0x7f, v >> 14);
        let valid = from < 90 && to < 90 && high == 0;
        match Move::from_u16(v) {
            Some(m) => {
                assert!(valid, "{v:#x} decoded");
                assert_eq!(m.to_u16(), v);
                assert_eq!(m.from().index(), usize::from(from));
                assert_eq!(m.to().index(), usize::from(to));
                decoded += 1;
            }
            None => assert!(!valid, "{v:#x} refused"),
        }
    }
    assert_eq!(decoded, 90 * 90);
}

#[test]
fn uci_text_round_trips_for_every_pair_in_both_dialects() {
    let files = "abcdefghi".as_bytes();
    for m in all_pairs() {
        let (from, to) = (m.from().index(), m.to().index());
        let zero =
            format!("{}{}{}{}", files[from % 9] as char, from / 9, files[to % 9] as char, to / 9);
        let one = format!(
            "{}{}{}{}",
            files[from % 9] as char,
            from / 9 + 1,
            files[to % 9] as char,
            to / 9 + 1
        );
        assert_eq!(m.to_uci(RankBase::Zero), zero);
        assert_eq!(m.to_uci(RankBase::One), one);
        assert_eq!(m.to_string(), zero);
        if from == to {
            assert!(Move::from_uci(&zero, RankBase::Zero).is_err(), "{zero}");
            assert!(Move::from_uci(&one, RankBase::One).is_err(), "{one}");
        } else {
            assert_eq!(Move::from_uci(&zero, RankBase::Zero), Ok(m));
            assert_eq!(Move::from_uci(&one, RankBase::One), Ok(m));
        }
    }
    // Hand examples of the two dialects.
    let h2e2 = Move::new(Square::from_index(2 * 9 + 7), Square::from_index(2 * 9 + 4));
    assert_eq!(h2e2.to_uci(RankBase::One), "h3e3");
    let a9a8 = Move::new(Square::from_index(81), Square::from_index(72));
    assert_eq!(a9a8.to_uci(RankBase::Zero), "a9a8");
    assert_eq!(a9a8.to_uci(RankBase::One), "a10a9");
    assert!(Move::from_uci("a10a9", RankBase::Zero).is_err());
    assert!(Move::from_uci("a0a1", RankBase::One).is_err());
}

/// The capacity of `MoveList` is enough.
///
/// Bound: one side has at most the initial set (validation enforces it, lenient mode too). On
/// the 9 × 10 board a chariot reaches at most 8 points along its rank and 9 along its file (17);
/// a cannon at most as many (a capture replaces the quiet moves behind the screen, and the screen
/// point itself is lost); a horse 8; an elephant 4; an advisor 4 (only on the palace centre,
/// where a second advisor could then reach nothing but it); a general 4; a soldier 3. So
/// 2·17 + 2·17 + 2·8 + 2·4 + 2·4 + 4 + 5·3 = 119 < 128 = `MAX_MOVES`, even before counting how
/// the pieces block one another.
#[test]
fn max_moves_exceeds_a_position_of_maximal_mobility() {
    // Red: chariots a5 and i3, cannons b6 and h4 (four distinct ranks and files, all open: 17
    // each = 68); horses c7 and g7 (8 each = 16); soldiers d8, f8, e7 (3 each) and c9, g9 (2 each
    // on the last rank) = 13; elephant e2 (c0, g0, c4, g4 = 4); advisor e1 (d0, f0, d2, f2 = 4);
    // general e0 (d0, f0 = 2). Black: the general e9 alone, shielded by e1 and e2.
    // Total 68 + 16 + 13 + 4 + 4 + 2 = 107.
    let fen = "2P1k1P2/3P1P3/2N1P1N2/1C7/R8/7C1/8R/4B4/4A4/4K4 w - - 0 1";
    let pos = Position::from_fen(fen).unwrap();
    assert_eq!(pos.count_legal_moves(), 107);
    assert_eq!(pos.legal_moves().len(), 107);
    assert_eq!(oracle::legal(&pos).len(), 107);
    assert!(pos.legal_moves().len() < MAX_MOVES);
    // The same position with colours swapped has as many.
    assert_eq!(color_flip(&pos).count_legal_moves(), 107);
    // Each piece contributes what the comment above says.
    let per_piece = |sq: usize| pos.legal_moves().iter().filter(|m| m.from().index() == sq).count();
    let idx = |f: usize, r: usize| r * 9 + f;
    assert_eq!(per_piece(idx(0, 5)), 17);
    assert_eq!(per_piece(idx(8, 3)), 17);
    assert_eq!(per_piece(idx(1, 6)), 17);
    assert_eq!(per_piece(idx(7, 4)), 17);
    assert_eq!(per_piece(idx(2, 7)), 8);
    assert_eq!(per_piece(idx(6, 7)), 8);
    assert_eq!(per_piece(idx(4, 2)), 4);
    assert_eq!(per_piece(idx(4, 1)), 4);
    assert_eq!(per_piece(idx(4, 0)), 2);
}

#[test]
fn oracle_sanity_on_the_start_position() {
    // 44 legal moves at the start: chariots 2 × 2, horses 2 × 2, elephants 2 × 2, advisors
    // 2 × 1, general 1, cannons 2 × 12, soldiers 5 × 1 = 4 + 4 + 4 + 2 + 1 + 24 + 5 = 44.
    assert_eq!(oracle::legal(&Position::start()).len(), 44);
    assert_eq!(legal_set(&Position::start()), oracle::legal(&Position::start()));
}
