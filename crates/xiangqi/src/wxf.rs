//! WXF move notation (`C2.5`, `H8+7`, `R+.3`, `P7+1`): [`Position::parse_wxf`] reads it and
//! checks legality, [`Position::to_wxf`] writes the canonical form.
//!
//! # The notation
//! Source: the World Xiangqi Federation's page "Official xiangqi piece names and notation"
//! (<http://www.wxf.org/xq/computer/wxf_notation.html>; established by the Asian Xiangqi
//! Federation in 1980/82, adopted by the WXF in 1997), with the reading conventions of common
//! English xiangqi texts (`=` for sideways, `B`/`N` letters).
//!
//! A move is four characters: piece, file, direction, number.
//! - **Piece**: `K` general, `A` advisor, `E` elephant (`B` also read), `H` horse (`N` also
//!   read), `R` chariot, `C` cannon, `P` soldier. Lower case is read too; upper case is written.
//! - **File**: 1–9 counted from the mover's own right: for Red file `i` is 1 and file `a` is 9,
//!   for Black file `a` is 1 and file `i` is 9.
//! - **Direction**: `+` forward (towards the opponent), `-` backward, `.` sideways (`=` is read
//!   as sideways too; `.` is written).
//! - **Number**: for the pieces that move along lines (general, chariot, cannon, soldier) the
//!   number of points moved after `+`/`-`, the destination file after `.`; for the pieces that
//!   move diagonally (advisor, elephant, horse) always the destination file.
//!
//! **Tandem pieces.** When two like pieces stand on one file, the file digit is replaced by `+`
//! for the front piece (the one nearer the opponent) and `-` for the rear one: `R+.3`, `C--1`.
//! The prefixed order (`+R.3`) is read as well. Advisors and elephants on one file are written
//! with their file digit, because the direction already tells them apart in every position a
//! game can reach (the front one can only go back, the rear one only forward); the `+`/`-` form
//! is written for them only where the plain form would name two legal moves (possible in
//! composed positions, see [`crate::Validation::Lenient`]), and read always.
//!
//! **Tandem soldiers**, as the WXF page specifies:
//! - three on a file: front `P+`, middle with the plain file digit (`P3`), rear `P-`;
//! - five on a file: foremost `++` (the piece letter is replaced too), then `P+`, the middle
//!   `P3`, `P-`, and the rearmost `--`; four on a file: `++`, `P+`, `P-`, `--`;
//! - two files each with two or more soldiers: the piece letter is replaced by the file digit,
//!   and the second character says which soldier of that file: `3+` front, `3-` rear, and the
//!   file digit again for the middle of three (`33.4`); e.g. `3+.4`, `33.4`, `3-.4`, `7+.6`.
//!
//! **Reading is lenient** where that is unambiguous: a plain file digit is accepted for a piece
//! of a tandem if exactly one of the pieces on that file can legally make the move described,
//! and `+`/`-`/`++`/`--` are accepted for any tandem. Anything that names no legal move, or more
//! than one, is an error that says why; no input makes the parser panic.

use std::fmt::Write as _;

use arrayvec::ArrayVec;

use crate::error::{ParseMoveError, kind_name};
use crate::moves::Move;
use crate::position::Position;
use crate::types::{Color, File, Piece, PieceKind, Square};

/// Which way a move goes, from the mover's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Forward,
    Backward,
    Sideways,
}

impl Dir {
    fn from_char(c: char) -> Option<Dir> {
        match c {
            '+' => Some(Dir::Forward),
            '-' => Some(Dir::Backward),
            '.' | '=' => Some(Dir::Sideways),
            _ => None,
        }
    }

    fn char(self) -> char {
        match self {
            Dir::Forward => '+',
            Dir::Backward => '-',
            Dir::Sideways => '.',
        }
    }
}

/// What the first two characters say about which piece moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Selector {
    /// `C2`: the piece on WXF file n (the middle one of three or five soldiers).
    File(u8),
    /// `C+` or `+C`: the front piece of a tandem (the second foremost of four or five soldiers).
    Front,
    /// `C-` or `-C`: the rear piece of a tandem (the second rearmost of four or five soldiers).
    Rear,
    /// `++`: the foremost soldier.
    Foremost,
    /// `--`: the rearmost soldier.
    Rearmost,
    /// `3+`: the front soldier on WXF file n.
    FileFront(u8),
    /// `3-`: the rear soldier on WXF file n.
    FileRear(u8),
    /// `33`: the middle soldier on WXF file n.
    FileMiddle(u8),
}

/// The WXF letter of a kind.
const fn letter(kind: PieceKind) -> char {
    match kind {
        PieceKind::General => 'K',
        PieceKind::Advisor => 'A',
        PieceKind::Elephant => 'E',
        PieceKind::Horse => 'H',
        PieceKind::Chariot => 'R',
        PieceKind::Cannon => 'C',
        PieceKind::Soldier => 'P',
    }
}

/// Reads a WXF piece letter of either case (`B` and `N` accepted for elephant and horse).
const fn kind_from_letter(c: char) -> Option<PieceKind> {
    Some(match c.to_ascii_uppercase() {
        'K' => PieceKind::General,
        'A' => PieceKind::Advisor,
        'E' | 'B' => PieceKind::Elephant,
        'H' | 'N' => PieceKind::Horse,
        'R' => PieceKind::Chariot,
        'C' => PieceKind::Cannon,
        'P' => PieceKind::Soldier,
        _ => return None,
    })
}

/// Whether the number after `+`/`-` is a destination file (diagonal movers) rather than a
/// number of points.
pub(crate) const fn moves_diagonally(kind: PieceKind) -> bool {
    matches!(kind, PieceKind::Advisor | PieceKind::Elephant | PieceKind::Horse)
}

/// The WXF number (1–9) of `file` for `color`.
pub(crate) fn wxf_file(color: Color, file: File) -> u8 {
    let i = file.index() as u8;
    match color {
        Color::Red => 9 - i,
        Color::Black => i + 1,
    }
}

/// The file index (0 = `a`) of WXF file `n` (1–9) for `color`.
pub(crate) fn file_index(color: Color, n: u8) -> i32 {
    match color {
        Color::Red => 9 - i32::from(n),
        Color::Black => i32::from(n) - 1,
    }
}

/// The digit character of `n` (0–9).
fn digit(n: u8) -> char {
    char::from(b'0' + n.min(9))
}

/// Reads a digit 1–9.
fn digit_value(c: char) -> Option<u8> {
    match c {
        '1'..='9' => Some(c as u8 - b'0'),
        _ => None,
    }
}

/// `+1` if forward is towards higher ranks for `color`, else `-1`.
pub(crate) const fn up(color: Color) -> i32 {
    match color {
        Color::Red => 1,
        Color::Black => -1,
    }
}

fn dir_word(dir: Dir) -> &'static str {
    match dir {
        Dir::Forward => "forward",
        Dir::Backward => "backward",
        Dir::Sideways => "sideways",
    }
}

/// The point a `piece` on `from` reaches by the WXF movement `dir`, `n`, by geometry alone
/// (blocking, captures and check are left to [`Position::check_legal`]).
pub(crate) fn target(from: Square, piece: Piece, dir: Dir, n: u8) -> Result<Square, String> {
    let color = piece.color;
    let kind = kind_name(piece.kind);
    let own = wxf_file(color, from.file());
    let (f, r) = (from.file().index() as i32, from.rank().index() as i32);
    let (tf, tr) = if moves_diagonally(piece.kind) {
        let sign = match dir {
            Dir::Forward => up(color),
            Dir::Backward => -up(color),
            Dir::Sideways => {
                return Err(format!(
                    "a {kind} never moves sideways; write + or - and the destination file"
                ));
            }
        };
        let tf = file_index(color, n);
        let dr = match (piece.kind, (tf - f).abs()) {
            (PieceKind::Advisor, 1) | (PieceKind::Horse, 2) => 1,
            (PieceKind::Elephant, 2) | (PieceKind::Horse, 1) => 2,
            _ => return Err(format!("a {kind} on file {own} cannot reach file {n}")),
        };
        (tf, r + sign * dr)
    } else {
        let n = i32::from(n);
        match dir {
            Dir::Forward => (f, r + up(color) * n),
            Dir::Backward => (f, r - up(color) * n),
            Dir::Sideways => {
                let tf = file_index(color, n as u8);
                if tf == f {
                    return Err(format!("a sideways move to file {n} must leave file {own}"));
                }
                (tf, r)
            }
        }
    };
    if (0..9).contains(&tf) && (0..10).contains(&tr) {
        if let Some(sq) = Square::new((tr * 9 + tf) as u8) {
            return Ok(sq);
        }
    }
    Err(format!("a {kind} on file {own} moving {} {n} leaves the board", dir_word(dir)))
}

/// `+` for the first of `count`, `-` for the last, `middle` otherwise.
fn tandem_mark(i: usize, count: usize, middle: char) -> char {
    if i == 0 {
        '+'
    } else if i + 1 == count {
        '-'
    } else {
        middle
    }
}

impl Position {
    /// The points on `file` holding `piece`, front first (nearest the opponent).
    pub(crate) fn wxf_column(&self, piece: Piece, file: File) -> ArrayVec<Square, 10> {
        let mut out = ArrayVec::new();
        for k in 0..10u8 {
            let rank = match piece.color {
                Color::Red => 9 - k,
                Color::Black => k,
            };
            if let Some(sq) = Square::new(rank * 9 + file.index() as u8) {
                if self.piece_at(sq) == Some(piece) {
                    out.push(sq);
                }
            }
        }
        out
    }

    /// The files holding two or more of `piece`, each with its column (front first).
    pub(crate) fn wxf_tandems(&self, piece: Piece) -> ArrayVec<(u8, ArrayVec<Square, 10>), 9> {
        let mut out = ArrayVec::new();
        for i in 0..9u8 {
            if let Some(file) = File::new(i) {
                let col = self.wxf_column(piece, file);
                if col.len() >= 2 {
                    out.push((wxf_file(piece.color, file), col));
                }
            }
        }
        out
    }

    /// Writes a legal move in WXF notation, in the canonical form described in the module
    /// documentation (`.` for sideways, upper-case letters, `C+.5` for tandems).
    ///
    /// `m` should be legal here. For any other move the text is unspecified but this does not
    /// panic; if the origin is empty, the UCI form is returned.
    ///
    /// # Examples
    /// ```
    /// use xiangqi::Position;
    /// let pos = Position::start();
    /// let m = pos.parse_uci("h2e2").unwrap();
    /// assert_eq!(pos.to_wxf(m), "C2.5");
    /// ```
    pub fn to_wxf(&self, m: Move) -> String {
        let (from, to) = (m.from(), m.to());
        let Some(piece) = self.piece_at(from) else {
            return m.to_string();
        };
        let color = piece.color;
        let forward = (to.rank().index() as i32 - from.rank().index() as i32) * up(color);
        let (dir, n) = if moves_diagonally(piece.kind) {
            let dir = if forward > 0 { Dir::Forward } else { Dir::Backward };
            (dir, wxf_file(color, to.file()))
        } else if forward > 0 {
            (Dir::Forward, forward as u8)
        } else if forward < 0 {
            (Dir::Backward, (-forward) as u8)
        } else {
            (Dir::Sideways, wxf_file(color, to.file()))
        };
        let [a, b] = self.wxf_designation(piece, from, dir, n);
        let mut s = String::with_capacity(4);
        let _ = write!(s, "{a}{b}{}{}", dir.char(), digit(n));
        s
    }

    /// The first two characters of the move of `piece` from `from` by `dir`, `n`.
    fn wxf_designation(&self, piece: Piece, from: Square, dir: Dir, n: u8) -> [char; 2] {
        let file_digit = digit(wxf_file(piece.color, from.file()));
        let col = self.wxf_column(piece, from.file());
        let count = col.len();
        let i = col.iter().position(|&s| s == from).unwrap_or(0);
        let l = letter(piece.kind);
        if count < 2 {
            return [l, file_digit];
        }
        match piece.kind {
            PieceKind::Soldier => {
                if self.wxf_tandems(piece).len() >= 2 {
                    [file_digit, tandem_mark(i, count, file_digit)]
                } else if count >= 4 {
                    if i == 0 {
                        ['+', '+']
                    } else if i + 1 == count {
                        ['-', '-']
                    } else {
                        [l, tandem_mark(i - 1, count - 2, file_digit)]
                    }
                } else {
                    [l, tandem_mark(i, count, file_digit)]
                }
            }
            PieceKind::Advisor | PieceKind::Elephant => {
                // The plain form unless another piece on the file could make the same move.
                let clash = col.iter().any(|&other| {
                    other != from
                        && target(other, piece, dir, n)
                            .is_ok_and(|t| self.is_legal(Move::new(other, t)))
                });
                if clash { [l, tandem_mark(i, count, file_digit)] } else { [l, file_digit] }
            }
            _ => [l, tandem_mark(i, count, file_digit)],
        }
    }

    /// Reads a move in WXF notation (`C2.5`, `C2=5`, `H8+7`, `R+.3`, `+R.3`, `P7+1`, `++.4`,
    /// `3+.4`, ...) for the side to move, and checks that it is legal here.
    ///
    /// The forms accepted are described in the module documentation.
    ///
    /// # Errors
    /// A [`ParseMoveError`] saying what was wrong: malformed text (not four characters of the
    /// shape piece, file, direction, number), an unknown piece letter, no such piece on the file
    /// named (or no tandem for `+`/`-`), a movement the piece cannot make, a text that fits more
    /// than one legal move (ambiguous), or an illegal move (with the reason).
    ///
    /// # Examples
    /// ```
    /// use xiangqi::Position;
    /// let pos = Position::start();
    /// let m = pos.parse_wxf("C2.5").unwrap();
    /// assert_eq!(m.to_string(), "h2e2");
    /// assert_eq!(pos.parse_wxf("C2=5"), Ok(m));
    /// assert!(pos.parse_wxf("C3.5").is_err()); // no cannon on file 3
    /// ```
    pub fn parse_wxf(&self, text: &str) -> Result<Move, ParseMoveError> {
        let err = |reason: String| ParseMoveError::new(text, reason);
        let mut chars = text.chars();
        let (Some(c0), Some(c1), Some(c2), Some(c3), None) =
            (chars.next(), chars.next(), chars.next(), chars.next(), chars.next())
        else {
            return Err(err(
                "expected four characters: piece, file, direction, number (such as C2.5)".into(),
            ));
        };
        let unknown = |c: char| {
            err(format!("unknown piece letter {c:?}: expected K, A, E (B), H (N), R, C or P"))
        };
        let (kind, sel) = if c0.is_ascii_alphabetic() {
            let kind = kind_from_letter(c0).ok_or_else(|| unknown(c0))?;
            let sel = match c1 {
                '+' => Selector::Front,
                '-' => Selector::Rear,
                _ => Selector::File(digit_value(c1).ok_or_else(|| {
                    err(format!(
                        "after the piece letter comes a file digit 1-9, + (front) or - (rear), \
                         not {c1:?}"
                    ))
                })?),
            };
            (kind, sel)
        } else if c0 == '+' || c0 == '-' {
            if c1 == c0 {
                let sel = if c0 == '+' { Selector::Foremost } else { Selector::Rearmost };
                (PieceKind::Soldier, sel)
            } else if c1.is_ascii_alphabetic() {
                let kind = kind_from_letter(c1).ok_or_else(|| unknown(c1))?;
                (kind, if c0 == '+' { Selector::Front } else { Selector::Rear })
            } else {
                return Err(err(format!(
                    "after a leading {c0:?} comes a piece letter (or {c0:?} again for a soldier), \
                     not {c1:?}"
                )));
            }
        } else if let Some(file) = digit_value(c0) {
            let sel = match c1 {
                '+' => Selector::FileFront(file),
                '-' => Selector::FileRear(file),
                _ if c1 == c0 => Selector::FileMiddle(file),
                _ => {
                    return Err(err(format!(
                        "a soldier named by its file {c0} must be followed by +, - or {c0} \
                         (front, rear, middle), not {c1:?}"
                    )));
                }
            };
            (PieceKind::Soldier, sel)
        } else {
            return Err(err(format!(
                "a move starts with a piece letter (K A E H R C P), + or -, or a soldier's \
                 file digit, not {c0:?}"
            )));
        };
        let dir = Dir::from_char(c2).ok_or_else(|| {
            err(format!(
                "the third character {c2:?} must be a direction: + (forward), - (backward) \
                 or . (sideways, also =)"
            ))
        })?;
        let n = digit_value(c3)
            .ok_or_else(|| err(format!("the last character {c3:?} must be a digit 1-9")))?;
        let piece = Piece::new(self.turn(), kind);
        let candidates = self.wxf_candidates(piece, sel).map_err(err)?;
        self.wxf_resolve(piece, &candidates, dir, n).map_err(err)
    }

    /// The points of the pieces `sel` may name; never empty on success.
    fn wxf_candidates(&self, piece: Piece, sel: Selector) -> Result<ArrayVec<Square, 10>, String> {
        let color = piece.color;
        let kind = kind_name(piece.kind);
        let column_of = |n: u8| {
            let col = File::new(file_index(color, n) as u8)
                .map(|file| self.wxf_column(piece, file))
                .unwrap_or_default();
            if col.is_empty() { Err(format!("{color} has no {kind} on file {n}")) } else { Ok(col) }
        };
        let soldier_column = |n: u8| {
            let col = column_of(n)?;
            if col.len() < 2 {
                Err(format!("{color} has only one soldier on file {n}; write P{n}"))
            } else {
                Ok(col)
            }
        };
        let one = |sq: Square| {
            let mut out = ArrayVec::new();
            out.push(sq);
            out
        };
        match sel {
            Selector::File(n) => {
                let col = column_of(n)?;
                if piece.kind == PieceKind::Soldier && col.len() % 2 == 1 {
                    // One soldier, or the middle one of three or five.
                    Ok(one(col[col.len() / 2]))
                } else {
                    Ok(col)
                }
            }
            Selector::Front | Selector::Rear | Selector::Foremost | Selector::Rearmost => {
                let tandems = self.wxf_tandems(piece);
                if tandems.is_empty() {
                    return Err(format!(
                        "{color} has no two {kind}s on one file, so {} names none; use the file \
                         number",
                        match sel {
                            Selector::Front => "+ (front)",
                            Selector::Rear => "- (rear)",
                            Selector::Foremost => "++ (foremost)",
                            _ => "-- (rearmost)",
                        }
                    ));
                }
                let mut out = ArrayVec::new();
                for (_, col) in &tandems {
                    let c = col.len();
                    let deep = piece.kind == PieceKind::Soldier && c >= 4;
                    let idx = match sel {
                        Selector::Front if deep => 1,
                        Selector::Rear if deep => c - 2,
                        Selector::Front | Selector::Foremost => 0,
                        _ => c - 1,
                    };
                    out.push(col[idx]);
                }
                Ok(out)
            }
            Selector::FileFront(n) => Ok(one(soldier_column(n)?[0])),
            Selector::FileRear(n) => {
                let col = soldier_column(n)?;
                Ok(one(col[col.len() - 1]))
            }
            Selector::FileMiddle(n) => {
                let col = soldier_column(n)?;
                if col.len() % 2 == 0 {
                    Err(format!(
                        "{color} has {} soldiers on file {n}, so there is no middle one",
                        col.len()
                    ))
                } else {
                    Ok(one(col[col.len() / 2]))
                }
            }
        }
    }

    /// The one legal move among the candidates' moves by `dir`, `n`.
    pub(crate) fn wxf_resolve(
        &self,
        piece: Piece,
        candidates: &[Square],
        dir: Dir,
        n: u8,
    ) -> Result<Move, String> {
        let mut found: Option<Move> = None;
        let mut first_error: Option<String> = None;
        for &from in candidates {
            let outcome = target(from, piece, dir, n).and_then(|to| {
                let m = Move::new(from, to);
                self.check_legal(m).map(|()| m).map_err(|reason| format!("illegal {m}: {reason}"))
            });
            match outcome {
                Ok(m) => {
                    if let Some(first) = found {
                        let hint = if piece.kind == PieceKind::Soldier
                            && self.wxf_tandems(piece).len() >= 2
                        {
                            "name the soldier by its file and place, as in 3+.4"
                        } else {
                            "name the one you mean with + (front) or - (rear)"
                        };
                        return Err(format!(
                            "ambiguous: it fits both {first} and {m} ({} {}s); {hint}",
                            piece.color,
                            kind_name(piece.kind),
                        ));
                    }
                    found = Some(m);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        found.ok_or_else(|| {
            let e = first_error.unwrap_or_default();
            if candidates.len() > 1 {
                format!("none of the {}s named can make this move ({e})", kind_name(piece.kind))
            } else {
                e
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Validation;

    fn pos(fen: &str) -> Position {
        Position::from_fen(fen).unwrap()
    }

    fn lenient(fen: &str) -> Position {
        Position::from_fen_with(fen, Validation::Lenient).unwrap()
    }

    /// `text` reads as `uci`, and the move is written back as `canonical`.
    fn check(p: &Position, text: &str, uci: &str, canonical: &str) {
        let m = p.parse_wxf(text).unwrap_or_else(|e| panic!("{text} in {p:?}: {e}"));
        assert_eq!(m.to_string(), uci, "{text} in {p:?}");
        assert_eq!(p.to_wxf(m), canonical, "{uci} in {p:?}");
    }

    /// `text` is refused with a reason containing `needle`.
    fn refuse(p: &Position, text: &str, needle: &str) {
        match p.parse_wxf(text) {
            Ok(m) => panic!("{text} read as {m} in {p:?}"),
            Err(e) => assert!(e.reason.contains(needle), "{text}: '{}' lacks '{needle}'", e.reason),
        }
    }

    #[test]
    fn start_position_red() {
        let p = Position::start();
        check(&p, "C2.5", "h2e2", "C2.5");
        check(&p, "C2=5", "h2e2", "C2.5");
        check(&p, "c2.5", "h2e2", "C2.5");
        check(&p, "H2+3", "h0g2", "H2+3");
        check(&p, "N2+3", "h0g2", "H2+3");
        check(&p, "H8+7", "b0c2", "H8+7");
        check(&p, "R1+1", "i0i1", "R1+1");
        check(&p, "R9+2", "a0a2", "R9+2");
        check(&p, "P7+1", "c3c4", "P7+1");
        check(&p, "P5+1", "e3e4", "P5+1");
        check(&p, "E3+5", "g0e2", "E3+5");
        check(&p, "B3+5", "g0e2", "E3+5");
        check(&p, "E7+9", "c0a2", "E7+9");
        check(&p, "A4+5", "f0e1", "A4+5");
        check(&p, "A6+5", "d0e1", "A6+5");
        check(&p, "K5+1", "e0e1", "K5+1");
        // The cannon jumps the cannon on h7 and takes the horse on h9.
        check(&p, "C2+7", "h2h9", "C2+7");
        check(&p, "C8-1", "b2b1", "C8-1");
        check(&p, "C8.9", "b2a2", "C8.9");
    }

    #[test]
    fn start_position_black() {
        let mut p = Position::start();
        p.play(p.parse_uci("h2e2").unwrap()).unwrap();
        // Black counts files from its own right: a = 1, i = 9.
        check(&p, "H8+7", "h9g7", "H8+7");
        check(&p, "H2+3", "b9c7", "H2+3");
        check(&p, "C8.5", "h7e7", "C8.5");
        check(&p, "C2.5", "b7e7", "C2.5");
        check(&p, "C8+2", "h7h5", "C8+2");
        check(&p, "C2-1", "b7b8", "C2-1");
        check(&p, "P3+1", "c6c5", "P3+1");
        check(&p, "R9+1", "i9i8", "R9+1");
        check(&p, "R1+2", "a9a7", "R1+2");
        check(&p, "E7+5", "g9e7", "E7+5");
        check(&p, "A6+5", "f9e8", "A6+5");
        check(&p, "A4+5", "d9e8", "A4+5");
        check(&p, "K5+1", "e9e8", "K5+1");
    }

    #[test]
    fn tandem_chariots_red() {
        // Red chariots on e3 (front) and e1 (rear), Red's file 5.
        let p = pos("3k5/9/9/9/9/9/4R4/9/4R4/4K4 w - - 0 1");
        check(&p, "R+.1", "e3i3", "R+.1");
        check(&p, "+R.1", "e3i3", "R+.1");
        check(&p, "R+=1", "e3i3", "R+.1");
        check(&p, "R-.9", "e1a1", "R-.9");
        check(&p, "-R.9", "e1a1", "R-.9");
        check(&p, "R++5", "e3e8", "R++5");
        check(&p, "R+-1", "e3e2", "R+-1");
        check(&p, "R-+1", "e1e2", "R-+1");
        refuse(&p, "R--1", "own pieces");
        refuse(&p, "R5+1", "ambiguous");
        refuse(&p, "R5.1", "ambiguous");
        // Only the front chariot can go 6 forward (the rear one is blocked): lenient reading.
        check(&p, "R5+6", "e3e9", "R++6");
        refuse(&p, "K+.4", "no two generals");

        // Generals alone: Black's on d9.
        let p = pos("3k5/9/9/9/9/9/9/9/9/4K4 w - - 0 1");
        check(&p, "K5.4", "e0f0", "K5.4");
        check(&p, "K5+1", "e0e1", "K5+1");
        refuse(&p, "K5.6", "facing");
        refuse(&p, "K5-1", "leaves the board");
        refuse(&p, "K5.3", "illegal e0g0");
    }

    #[test]
    fn tandem_cannons_black() {
        // Black cannons on e8 (rear) and e6 (front: nearer Red), Black's file 5.
        let p = pos("4k4/4c4/9/4c4/9/9/9/9/9/3K5 b - - 0 1");
        check(&p, "C+.1", "e6a6", "C+.1");
        check(&p, "C-.9", "e8i8", "C-.9");
        check(&p, "C++3", "e6e3", "C++3");
        check(&p, "C-+1", "e8e7", "C-+1");
        check(&p, "C+-1", "e6e7", "C+-1");
        refuse(&p, "C--1", "own pieces");
        refuse(&p, "C5+1", "ambiguous");
    }

    #[test]
    fn tandem_horses() {
        // Red horses on c2 (front) and c0 (rear), Red's file 7; both reach file 6 or 8 forward.
        let p = pos("3k5/9/9/9/9/9/9/2N6/9/2N1K4 w - - 0 1");
        check(&p, "H++6", "c2d4", "H++6");
        check(&p, "+H+6", "c2d4", "H++6");
        check(&p, "H++5", "c2e3", "H++5");
        check(&p, "H-+6", "c0d2", "H-+6");
        check(&p, "H-+5", "c0e1", "H-+5");
        check(&p, "H+-8", "c2b0", "H+-8");
        refuse(&p, "H7+6", "ambiguous");
        refuse(&p, "H+.6", "never moves sideways");
    }

    #[test]
    fn three_soldiers_on_a_file() {
        // Red soldiers on c7, c6, c5 (front to rear), Red's file 7.
        let p = pos("5k3/9/2P6/2P6/2P6/9/9/9/9/4K4 w - - 0 1");
        check(&p, "P+.6", "c7d7", "P+.6");
        check(&p, "P7.6", "c6d6", "P7.6");
        check(&p, "P-.6", "c5d5", "P-.6");
        check(&p, "P++1", "c7c8", "P++1");
        check(&p, "+P+1", "c7c8", "P++1");
        check(&p, "P-.8", "c5b5", "P-.8");
        refuse(&p, "P7+1", "own pieces");
        refuse(&p, "P-+1", "own pieces");
        refuse(&p, "P--1", "soldier cannot move");
        check(&p, "++.6", "c7d7", "P+.6");
        check(&p, "--.6", "c5d5", "P-.6");
    }

    #[test]
    fn five_and_four_soldiers_on_a_file() {
        // Five Red soldiers on c9..c5, Red's file 7.
        let p = pos("2P2k3/2P6/2P6/2P6/2P6/9/9/9/9/4K4 w - - 0 1");
        check(&p, "++.6", "c9d9", "++.6");
        check(&p, "++.8", "c9b9", "++.8");
        check(&p, "P+.6", "c8d8", "P+.6");
        check(&p, "P7.6", "c7d7", "P7.6");
        check(&p, "P-.6", "c6d6", "P-.6");
        check(&p, "--.6", "c5d5", "--.6");
        refuse(&p, "--+1", "own pieces");
        refuse(&p, "++-1", "own pieces");
        refuse(&p, "++.5", "illegal c9e9: a soldier cannot move");

        // Four on c8..c5: ++, P+, P-, --.
        let p = pos("5k3/2P6/2P6/2P6/2P6/9/9/9/9/4K4 w - - 0 1");
        check(&p, "++.6", "c8d8", "++.6");
        check(&p, "P+.6", "c7d7", "P+.6");
        check(&p, "P-.6", "c6d6", "P-.6");
        check(&p, "--.6", "c5d5", "--.6");
        check(&p, "++=6", "c8d8", "++.6");
        check(&p, "++.8", "c8b8", "++.8");
        refuse(&p, "P7.6", "ambiguous");
        refuse(&p, "77.6", "no middle");
    }

    #[test]
    fn soldiers_on_two_files() {
        // Red soldiers c7, c6, c5 (file 7) and g6, g5 (file 3).
        let p = pos("4k4/9/2P6/2P3P2/2P3P2/9/9/9/9/3K5 w - - 0 1");
        check(&p, "7+.6", "c7d7", "7+.6");
        check(&p, "77.6", "c6d6", "77.6");
        check(&p, "7-.6", "c5d5", "7-.6");
        check(&p, "3+.4", "g6f6", "3+.4");
        check(&p, "3-.4", "g5f5", "3-.4");
        check(&p, "3+.2", "g6h6", "3+.2");
        check(&p, "3++1", "g6g7", "3++1");
        check(&p, "P7.6", "c6d6", "77.6");
        refuse(&p, "P++1", "ambiguous");
        refuse(&p, "33.4", "no middle");
        refuse(&p, "5+.4", "no soldier on file 5");
        refuse(&p, "9+.8", "no soldier on file 9");
        refuse(&p, "37.4", "must be followed by");

        // Two and two, with a fifth soldier alone on a third file (a7: Red's file 9).
        let p = pos("4k4/9/P8/2P3P2/2P3P2/9/9/9/9/3K5 w - - 0 1");
        check(&p, "7+.6", "c6d6", "7+.6");
        check(&p, "7-.6", "c5d5", "7-.6");
        check(&p, "3-.4", "g5f5", "3-.4");
        check(&p, "P9.8", "a7b7", "P9.8");
        check(&p, "P9+1", "a7a8", "P9+1");
        refuse(&p, "9+.8", "only one soldier");
    }

    #[test]
    fn tandem_soldiers_black() {
        // Black soldiers on c3 (front) and c4 (rear), Black's file 3.
        let p = pos("4k4/9/9/9/9/2p6/2p6/9/9/3K5 b - - 0 1");
        check(&p, "P+.4", "c3d3", "P+.4");
        check(&p, "P++1", "c3c2", "P++1");
        check(&p, "P-.2", "c4b4", "P-.2");
        refuse(&p, "P-+1", "own pieces");
    }

    #[test]
    fn tandem_advisors_and_elephants() {
        // Red advisors on d2 and d0, Red's file 6: the direction tells them apart.
        let p = pos("3k5/9/9/9/9/9/9/3A5/9/3AK4 w - - 0 1");
        check(&p, "A6+5", "d0e1", "A6+5");
        check(&p, "A6-5", "d2e1", "A6-5");
        check(&p, "A-+5", "d0e1", "A6+5");
        check(&p, "A+-5", "d2e1", "A6-5");
        refuse(&p, "A+.5", "never moves sideways");
        refuse(&p, "A6+4", "cannot reach file 4");

        // Red elephants on c4 and c0, Red's file 7.
        let p = pos("3k5/9/9/9/9/2B6/9/9/9/2B1K4 w - - 0 1");
        check(&p, "E7+5", "c0e2", "E7+5");
        check(&p, "E7+9", "c0a2", "E7+9");
        check(&p, "E7-5", "c4e2", "E7-5");
        check(&p, "E7-9", "c4a2", "E7-9");
        check(&p, "E+-5", "c4e2", "E7-5");

        // A composed position (lenient): advisors on d1 and d0 can both go forward to file 5.
        let p = lenient("3k5/9/9/9/9/9/9/9/3A5/3A1K3 w - - 0 1");
        check(&p, "A++5", "d1e2", "A++5");
        check(&p, "A-+5", "d0e1", "A-+5");
        check(&p, "A6-5", "d1e0", "A6-5");
        refuse(&p, "A6+5", "ambiguous");
    }

    #[test]
    fn errors_name_the_fault() {
        let p = Position::start();
        refuse(&p, "", "four characters");
        refuse(&p, "C2.", "four characters");
        refuse(&p, "C2.55", "four characters");
        refuse(&p, "炮二平五", "piece letter");
        refuse(&p, "X2.5", "unknown piece letter");
        refuse(&p, "+X.5", "unknown piece letter");
        refuse(&p, "CX.5", "file digit");
        refuse(&p, "C2x5", "direction");
        refuse(&p, "C2.0", "digit 1-9");
        refuse(&p, "C0.5", "file digit");
        refuse(&p, "C3.5", "no cannon on file 3");
        refuse(&p, "C2.2", "must leave file 2");
        refuse(&p, "C2+5", "illegal h2h7");
        refuse(&p, "R1-1", "leaves the board");
        refuse(&p, "H2.3", "never moves sideways");
        refuse(&p, "H2+5", "cannot reach file 5");
        refuse(&p, "H2-3", "leaves the board");
        refuse(&p, "C+.5", "no two cannons");
        refuse(&p, "+-.5", "after a leading");
        refuse(&p, "P7.6", "soldier cannot move");
        refuse(&p, "K5.4", "illegal");
        refuse(&p, "P2+1", "no soldier on file 2");
        refuse(&p, "R1+3", "illegal i0i3: the target holds");
    }

    /// A deterministic linear congruential generator (Knuth's MMIX constants).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 33
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Every legal move round-trips, and no two legal moves share a text.
    fn check_round_trip(p: &Position) {
        let moves = p.legal_moves();
        let mut texts: Vec<String> = Vec::with_capacity(moves.len());
        for &m in &moves {
            let t = p.to_wxf(m);
            assert_eq!(t.len(), 4, "{t} for {m} in {p:?}");
            assert_eq!(p.parse_wxf(&t), Ok(m), "{t} for {m} in {p:?}");
            texts.push(t);
        }
        texts.sort();
        let n = texts.len();
        texts.dedup();
        assert_eq!(texts.len(), n, "duplicate WXF texts in {p:?}");
    }

    #[test]
    fn round_trip_on_random_playouts() {
        let mut rng = Lcg(0x5eed);
        let mut positions = 0;
        for _ in 0..60 {
            let mut p = Position::start();
            for _ in 0..200 {
                check_round_trip(&p);
                positions += 1;
                let moves = p.legal_moves();
                if moves.is_empty() {
                    break;
                }
                p.play(moves[rng.below(moves.len())]).unwrap();
            }
        }
        assert!(positions > 2_000);
    }

    #[test]
    fn round_trip_on_random_composed_positions() {
        // Random lenient setups with soldiers packed on two files and advisors anywhere in the
        // palace, so that tandems of every kind (three to five soldiers) turn up often.
        let mut rng = Lcg(42);
        let mut tested = 0;
        let mut deep = 0;
        while tested < 3_000 {
            let mut setup = crate::position::Setup::empty();
            let palace = |color: Color, k: usize| {
                let (f, r) = (3 + k % 3, k / 3);
                let r = if color == Color::Red { r } else { 9 - r };
                r * 9 + f
            };
            for color in Color::ALL {
                setup.board[palace(color, rng.below(9))] =
                    Some(Piece::new(color, PieceKind::General));
                let files = [rng.below(9), rng.below(9)];
                for kind in PieceKind::ALL {
                    let count = match kind {
                        PieceKind::General => 0,
                        _ => rng.below(usize::from(kind.max_count()) + 1),
                    };
                    for _ in 0..count {
                        let sq = match kind {
                            PieceKind::Advisor => palace(color, rng.below(9)),
                            PieceKind::Soldier => rng.below(10) * 9 + files[rng.below(2)],
                            PieceKind::Elephant if rng.below(2) == 0 => {
                                rng.below(10) * 9 + files[0]
                            }
                            _ => rng.below(90),
                        };
                        if setup.board[sq].is_none() {
                            setup.board[sq] = Some(Piece::new(color, kind));
                        }
                    }
                }
            }
            setup.turn = Color::ALL[rng.below(2)];
            let Ok(p) = Position::from_setup(&setup, Validation::Lenient) else {
                continue;
            };
            check_round_trip(&p);
            tested += 1;
            let me = p.turn();
            if p.wxf_tandems(Piece::new(me, PieceKind::Soldier)).iter().any(|(_, c)| c.len() >= 3) {
                deep += 1;
            }
        }
        assert!(deep > 50, "only {deep} positions with three or more soldiers on a file");
    }

    #[test]
    fn parser_never_panics() {
        let alphabet: Vec<char> = "KAEBHNRCPkaehrcpX+-.=0123456789 炮\u{0}é".chars().collect();
        let positions = [
            Position::start(),
            pos("2P2k3/2P6/2P6/2P6/2P6/9/9/9/9/4K4 w - - 0 1"),
            pos("4k4/9/2P6/2P3P2/2P3P2/9/9/9/9/3K5 w - - 0 1"),
            pos("4k4/4c4/9/4c4/9/9/9/9/9/3K5 b - - 0 1"),
        ];
        let mut rng = Lcg(7);
        for _ in 0..100_000 {
            let p = &positions[rng.below(positions.len())];
            let len = if rng.below(4) == 0 { rng.below(7) } else { 4 };
            let text: String = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            if let Ok(m) = p.parse_wxf(&text) {
                assert!(p.is_legal(m), "{text} read as illegal {m}");
                assert_eq!(p.parse_wxf(&p.to_wxf(m)), Ok(m));
            }
        }
        // Arbitrary (even illegal) moves never make the writer panic.
        for _ in 0..10_000 {
            let from = Square::from_index(rng.below(90));
            let to = Square::from_index(rng.below(90));
            for p in &positions {
                let _ = p.to_wxf(Move::new(from, to));
            }
        }
    }
}
