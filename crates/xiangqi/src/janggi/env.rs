//! The environment view of janggi: what a network sees and what it answers with. The same
//! spirit, perspective and plane layout as xiangqi's [`crate::env`], with janggi's action space
//! (a pass action, elephant jumps, palace diagonals) and its 200-ply clock.
//!
//! * **Action space**: a fixed bijection between [`POLICY_SIZE`] = 2451 actions and the policy
//!   indices `0..POLICY_SIZE` ([`move_to_index`], [`index_to_move`]); the last one,
//!   [`PASS_INDEX`], is the pass.
//! * **Input planes**: a game encoded as `[PLANES, 10, 9]` floats ([`encode_planes`]), and the
//!   compact form a replay shard stores ([`PlaneInputs`], shared with xiangqi;
//!   [`plane_inputs`], [`encode_board_compact`], [`planes_from_compact`]).
//! * **Mirror**: the left–right mirror (file f ↔ 8 − f) on policy indices ([`mirror_index`],
//!   [`mirror_policy`]) and planes ([`mirror_planes`]); the pass is its own mirror.
//!
//! Nothing here allocates; every table is a `static` built by `const fn`.
//!
//! # Perspective
//! Everything is seen **from the side to move**: for Cho the board as it is, for Han every
//! point flipped, rank r ↔ 9 − r with the file unchanged ([`Square::flip`], [`Move::flip`]).
//! Han's `e8e7` and Cho's `e1e2` share an index, and the mover's palace is always on ranks 0–2
//! of the planes.
//!
//! # Action space
//! The actions are the pairs (from, to), in the mover's view, that some janggi piece could play
//! on an otherwise empty board from a point it may stand on, and the pass:
//!
//! | kind of step | pieces | pairs |
//! |---|---|---|
//! | same rank or file, any distance | chariot, cannon; general, guard and soldier orthogonal steps are among them | 90 × 17 = 1530 |
//! | horse jump (1, 2) or (2, 1) | horse | 508 |
//! | elephant jump (2, 3) or (3, 2) (anywhere: janggi has no river) | elephant | 388 |
//! | along a palace diagonal: corner ↔ centre, corner → opposite corner, in **either** palace | chariot, cannon (both palaces); general and guard (one point, own palace) | 2 × 12 = 24 |
//! | the pass | general's point twice | 1 |
//!
//! 1530 + 508 + 388 + 24 + 1 = **2451**. Index `i < PASS_INDEX` is the rank of its pair in the
//! order of (from-square index, to-square index), square index = rank · 9 + file in the mover's
//! view: index 0 is a0→b0. [`PASS_INDEX`] = 2450 is the pass, whatever point the general is on.
//! Every legal move of every position has an index (tested on random games).
//!
//! # Input planes (encoding version 1)
//! `[PLANES, 10, 9]` = 16 × 90 floats, row-major: plane `p`, rank `r`, file `f` (mover's view,
//! rank 0 = the mover's home rank) at `p * 90 + r * 9 + f`.
//!
//! | planes | content |
//! |---|---|
//! | 0–6 | the mover's pieces, one plane per [`PieceKind`] in index order (general, guard, elephant, horse, chariot, cannon, soldier): 1.0 where such a piece stands |
//! | 7–13 | the opponent's pieces, in the same order |
//! | 14 ([`REPETITION_PLANE`]) | 1.0 everywhere if the position occurred before since the last capture ([`Game::repetitions`] ≥ 2), else 0.0 |
//! | 15 ([`CLOCK_PLANE`]) | plies since the last capture / 200 ([`CLOCK_SCALE`]), capped at 1.0, on every point |
//!
//! [`ENCODING_VERSION`] covers the plane layout and the order of the action space; a change to
//! either bumps it. The rule set is not encoded (a net is trained for one).
//!
//! # Tactical feature planes (encoding version 2)
//! A net with `input_features` also takes [`FEATURE_PLANES`] = 7 planes after these 16, as
//! xiangqi's ([`crate::env`]): the points each side attacks, each side's hanging and pinned
//! pieces, and whether the mover is in check, under janggi's movement
//! ([`crate::attacks::AttackMap::of_janggi_board`]; [`encode_features`],
//! [`features_from_compact`]).
//!
//! # Example
//! ```
//! use xiangqi::janggi::env::{self, INPUT_SIZE, PASS_INDEX};
//! use xiangqi::janggi::{Game, Position, Rules, CHO, HAN};
//!
//! let mut game = Game::new(Position::start(Rules::Site));
//! let mut planes = [0.0f32; INPUT_SIZE];
//! env::encode_planes(&game, &mut planes);
//! assert_eq!(planes[13], 1.0); // plane 0 (mover's general), rank 1, file e
//!
//! let pass = game.position().parse_uci("e1e1").unwrap();
//! assert_eq!(env::move_to_index(pass, CHO), Some(PASS_INDEX));
//! game.play(pass).unwrap();
//! assert_eq!(env::index_to_move(PASS_INDEX, game.position()), game.position().parse_uci("e8e8").ok());
//! let e6e5 = game.position().parse_uci("e6e5").unwrap();
//! let e3e4 = xiangqi::Move::new(e6e5.from().flip(), e6e5.to().flip());
//! assert_eq!(env::move_to_index(e6e5, HAN), env::move_to_index(e3e4, CHO));
//! ```

use super::game::Game;
use super::position::Position;
use crate::env::{EMPTY_CODE, InvalidPieceCode, PlaneInputs, piece_code};
use crate::moves::Move;
use crate::types::{Color, PieceKind, Square};

/// Version of the plane layout and action order below.
pub const ENCODING_VERSION: u32 = 1;

/// Number of input planes.
pub const PLANES: usize = 16;

/// Number of actions: 2450 (from, to) pairs and the pass.
pub const POLICY_SIZE: usize = 2451;

/// The pass's policy index, the last one.
pub const PASS_INDEX: usize = POLICY_SIZE - 1;

/// Ranks of a plane.
pub const PLANE_RANKS: usize = 10;

/// Files of a plane.
pub const PLANE_FILES: usize = 9;

/// Floats in one plane: 10 × 9.
pub const PLANE_SIZE: usize = PLANE_RANKS * PLANE_FILES;

/// Floats in one encoded position: `PLANES * 10 * 9`.
pub const INPUT_SIZE: usize = PLANES * PLANE_SIZE;

/// Plane set to 1.0 when the position occurred before since the last capture.
pub const REPETITION_PLANE: usize = 14;

/// Plane holding the no-capture clock, `min(halfmove_clock, 200) / 200`.
pub const CLOCK_PLANE: usize = 15;

/// The clock value that fills the clock plane with 1.0 (the 200-ply no-capture limit).
pub const CLOCK_SCALE: u32 = super::NO_CAPTURE_LIMIT;

const _: () = assert!(REPETITION_PLANE == 2 * PieceKind::COUNT && CLOCK_PLANE + 1 == PLANES);

/// The plane holding pieces of `kind`, for the mover's (`mine`) or the opponent's pieces.
#[inline]
pub const fn piece_plane(kind: PieceKind, mine: bool) -> usize {
    if mine { kind.index() } else { PieceKind::COUNT + kind.index() }
}

// ---------------------------------------------------------------------------------------------
// Action space
// ---------------------------------------------------------------------------------------------

const NO_INDEX: u16 = u16::MAX;

/// The kind of geometric step a (from, to) pair is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    None,
    Line,
    Horse,
    Elephant,
    PalaceDiagonal,
}

const fn abs(x: i32) -> i32 {
    if x < 0 { -x } else { x }
}

/// Classifies a pair of square indices; `Step::None` if no janggi piece could play it.
const fn step(from: usize, to: usize) -> Step {
    if from == to {
        return Step::None;
    }
    let (ff, fr) = ((from % 9) as i32, (from / 9) as i32);
    let (tf, tr) = ((to % 9) as i32, (to / 9) as i32);
    let (df, dr) = (abs(tf - ff), abs(tr - fr));
    if df == 0 || dr == 0 {
        Step::Line
    } else if df * dr == 2 {
        Step::Horse
    } else if df * dr == 6 && df + dr == 5 {
        Step::Elephant
    } else if df == dr
        && super::tables::on_palace_diagonal(ff, fr)
        && super::tables::on_palace_diagonal(tf, tr)
        && super::tables::palace_base(ff, fr) == super::tables::palace_base(tf, tr)
    {
        Step::PalaceDiagonal
    } else {
        Step::None
    }
}

/// Number of pairs of each kind: `[line, horse, elephant, palace diagonal]`.
const fn count_steps() -> [usize; 4] {
    let mut n = [0; 4];
    let mut from = 0;
    while from < 90 {
        let mut to = 0;
        while to < 90 {
            match step(from, to) {
                Step::None => {}
                Step::Line => n[0] += 1,
                Step::Horse => n[1] += 1,
                Step::Elephant => n[2] += 1,
                Step::PalaceDiagonal => n[3] += 1,
            }
            to += 1;
        }
        from += 1;
    }
    n
}

const STEP_COUNTS: [usize; 4] = count_steps();
const _: () = assert!(STEP_COUNTS[0] == 1530 && STEP_COUNTS[1] == 508);
const _: () = assert!(STEP_COUNTS[2] == 388 && STEP_COUNTS[3] == 24);
const _: () =
    assert!(STEP_COUNTS[0] + STEP_COUNTS[1] + STEP_COUNTS[2] + STEP_COUNTS[3] + 1 == POLICY_SIZE);

struct ActionTables {
    /// `index_of[from][to]`: the policy index of the pair (mover's view), or `NO_INDEX`.
    index_of: [[u16; 90]; 90],
    /// The pair (mover's view) of every index below [`PASS_INDEX`]; a0a0 at [`PASS_INDEX`].
    moves: [Move; POLICY_SIZE],
    /// The policy index of the mirrored action.
    mirror: [u16; POLICY_SIZE],
}

const fn build_action_tables() -> ActionTables {
    let a0 = Square::from_index(0);
    let mut t = ActionTables {
        index_of: [[NO_INDEX; 90]; 90],
        moves: [Move::new(a0, a0); POLICY_SIZE],
        mirror: [0; POLICY_SIZE],
    };
    let mut n = 0;
    let mut from = 0;
    while from < 90 {
        let mut to = 0;
        while to < 90 {
            if !matches!(step(from, to), Step::None) {
                t.index_of[from][to] = n as u16;
                t.moves[n] = Move::new(Square::from_index(from), Square::from_index(to));
                n += 1;
            }
            to += 1;
        }
        from += 1;
    }
    assert!(n == PASS_INDEX, "pair count differs from PASS_INDEX");
    let mut i = 0;
    while i < PASS_INDEX {
        let m = t.moves[i].mirror();
        let j = t.index_of[m.from().index()][m.to().index()];
        assert!(j != NO_INDEX, "the action space is not closed under the mirror");
        t.mirror[i] = j;
        i += 1;
    }
    t.mirror[PASS_INDEX] = PASS_INDEX as u16;
    t
}

static ACTIONS: ActionTables = build_action_tables();

/// The move as the side `turn` sees it: flipped for Han.
#[inline]
const fn to_view(m: Move, turn: Color) -> Move {
    match turn {
        Color::Red => m,
        Color::Black => m.flip(),
    }
}

/// The policy index of `m` played by `turn`: [`PASS_INDEX`] for a pass (origin = target),
/// otherwise the index of the pair in the mover's view (Han's moves flipped, rank r ↔ 9 − r),
/// or `None` if no janggi piece could ever play it. Every legal move has an index.
#[inline]
pub fn move_to_index(m: Move, turn: Color) -> Option<usize> {
    if super::is_pass(m) {
        return Some(PASS_INDEX);
    }
    let v = to_view(m, turn);
    let i = ACTIONS.index_of[v.from().index()][v.to().index()];
    (i != NO_INDEX).then_some(i as usize)
}

/// The move of policy index `i` for the side to move of `pos` (flipped back for Han; for
/// [`PASS_INDEX`] the pass on its general's point), or `None` if `i >= POLICY_SIZE`. The inverse
/// of [`move_to_index`]; the move need not be legal in `pos`.
#[inline]
pub fn index_to_move(i: usize, pos: &Position) -> Option<Move> {
    if i == PASS_INDEX {
        return Some(pos.pass());
    }
    ACTIONS.moves.get(i).map(|&m| to_view(m, pos.turn()))
}

/// The policy index of the mirror image (file f ↔ 8 − f) of action `i`; the pass maps to
/// itself. The same for both sides, and an involution.
///
/// # Panics
/// If `i >= POLICY_SIZE`.
#[inline]
pub fn mirror_index(i: usize) -> usize {
    ACTIONS.mirror[i] as usize
}

/// Writes into `out` the policy of the mirrored position: `out[mirror_index(i)] = policy[i]`.
/// Works on one policy or a batch laid end to end.
///
/// # Panics
/// If the lengths differ or are not a multiple of [`POLICY_SIZE`].
pub fn mirror_policy(policy: &[f32], out: &mut [f32]) {
    assert_eq!(policy.len(), out.len(), "mirror_policy: lengths differ");
    assert_eq!(policy.len() % POLICY_SIZE, 0, "mirror_policy: not a multiple of POLICY_SIZE");
    for (p, o) in policy.chunks_exact(POLICY_SIZE).zip(out.chunks_exact_mut(POLICY_SIZE)) {
        for (&v, &j) in p.iter().zip(ACTIONS.mirror.iter()) {
            o[j as usize] = v;
        }
    }
}

/// Mirrors a policy (or a batch laid end to end) in place.
///
/// # Panics
/// If the length is not a multiple of [`POLICY_SIZE`].
pub fn mirror_policy_in_place(policy: &mut [f32]) {
    assert_eq!(policy.len() % POLICY_SIZE, 0, "mirror_policy: not a multiple of POLICY_SIZE");
    for p in policy.chunks_exact_mut(POLICY_SIZE) {
        for (i, &j) in ACTIONS.mirror.iter().enumerate() {
            if i < j as usize {
                p.swap(i, j as usize);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Input planes
// ---------------------------------------------------------------------------------------------

/// The board of `pos` as 90 compact piece codes in absolute orientation (index = rank · 9 +
/// file, rank 0 = Cho's home rank): 0 for empty, else `Piece::index() + 1` (1..=7 Cho's general,
/// guard, elephant, horse, chariot, cannon, soldier; 8..=14 Han's), as xiangqi's
/// [`crate::env::piece_code`].
pub fn encode_board_compact(pos: &Position) -> [u8; 90] {
    let mut codes = [EMPTY_CODE; 90];
    for (c, &p) in codes.iter_mut().zip(pos.board().iter()) {
        *c = piece_code(p);
    }
    codes
}

/// Everything the planes of a game's current position are a function of, in xiangqi's
/// [`PlaneInputs`] (board codes, side to move, halfmove clock, `repeated` =
/// [`Game::repetitions`] ≥ 2).
pub fn plane_inputs(game: &Game) -> PlaneInputs {
    let pos = game.position();
    PlaneInputs {
        board: encode_board_compact(pos),
        turn: pos.turn(),
        halfmove_clock: pos.halfmove_clock(),
        repeated: game.repetitions() >= 2,
    }
}

/// Writes the input planes of a game's current position into `out` from the side to move's
/// view (see the module docs). Never allocates.
///
/// # Shapes
/// `out`: `[PLANES, 10, 9]` = [`INPUT_SIZE`] floats, each 0.0..=1.0.
///
/// # Panics
/// If `out.len() != INPUT_SIZE`.
pub fn encode_planes(game: &Game, out: &mut [f32]) {
    write_planes(&plane_inputs(game), out);
}

/// Writes the input planes of a shard sample into `out`: the same planes [`encode_planes`]
/// writes for the game the sample came from.
///
/// # Shapes
/// `out`: `[PLANES, 10, 9]` = [`INPUT_SIZE`] floats, each 0.0..=1.0.
///
/// # Errors
/// [`InvalidPieceCode`] if a board code is above 14; `out` is then left unchanged.
///
/// # Panics
/// If `out.len() != INPUT_SIZE`.
pub fn planes_from_compact(inputs: &PlaneInputs, out: &mut [f32]) -> Result<(), InvalidPieceCode> {
    // The planes have xiangqi's layout (the same piece kinds, repetition and clock planes);
    // only the clock's scale is janggi's.
    const _: () = assert!(INPUT_SIZE == crate::env::INPUT_SIZE);
    const _: () = assert!(REPETITION_PLANE == crate::env::REPETITION_PLANE);
    const _: () = assert!(CLOCK_PLANE == crate::env::CLOCK_PLANE);
    crate::env::planes_from_compact_scaled(inputs, out, CLOCK_SCALE)
}

// ---------------------------------------------------------------------------------------------
// Tactical feature planes (encoding version 2)
// ---------------------------------------------------------------------------------------------

/// The encoding version of a net that takes the tactical feature planes after the 16 base
/// planes ([`FEATURE_PLANES`] more, [`encode_features`]); version 1 ([`ENCODING_VERSION`]) is the
/// base planes alone.
pub const FEATURES_ENCODING_VERSION: u32 = 2;

/// Number of tactical feature planes a version-2 net takes after the base planes: xiangqi's
/// seven ([`crate::env::FEATURE_PLANES`], in the same order and from the side to move), with
/// janggi's attacks ([`crate::attacks::AttackMap::of_janggi_board`]).
pub const FEATURE_PLANES: usize = crate::env::FEATURE_PLANES;

/// Floats of the feature planes of one position: `FEATURE_PLANES * 90`.
pub const FEATURE_SIZE: usize = FEATURE_PLANES * PLANE_SIZE;

/// Names of the feature planes, in order (for `model.json`): xiangqi's.
pub const FEATURE_PLANE_NAMES: [&str; FEATURE_PLANES] = crate::env::FEATURE_PLANE_NAMES;

/// Writes the tactical feature planes of `game`'s position into `out`, `[FEATURE_PLANES, 10, 9]`
/// from the side to move (the same view as the base planes: Han's board flipped).
///
/// # Panics
/// If `out.len() != FEATURE_SIZE`.
pub fn encode_features(game: &Game, out: &mut [f32]) {
    let pos = game.position();
    write_features(pos.board(), pos.turn(), out);
}

/// Rebuilds the tactical feature planes of a shard sample into `out` (`[FEATURE_PLANES, 10, 9]`).
///
/// # Errors
/// [`InvalidPieceCode`] for a board code that is no piece.
///
/// # Panics
/// If `out.len() != FEATURE_SIZE`.
pub fn features_from_compact(
    inputs: &PlaneInputs,
    out: &mut [f32],
) -> Result<(), InvalidPieceCode> {
    let board = crate::env::decode_board_compact(&inputs.board)?;
    write_features(&board, inputs.turn, out);
    Ok(())
}

/// Writes the feature planes of a janggi `board` with `turn` to move into `out`.
///
/// # Panics
/// If `out.len() != FEATURE_SIZE`.
pub fn write_features(board: &crate::position::Board, turn: Color, out: &mut [f32]) {
    let map = crate::attacks::AttackMap::of_janggi_board(board);
    crate::env::write_feature_planes(&map, turn, out);
}

/// The one implementation behind [`encode_planes`]: xiangqi's, with janggi's clock scale.
fn write_planes(inputs: &PlaneInputs, out: &mut [f32]) {
    crate::env::write_planes_scaled(inputs, out, CLOCK_SCALE);
}

/// Mirrors planes left–right in place (file f ↔ 8 − f): one position `[PLANES, 10, 9]` or any
/// number of whole 10 × 9 planes. The planes of [`Position::mirror`] are the mirrored planes.
///
/// # Panics
/// If the length is not a multiple of [`PLANE_SIZE`].
pub fn mirror_planes(planes: &mut [f32]) {
    crate::env::mirror_planes(planes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_table_is_a_bijection_ordered_by_from_then_to() {
        let mut seen = vec![false; POLICY_SIZE];
        for from in 0..90 {
            for to in 0..90 {
                let i = ACTIONS.index_of[from][to];
                if i != NO_INDEX {
                    assert!(!seen[i as usize]);
                    seen[i as usize] = true;
                    let m = ACTIONS.moves[i as usize];
                    assert_eq!((m.from().index(), m.to().index()), (from, to));
                }
            }
        }
        seen[PASS_INDEX] = true;
        assert!(seen.iter().all(|&s| s));
        let pairs = &ACTIONS.moves[..PASS_INDEX];
        assert!(pairs.windows(2).all(|w| (w[0].from(), w[0].to()) < (w[1].from(), w[1].to())));
        assert_eq!(pairs[0].to_string(), "a0b0");
    }

    #[test]
    fn palace_diagonals_are_in_both_palaces() {
        let sq = |s: &str| {
            let b = s.as_bytes();
            ((b[1] - b'0') as usize) * 9 + (b[0] - b'a') as usize
        };
        for (a, b) in [("d0", "e1"), ("e1", "f2"), ("d0", "f2"), ("f9", "d7"), ("e8", "d9")] {
            assert!(matches!(step(sq(a), sq(b)), Step::PalaceDiagonal), "{a}{b}");
        }
        for (a, b) in [("d1", "e2"), ("d1", "e0"), ("e2", "f1"), ("f2", "g3")] {
            assert!(matches!(step(sq(a), sq(b)), Step::None), "{a}{b}");
        }
    }
}
