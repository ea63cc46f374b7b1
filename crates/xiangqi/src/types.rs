//! Board coordinates, colours and pieces.

use std::fmt;
use std::ops::{Index, IndexMut};

/// The two sides. Red moves first and sits on ranks 0–4; Black sits on ranks 5–9.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    /// The side that moves first (upper-case letters in FEN).
    Red = 0,
    /// The second side (lower-case letters in FEN).
    Black = 1,
}

impl Color {
    /// Both colours, Red first.
    pub const ALL: [Color; 2] = [Color::Red, Color::Black];
    /// Number of colours.
    pub const COUNT: usize = 2;

    /// Index for tables: Red = 0, Black = 1.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The other side.
    #[inline]
    #[must_use]
    pub const fn other(self) -> Color {
        match self {
            Color::Red => Color::Black,
            Color::Black => Color::Red,
        }
    }

    /// The FEN side-to-move letter (`w` for Red, as Pikafish writes it; `b` for Black).
    pub const fn fen_char(self) -> char {
        match self {
            Color::Red => 'w',
            Color::Black => 'b',
        }
    }
}

impl std::ops::Not for Color {
    type Output = Color;
    fn not(self) -> Color {
        self.other()
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Color::Red => "red",
            Color::Black => "black",
        })
    }
}

/// A pair of values, one per colour: use this instead of `[T; 2]` and casts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ByColor<T> {
    /// Red's value.
    pub red: T,
    /// Black's value.
    pub black: T,
}

impl<T> ByColor<T> {
    /// Builds a pair by calling `f` for Red, then for Black.
    pub fn new_with(mut f: impl FnMut(Color) -> T) -> ByColor<T> {
        ByColor { red: f(Color::Red), black: f(Color::Black) }
    }

    /// The value for `color`.
    #[inline]
    pub const fn get(&self, color: Color) -> &T {
        match color {
            Color::Red => &self.red,
            Color::Black => &self.black,
        }
    }

    /// The value for `color`, mutably.
    #[inline]
    pub fn get_mut(&mut self, color: Color) -> &mut T {
        match color {
            Color::Red => &mut self.red,
            Color::Black => &mut self.black,
        }
    }
}

impl<T> Index<Color> for ByColor<T> {
    type Output = T;
    #[inline]
    fn index(&self, color: Color) -> &T {
        self.get(color)
    }
}

impl<T> IndexMut<Color> for ByColor<T> {
    #[inline]
    fn index_mut(&mut self, color: Color) -> &mut T {
        self.get_mut(color)
    }
}

/// The seven kinds of piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PieceKind {
    /// 帅/将: one step orthogonally inside the palace.
    General = 0,
    /// 仕/士: one step diagonally inside the palace.
    Advisor = 1,
    /// 相/象: two points diagonally, blocked on the eye, never across the river.
    Elephant = 2,
    /// 马: one point orthogonally then one diagonally outward, blocked on the leg.
    Horse = 3,
    /// 车: any distance orthogonally.
    Chariot = 4,
    /// 炮: moves like a chariot, captures by jumping exactly one screen.
    Cannon = 5,
    /// 兵/卒: one point forward; also sideways once across the river.
    Soldier = 6,
}

impl PieceKind {
    /// All kinds, in index order.
    pub const ALL: [PieceKind; 7] = [
        PieceKind::General,
        PieceKind::Advisor,
        PieceKind::Elephant,
        PieceKind::Horse,
        PieceKind::Chariot,
        PieceKind::Cannon,
        PieceKind::Soldier,
    ];
    /// Number of kinds.
    pub const COUNT: usize = 7;

    /// Index for tables, 0..7 in the order of [`PieceKind::ALL`].
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// How many of this kind one side has in the initial set (1, 2 or 5).
    pub const fn max_count(self) -> u8 {
        match self {
            PieceKind::General => 1,
            PieceKind::Soldier => 5,
            _ => 2,
        }
    }

    /// Upper-case FEN letter (`K A B N R C P`, the letters Pikafish writes).
    pub const fn fen_char(self) -> char {
        match self {
            PieceKind::General => 'K',
            PieceKind::Advisor => 'A',
            PieceKind::Elephant => 'B',
            PieceKind::Horse => 'N',
            PieceKind::Chariot => 'R',
            PieceKind::Cannon => 'C',
            PieceKind::Soldier => 'P',
        }
    }

    /// Reads a FEN letter of either case; `E` and `H` are accepted for elephant and horse.
    pub const fn from_fen_char(c: char) -> Option<PieceKind> {
        Some(match c.to_ascii_uppercase() {
            'K' => PieceKind::General,
            'A' => PieceKind::Advisor,
            'B' | 'E' => PieceKind::Elephant,
            'N' | 'H' => PieceKind::Horse,
            'R' => PieceKind::Chariot,
            'C' => PieceKind::Cannon,
            'P' => PieceKind::Soldier,
            _ => return None,
        })
    }

    /// A rough material value in soldier units, used by baselines and chase tie-breaks only.
    pub const fn value(self) -> u32 {
        match self {
            PieceKind::General => 1000,
            PieceKind::Advisor | PieceKind::Elephant => 2,
            PieceKind::Horse => 4,
            PieceKind::Cannon => 5,
            PieceKind::Chariot => 9,
            PieceKind::Soldier => 1,
        }
    }
}

/// A coloured piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// Owner.
    pub color: Color,
    /// Kind.
    pub kind: PieceKind,
}

impl Piece {
    /// Creates a piece.
    #[inline]
    pub const fn new(color: Color, kind: PieceKind) -> Piece {
        Piece { color, kind }
    }

    /// Index 0..14: Red's kinds 0..7, then Black's.
    #[inline]
    pub const fn index(self) -> usize {
        self.color.index() * PieceKind::COUNT + self.kind.index()
    }

    /// FEN letter: upper case for Red, lower case for Black.
    pub const fn fen_char(self) -> char {
        let c = self.kind.fen_char();
        match self.color {
            Color::Red => c,
            Color::Black => c.to_ascii_lowercase(),
        }
    }

    /// Reads a FEN letter (`E`/`H` accepted for elephant/horse); case gives the colour.
    pub const fn from_fen_char(c: char) -> Option<Piece> {
        match PieceKind::from_fen_char(c) {
            Some(kind) => {
                let color = if c.is_ascii_uppercase() { Color::Red } else { Color::Black };
                Some(Piece { color, kind })
            }
            None => None,
        }
    }
}

/// A file (column), `a` to `i` from Red's left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct File(u8);

impl File {
    /// Number of files.
    pub const COUNT: usize = 9;

    /// The file with index `i` (0 = `a`), if `i < 9`.
    pub const fn new(i: u8) -> Option<File> {
        if i < 9 { Some(File(i)) } else { None }
    }

    /// Index 0..9 (0 = `a`).
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The letter `a`..`i`.
    pub const fn char(self) -> char {
        (b'a' + self.0) as char
    }

    /// Reads a letter `a`..`i`.
    pub const fn from_char(c: char) -> Option<File> {
        if c >= 'a' && c <= 'i' { Some(File(c as u8 - b'a')) } else { None }
    }

    /// The file seen in a left–right mirror (`a` ↔ `i`).
    #[must_use]
    pub const fn mirror(self) -> File {
        File(8 - self.0)
    }
}

/// A rank (row), 0 (Red's home rank) to 9 (Black's home rank).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank(u8);

impl Rank {
    /// Number of ranks.
    pub const COUNT: usize = 10;

    /// The rank with index `i`, if `i < 10`.
    pub const fn new(i: u8) -> Option<Rank> {
        if i < 10 { Some(Rank(i)) } else { None }
    }

    /// Index 0..10.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The rank seen from the other side (r ↔ 9 − r).
    #[must_use]
    pub const fn flip(self) -> Rank {
        Rank(9 - self.0)
    }
}

/// One of the 90 points, numbered `rank * 9 + file` (a0 = 0, i0 = 8, a1 = 9, …, i9 = 89).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    /// Number of points on the board.
    pub const COUNT: usize = 90;

    /// The square with index `i`, if `i < 90`.
    #[inline]
    pub const fn new(i: u8) -> Option<Square> {
        if i < 90 { Some(Square(i)) } else { None }
    }

    /// The square with index `i`.
    ///
    /// # Panics
    /// If `i >= 90`.
    #[inline]
    pub const fn from_index(i: usize) -> Square {
        assert!(i < 90, "square index out of range");
        Square(i as u8)
    }

    /// The square at `file` and `rank`.
    #[inline]
    pub const fn from_coords(file: File, rank: Rank) -> Square {
        Square(rank.0 * 9 + file.0)
    }

    /// Index 0..90.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The square's file.
    #[inline]
    pub const fn file(self) -> File {
        File(self.0 % 9)
    }

    /// The square's rank.
    #[inline]
    pub const fn rank(self) -> Rank {
        Rank(self.0 / 9)
    }

    /// The left–right mirror (file f ↔ 8 − f), the one symmetry of the xiangqi board.
    #[inline]
    #[must_use]
    pub const fn mirror(self) -> Square {
        Square::from_coords(self.file().mirror(), self.rank())
    }

    /// The square seen from Black's side (rank r ↔ 9 − r, file unchanged).
    #[inline]
    #[must_use]
    pub const fn flip(self) -> Square {
        Square::from_coords(self.file(), self.rank().flip())
    }

    /// Whether the point lies on `color`'s half of the board (ranks 0–4 for Red, 5–9 for Black).
    #[inline]
    pub const fn on_own_side(self, color: Color) -> bool {
        match color {
            Color::Red => self.0 < 45,
            Color::Black => self.0 >= 45,
        }
    }

    /// Whether the point lies in `color`'s palace (files d–f; ranks 0–2 for Red, 7–9 for Black).
    #[inline]
    pub const fn in_palace(self, color: Color) -> bool {
        let f = self.0 % 9;
        let r = self.0 / 9;
        f >= 3
            && f <= 5
            && match color {
                Color::Red => r <= 2,
                Color::Black => r >= 7,
            }
    }

    /// Iterates over all 90 squares in index order.
    pub fn all() -> impl Iterator<Item = Square> {
        (0..90u8).map(Square)
    }
}

impl fmt::Display for Square {
    /// Writes the UCI name of the square, e.g. `h2` (ranks 0–9).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.file().char(), self.rank().index())
    }
}
