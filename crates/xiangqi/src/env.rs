//! The environment view of the rules: what a network sees and what it answers with.
//!
//! * **Action space**: a fixed bijection between the [`POLICY_SIZE`] = 2166 geometric moves and
//!   the policy indices `0..POLICY_SIZE` ([`move_to_index`], [`index_to_move`]).
//! * **Input planes**: a game encoded as `[PLANES, 10, 9]` floats ([`encode_planes`]), and the
//!   compact form a replay shard stores to rebuild them without a [`Game`] ([`PlaneInputs`],
//!   [`encode_board_compact`], [`planes_from_compact`]).
//! * **Mirror**: the left–right mirror (file f ↔ 8 − f), the one symmetry of xiangqi, on policy
//!   indices ([`mirror_index`], [`mirror_policy`]) and on planes ([`mirror_planes`]).
//!
//! Nothing here allocates; every table is a `static` built by `const fn`.
//!
//! # Perspective
//! Everything is seen **from the side to move**, which always plays "up the board". For Red the
//! board is taken as it is; for Black every square is flipped, rank r ↔ 9 − r with the file
//! unchanged ([`Square::flip`], [`Move::flip`]). So Black's `h7e7` and Red's `h2e2` share a policy
//! index, and the mover's general always sits on ranks 0–2 of the planes. (The flip is not a
//! 180° rotation: it also swaps left and right as Black sees the board, which is harmless because
//! the rules are left–right symmetric.)
//!
//! # Action space
//! The actions are the pairs (from, to), in the mover's view, that some piece of the mover could
//! play on an otherwise empty board from a point where [`crate::Position::from_setup`] lets it
//! stand, in [`crate::Validation::Strict`] or [`crate::Validation::Lenient`] mode:
//!
//! | kind of step | pieces | pairs |
//! |---|---|---|
//! | same rank or file, any distance | chariot, cannon; general and soldier steps are among them | 90 × 17 = 1530 |
//! | horse jump (1, 2) or (2, 1) | horse | 508 |
//! | one point diagonally, both points in the mover's palace | advisor | 16 |
//! | two points diagonally, landing on the mover's half (ranks 0–4) | elephant | 112 |
//!
//! 1530 + 508 + 16 + 112 = **2166**. Index `i` is the rank of its pair in the order of
//! (from-square index, to-square index), square index = rank · 9 + file in the mover's view: index
//! 0 is a0→b0, the last index is i9→h9.
//!
//! Every legal move of every position the crate accepts has an index (tested on random games and
//! on every lenient placement). Why not the 2086 often quoted for xiangqi policy heads: that set
//! lists the advisor (2 × 8) and elephant (2 × 16) steps of *both* colours between their strict
//! points. Seen from the side to move, the 24 steps of the far palace and far elephants can never
//! be played, so a strict-only set would have 2062 pairs; lenient positions (composed problems)
//! add advisors on any palace point (8 more steps) and elephants on any point (96 more jumps), so
//! that even there no legal move lacks an index. The 104 pairs no game can reach cost a few dead
//! logits and keep [`move_to_index`] total on legal moves.
//!
//! # Input planes (encoding version 1)
//! [`encode_planes`] writes `[PLANES, 10, 9]` = 16 × 90 floats, row-major: the value of plane `p`
//! at rank `r` and file `f` (mover's view, rank 0 = the mover's home rank) is at
//! `p * 90 + r * 9 + f`.
//!
//! | planes | content |
//! |---|---|
//! | 0–6 | the mover's pieces, one plane per [`PieceKind`] in index order (general, advisor, elephant, horse, chariot, cannon, soldier): 1.0 where such a piece stands |
//! | 7–13 | the opponent's pieces, in the same order |
//! | 14 ([`REPETITION_PLANE`]) | 1.0 everywhere if the position (placement and side to move) occurred before in the game ([`Game::repetitions`] ≥ 2), else 0.0 |
//! | 15 ([`CLOCK_PLANE`]) | plies since the last capture / 120, capped at 1.0, on every point |
//!
//! No history planes: the rules crate judges repetitions itself, and the repetition plane tells
//! the net that a cycle is under way. The `simple` rule set's 300-ply limit is not encoded.
//! [`ENCODING_VERSION`] covers both the plane layout and the order of the action space;
//! checkpoints record it, and any change to either bumps it.
//!
//! # Tactical feature planes (encoding version 2)
//! A net may also take [`FEATURE_PLANES`] = 7 planes computed by the rules after the 16 above
//! (23 in all, [`FEATURES_ENCODING_VERSION`]): the points each side attacks, each side's hanging
//! and pinned pieces, and whether the mover is in check ([`encode_features`]; the definitions
//! are in [`crate::attacks`]). They are derived from the board alone, so a shard sample rebuilds
//! them ([`features_from_compact`]) and shards written before them train nets that take them.
//! The idea is KataGo's game-specific input features (Wu 2019, "Accelerating Self-Play
//! Learning in Go", §4.1: ladder and liberty planes). Version-1 nets keep the 16 planes.
//!
//! # Example
//! ```
//! use xiangqi::env::{self, INPUT_SIZE, POLICY_SIZE};
//! use xiangqi::{Color, Game, Position, RuleSet};
//!
//! let mut game = Game::new(Position::start(), RuleSet::Asian);
//! let mut planes = [0.0f32; INPUT_SIZE];
//! env::encode_planes(&game, &mut planes);
//! assert_eq!(planes[4], 1.0); // plane 0 (mover's general), rank 0, file e
//!
//! let h2e2 = game.position().parse_uci("h2e2").unwrap();
//! let i = env::move_to_index(h2e2, Color::Red).unwrap();
//! assert!(i < POLICY_SIZE);
//! assert_eq!(env::index_to_move(i, Color::Red), Some(h2e2));
//!
//! // The mirror image of h2e2 is b2e2.
//! let b2e2 = game.position().parse_uci("b2e2").unwrap();
//! assert_eq!(env::move_to_index(b2e2, Color::Red), Some(env::mirror_index(i)));
//! game.play(h2e2).unwrap();
//!
//! // Black plays up the board too: its h7e7 is Red's h2e2 flipped.
//! let h7e7 = game.position().parse_uci("h7e7").unwrap();
//! assert_eq!(env::move_to_index(h7e7, Color::Black), Some(i));
//! env::encode_planes(&game, &mut planes);
//! assert_eq!(planes[4], 1.0); // Black's general, seen from Black
//! ```

use thiserror::Error;

use crate::game::Game;
use crate::moves::Move;
use crate::position::{Board, Position};
use crate::types::{Color, Piece, PieceKind, Square};

/// Version of the plane layout and of the action-space order; checkpoints record it.
pub const ENCODING_VERSION: u32 = 1;

/// Number of policy indices (actions); see the module docs for how the set is derived.
pub const POLICY_SIZE: usize = 2166;

/// Number of input planes (see the layout in the module docs).
pub const PLANES: usize = 16;

/// Ranks of a plane (its height).
pub const PLANE_RANKS: usize = 10;

/// Files of a plane (its width).
pub const PLANE_FILES: usize = 9;

/// Floats in one plane: 10 × 9.
pub const PLANE_SIZE: usize = PLANE_RANKS * PLANE_FILES;

/// Floats in one encoded position: `PLANES * 10 * 9`.
pub const INPUT_SIZE: usize = PLANES * PLANE_SIZE;

/// Plane set to 1.0 when the position occurred before in the game.
pub const REPETITION_PLANE: usize = 2 * PieceKind::COUNT;

/// Plane holding the no-capture clock, `min(halfmove_clock, 120) / 120`.
pub const CLOCK_PLANE: usize = REPETITION_PLANE + 1;

/// The clock value that fills the clock plane with 1.0 (the `asian` no-capture limit).
pub const CLOCK_SCALE: u32 = 120;

/// Piece code of an empty point in the compact board; a piece is `Piece::index() + 1` (1..=14).
pub const EMPTY_CODE: u8 = 0;

/// The plane holding pieces of `kind`, for the mover's (`mine`) or the opponent's pieces.
#[inline]
pub const fn piece_plane(kind: PieceKind, mine: bool) -> usize {
    if mine { kind.index() } else { PieceKind::COUNT + kind.index() }
}

// ---------------------------------------------------------------------------------------------
// Action space
// ---------------------------------------------------------------------------------------------

const NO_INDEX: u16 = u16::MAX;

/// The kind of geometric step a (from, to) pair is, in the mover's view (mover at the bottom).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    None,
    Line,
    Horse,
    Advisor,
    Elephant,
}

const fn abs(x: i32) -> i32 {
    if x < 0 { -x } else { x }
}

const fn in_bottom_palace(s: usize) -> bool {
    let (f, r) = (s % 9, s / 9);
    f >= 3 && f <= 5 && r <= 2
}

/// Classifies a pair of square indices (mover's view); `Step::None` if no piece could play it.
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
    } else if df == 1 && dr == 1 && in_bottom_palace(from) && in_bottom_palace(to) {
        Step::Advisor
    } else if df == 2 && dr == 2 && tr <= 4 {
        Step::Elephant
    } else {
        Step::None
    }
}

/// Number of pairs of each kind: `[line, horse, advisor, elephant]`.
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
                Step::Advisor => n[2] += 1,
                Step::Elephant => n[3] += 1,
            }
            to += 1;
        }
        from += 1;
    }
    n
}

const STEP_COUNTS: [usize; 4] = count_steps();
const _: () = assert!(STEP_COUNTS[0] == 1530 && STEP_COUNTS[1] == 508);
const _: () = assert!(STEP_COUNTS[2] == 16 && STEP_COUNTS[3] == 112);
const _: () =
    assert!(STEP_COUNTS[0] + STEP_COUNTS[1] + STEP_COUNTS[2] + STEP_COUNTS[3] == POLICY_SIZE);
const _: () = assert!(POLICY_SIZE < NO_INDEX as usize);

struct ActionTables {
    /// `index_of[from][to]`: the policy index of the pair (mover's view), or `NO_INDEX`.
    index_of: [[u16; 90]; 90],
    /// The pair (mover's view) of every policy index.
    moves: [Move; POLICY_SIZE],
    /// The policy index of the mirrored pair.
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
    assert!(n == POLICY_SIZE, "action count differs from POLICY_SIZE");
    let mut i = 0;
    while i < POLICY_SIZE {
        let m = t.moves[i].mirror();
        let j = t.index_of[m.from().index()][m.to().index()];
        assert!(j != NO_INDEX, "the action space is not closed under the mirror");
        t.mirror[i] = j;
        i += 1;
    }
    t
}

static ACTIONS: ActionTables = build_action_tables();

/// The move as the side `turn` sees it: flipped for Black.
#[inline]
const fn to_view(m: Move, turn: Color) -> Move {
    match turn {
        Color::Red => m,
        Color::Black => m.flip(),
    }
}

/// The policy index of `m` played by `turn`, or `None` if no piece could ever play it (every legal
/// move of every position has an index). Black's moves are flipped first (rank r ↔ 9 − r).
#[inline]
pub fn move_to_index(m: Move, turn: Color) -> Option<usize> {
    let v = to_view(m, turn);
    let i = ACTIONS.index_of[v.from().index()][v.to().index()];
    (i != NO_INDEX).then_some(i as usize)
}

/// The move of policy index `i` for the side `turn` (flipped back for Black), or `None` if
/// `i >= POLICY_SIZE`. The inverse of [`move_to_index`].
#[inline]
pub fn index_to_move(i: usize, turn: Color) -> Option<Move> {
    ACTIONS.moves.get(i).map(|&m| to_view(m, turn))
}

/// The policy index of the mirror image (file f ↔ 8 − f) of the move of index `i`; the same for
/// both colours, and an involution: `mirror_index(mirror_index(i)) == i`.
///
/// # Panics
/// If `i >= POLICY_SIZE`.
#[inline]
pub fn mirror_index(i: usize) -> usize {
    ACTIONS.mirror[i] as usize
}

/// Writes into `out` the policy of the mirrored position: `out[mirror_index(i)] = policy[i]`.
/// Works on one policy or on a batch of them laid end to end.
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

/// Mirrors a policy (or a batch of policies laid end to end) in place.
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

/// Everything the input planes are a function of: what a replay-shard sample stores so that the
/// trainer can rebuild the planes without a [`Game`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlaneInputs {
    /// The board in absolute orientation (index = rank · 9 + file, rank 0 = Red's home rank), one
    /// code per point as [`encode_board_compact`] writes it.
    pub board: [u8; 90],
    /// Side to move: the perspective of the planes.
    pub turn: Color,
    /// Plies since the last capture.
    pub halfmove_clock: u32,
    /// Whether the position occurred before in the game ([`Game::repetitions`] ≥ 2).
    pub repeated: bool,
}

impl PlaneInputs {
    /// The inputs of a position; `repeated` says whether it occurred before in its game.
    pub fn from_position(pos: &Position, repeated: bool) -> PlaneInputs {
        PlaneInputs {
            board: encode_board_compact(pos),
            turn: pos.turn(),
            halfmove_clock: pos.halfmove_clock(),
            repeated,
        }
    }

    /// The inputs of a game's current position.
    pub fn from_game(game: &Game) -> PlaneInputs {
        PlaneInputs::from_position(game.position(), game.repetitions() >= 2)
    }
}

/// A compact board holds a code that is no piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("invalid piece code {code} on {square} (expected 0 for empty or 1..=14)")]
pub struct InvalidPieceCode {
    /// The point holding it (absolute orientation).
    pub square: Square,
    /// The code found.
    pub code: u8,
}

/// The compact code of a point: 0 ([`EMPTY_CODE`]) for empty, else `Piece::index() + 1`, that is
/// 1..=7 for Red's general, advisor, elephant, horse, chariot, cannon, soldier and 8..=14 for
/// Black's.
#[inline]
pub const fn piece_code(piece: Option<Piece>) -> u8 {
    match piece {
        None => EMPTY_CODE,
        Some(p) => p.index() as u8 + 1,
    }
}

/// The piece of a compact code: `Ok(None)` for 0, `Ok(Some(_))` for 1..=14, `Err(())` otherwise.
#[inline]
pub(crate) const fn code_piece(code: u8) -> Result<Option<Piece>, ()> {
    if code == EMPTY_CODE {
        return Ok(None);
    }
    if code as usize > 2 * PieceKind::COUNT {
        return Err(());
    }
    let i = code as usize - 1;
    let color = if i < PieceKind::COUNT { Color::Red } else { Color::Black };
    Ok(Some(Piece::new(color, PieceKind::ALL[i % PieceKind::COUNT])))
}

/// The board of `pos` as 90 piece codes ([`piece_code`]) in absolute orientation (index =
/// rank · 9 + file, rank 0 = Red's home rank), whoever is to move.
pub fn encode_board_compact(pos: &Position) -> [u8; 90] {
    let mut codes = [EMPTY_CODE; 90];
    for (c, &p) in codes.iter_mut().zip(pos.board().iter()) {
        *c = piece_code(p);
    }
    codes
}

/// The board of a compact encoding (absolute orientation), e.g. to rebuild a
/// [`crate::Setup`] from a shard sample.
///
/// # Errors
/// [`InvalidPieceCode`] naming the first point whose code is above 14.
pub fn decode_board_compact(codes: &[u8; 90]) -> Result<Board, InvalidPieceCode> {
    let mut board: Board = [None; 90];
    for (i, (&code, b)) in codes.iter().zip(board.iter_mut()).enumerate() {
        *b = code_piece(code)
            .map_err(|()| InvalidPieceCode { square: Square::from_index(i), code })?;
    }
    Ok(board)
}

/// Writes the input planes of a game's current position into `out`, laid out
/// `[PLANES, 10, 9]` (plane, rank, file) from the side to move's perspective (see the module
/// docs). Never allocates.
///
/// # Shapes
/// `out`: `[PLANES, 10, 9]` = [`INPUT_SIZE`] floats, each 0.0..=1.0.
///
/// # Panics
/// If `out.len() != INPUT_SIZE`.
pub fn encode_planes(game: &Game, out: &mut [f32]) {
    write_planes(&PlaneInputs::from_game(game), out);
}

/// Writes the input planes of a shard sample into `out`: the same planes [`encode_planes`] writes
/// for the game the sample came from (both go through one implementation).
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
    assert_eq!(out.len(), INPUT_SIZE, "planes_from_compact: out must hold INPUT_SIZE floats");
    if let Some((i, &code)) =
        inputs.board.iter().enumerate().find(|(_, c)| code_piece(**c).is_err())
    {
        return Err(InvalidPieceCode { square: Square::from_index(i), code });
    }
    write_planes(inputs, out);
    Ok(())
}

/// [`planes_from_compact`] with the clock plane scaled by `clock_scale` plies (janggi's planes
/// are xiangqi's with its own no-capture limit).
pub(crate) fn planes_from_compact_scaled(
    inputs: &PlaneInputs,
    out: &mut [f32],
    clock_scale: u32,
) -> Result<(), InvalidPieceCode> {
    assert_eq!(out.len(), INPUT_SIZE, "planes_from_compact: out must hold INPUT_SIZE floats");
    if let Some((i, &code)) =
        inputs.board.iter().enumerate().find(|(_, c)| code_piece(**c).is_err())
    {
        return Err(InvalidPieceCode { square: Square::from_index(i), code });
    }
    write_planes_scaled(inputs, out, clock_scale);
    Ok(())
}

/// The one implementation behind [`encode_planes`] and [`planes_from_compact`]. Codes above 14
/// are skipped (callers validate them).
fn write_planes(inputs: &PlaneInputs, out: &mut [f32]) {
    write_planes_scaled(inputs, out, CLOCK_SCALE);
}

/// [`write_planes`] with the clock plane scaled by `clock_scale` plies; janggi's planes use it
/// too.
pub(crate) fn write_planes_scaled(inputs: &PlaneInputs, out: &mut [f32], clock_scale: u32) {
    assert_eq!(out.len(), INPUT_SIZE, "encode_planes: out must hold INPUT_SIZE floats");
    out.fill(0.0);
    let turn = inputs.turn;
    for (sq, &code) in inputs.board.iter().enumerate() {
        let Ok(Some(piece)) = code_piece(code) else {
            continue;
        };
        let view = match turn {
            Color::Red => sq,
            Color::Black => Square::from_index(sq).flip().index(),
        };
        out[piece_plane(piece.kind, piece.color == turn) * PLANE_SIZE + view] = 1.0;
    }
    let plane = |p: usize| p * PLANE_SIZE..(p + 1) * PLANE_SIZE;
    if inputs.repeated {
        out[plane(REPETITION_PLANE)].fill(1.0);
    }
    let clock = inputs.halfmove_clock.min(clock_scale) as f32 / clock_scale as f32;
    out[plane(CLOCK_PLANE)].fill(clock);
}

// ---------------------------------------------------------------------------------------------
// Tactical feature planes (encoding version 2)
// ---------------------------------------------------------------------------------------------

/// The encoding version of a net that takes the tactical feature planes after the 16 base
/// planes ([`FEATURE_PLANES`] more, [`encode_features`]); version 1 ([`ENCODING_VERSION`]) is the
/// base planes alone.
pub const FEATURES_ENCODING_VERSION: u32 = 2;

/// Number of tactical feature planes a version-2 net takes after the base planes.
///
/// From the side to move, in order (each 1.0 on the points named, else 0.0; see
/// [`crate::attacks`] for the definitions):
///
/// | plane | content |
/// |---|---|
/// | 0 | points the mover attacks (own pieces there are protected) |
/// | 1 | points the opponent attacks |
/// | 2 | the mover's hanging pieces (attacked by the opponent, unprotected) |
/// | 3 | the opponent's hanging pieces |
/// | 4 | the mover's pieces pinned to its general |
/// | 5 | the opponent's pieces pinned to its general |
/// | 6 | 1.0 everywhere if the mover is in check |
pub const FEATURE_PLANES: usize = 7;

/// Floats of the feature planes of one position: `FEATURE_PLANES * 90`.
pub const FEATURE_SIZE: usize = FEATURE_PLANES * PLANE_SIZE;

/// Names of the feature planes, in order (for `model.json`).
pub const FEATURE_PLANE_NAMES: [&str; FEATURE_PLANES] = [
    "attacked_by_mover",
    "attacked_by_opponent",
    "mover_hanging",
    "opponent_hanging",
    "mover_pinned",
    "opponent_pinned",
    "mover_in_check",
];

/// Writes the tactical feature planes of `game`'s position into `out`, `[FEATURE_PLANES, 10, 9]`
/// from the side to move (the same view as the base planes).
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
    let board = decode_board_compact(&inputs.board)?;
    write_features(&board, inputs.turn, out);
    Ok(())
}

/// Writes the feature planes of `board` with `turn` to move into `out`.
///
/// # Panics
/// If `out.len() != FEATURE_SIZE`.
pub fn write_features(board: &Board, turn: Color, out: &mut [f32]) {
    write_feature_planes(&crate::attacks::AttackMap::of_board(board), turn, out);
}

/// Writes the feature planes of an attack map with `turn` to move into `out` (both games: the
/// planes are the same, only the map's rules differ).
///
/// # Panics
/// If `out.len() != FEATURE_SIZE`.
pub(crate) fn write_feature_planes(map: &crate::attacks::AttackMap, turn: Color, out: &mut [f32]) {
    assert_eq!(out.len(), FEATURE_SIZE, "encode_features: out must hold FEATURE_SIZE floats");
    out.fill(0.0);
    let (me, them) = (turn.index(), turn.other().index());
    let sets = [
        map.attacked[me],
        map.attacked[them],
        map.hanging[me],
        map.hanging[them],
        map.pinned[me],
        map.pinned[them],
    ];
    for (p, &set) in sets.iter().enumerate() {
        let mut rest = set;
        while rest != 0 {
            let sq = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let view = match turn {
                Color::Red => sq,
                Color::Black => Square::from_index(sq).flip().index(),
            };
            out[p * PLANE_SIZE + view] = 1.0;
        }
    }
    if map.in_check[me] {
        out[6 * PLANE_SIZE..7 * PLANE_SIZE].fill(1.0);
    }
}

/// Mirrors planes left–right in place (file f ↔ 8 − f): one position `[PLANES, 10, 9]`, or any
/// number of whole 10 × 9 planes such as a batch `[B, PLANES, 10, 9]`. The planes of the mirrored
/// position ([`Position::mirror`]) are the mirrored planes.
///
/// # Panics
/// If the length is not a multiple of [`PLANE_SIZE`].
pub fn mirror_planes(planes: &mut [f32]) {
    assert_eq!(planes.len() % PLANE_SIZE, 0, "mirror_planes: not a whole number of planes");
    for row in planes.chunks_exact_mut(PLANE_FILES) {
        row.reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_counts_add_up_to_policy_size() {
        assert_eq!(STEP_COUNTS, [1530, 508, 16, 112]);
        assert_eq!(STEP_COUNTS.iter().sum::<usize>(), POLICY_SIZE);
    }

    #[test]
    fn index_table_is_a_bijection() {
        let mut seen = vec![false; POLICY_SIZE];
        let mut pairs = 0;
        for from in 0..90 {
            for to in 0..90 {
                let i = ACTIONS.index_of[from][to];
                if i == NO_INDEX {
                    continue;
                }
                pairs += 1;
                assert!(!seen[i as usize]);
                seen[i as usize] = true;
                let m = ACTIONS.moves[i as usize];
                assert_eq!((m.from().index(), m.to().index()), (from, to));
            }
        }
        assert_eq!(pairs, POLICY_SIZE);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn order_is_by_from_then_to() {
        assert!(ACTIONS.moves.windows(2).all(|w| w[0].from() <= w[1].from()));
        assert!(
            ACTIONS.moves.windows(2).all(|w| w[0].from() < w[1].from() || w[0].to() < w[1].to())
        );
        assert_eq!(ACTIONS.moves[0].to_string(), "a0b0");
        assert_eq!(ACTIONS.moves[POLICY_SIZE - 1].to_string(), "i9h9");
    }

    #[test]
    fn piece_codes_round_trip() {
        assert_eq!(code_piece(0), Ok(None));
        for color in Color::ALL {
            for kind in PieceKind::ALL {
                let p = Some(Piece::new(color, kind));
                assert_eq!(code_piece(piece_code(p)), Ok(p));
            }
        }
        assert_eq!(code_piece(15), Err(()));
        assert_eq!(code_piece(255), Err(()));
    }
}
