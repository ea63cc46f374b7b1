//! [`Setup`] (unvalidated) and [`Position`] (validated): placement, side to move, clocks,
//! Zobrist key; legal move generation, check detection, make and unmake.

use crate::error::{IllegalMoveReason, PlayError, PositionError};
use crate::moves::{Move, MoveList};
use crate::tables::{
    ADVISOR_MOVES, BlockedSteps, ELEPHANT_MOVES, GENERAL_MOVES, HORSE_ATTACKS, HORSE_MOVES, NORTH,
    RAYS, SOLDIER_MOVES, SOUTH, Steps, ZOBRIST_BLACK, ZOBRIST_PIECES, advisor_point,
    elephant_point, soldier_point,
};
use crate::types::{ByColor, Color, Piece, PieceKind, Square};

/// A board as 90 points, indexed by [`Square::index`].
pub type Board = [Option<Piece>; 90];

/// An unvalidated position: what a FEN says, before any rule is checked.
///
/// Turn it into a [`Position`] with [`Position::from_setup`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Setup {
    /// Pieces by square index (`rank * 9 + file`).
    pub board: Board,
    /// Side to move.
    pub turn: Color,
    /// Plies since the last capture (the FEN halfmove field).
    pub halfmove_clock: u32,
    /// The FEN fullmove number, starting at 1 and incremented after each Black move.
    pub fullmove_number: u32,
}

impl Setup {
    /// An empty board, Red to move, clocks at their start values.
    pub fn empty() -> Setup {
        Setup { board: [None; 90], turn: Color::Red, halfmove_clock: 0, fullmove_number: 1 }
    }
}

/// How strictly [`Position::from_setup`] checks a setup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Validation {
    /// Every check: piece counts, each piece on a point it can reach in a game, generals not
    /// facing, the side not to move not in check.
    #[default]
    Strict,
    /// For composed problems: elephants and soldiers may stand on any point, and advisors on any
    /// point of their palace, even where a game could never bring them. Piece counts, one general
    /// per side inside its palace, facing generals and the side not to move being in check are
    /// still refused, because the rules are not defined for such positions.
    Lenient,
}

/// A legal position: placement, side to move, clocks and Zobrist key. Fields are private; the
/// only way in is [`Position::from_setup`] (or FEN parsing, which goes through it).
///
/// Repetition and game end are judged by [`crate::Game`], which owns the history.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position {
    board: Board,
    occupied: ByColor<u128>,
    generals: ByColor<Square>,
    turn: Color,
    halfmove_clock: u32,
    fullmove_number: u32,
    key: u64,
}

/// What [`Position::play_unchecked`] returns so that [`Position::undo`] can restore the position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Undo {
    /// The move that was played.
    pub mv: Move,
    /// The captured piece, if any.
    pub captured: Option<Piece>,
    halfmove_clock: u32,
}

/// Two witnesses that the opponent keeps a legal move after a move of ours (see
/// [`Position::reply_witnesses`]), and where a move of ours cannot give check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReplyWitnesses {
    /// The opponent's general.
    general: usize,
    /// Origins from which a move cannot give check.
    quiet_from: u128,
    /// Destinations to which a move cannot give check.
    quiet_to: u128,
    /// Each witness's kill points: where a piece of ours landing spoils it.
    kills: [u128; 2],
    /// Each witness's move (origin, destination); read by the tests.
    #[cfg_attr(not(test), allow(dead_code))]
    replies: [(u8, u8); 2],
    len: usize,
}

/// Largest accepted value of the two counters (ample for any game, and safe from overflow);
/// also available as `xiangqi::fen::MAX_COUNTER`.
pub const MAX_COUNTER: u32 = 1_000_000;

/// The start position in FEN.
pub const START_FEN: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1";

#[inline]
const fn bit(s: usize) -> u128 {
    1u128 << s
}

const fn build_lines() -> [u128; 90] {
    let mut out = [0u128; 90];
    let mut g = 0;
    while g < 90 {
        let mut s = 0;
        while s < 90 {
            if s % 9 == g % 9 || s / 9 == g / 9 {
                out[g] |= 1u128 << s;
            }
            s += 1;
        }
        g += 1;
    }
    out
}

const fn build_diagonal_neighbours() -> [u128; 90] {
    let mut out = [0u128; 90];
    let mut g = 0;
    while g < 90 {
        let (f, r) = ((g % 9) as i32, (g / 9) as i32);
        let d = [(1, 1), (1, -1), (-1, 1), (-1, -1)];
        let mut k = 0;
        while k < 4 {
            let (x, y) = (f + d[k].0, r + d[k].1);
            if x >= 0 && x < 9 && y >= 0 && y < 10 {
                out[g] |= 1u128 << (y * 9 + x);
            }
            k += 1;
        }
        g += 1;
    }
    out
}

/// Points on the same file or rank as a square (the square included).
static LINES: [u128; 90] = build_lines();
/// Points diagonally adjacent to a square: the only places a horse's leg can be when it attacks it.
static DIAGONAL_NEIGHBOURS: [u128; 90] = build_diagonal_neighbours();

/// Whether `s` is attacked by a piece of `by` on `board`, counting an opposing general on the
/// same open file (the "flying general") as an attack. Only pieces that could attack a general
/// are considered: chariot, cannon, horse, soldier and the facing general. Elephants and advisors
/// never leave their own half, so they cannot reach a general.
#[inline]
pub(crate) fn general_attacked(board: &Board, s: usize, by: Color) -> bool {
    // Soldiers: from in front (seen from the defender) and, once across the river, from the sides.
    let soldier = Some(Piece::new(by, PieceKind::Soldier));
    let (front, crossed) = match by {
        Color::Red => (s.checked_sub(9), s >= 45),
        Color::Black => (if s + 9 < 90 { Some(s + 9) } else { None }, s < 45),
    };
    if let Some(f) = front {
        if board[f] == soldier {
            return true;
        }
    }
    if crossed {
        let file = s % 9;
        if (file > 0 && board[s - 1] == soldier) || (file < 8 && board[s + 1] == soldier) {
            return true;
        }
    }
    // Horses, through an empty leg.
    let horse = Some(Piece::new(by, PieceKind::Horse));
    let ha: &BlockedSteps = &HORSE_ATTACKS[s];
    for k in 0..ha.len as usize {
        if board[ha.to[k] as usize] == horse && board[ha.block[k] as usize].is_none() {
            return true;
        }
    }
    // Lines: chariot or facing general as the first piece, cannon as the second.
    let chariot = Some(Piece::new(by, PieceKind::Chariot));
    let cannon = Some(Piece::new(by, PieceKind::Cannon));
    let general = Some(Piece::new(by, PieceKind::General));
    for (d, ray) in RAYS[s].iter().enumerate() {
        let mut screened = false;
        for &t in ray.squares() {
            let p = board[t as usize];
            if p.is_none() {
                continue;
            }
            if screened {
                if p == cannon {
                    return true;
                }
                break;
            }
            if p == chariot || (p == general && (d == NORTH || d == SOUTH)) {
                return true;
            }
            screened = true;
        }
    }
    false
}

impl Position {
    /// The start position, Red to move.
    pub fn new() -> Position {
        Position::start()
    }

    /// The start position, Red to move.
    pub fn start() -> Position {
        let mut setup = Setup::empty();
        let back = [
            PieceKind::Chariot,
            PieceKind::Horse,
            PieceKind::Elephant,
            PieceKind::Advisor,
            PieceKind::General,
            PieceKind::Advisor,
            PieceKind::Elephant,
            PieceKind::Horse,
            PieceKind::Chariot,
        ];
        for (f, &kind) in back.iter().enumerate() {
            setup.board[f] = Some(Piece::new(Color::Red, kind));
            setup.board[81 + f] = Some(Piece::new(Color::Black, kind));
        }
        for f in [1usize, 7] {
            setup.board[2 * 9 + f] = Some(Piece::new(Color::Red, PieceKind::Cannon));
            setup.board[7 * 9 + f] = Some(Piece::new(Color::Black, PieceKind::Cannon));
        }
        for f in [0usize, 2, 4, 6, 8] {
            setup.board[3 * 9 + f] = Some(Piece::new(Color::Red, PieceKind::Soldier));
            setup.board[6 * 9 + f] = Some(Piece::new(Color::Black, PieceKind::Soldier));
        }
        Position::from_valid_setup(&setup)
    }

    /// Builds a position from a setup whose general squares are known to exist.
    fn from_valid_setup(setup: &Setup) -> Position {
        let mut occupied = ByColor { red: 0u128, black: 0u128 };
        let mut generals = ByColor { red: Square::from_index(0), black: Square::from_index(0) };
        let mut key = 0u64;
        for (i, p) in setup.board.iter().enumerate() {
            if let Some(p) = p {
                occupied[p.color] |= bit(i);
                key ^= ZOBRIST_PIECES[p.index()][i];
                if p.kind == PieceKind::General {
                    generals[p.color] = Square::from_index(i);
                }
            }
        }
        if setup.turn == Color::Black {
            key ^= ZOBRIST_BLACK;
        }
        Position {
            board: setup.board,
            occupied,
            generals,
            turn: setup.turn,
            halfmove_clock: setup.halfmove_clock,
            fullmove_number: setup.fullmove_number.max(1),
            key,
        }
    }

    /// Validates a setup.
    ///
    /// # Errors
    /// A [`PositionError`] naming the first rule the setup breaks: a missing or second general,
    /// a general or advisor outside its palace, an elephant or soldier (strict mode: also an
    /// advisor) on a point it can never reach, more pieces of a kind than the set has, generals
    /// facing each other, the side not to move in check, or a clock beyond
    /// [`MAX_COUNTER`].
    pub fn from_setup(setup: &Setup, validation: Validation) -> Result<Position, PositionError> {
        let strict = validation == Validation::Strict;
        let max = MAX_COUNTER;
        if setup.halfmove_clock > max || setup.fullmove_number > max {
            return Err(PositionError::CounterOutOfRange {
                halfmove: setup.halfmove_clock,
                fullmove: setup.fullmove_number,
            });
        }
        let mut counts = [[0u8; PieceKind::COUNT]; 2];
        for (i, p) in setup.board.iter().enumerate() {
            let Some(p) = *p else { continue };
            let sq = Square::from_index(i);
            let c = p.color.index();
            counts[c][p.kind.index()] += 1;
            let ok = match p.kind {
                PieceKind::General => sq.in_palace(p.color),
                PieceKind::Advisor => {
                    sq.in_palace(p.color) && (!strict || advisor_point(i as u8, c))
                }
                PieceKind::Elephant => !strict || elephant_point(i as u8, c),
                PieceKind::Soldier => !strict || soldier_point(i as u8, c),
                _ => true,
            };
            if !ok {
                return Err(match p.kind {
                    PieceKind::General | PieceKind::Advisor if !sq.in_palace(p.color) => {
                        PositionError::OutsidePalace { piece: p, square: sq }
                    }
                    _ => PositionError::UnreachablePoint { piece: p, square: sq },
                });
            }
        }
        for color in Color::ALL {
            for kind in PieceKind::ALL {
                let n = counts[color.index()][kind.index()];
                if kind == PieceKind::General && n == 0 {
                    return Err(PositionError::MissingGeneral(color));
                }
                if n > kind.max_count() {
                    return Err(PositionError::TooManyPieces {
                        piece: Piece::new(color, kind),
                        count: n,
                    });
                }
            }
        }
        let pos = Position::from_valid_setup(setup);
        let (rg, bg) = (pos.generals.red, pos.generals.black);
        if rg.file() == bg.file()
            && RAYS[rg.index()][NORTH]
                .squares()
                .iter()
                .take_while(|&&s| s as usize != bg.index())
                .all(|&s| pos.board[s as usize].is_none())
        {
            return Err(PositionError::GeneralsFacing);
        }
        let them = setup.turn.other();
        if general_attacked(&pos.board, pos.generals[them].index(), setup.turn) {
            return Err(PositionError::OpponentInCheck(them));
        }
        Ok(pos)
    }

    /// The unvalidated view of this position.
    pub fn to_setup(&self) -> Setup {
        Setup {
            board: self.board,
            turn: self.turn,
            halfmove_clock: self.halfmove_clock,
            fullmove_number: self.fullmove_number,
        }
    }

    /// The piece on `sq`, if any.
    #[inline]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        self.board[sq.index()]
    }

    /// The whole board, indexed by [`Square::index`].
    #[inline]
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// Side to move.
    #[inline]
    pub fn turn(&self) -> Color {
        self.turn
    }

    /// Plies since the last capture.
    #[inline]
    pub fn halfmove_clock(&self) -> u32 {
        self.halfmove_clock
    }

    /// The FEN fullmove number (1 at the start, incremented after each Black move).
    #[inline]
    pub fn fullmove_number(&self) -> u32 {
        self.fullmove_number
    }

    /// Plies played since the start of the game as the FEN counts them:
    /// `2 · (fullmove − 1)`, plus 1 when Black is to move.
    #[inline]
    pub fn ply(&self) -> u32 {
        2 * (self.fullmove_number - 1) + u32::from(self.turn == Color::Black)
    }

    /// Zobrist key of placement and side to move (clocks excluded), updated incrementally.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The key recomputed from scratch; equal to [`Position::key`] (a test invariant).
    pub fn compute_key(&self) -> u64 {
        Position::from_valid_setup(&self.to_setup()).key
    }

    /// The square of `color`'s general.
    #[inline]
    pub fn general(&self, color: Color) -> Square {
        self.generals[color]
    }

    /// Bit set (bit `i` = square index `i`) of the points occupied by `color`.
    #[inline]
    pub fn occupied_by(&self, color: Color) -> u128 {
        self.occupied[color]
    }

    /// Whether the side to move is in check.
    #[inline]
    pub fn is_check(&self) -> bool {
        general_attacked(&self.board, self.generals[self.turn].index(), self.turn.other())
    }

    /// Whether `color`'s general is attacked (by a piece, or by the facing general).
    pub fn general_attacked(&self, color: Color) -> bool {
        general_attacked(&self.board, self.generals[color].index(), color.other())
    }

    /// Whether neither side has a chariot, horse, cannon or soldier, so that neither can ever
    /// mate: a draw by insufficient material.
    pub fn insufficient_material(&self) -> bool {
        !self.board.iter().flatten().any(|p| {
            matches!(
                p.kind,
                PieceKind::Chariot | PieceKind::Horse | PieceKind::Cannon | PieceKind::Soldier
            )
        })
    }

    /// Calls `f` for every pseudo-legal move of the piece of `color` on `from` (geometry and
    /// blocking only; the own general may be left attacked).
    #[inline]
    fn piece_moves(&self, from: usize, piece: Piece, f: &mut impl FnMut(usize, usize)) {
        let color = piece.color;
        let c = color.index();
        let own = |p: Option<Piece>| matches!(p, Some(q) if q.color == color);
        let steps = |table: &Steps, f: &mut dyn FnMut(usize, usize)| {
            for &t in table.squares() {
                if !own(self.board[t as usize]) {
                    f(from, t as usize);
                }
            }
        };
        match piece.kind {
            PieceKind::General => steps(&GENERAL_MOVES[c][from], f),
            PieceKind::Advisor => steps(&ADVISOR_MOVES[c][from], f),
            PieceKind::Soldier => steps(&SOLDIER_MOVES[c][from], f),
            PieceKind::Elephant | PieceKind::Horse => {
                let table = if piece.kind == PieceKind::Horse {
                    &HORSE_MOVES[from]
                } else {
                    &ELEPHANT_MOVES[c][from]
                };
                for k in 0..table.len as usize {
                    let t = table.to[k] as usize;
                    if self.board[table.block[k] as usize].is_none() && !own(self.board[t]) {
                        f(from, t);
                    }
                }
            }
            PieceKind::Chariot => {
                for ray in &RAYS[from] {
                    for &t in ray.squares() {
                        match self.board[t as usize] {
                            None => f(from, t as usize),
                            Some(p) => {
                                if p.color != color {
                                    f(from, t as usize);
                                }
                                break;
                            }
                        }
                    }
                }
            }
            PieceKind::Cannon => {
                for ray in &RAYS[from] {
                    let mut screened = false;
                    for &t in ray.squares() {
                        match self.board[t as usize] {
                            None if !screened => f(from, t as usize),
                            None => {}
                            Some(_) if !screened => screened = true,
                            Some(p) => {
                                if p.color != color {
                                    f(from, t as usize);
                                }
                                break;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Calls `f` for every legal move of `color` (whether or not `color` is to move).
    ///
    /// A pseudo-legal move is tested by playing it on a scratch board only when it could change
    /// the safety of the own general: when the side is in check, when the general moves, when
    /// the piece leaves or enters the general's file or rank (line attacks and cannon screens),
    /// or when it leaves a point diagonally next to the general (a horse's leg). Any other move
    /// leaves every attack on the general as it was.
    ///
    /// `f` returns `true` to stop the generation early (after the current piece's moves).
    #[inline]
    fn for_each_legal(&self, color: Color, mut f: impl FnMut(Move) -> bool) {
        let g = self.generals[color].index();
        let them = color.other();
        let in_check = general_attacked(&self.board, g, them);
        let lines = LINES[g];
        let risky_from = lines | DIAGONAL_NEIGHBOURS[g];
        let mut scratch = self.board;
        let mut pieces = self.occupied[color];
        let mut stop = false;
        while pieces != 0 && !stop {
            let from = pieces.trailing_zeros() as usize;
            pieces &= pieces - 1;
            let Some(piece) = self.board[from] else { continue };
            let is_general = piece.kind == PieceKind::General;
            let from_risky = in_check || is_general || risky_from & bit(from) != 0;
            self.piece_moves(from, piece, &mut |from, to| {
                if stop {
                    return;
                }
                if from_risky || lines & bit(to) != 0 {
                    let captured = scratch[to];
                    scratch[to] = scratch[from];
                    scratch[from] = None;
                    let king = if is_general { to } else { g };
                    let attacked = general_attacked(&scratch, king, them);
                    scratch[from] = scratch[to];
                    scratch[to] = captured;
                    if attacked {
                        return;
                    }
                }
                stop = f(Move::new(Square::from_index(from), Square::from_index(to)));
            });
        }
    }

    /// The legal moves of the side to move.
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::new();
        self.legal_moves_into(&mut list);
        list
    }

    /// Writes the legal moves of the side to move into `list` (cleared first). Never allocates.
    pub fn legal_moves_into(&self, list: &mut MoveList) {
        list.clear();
        // Cannot overflow: see `MAX_MOVES` for the worst case, which validation guarantees.
        self.for_each_legal(self.turn, |m| {
            list.push(m);
            false
        });
    }

    /// Writes the legal moves that `color` would have if it were to move (used to judge chases,
    /// where the side that just moved is not the side to move).
    pub fn legal_moves_for(&self, color: Color, list: &mut MoveList) {
        list.clear();
        self.for_each_legal(color, |m| {
            list.push(m);
            false
        });
    }

    /// Number of legal moves of the side to move (faster than collecting them).
    pub fn count_legal_moves(&self) -> usize {
        let mut n = 0;
        self.for_each_legal(self.turn, |_| {
            n += 1;
            false
        });
        n
    }

    /// What [`Position::keeps_a_reply`] needs, computed once for many moves of the side to move.
    ///
    /// A *witness* is a legal move of the opponent here that no move of ours can disturb unless
    /// it lands on one of the witness's *kill points*: the moving piece is not the general and
    /// stands neither on its general's file or rank nor diagonally next to it, its destination is
    /// off that file and rank (so the move changes no attack on the general; see
    /// [`Position::for_each_legal`]), and its path is at most a leg or an elephant's eye. Two
    /// witnesses with disjoint kill points are kept, so that one survives any single move.
    pub(crate) fn reply_witnesses(&self) -> ReplyWitnesses {
        let them = self.turn.other();
        let g = self.generals[them].index();
        let lines = LINES[g];
        let risky_from = lines | DIAGONAL_NEIGHBOURS[g];
        let mut horse_sources = 0u128;
        let ha = &HORSE_ATTACKS[g];
        for k in 0..ha.len as usize {
            horse_sources |= bit(ha.to[k] as usize);
        }
        let mut w = ReplyWitnesses {
            general: g,
            // A move of ours gives check only by leaving or entering the general's lines,
            // leaving a horse's leg point, or landing where a horse (or, on the lines, any
            // other piece) attacks the general.
            quiet_from: !risky_from,
            quiet_to: !(lines | horse_sources),
            kills: [0; 2],
            replies: [(0, 0); 2],
            len: 0,
        };
        let mut pieces = self.occupied[them] & !risky_from;
        while pieces != 0 && w.len < 2 {
            let from = pieces.trailing_zeros() as usize;
            pieces &= pieces - 1;
            let Some(piece) = self.board[from] else { continue };
            self.piece_moves(from, piece, &mut |from, to| {
                if w.len == 2 || lines & bit(to) != 0 {
                    return;
                }
                let (df, dr) =
                    ((to % 9) as i32 - (from % 9) as i32, (to / 9) as i32 - (from / 9) as i32);
                let kill = match piece.kind {
                    PieceKind::Soldier | PieceKind::Advisor => bit(from),
                    // The elephant's eye.
                    PieceKind::Elephant => bit(from) | bit((from + to) / 2),
                    // The horse's leg: one step along the long side of its move.
                    PieceKind::Horse => {
                        let leg = if df.abs() == 2 {
                            from as i32 + df.signum()
                        } else {
                            from as i32 + 9 * dr.signum()
                        };
                        bit(from) | bit(leg as usize)
                    }
                    // One step: nothing between; a chariot may capture whatever lands there.
                    PieceKind::Chariot if df.abs() + dr.abs() == 1 => bit(from),
                    // One step, to an empty point (a cannon's step never captures): a piece of
                    // ours landing there spoils it.
                    PieceKind::Cannon if df.abs() + dr.abs() == 1 => bit(from) | bit(to),
                    _ => return,
                };
                if w.kills[..w.len].iter().all(|&k| k & kill == 0) {
                    w.kills[w.len] = kill;
                    w.replies[w.len] = (from as u8, to as u8);
                    w.len += 1;
                }
            });
        }
        w
    }

    /// A cheap, sufficient test that after `m` (a legal move of the side to move) the opponent
    /// still has a legal move: `m` does not give check (by geometry, or else on a scratch board)
    /// and does not land on the kill points of one of `w`'s witnesses, which then stays legal.
    /// `false` proves nothing: the caller then generates the opponent's moves.
    ///
    /// `w` must come from [`Position::reply_witnesses`] of this position.
    #[inline]
    pub(crate) fn keeps_a_reply(&self, m: Move, w: &ReplyWitnesses) -> bool {
        let (from, to) = (m.from().index(), m.to().index());
        if !w.kills[..w.len].iter().any(|&k| k & bit(to) == 0) {
            return false;
        }
        if w.quiet_from & bit(from) != 0 && w.quiet_to & bit(to) != 0 {
            return true;
        }
        let mut scratch = self.board;
        scratch[to] = scratch[from];
        scratch[from] = None;
        !general_attacked(&scratch, w.general, self.turn)
    }

    /// The Zobrist key after `m`, a legal move of the side to move that captures nothing.
    #[inline]
    pub(crate) fn key_after_quiet(&self, m: Move) -> u64 {
        let (from, to) = (m.from().index(), m.to().index());
        debug_assert!(self.board[to].is_none());
        match self.board[from] {
            Some(p) => {
                self.key
                    ^ ZOBRIST_PIECES[p.index()][from]
                    ^ ZOBRIST_PIECES[p.index()][to]
                    ^ ZOBRIST_BLACK
            }
            None => self.key,
        }
    }

    /// Whether the side to move has at least one legal move.
    pub fn has_legal_move(&self) -> bool {
        let mut found = false;
        self.for_each_legal(self.turn, |_| {
            found = true;
            true
        });
        found
    }

    /// Whether `m` is legal for `color` here, `color` being the owner of the piece on its origin.
    fn is_legal_for(&self, color: Color, m: Move) -> Result<(), IllegalMoveReason> {
        let (from, to) = (m.from().index(), m.to().index());
        let piece = match self.board[from] {
            None => return Err(IllegalMoveReason::NoPiece),
            Some(p) if p.color != color => return Err(IllegalMoveReason::NotYourPiece),
            Some(p) => p,
        };
        if matches!(self.board[to], Some(p) if p.color == color) {
            return Err(IllegalMoveReason::OwnPieceOnTarget);
        }
        let mut geometric = false;
        self.piece_moves(from, piece, &mut |_, t| geometric |= t == to);
        if !geometric {
            return Err(IllegalMoveReason::NotAPieceMove(piece.kind));
        }
        let mut scratch = self.board;
        scratch[to] = scratch[from];
        scratch[from] = None;
        let king = if piece.kind == PieceKind::General { to } else { self.generals[color].index() };
        if general_attacked(&scratch, king, color.other()) {
            let g = if piece.kind == PieceKind::General {
                Square::from_index(to)
            } else {
                self.generals[color]
            };
            let facing = |b: &Board| {
                let other = self.generals[color.other()];
                g.file() == other.file() && {
                    let (lo, hi) = if g < other { (g, other) } else { (other, g) };
                    RAYS[lo.index()][NORTH]
                        .squares()
                        .iter()
                        .take_while(|&&s| s as usize != hi.index())
                        .all(|&s| b[s as usize].is_none())
                }
            };
            return Err(if facing(&scratch) {
                IllegalMoveReason::GeneralsFacing
            } else {
                IllegalMoveReason::GeneralAttacked
            });
        }
        Ok(())
    }

    /// Whether `m` is legal for the side to move. Equal to `legal_moves().contains(&m)`.
    pub fn is_legal(&self, m: Move) -> bool {
        self.is_legal_for(self.turn, m).is_ok()
    }

    /// Why `m` is not legal for the side to move, or `Ok(())` if it is.
    ///
    /// # Errors
    /// An [`IllegalMoveReason`]: no piece or an enemy piece on the origin, an own piece on the
    /// target, a step the piece cannot make, or a move that leaves the own general attacked or
    /// facing the other general.
    pub fn check_legal(&self, m: Move) -> Result<(), IllegalMoveReason> {
        self.is_legal_for(self.turn, m)
    }

    /// Whether `color` could legally play `m` in this placement, ignoring whose turn it is.
    pub fn is_legal_by(&self, color: Color, m: Move) -> bool {
        self.is_legal_for(color, m).is_ok()
    }

    /// Plays `m` after checking that it is legal.
    ///
    /// # Errors
    /// A [`PlayError`] naming the move and why it is illegal; the position is unchanged.
    pub fn play(&mut self, m: Move) -> Result<Undo, PlayError> {
        self.check_legal(m).map_err(|reason| PlayError { mv: m, reason })?;
        Ok(self.play_unchecked(m))
    }

    /// Plays `m` without checking it, returning what [`Position::undo`] needs.
    ///
    /// # Panics
    /// May panic, or leave a position that breaks the invariants, if `m` is not legal. Use it
    /// only with moves from [`Position::legal_moves`] of this position.
    #[inline]
    pub fn play_unchecked(&mut self, m: Move) -> Undo {
        let (from, to) = (m.from().index(), m.to().index());
        let piece = self.board[from].expect("play_unchecked: no piece on the origin");
        let captured = self.board[to];
        let us = piece.color;
        let undo = Undo { mv: m, captured, halfmove_clock: self.halfmove_clock };
        self.board[to] = Some(piece);
        self.board[from] = None;
        self.occupied[us] ^= bit(from) | bit(to);
        self.key ^= ZOBRIST_PIECES[piece.index()][from] ^ ZOBRIST_PIECES[piece.index()][to];
        if let Some(c) = captured {
            self.occupied[c.color] ^= bit(to);
            self.key ^= ZOBRIST_PIECES[c.index()][to];
            self.halfmove_clock = 0;
        } else {
            self.halfmove_clock += 1;
        }
        if piece.kind == PieceKind::General {
            self.generals[us] = Square::from_index(to);
        }
        if self.turn == Color::Black {
            self.fullmove_number += 1;
        }
        self.turn = self.turn.other();
        self.key ^= ZOBRIST_BLACK;
        undo
    }

    /// Takes back the move that produced `undo`.
    ///
    /// # Panics
    /// May panic if `undo` does not come from the last [`Position::play_unchecked`] on `self`.
    #[inline]
    pub fn undo(&mut self, undo: Undo) {
        let (from, to) = (undo.mv.from().index(), undo.mv.to().index());
        let piece = self.board[to].expect("undo: no piece on the target");
        self.turn = self.turn.other();
        self.key ^= ZOBRIST_BLACK;
        if self.turn == Color::Black {
            self.fullmove_number -= 1;
        }
        self.board[from] = Some(piece);
        self.board[to] = undo.captured;
        self.occupied[piece.color] ^= bit(from) | bit(to);
        self.key ^= ZOBRIST_PIECES[piece.index()][from] ^ ZOBRIST_PIECES[piece.index()][to];
        if let Some(c) = undo.captured {
            self.occupied[c.color] ^= bit(to);
            self.key ^= ZOBRIST_PIECES[c.index()][to];
        }
        if piece.kind == PieceKind::General {
            self.generals[piece.color] = Square::from_index(from);
        }
        self.halfmove_clock = undo.halfmove_clock;
    }

    /// Whether `m` (assumed legal) captures.
    #[inline]
    pub fn is_capture(&self, m: Move) -> bool {
        self.board[m.to().index()].is_some()
    }

    /// Whether `m` (assumed legal) leaves the opponent's general attacked.
    pub fn gives_check(&self, m: Move) -> bool {
        let mut next = *self;
        next.play_unchecked(m);
        next.is_check()
    }

    /// The left–right mirror of this position (file f ↔ 8 − f), with the same side to move and
    /// clocks. The mirror of a legal position is legal and has the mirrored legal moves.
    #[must_use]
    pub fn mirror(&self) -> Position {
        let mut setup = self.to_setup();
        for s in Square::all() {
            setup.board[s.mirror().index()] = self.board[s.index()];
        }
        Position::from_valid_setup(&setup)
    }
}

impl Default for Position {
    fn default() -> Position {
        Position::start()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;

    /// The start position and the positions of the shared perft data (middlegames of real
    /// games).
    fn starts() -> Vec<Position> {
        let data = include_str!("../tests/data/xiangqi-perft.tsv");
        let mut out = vec![Position::start()];
        for line in data.lines().skip(1) {
            if let Some(Ok(p)) = line.split('\t').next().map(Position::from_fen) {
                out.push(p);
            }
        }
        out
    }

    /// The two claims [`Position::keeps_a_reply`] rests on, for every legal move `m`: a move from
    /// a quiet origin to a quiet destination gives no check, and after a move that gives no
    /// check every witness whose kill points `m` misses is a legal move of the opponent.
    fn check_witnesses(pos: &Position) -> Result<usize, TestCaseError> {
        let w = pos.reply_witnesses();
        let mut used = 0;
        for m in pos.legal_moves() {
            let (from, to) = (m.from().index(), m.to().index());
            let mut next = *pos;
            next.play_unchecked(m);
            if w.quiet_from & bit(from) != 0 && w.quiet_to & bit(to) != 0 {
                prop_assert!(!next.is_check(), "{} gives check in {:?}", m, pos);
            }
            if next.is_check() {
                continue;
            }
            let replies = next.legal_moves();
            for k in 0..w.len {
                if w.kills[k] & bit(to) == 0 {
                    let (a, b) = w.replies[k];
                    let reply =
                        Move::new(Square::from_index(a.into()), Square::from_index(b.into()));
                    prop_assert!(
                        replies.contains(&reply),
                        "witness {} is not legal after {} in {:?}",
                        reply,
                        m,
                        pos
                    );
                    used += 1;
                }
            }
        }
        Ok(used)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn witnesses_stay_legal_replies(
            start in any::<Index>(),
            choices in prop::collection::vec(any::<Index>(), 0..120),
        ) {
            let starts = starts();
            let mut pos = starts[start.index(starts.len())];
            for choice in &choices {
                check_witnesses(&pos)?;
                let legal = pos.legal_moves();
                if legal.is_empty() {
                    break;
                }
                pos.play_unchecked(legal[choice.index(legal.len())]);
            }
            check_witnesses(&pos)?;
        }
    }

    /// Witnesses of every kind of piece occur, so the property above tests each kind's kill
    /// points.
    #[test]
    fn witnesses_of_every_kind_occur() {
        use std::collections::BTreeSet;
        let mut kinds = BTreeSet::new();
        let mut rng_state = 0x9e37_79b9_7f4a_7c15u64;
        for start in starts() {
            let mut pos = start;
            for _ in 0..80 {
                let w = pos.reply_witnesses();
                for k in 0..w.len {
                    let piece =
                        pos.board[w.replies[k].0 as usize].expect("a witness moves a piece");
                    kinds.insert(format!("{:?}", piece.kind));
                }
                let legal = pos.legal_moves();
                if legal.is_empty() {
                    break;
                }
                rng_state = rng_state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                pos.play_unchecked(legal[(rng_state >> 33) as usize % legal.len()]);
            }
        }
        for kind in ["Soldier", "Advisor", "Elephant", "Horse", "Chariot", "Cannon"] {
            assert!(kinds.contains(kind), "no {kind} witness among {kinds:?}");
        }
    }
}
