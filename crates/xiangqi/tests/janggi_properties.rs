//! Property tests of the janggi rules over random playouts, both rule sets.
//!
//! The reference for "legal" is [`oracle`], a deliberately naive generator (Vec rays, attacks
//! found by generating the opponent's captures in reverse geometry) ported from the independent
//! draft that first matched every row of `janggi-perft.tsv`. It shares no tables with the crate.
//!
//! Playouts start from the start position and from every position of
//! `tests/data/janggi-perft.tsv`, and follow random move indices chosen by proptest.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use xiangqi::janggi::env::{self, INPUT_SIZE, PASS_INDEX, POLICY_SIZE};
use xiangqi::janggi::{self, Game, Position, Rules};
use xiangqi::{Move, Square};

const PERFT_DATA: &str = include_str!("data/janggi-perft.tsv");

/// The start position followed by every distinct position of the perft data.
fn start_fens() -> &'static [String] {
    static CELL: OnceLock<Vec<String>> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut fens = vec![janggi::START_FEN.to_string()];
        for line in PERFT_DATA.lines().skip(1) {
            let fen = line.split('\t').next().unwrap().to_string();
            if !fen.is_empty() && !fens.contains(&fen) {
                fens.push(fen);
            }
        }
        assert!(fens.len() > 50, "perft data has too few positions");
        fens
    })
}

/// A rule-text janggi move generator, slow and simple on purpose.
mod oracle {
    use std::collections::BTreeSet;

    use xiangqi::janggi::Rules;
    use xiangqi::{Board, Color, Piece, PieceKind};

    fn on_board(f: i32, r: i32) -> bool {
        (0..9).contains(&f) && (0..10).contains(&r)
    }
    fn sq(f: i32, r: i32) -> u8 {
        (r * 9 + f) as u8
    }
    fn fr(s: u8) -> (i32, i32) {
        ((s % 9) as i32, (s / 9) as i32)
    }
    fn forward(c: Color) -> i32 {
        if c == Color::Red { 1 } else { -1 }
    }
    fn own_palace_base(c: Color) -> i32 {
        if c == Color::Red { 0 } else { 7 }
    }
    fn palace_base_of(f: i32, r: i32) -> Option<i32> {
        if !(3..=5).contains(&f) {
            None
        } else if (0..=2).contains(&r) {
            Some(0)
        } else if (7..=9).contains(&r) {
            Some(7)
        } else {
            None
        }
    }

    /// From a corner: centre then opposite corner; from a centre: each corner; else nothing.
    fn diagonal_rays(s: u8) -> Vec<Vec<u8>> {
        let (f, r) = fr(s);
        let Some(base) = palace_base_of(f, r) else { return Vec::new() };
        if (f, r) == (4, base + 1) {
            return [(3, base), (5, base), (3, base + 2), (5, base + 2)]
                .iter()
                .map(|&(cf, cr)| vec![sq(cf, cr)])
                .collect();
        }
        if f != 4 && r != base + 1 {
            return vec![vec![sq(4, base + 1), sq(8 - f, 2 * base + 2 - r)]];
        }
        Vec::new()
    }

    fn orthogonal_rays(s: u8) -> Vec<Vec<u8>> {
        let (f, r) = fr(s);
        [(0, 1), (0, -1), (1, 0), (-1, 0)]
            .iter()
            .map(|&(df, dr)| {
                let mut ray = Vec::new();
                let (mut x, mut y) = (f + df, r + dr);
                while on_board(x, y) {
                    ray.push(sq(x, y));
                    x += df;
                    y += dr;
                }
                ray
            })
            .collect()
    }

    fn palace_steps(s: u8, c: Color) -> Vec<u8> {
        let (f, r) = fr(s);
        let base = own_palace_base(c);
        if palace_base_of(f, r) != Some(base) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (df, dr) in [(0, 1), (0, -1), (1, 0), (-1, 0)] {
            if palace_base_of(f + df, r + dr) == Some(base) {
                out.push(sq(f + df, r + dr));
            }
        }
        out.extend(diagonal_rays(s).iter().map(|ray| ray[0]));
        out
    }

    fn is(b: &Board, s: u8, c: Color, k: PieceKind) -> bool {
        b[s as usize] == Some(Piece::new(c, k))
    }

    /// Whether `t` is attacked by `by`.
    pub fn attacked(b: &Board, t: u8, by: Color) -> bool {
        let (f, r) = fr(t);
        let mut rays = orthogonal_rays(t);
        rays.extend(diagonal_rays(t));
        for ray in &rays {
            let mut iter = ray.iter().copied();
            let Some(screen) = iter.by_ref().find(|&s| b[s as usize].is_some()) else { continue };
            if is(b, screen, by, PieceKind::Chariot) {
                return true;
            }
            let cannon = |s: u8| b[s as usize].map(|p| p.kind) == Some(PieceKind::Cannon);
            if cannon(screen) || cannon(t) {
                continue;
            }
            if let Some(s) = iter.find(|&s| b[s as usize].is_some())
                && is(b, s, by, PieceKind::Cannon)
            {
                return true;
            }
        }
        for (df, dr) in [(0, 1), (0, -1), (1, 0), (-1, 0)] {
            for sgn in [1, -1] {
                let (px, py) = (dr * sgn, df * sgn);
                let (hx, hy) = (f - 2 * df - px, r - 2 * dr - py);
                if on_board(hx, hy)
                    && is(b, sq(hx, hy), by, PieceKind::Horse)
                    && b[sq(hx + df, hy + dr) as usize].is_none()
                {
                    return true;
                }
                let (ex, ey) = (f - 3 * df - 2 * px, r - 3 * dr - 2 * py);
                if on_board(ex, ey)
                    && is(b, sq(ex, ey), by, PieceKind::Elephant)
                    && b[sq(ex + df, ey + dr) as usize].is_none()
                    && b[sq(ex + 2 * df + px, ey + 2 * dr + py) as usize].is_none()
                {
                    return true;
                }
            }
        }
        let back = r - forward(by);
        if on_board(f, back) && is(b, sq(f, back), by, PieceKind::Soldier) {
            return true;
        }
        for df in [1, -1] {
            if on_board(f + df, r) && is(b, sq(f + df, r), by, PieceKind::Soldier) {
                return true;
            }
        }
        palace_steps(t, by)
            .into_iter()
            .any(|s| is(b, s, by, PieceKind::General) || is(b, s, by, PieceKind::Advisor))
    }

    fn general(b: &Board, c: Color) -> u8 {
        (0..90u8).find(|&s| is(b, s, c, PieceKind::General)).expect("a general")
    }

    pub fn in_check(b: &Board, c: Color) -> bool {
        attacked(b, general(b, c), c.other())
    }

    fn pseudo(b: &Board, me: Color, rules: Rules) -> Vec<(u8, u8)> {
        let mut out = Vec::new();
        let add = |out: &mut Vec<(u8, u8)>, from: u8, to: u8| {
            if b[to as usize].is_none_or(|p| p.color != me) {
                out.push((from, to));
            }
        };
        for from in 0..90u8 {
            let Some(p) = b[from as usize] else { continue };
            if p.color != me {
                continue;
            }
            let (f, r) = fr(from);
            match p.kind {
                PieceKind::General | PieceKind::Advisor => {
                    for t in palace_steps(from, me) {
                        add(&mut out, from, t);
                    }
                }
                PieceKind::Chariot => {
                    let mut rays = orthogonal_rays(from);
                    rays.extend(diagonal_rays(from));
                    for ray in rays {
                        for t in ray {
                            add(&mut out, from, t);
                            if b[t as usize].is_some() {
                                break;
                            }
                        }
                    }
                }
                PieceKind::Cannon => {
                    let mut rays = orthogonal_rays(from);
                    rays.extend(diagonal_rays(from));
                    for ray in rays {
                        let mut iter = ray.into_iter();
                        let mut screen = None;
                        for t in iter.by_ref() {
                            if b[t as usize].is_some() {
                                screen = Some(t);
                                break;
                            }
                            if rules == Rules::Site {
                                out.push((from, t));
                            }
                        }
                        let Some(screen) = screen else { continue };
                        if b[screen as usize].map(|p| p.kind) == Some(PieceKind::Cannon) {
                            continue;
                        }
                        for t in iter {
                            match b[t as usize] {
                                None if rules == Rules::Traditional => out.push((from, t)),
                                None => {}
                                Some(q) => {
                                    if q.color != me && q.kind != PieceKind::Cannon {
                                        out.push((from, t));
                                    }
                                    break;
                                }
                            }
                        }
                    }
                }
                PieceKind::Horse | PieceKind::Elephant => {
                    for (df, dr) in [(0, 1), (0, -1), (1, 0), (-1, 0)] {
                        let (l1x, l1y) = (f + df, r + dr);
                        if !on_board(l1x, l1y) || b[sq(l1x, l1y) as usize].is_some() {
                            continue;
                        }
                        for sgn in [1, -1] {
                            let (px, py) = (dr * sgn, df * sgn);
                            let (ax, ay) = (l1x + df + px, l1y + dr + py);
                            if !on_board(ax, ay) {
                                continue;
                            }
                            if p.kind == PieceKind::Horse {
                                add(&mut out, from, sq(ax, ay));
                                continue;
                            }
                            if b[sq(ax, ay) as usize].is_some() {
                                continue;
                            }
                            let (bx, by) = (ax + df + px, ay + dr + py);
                            if on_board(bx, by) {
                                add(&mut out, from, sq(bx, by));
                            }
                        }
                    }
                }
                PieceKind::Soldier => {
                    if on_board(f, r + forward(me)) {
                        add(&mut out, from, sq(f, r + forward(me)));
                    }
                    for df in [1, -1] {
                        if on_board(f + df, r) {
                            add(&mut out, from, sq(f + df, r));
                        }
                    }
                }
            }
        }
        out
    }

    /// The legal moves as (from, to) square indices, the pass as the general's point twice.
    pub fn legal_moves(b: &Board, me: Color, rules: Rules) -> BTreeSet<(u8, u8)> {
        let mut legal: BTreeSet<(u8, u8)> = pseudo(b, me, rules)
            .into_iter()
            .filter(|&(from, to)| {
                let mut next = *b;
                next[to as usize] = next[from as usize].take();
                !in_check(&next, me)
            })
            .collect();
        if !in_check(b, me) {
            let g = general(b, me);
            legal.insert((g, g));
        }
        legal
    }
}

fn pairs(moves: &[Move]) -> BTreeSet<(u8, u8)> {
    moves.iter().map(|m| (m.from().index() as u8, m.to().index() as u8)).collect()
}

fn config(cases: u32) -> ProptestConfig {
    let cases = if cfg!(debug_assertions) { cases / 4 } else { cases };
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Plays a random game of up to `picks.len()` plies from `fen` under `rules`, calling `check` on
/// the game before every move (and once at the end).
fn playout(
    fen_index: Index,
    site: bool,
    picks: &[Index],
    mut check: impl FnMut(&Game) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let fens = start_fens();
    let fen = &fens[fen_index.index(fens.len())];
    let rules = if site { Rules::Site } else { Rules::Traditional };
    let mut game = Game::new(Position::from_fen(fen, rules).unwrap());
    for pick in picks {
        check(&game)?;
        let moves = game.legal_moves();
        if moves.is_empty() {
            return Ok(());
        }
        // Skip most passes so that games move on.
        let mut m = moves[pick.index(moves.len())];
        if janggi::is_pass(m) && moves.len() > 1 && pick.index(4) != 0 {
            m = moves[0];
        }
        game.play(m).map_err(|e| TestCaseError::fail(format!("{fen}: {e}")))?;
    }
    check(&game)
}

proptest! {
    #![proptest_config(config(256))]

    /// The generated moves equal the oracle's, `is_legal` agrees with them on random pairs,
    /// the verdict agrees with the oracle's, and the move list fits.
    #[test]
    fn legal_moves_match_the_oracle(
        fen_index: Index, site: bool, picks in prop::collection::vec(any::<Index>(), 0..120),
        probes in prop::collection::vec((0u8..90, 0u8..90), 8),
    ) {
        playout(fen_index, site, &picks, |game| {
            let pos = game.position();
            let ours = pos.legal_moves();
            let expected = oracle::legal_moves(pos.board(), pos.turn(), pos.rules());
            prop_assert_eq!(pairs(&ours), expected.clone(), "{:?}", pos);
            prop_assert_eq!(ours.len(), expected.len(), "no duplicates: {:?}", pos);
            prop_assert_eq!(pos.count_legal_moves(), ours.len());
            prop_assert_eq!(pos.has_legal_move(), !ours.is_empty());
            prop_assert_eq!(pos.is_check(), oracle::in_check(pos.board(), pos.turn()));
            for &(a, b) in &probes {
                let m = Move::new(Square::from_index(a as usize), Square::from_index(b as usize));
                prop_assert_eq!(pos.is_legal(m), expected.contains(&(a, b)), "{} in {:?}", m, pos);
            }
            let mated = expected.is_empty();
            prop_assert_eq!(game.outcome().is_some_and(|o| o.winner().is_some()), mated);
            Ok(())
        })?;
    }

    /// Keys and FEN: the incremental key equals the key of the position rebuilt from its FEN,
    /// and the FEN reads back to an equal position.
    #[test]
    fn keys_and_fen_round_trip(
        fen_index: Index, site: bool, picks in prop::collection::vec(any::<Index>(), 0..150),
    ) {
        playout(fen_index, site, &picks, |game| {
            let pos = game.position();
            let again = Position::from_fen(&pos.fen(), pos.rules())
                .map_err(|e| TestCaseError::fail(format!("{}: {e}", pos.fen())))?;
            prop_assert_eq!(again, *pos);
            prop_assert_eq!(again.key(), pos.key());
            prop_assert_eq!(pos.compute_key(), pos.key());
            prop_assert_eq!(*game.keys().last().unwrap(), pos.key());
            prop_assert!(game.repetitions() >= 1);
            Ok(())
        })?;
    }

    /// The mirror position has the same perft and the mirrored moves.
    #[test]
    fn mirror_has_the_same_perft(
        fen_index: Index, site: bool, picks in prop::collection::vec(any::<Index>(), 0..80),
    ) {
        let mut n = 0;
        playout(fen_index, site, &picks, |game| {
            let pos = game.position();
            let mirror = pos.mirror();
            let mirrored: BTreeSet<Move> = pos.legal_moves().iter().map(|m| m.mirror()).collect();
            let theirs: BTreeSet<Move> = mirror.legal_moves().into_iter().collect();
            prop_assert_eq!(mirrored, theirs);
            prop_assert_eq!(mirror.mirror(), *pos);
            // perft 2 at a few plies only: it is the slow part.
            if n % 16 == 0 {
                prop_assert_eq!(janggi::perft(&mirror, 2), janggi::perft(pos, 2), "{:?}", pos);
            }
            n += 1;
            Ok(())
        })?;
    }

    /// Every legal move has an action index, index_to_move inverts it, distinct moves get
    /// distinct indices, the mirror of a move's index is the index of the mirrored move in the
    /// mirrored position, and the planes of the mirror position are the mirrored planes.
    #[test]
    fn actions_and_planes_are_consistent(
        fen_index: Index, site: bool, picks in prop::collection::vec(any::<Index>(), 0..120),
    ) {
        playout(fen_index, site, &picks, |game| {
            let pos = game.position();
            let mirror = pos.mirror();
            let mut seen = BTreeSet::new();
            for m in pos.legal_moves() {
                let i = env::move_to_index(m, pos.turn());
                prop_assert!(i.is_some(), "{} has no index in {:?}", m, pos);
                let i = i.unwrap();
                prop_assert!(i < POLICY_SIZE);
                prop_assert_eq!(i == PASS_INDEX, pos.is_pass(m));
                prop_assert_eq!(env::index_to_move(i, pos), Some(m));
                prop_assert!(seen.insert(i), "two moves share index {}", i);
                let j = env::mirror_index(i);
                prop_assert_eq!(env::index_to_move(j, &mirror), Some(if pos.is_pass(m) { mirror.pass() } else { m.mirror() }));
                prop_assert!(mirror.is_legal(env::index_to_move(j, &mirror).unwrap()));
            }
            let mut planes = vec![0.0f32; INPUT_SIZE];
            env::encode_planes(game, &mut planes);
            let mut compact = vec![0.0f32; INPUT_SIZE];
            env::planes_from_compact(&env::plane_inputs(game), &mut compact).unwrap();
            prop_assert_eq!(&planes, &compact);
            let repeated = game.repetitions() >= 2;
            let mut mirror_inputs = env::plane_inputs(&Game::new(mirror));
            mirror_inputs.repeated = repeated;
            let mut mirror_planes = vec![0.0f32; INPUT_SIZE];
            env::planes_from_compact(&mirror_inputs, &mut mirror_planes).unwrap();
            env::mirror_planes(&mut planes);
            prop_assert_eq!(planes, mirror_planes);
            Ok(())
        })?;
    }
}

#[test]
fn mirror_index_is_an_involution_and_mirror_policy_agrees() {
    for i in 0..POLICY_SIZE {
        let j = env::mirror_index(i);
        assert_eq!(env::mirror_index(j), i);
    }
    assert_eq!(env::mirror_index(PASS_INDEX), PASS_INDEX);
    let mut policy: Vec<f32> = (0..POLICY_SIZE).map(|i| i as f32).collect();
    let mut out = vec![0.0; POLICY_SIZE];
    env::mirror_policy(&policy, &mut out);
    env::mirror_policy_in_place(&mut policy);
    assert_eq!(policy, out);
    assert_eq!(out[env::mirror_index(7)], 7.0);
}
