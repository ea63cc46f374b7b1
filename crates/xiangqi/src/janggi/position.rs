//! The janggi [`Position`]: placement, side to move, clocks, rule set and Zobrist key; legal
//! move generation with the pass, check detection, make.

use std::fmt;

use super::tables::{DIAG_RAYS, ELEPHANT_ATTACKS, ELEPHANT_MOVES, PALACE_STEPS};
use super::{FenError, MoveList, PositionError, Rules, parse_uci_with};
use crate::error::{IllegalMoveReason, ParseMoveError, PlayError};
use crate::fen::{parse_setup, write_fen};
use crate::moves::Move;
use crate::notation::RankBase;
use crate::position::{Board, MAX_COUNTER, Setup};
use crate::tables::{HORSE_ATTACKS, HORSE_MOVES, RAYS, ZOBRIST_BLACK, ZOBRIST_PIECES};
use crate::types::{ByColor, Color, Piece, PieceKind, Square};

/// The site's start position, in Fairy-Stockfish's janggi FEN (`docs/RULES.md`, "Janggi"): both
/// sides with a horse and an elephant on files b–c (`N B`) and an elephant and a horse on files
/// g–h (`B N`): the elephants inside, the horses outside; generals on their palace centres.
pub const START_FEN: &str =
    "rnba1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR w - - 0 1";

#[inline]
const fn bit(s: usize) -> u128 {
    1u128 << s
}

/// A legal janggi position: placement, side to move, clocks, the [`Rules`] it is played under,
/// and a Zobrist key. Fields are private; the ways in are [`Position::start`],
/// [`Position::from_setup`] and [`Position::from_fen`], which refuse a setup that breaks the
/// rules.
///
/// The position knows nothing of history: [`super::Game`] judges the end of the game.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position {
    board: Board,
    occupied: ByColor<u128>,
    generals: ByColor<Square>,
    turn: Color,
    halfmove_clock: u32,
    fullmove_number: u32,
    rules: Rules,
    key: u64,
}

/// The rank step of a forward move of `color`.
const fn forward(color: Color) -> i32 {
    match color {
        Color::Red => 9,
        Color::Black => -9,
    }
}

impl Position {
    /// The start position ([`START_FEN`]) under `rules`, Cho to move.
    pub fn start(rules: Rules) -> Position {
        let setup = parse_setup(START_FEN).expect("START_FEN parses");
        Position::from_setup(&setup, rules).expect("START_FEN is legal")
    }

    /// Builds the position of a setup whose generals exist (one per side).
    fn from_valid_setup(setup: &Setup, rules: Rules) -> Position {
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
            rules,
            key,
        }
    }

    /// Validates a setup (the board, side to move and clocks a FEN gives) for janggi.
    ///
    /// # Errors
    /// A [`PositionError`] naming the first rule the setup breaks: a clock beyond
    /// [`MAX_COUNTER`], a general or guard outside its own palace, a missing general, more pieces
    /// of a kind than the set has (a second general included), or the side not to move in check.
    /// Elephants, horses, chariots, cannons and soldiers may stand anywhere.
    pub fn from_setup(setup: &Setup, rules: Rules) -> Result<Position, PositionError> {
        if setup.halfmove_clock > MAX_COUNTER || setup.fullmove_number > MAX_COUNTER {
            return Err(PositionError::CounterOutOfRange {
                halfmove: setup.halfmove_clock,
                fullmove: setup.fullmove_number,
            });
        }
        let mut counts = [[0u8; PieceKind::COUNT]; 2];
        for (i, p) in setup.board.iter().enumerate() {
            let Some(p) = *p else { continue };
            let square = Square::from_index(i);
            counts[p.color.index()][p.kind.index()] += 1;
            if matches!(p.kind, PieceKind::General | PieceKind::Advisor)
                && !square.in_palace(p.color)
            {
                return Err(PositionError::OutsidePalace { piece: p, square });
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
        let pos = Position::from_valid_setup(setup, rules);
        let them = setup.turn.other();
        if pos.attacked_by(pos.generals[them].index(), setup.turn) {
            return Err(PositionError::OpponentInCheck(them));
        }
        Ok(pos)
    }

    /// Reads a FEN in Fairy-Stockfish's janggi dialect (ranks from the top, upper case = Cho,
    /// `w` = Cho to move; the last four fields optional, default `- - 0 1`) and validates it.
    ///
    /// # Errors
    /// [`FenError::Parse`] naming the field that does not parse and why;
    /// [`FenError::Position`] naming the rule the position breaks ([`Position::from_setup`]).
    ///
    /// # Examples
    /// ```
    /// use xiangqi::janggi::{Position, Rules};
    /// // Generals facing on an open file are legal in janggi.
    /// let pos = Position::from_fen("4k4/9/9/9/9/9/9/9/9/4K4 w - - 0 1", Rules::Site).unwrap();
    /// assert_eq!(pos.legal_moves().len(), 3 + 1); // d0, f0, e1 and the pass
    /// assert!(Position::from_fen("4k4/9/9/9/9/9/9/9/9/K8 w - - 0 1", Rules::Site).is_err());
    /// ```
    pub fn from_fen(fen: &str, rules: Rules) -> Result<Position, FenError> {
        let setup = parse_setup(fen)?;
        Ok(Position::from_setup(&setup, rules)?)
    }

    /// The position as a six-field FEN (`… w - - 0 1`); [`Position::from_fen`] reads it back to
    /// an equal position.
    pub fn fen(&self) -> String {
        write_fen(&self.to_setup())
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

    /// The rule set the moves are generated under.
    #[inline]
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Side to move ([`super::CHO`] or [`super::HAN`]).
    #[inline]
    pub fn turn(&self) -> Color {
        self.turn
    }

    /// Plies since the last capture; a pass counts as a ply.
    #[inline]
    pub fn halfmove_clock(&self) -> u32 {
        self.halfmove_clock
    }

    /// The FEN fullmove number (1 at the start, incremented after each Han move or pass).
    #[inline]
    pub fn fullmove_number(&self) -> u32 {
        self.fullmove_number
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

    /// The point of `color`'s general.
    #[inline]
    pub fn general(&self, color: Color) -> Square {
        self.generals[color]
    }

    /// Zobrist key of placement and side to move (not the clocks, not the rule set), updated
    /// incrementally; the same tables as xiangqi's keys.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The key recomputed from scratch; equal to [`Position::key`] (a test invariant).
    pub fn compute_key(&self) -> u64 {
        Position::from_valid_setup(&self.to_setup(), self.rules).key
    }

    /// The side to move's pass: its general's point twice.
    #[inline]
    pub fn pass(&self) -> Move {
        let g = self.generals[self.turn];
        Move::new(g, g)
    }

    /// Whether `m` is the side to move's pass ([`Position::pass`]).
    #[inline]
    pub fn is_pass(&self, m: Move) -> bool {
        m == self.pass()
    }

    /// Whether point `t` is attacked by `by` ([`attacked_by`]).
    #[inline]
    fn attacked_by(&self, t: usize, by: Color) -> bool {
        attacked_by(&self.board, t, by)
    }

    /// Whether the side to move's general is attacked.
    #[inline]
    pub fn is_check(&self) -> bool {
        self.attacked_by(self.generals[self.turn].index(), self.turn.other())
    }

    /// Whether `color`'s general is attacked, whoever is to move.
    pub fn general_attacked(&self, color: Color) -> bool {
        self.attacked_by(self.generals[color].index(), color.other())
    }

    /// Calls `f(to)` for every pseudo-legal target of the piece on `from` (geometry, blocking,
    /// screens; the own general may be left attacked). Never the pass.
    #[inline]
    fn piece_moves(&self, from: usize, piece: Piece, f: &mut impl FnMut(usize)) {
        let me = piece.color;
        let board = &self.board;
        let free_or_enemy = |s: usize| board[s].is_none_or(|p| p.color != me);
        match piece.kind {
            PieceKind::General | PieceKind::Advisor => {
                for &t in PALACE_STEPS[me.index()][from].squares() {
                    if free_or_enemy(t as usize) {
                        f(t as usize);
                    }
                }
            }
            PieceKind::Chariot => {
                let mut line = |ray: &[u8]| {
                    for &t in ray {
                        match board[t as usize] {
                            None => f(t as usize),
                            Some(p) => {
                                if p.color != me {
                                    f(t as usize);
                                }
                                break;
                            }
                        }
                    }
                };
                for ray in &RAYS[from] {
                    line(ray.squares());
                }
                let d = &DIAG_RAYS[from];
                for k in 0..d.len as usize {
                    line(d.ray(k));
                }
            }
            PieceKind::Cannon => {
                let site = self.rules == Rules::Site;
                let mut line = |ray: &[u8]| {
                    let mut i = 0;
                    while i < ray.len() && board[ray[i] as usize].is_none() {
                        if site {
                            f(ray[i] as usize);
                        }
                        i += 1;
                    }
                    // The screen: a piece that is not a cannon.
                    if i == ray.len()
                        || board[ray[i] as usize].is_some_and(|p| p.kind == PieceKind::Cannon)
                    {
                        return;
                    }
                    i += 1;
                    while i < ray.len() && board[ray[i] as usize].is_none() {
                        if !site {
                            f(ray[i] as usize);
                        }
                        i += 1;
                    }
                    if i < ray.len()
                        && board[ray[i] as usize]
                            .is_some_and(|p| p.color != me && p.kind != PieceKind::Cannon)
                    {
                        f(ray[i] as usize);
                    }
                };
                for ray in &RAYS[from] {
                    line(ray.squares());
                }
                let d = &DIAG_RAYS[from];
                for k in 0..d.len as usize {
                    line(d.ray(k));
                }
            }
            PieceKind::Horse => {
                let h = &HORSE_MOVES[from];
                for k in 0..h.len as usize {
                    if board[h.block[k] as usize].is_none() && free_or_enemy(h.to[k] as usize) {
                        f(h.to[k] as usize);
                    }
                }
            }
            PieceKind::Elephant => {
                let e = &ELEPHANT_MOVES[from];
                for k in 0..e.len as usize {
                    if board[e.eye1[k] as usize].is_none()
                        && board[e.eye2[k] as usize].is_none()
                        && free_or_enemy(e.to[k] as usize)
                    {
                        f(e.to[k] as usize);
                    }
                }
            }
            PieceKind::Soldier => {
                let fwd = from as i32 + forward(me);
                if (0..90).contains(&fwd) && free_or_enemy(fwd as usize) {
                    f(fwd as usize);
                }
                let file = from % 9;
                if file > 0 && free_or_enemy(from - 1) {
                    f(from - 1);
                }
                if file < 8 && free_or_enemy(from + 1) {
                    f(from + 1);
                }
            }
        }
    }

    /// Whether the piece move `from → to` of the side to move leaves its general unattacked,
    /// tried on a scratch copy of the board.
    #[inline]
    fn safe_after(&self, scratch: &mut Position, from: usize, to: usize) -> bool {
        let me = self.turn;
        let captured = scratch.board[to];
        scratch.board[to] = scratch.board[from].take();
        let g = if from == self.generals[me].index() { to } else { self.generals[me].index() };
        let safe = !scratch.attacked_by(g, me.other());
        scratch.board[from] = scratch.board[to];
        scratch.board[to] = captured;
        safe
    }

    /// Calls `f` for every legal move of the side to move, the pass last (absent in check);
    /// `f` returns `true` to stop early.
    ///
    /// Every pseudo-legal move is tried on a scratch board: janggi's elephants, cannons and
    /// palace lines make the set of moves that can expose a general too wide to single out.
    #[inline]
    fn for_each_legal(&self, mut f: impl FnMut(Move) -> bool) {
        let me = self.turn;
        let mut scratch = *self;
        let mut pieces = self.occupied[me];
        let mut stop = false;
        while pieces != 0 && !stop {
            let from = pieces.trailing_zeros() as usize;
            pieces &= pieces - 1;
            let Some(piece) = self.board[from] else { continue };
            self.piece_moves(from, piece, &mut |to| {
                if !stop && self.safe_after(&mut scratch, from, to) {
                    stop = f(Move::new(Square::from_index(from), Square::from_index(to)));
                }
            });
        }
        if !stop && !self.is_check() {
            f(self.pass());
        }
    }

    /// The legal moves of the side to move, the pass last (present unless in check).
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::new();
        self.legal_moves_into(&mut list);
        list
    }

    /// Writes the legal moves of the side to move into `out` (cleared first). Never allocates.
    pub fn legal_moves_into(&self, out: &mut MoveList) {
        out.clear();
        // Cannot overflow: see `MAX_MOVES` for the worst case, which validation guarantees.
        self.for_each_legal(|m| {
            out.push(m);
            false
        });
    }

    /// Number of legal moves of the side to move (faster than collecting them).
    pub fn count_legal_moves(&self) -> usize {
        let mut n = 0;
        self.for_each_legal(|_| {
            n += 1;
            false
        });
        n
    }

    /// Whether the side to move has a legal move; `false` means checkmate (a side not in check
    /// can always pass).
    pub fn has_legal_move(&self) -> bool {
        if !self.is_check() {
            return true;
        }
        let mut found = false;
        self.for_each_legal(|_| {
            found = true;
            true
        });
        found
    }

    /// Why `m` is not legal for the side to move, or `Ok(())` if it is.
    ///
    /// # Errors
    /// An [`IllegalMoveReason`]: no piece or an enemy piece on the origin, an own piece on the
    /// target, a step the piece cannot make (a "pass" not on the general's point included), or a
    /// move (a pass included) that leaves the own general attacked.
    pub fn check_legal(&self, m: Move) -> Result<(), IllegalMoveReason> {
        let me = self.turn;
        let (from, to) = (m.from().index(), m.to().index());
        let piece = match self.board[from] {
            None => return Err(IllegalMoveReason::NoPiece),
            Some(p) if p.color != me => return Err(IllegalMoveReason::NotYourPiece),
            Some(p) => p,
        };
        if from == to {
            if piece.kind != PieceKind::General {
                return Err(IllegalMoveReason::NotAPieceMove(piece.kind));
            }
            return if self.is_check() { Err(IllegalMoveReason::GeneralAttacked) } else { Ok(()) };
        }
        if self.board[to].is_some_and(|p| p.color == me) {
            return Err(IllegalMoveReason::OwnPieceOnTarget);
        }
        let mut geometric = false;
        self.piece_moves(from, piece, &mut |t| geometric |= t == to);
        if !geometric {
            return Err(IllegalMoveReason::NotAPieceMove(piece.kind));
        }
        let mut scratch = *self;
        if !self.safe_after(&mut scratch, from, to) {
            return Err(IllegalMoveReason::GeneralAttacked);
        }
        Ok(())
    }

    /// Whether `m` is legal for the side to move. Equal to `legal_moves().contains(&m)`.
    pub fn is_legal(&self, m: Move) -> bool {
        self.check_legal(m).is_ok()
    }

    /// Plays `m` after checking that it is legal.
    ///
    /// # Errors
    /// A [`PlayError`] naming the move and why it is illegal; the position is unchanged.
    pub fn play(&mut self, m: Move) -> Result<(), PlayError> {
        self.check_legal(m).map_err(|reason| PlayError { mv: m, reason })?;
        self.play_unchecked(m);
        Ok(())
    }

    /// Plays `m` (a pass included) without checking it; the key is updated incrementally.
    ///
    /// # Panics
    /// May panic, or leave a position that breaks the invariants, if `m` is not legal. Use it
    /// only with moves from [`Position::legal_moves`] of this position.
    #[inline]
    pub fn play_unchecked(&mut self, m: Move) {
        let (from, to) = (m.from().index(), m.to().index());
        if from == to {
            self.halfmove_clock += 1;
        } else {
            let piece = self.board[from].expect("play_unchecked: no piece on the origin");
            let us = piece.color;
            let captured = self.board[to];
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
        }
        if self.turn == Color::Black {
            self.fullmove_number += 1;
        }
        self.turn = self.turn.other();
        self.key ^= ZOBRIST_BLACK;
    }

    /// Whether `m` (assumed legal, not a pass) captures.
    #[inline]
    pub fn is_capture(&self, m: Move) -> bool {
        m.from() != m.to() && self.board[m.to().index()].is_some()
    }

    /// Reads a coordinate move with ranks 0–9 (`h2e2`; a pass as the general's point twice,
    /// `e1e1`) and checks that it is legal here.
    ///
    /// # Errors
    /// A [`ParseMoveError`] if the text does not parse or the move is illegal (with the reason).
    pub fn parse_uci(&self, text: &str) -> Result<Move, ParseMoveError> {
        self.parse_uci_with(text, RankBase::Zero)
    }

    /// Reads a coordinate move in the chosen rank dialect (`e2e2` is the pass of a general on
    /// e1 with [`RankBase::One`]) and checks that it is legal here.
    ///
    /// # Errors
    /// As [`Position::parse_uci`].
    pub fn parse_uci_with(&self, text: &str, base: RankBase) -> Result<Move, ParseMoveError> {
        let m = parse_uci_with(text, base)?;
        self.check_legal(m)
            .map_err(|reason| ParseMoveError::new(text, format!("illegal: {reason}")))?;
        Ok(m)
    }

    /// The left–right mirror of this position (file f ↔ 8 − f), with the same side to move,
    /// clocks and rules. The mirror of a legal position is legal and has the mirrored moves.
    #[must_use]
    pub fn mirror(&self) -> Position {
        let mut setup = self.to_setup();
        for s in Square::all() {
            setup.board[s.mirror().index()] = self.board[s.index()];
        }
        Position::from_valid_setup(&setup, self.rules)
    }
}

impl fmt::Debug for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "janggi::Position({}, {})", self.fen(), self.rules)
    }
}

impl fmt::Display for Position {
    /// A text diagram, rank 9 (Han's home rank) at the top, followed by the FEN.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in (0..10).rev() {
            write!(f, "{r} ")?;
            for file in 0..9 {
                let c = self.board[r * 9 + file].map_or('.', |p| p.fen_char());
                write!(f, " {c}")?;
            }
            writeln!(f)?;
        }
        writeln!(f, "   a b c d e f g h i")?;
        write!(f, "{}", self.fen())
    }
}

/// Whether point `t` is attacked by `by`: whether `by` has a pseudo-legal capture onto it if
/// an enemy piece stood there (its own general's safety aside). A cannon on `t` can be
/// attacked by any piece but a cannon. Any board is accepted (this is also the attack map of
/// [`crate::attacks::AttackMap::of_janggi_board`]).
pub(crate) fn attacked_by(board: &Board, t: usize, by: Color) -> bool {
    let chariot = Piece::new(by, PieceKind::Chariot);
    let cannon = Piece::new(by, PieceKind::Cannon);
    let target_is_cannon = board[t].is_some_and(|p| p.kind == PieceKind::Cannon);
    let line = |ray: &[u8]| -> bool {
        let mut i = 0;
        while i < ray.len() && board[ray[i] as usize].is_none() {
            i += 1;
        }
        if i == ray.len() {
            return false;
        }
        let screen = board[ray[i] as usize];
        if screen == Some(chariot) {
            return true;
        }
        if target_is_cannon || screen.is_some_and(|p| p.kind == PieceKind::Cannon) {
            return false;
        }
        i += 1;
        while i < ray.len() && board[ray[i] as usize].is_none() {
            i += 1;
        }
        i < ray.len() && board[ray[i] as usize] == Some(cannon)
    };
    if RAYS[t].iter().any(|ray| line(ray.squares())) {
        return true;
    }
    let d = &DIAG_RAYS[t];
    if (0..d.len as usize).any(|k| line(d.ray(k))) {
        return true;
    }
    let horse = Piece::new(by, PieceKind::Horse);
    let h = &HORSE_ATTACKS[t];
    for k in 0..h.len as usize {
        if board[h.to[k] as usize] == Some(horse) && board[h.block[k] as usize].is_none() {
            return true;
        }
    }
    let elephant = Piece::new(by, PieceKind::Elephant);
    let e = &ELEPHANT_ATTACKS[t];
    for k in 0..e.len as usize {
        if board[e.to[k] as usize] == Some(elephant)
            && board[e.eye1[k] as usize].is_none()
            && board[e.eye2[k] as usize].is_none()
        {
            return true;
        }
    }
    let soldier = Some(Piece::new(by, PieceKind::Soldier));
    let behind = t as i32 - forward(by);
    if (0..90).contains(&behind) && board[behind as usize] == soldier {
        return true;
    }
    let file = t % 9;
    if (file > 0 && board[t - 1] == soldier) || (file < 8 && board[t + 1] == soldier) {
        return true;
    }
    let general = Some(Piece::new(by, PieceKind::General));
    let guard = Some(Piece::new(by, PieceKind::Advisor));
    PALACE_STEPS[by.index()][t].squares().iter().any(|&s| {
        let p = board[s as usize];
        p == general || p == guard
    })
}
