//! XQF, the binary game format of XQStudio (象棋演播室, by Dong Shiwei) and the tools that
//! followed it, versions 10 to 18, the encrypted ones (above 10) included.
//!
//! # The format
//! No official specification was published; this reader follows the layout as the open-source
//! readers document it (XQStudio's Pascal unit `XQFRW.pas`, as quoted by walker8088's `cchess`
//! Python library, `cchess/io_xqf.py`, and the C reader of the `chess` project on GitHub), in our
//! own words and code:
//!
//! - **Header**, 1024 bytes: `XQ` (0x00), the version (0x02), then the key bytes: mask (0x03),
//!   a product id (0x04–0x07), `KeyOrA`–`KeyOrD` (0x08–0x0B), `KeysSum` (0x0C), `KeyXY`
//!   (0x0D), `KeyXYf` (0x0E), `KeyXYt` (0x0F); the 32 pieces' points (0x10–0x2F): Red's
//!   chariot, horse, elephant, advisor, general, advisor, elephant, horse, chariot, two cannons,
//!   five soldiers, then Black's in the same order, each point `10·x + y` with `x` the file
//!   (0 = `a`) and `y` the rank (0 = Red's home rank), above 89 for a piece not on the board;
//!   the result (0x33: 0 unknown, 1 Red won, 2 Black won, 3 or 4 a draw); and strings of a
//!   length byte and GBK text: title (0x50), event (0xD0), date (0x110), site (0x120), Red
//!   (0x130), Black (0x140).
//! - **Move tree**, from 0x400: records of four bytes (origin, target, flags, reserved),
//!   depth first: the root record (no move), then each move followed by its continuation and
//!   then its alternatives. Versions up to 10 store origin + 0x18 and target + 0x20; a flags
//!   byte with a bit in 0xF0 says a continuation follows, one in 0x0F that an alternative
//!   does; every record is followed by a comment's length (32 bits, little-endian) and the
//!   comment. From version 11 the flags are 0x80 continuation, 0x40 alternative, 0x20 a
//!   comment follows (its stored length less `KeyRMKSize`).
//! - **Encryption** (versions above 10): with `f(b) = (((((b·b)·3 + 9)·3 + 8)·2 + 1)·3 + 8)`
//!   on bytes, `KeyXY = f(KeyXY₀)·KeyXY₀`, `KeyXYf = f(KeyXYf₀)·KeyXY`, `KeyXYt =
//!   f(KeyXYt₀)·KeyXYf` (all mod 256; ₀ the header bytes), `KeyRMKSize = (KeysSum·256 +
//!   KeyXY₀) mod 32000 + 767`. A piece's point is stored plus `KeyXY`, and from version 12 the
//!   32 points are also rotated: stored slot `i` holds piece `(KeyXY + i + 1) mod 32`. Moves'
//!   origins and targets are further offset by `KeyXYf` and `KeyXYt`. Everything from 0x400
//!   on is stored plus a 32-byte key: the text `[(C) Copyright Mr. Dong Shiwei.]`, byte `i`
//!   masked (AND) with `Fᵢ mod 4`, where `F = ((KeysSum & mask) | KeyOrA, (KeyXY₀ & mask) |
//!   KeyOrB, (KeyXYf₀ & mask) | KeyOrC, (KeyXYt₀ & mask) | KeyOrD)`; the byte at file offset
//!   `p` uses key byte `p mod 32`.
//!
//! Only the main line is read (each move's first continuation). The side to move first is the
//! owner of the first move's piece (Red when there is no move). Every length is checked
//! against the file: a damaged file is an [`XqfError`], never a panic.

use thiserror::Error;
use xiangqi::{Color, File, Move, Piece, PieceKind, Position, Rank, Setup, Square, Validation};

use super::{GameResult, RecordedMove, SourceGame, decode_text};

/// Why an XQF file could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum XqfError {
    /// Not an XQF file.
    #[error("not an XQF file (no 'XQ' signature)")]
    Signature,
    /// Shorter than its header or a record it announces.
    #[error("truncated at byte {offset}: {what}")]
    Truncated {
        /// Where the data ran out.
        offset: usize,
        /// What was being read.
        what: &'static str,
    },
    /// A version this reader does not know.
    #[error("XQF version {0} is not supported (10 to 18 are, and older plain ones)")]
    Version(u8),
    /// A value that makes no sense.
    #[error("{0}")]
    Invalid(String),
}

/// The header's size; the move tree starts here.
const HEADER: usize = 0x400;
/// Red's (and Black's) sixteen pieces in the header's order.
const ORDER: [PieceKind; 16] = [
    PieceKind::Chariot,
    PieceKind::Horse,
    PieceKind::Elephant,
    PieceKind::Advisor,
    PieceKind::General,
    PieceKind::Advisor,
    PieceKind::Elephant,
    PieceKind::Horse,
    PieceKind::Chariot,
    PieceKind::Cannon,
    PieceKind::Cannon,
    PieceKind::Soldier,
    PieceKind::Soldier,
    PieceKind::Soldier,
    PieceKind::Soldier,
    PieceKind::Soldier,
];
/// The text the body's key is made of.
const KEY_TEXT: &[u8; 32] = b"[(C) Copyright Mr. Dong Shiwei.]";
/// A comment longer than this is taken for damage (XQStudio's comments are short texts).
const MAX_COMMENT: usize = 1 << 20;

/// The keys of an encrypted file (all zero and no body key for a plain one).
#[derive(Clone, Copy, Debug, Default)]
struct Keys {
    xy: u8,
    xyf: u8,
    xyt: u8,
    rmk_size: u32,
    body: Option<[u8; 32]>,
}

/// `f(b)` of the key schedule, mod 256.
fn schedule(b: u8) -> u8 {
    let b = u32::from(b);
    (((((b * b) * 3 + 9) * 3 + 8) * 2 + 1) * 3 + 8) as u8
}

impl Keys {
    fn of(header: &[u8]) -> Keys {
        let (mask, or) = (header[3], [header[8], header[9], header[10], header[11]]);
        let (sum, xy0, xyf0, xyt0) = (header[12], header[13], header[14], header[15]);
        let xy = schedule(xy0).wrapping_mul(xy0);
        let xyf = schedule(xyf0).wrapping_mul(xy);
        let xyt = schedule(xyt0).wrapping_mul(xyf);
        let rmk_size = (u32::from(sum) * 256 + u32::from(xy0)) % 32000 + 767;
        let f = [
            (sum & mask) | or[0],
            (xy0 & mask) | or[1],
            (xyf0 & mask) | or[2],
            (xyt0 & mask) | or[3],
        ];
        let mut body = [0u8; 32];
        for (i, b) in body.iter_mut().enumerate() {
            *b = KEY_TEXT[i] & f[i % 4];
        }
        Keys { xy, xyf, xyt, rmk_size, body: Some(body) }
    }
}

/// A cursor over the decrypted move tree.
struct Body<'a> {
    bytes: &'a [u8],
    pos: usize,
    key: Option<[u8; 32]>,
}

impl Body<'_> {
    fn read(&mut self, n: usize, what: &'static str) -> Result<Vec<u8>, XqfError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(XqfError::Truncated { offset: HEADER + self.bytes.len(), what })?;
        let out = (self.pos..end)
            .map(|i| match &self.key {
                Some(k) => self.bytes[i].wrapping_sub(k[(HEADER + i) % 32]),
                None => self.bytes[i],
            })
            .collect();
        self.pos = end;
        Ok(out)
    }

    fn read_u32(&mut self, what: &'static str) -> Result<u32, XqfError> {
        let b = self.read(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }
}

/// One move-tree record: the points (undecoded for the root) and its flags.
struct Record {
    from: u8,
    to: u8,
    next: bool,
}

fn read_record(body: &mut Body<'_>, version: u8, keys: &Keys) -> Result<Record, XqfError> {
    let r = body.read(4, "a move record")?;
    let (next, comment) = if version <= 10 {
        (r[2] & 0xF0 != 0, body.read_u32("a comment's length")? as usize)
    } else if r[2] & 0x20 != 0 {
        let stored = body.read_u32("a comment's length")?;
        let len = stored.checked_sub(keys.rmk_size).ok_or_else(|| {
            XqfError::Invalid(format!("comment length {stored} below the key {}", keys.rmk_size))
        })?;
        (r[2] & 0x80 != 0, len as usize)
    } else {
        (r[2] & 0x80 != 0, 0)
    };
    if comment > MAX_COMMENT {
        return Err(XqfError::Invalid(format!("comment of {comment} bytes")));
    }
    body.read(comment, "a comment")?;
    let from = r[0].wrapping_sub(0x18).wrapping_sub(keys.xyf);
    let to = r[1].wrapping_sub(0x20).wrapping_sub(keys.xyt);
    Ok(Record { from, to, next })
}

/// The point of an XQF point code `10·x + y`, if on the board.
fn point(code: u8) -> Option<Square> {
    if code > 89 {
        return None;
    }
    let (x, y) = (code / 10, code % 10);
    Some(Square::from_coords(File::new(x)?, Rank::new(y)?))
}

/// A length-prefixed GBK string of the header at `at`, at most `cap` bytes.
fn header_string(header: &[u8], at: usize, cap: usize) -> String {
    let len = usize::from(header[at]).min(cap);
    let bytes = &header[at + 1..at + 1 + len];
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
    decode_text(bytes).0.trim().to_string()
}

/// Reads an XQF file's game: its tags (`Title`, `Event`, `Date`, `Site`, `Red`, `Black`,
/// `Result`), start position and main line (see the [module documentation](self)). The game's
/// number is 1.
///
/// # Errors
/// [`XqfError`] for a file that is not XQF, of an unknown version, truncated, or whose pieces
/// or moves make no sense (two pieces on one point, a move from or to no point).
pub fn read_xqf(bytes: &[u8]) -> Result<SourceGame, XqfError> {
    if bytes.get(..2) != Some(b"XQ".as_slice()) {
        return Err(XqfError::Signature);
    }
    let header = bytes
        .get(..HEADER)
        .ok_or(XqfError::Truncated { offset: bytes.len(), what: "the 1024-byte header" })?;
    let version = header[2];
    if version > 18 {
        return Err(XqfError::Version(version));
    }
    let keys = if version > 10 { Keys::of(header) } else { Keys::default() };

    // The pieces.
    let mut codes = [0u8; 32];
    for (i, &raw) in header[0x10..0x30].iter().enumerate() {
        let slot = if version >= 12 { (usize::from(keys.xy) + i + 1) % 32 } else { i };
        codes[slot] = raw;
    }
    let mut setup = Setup::empty();
    for (i, &code) in codes.iter().enumerate() {
        let Some(sq) = point(code.wrapping_sub(keys.xy)) else {
            continue;
        };
        let color = if i < 16 { Color::Red } else { Color::Black };
        let piece = Piece::new(color, ORDER[i % 16]);
        if let Some(other) = setup.board[sq.index()] {
            return Err(XqfError::Invalid(format!("two pieces on {sq}: {other:?} and {piece:?}")));
        }
        setup.board[sq.index()] = Some(piece);
    }

    // The main line.
    let mut body =
        Body { bytes: &bytes[HEADER..], pos: 0, key: keys.body.filter(|_| version > 10) };
    let mut moves = Vec::new();
    if !body.at_end() {
        let root = read_record(&mut body, version, &keys)?;
        let mut more = !body.at_end() && (root.next || version <= 10);
        while more {
            let r = read_record(&mut body, version, &keys)?;
            let (Some(from), Some(to)) = (point(r.from), point(r.to)) else {
                return Err(XqfError::Invalid(format!(
                    "move {} from point code {} to {}: not on the board",
                    moves.len() + 1,
                    r.from,
                    r.to
                )));
            };
            moves.push(Move::new(from, to));
            more = r.next && !body.at_end();
        }
    }

    // The side to move first: the owner of the first move's piece.
    setup.turn =
        moves.first().and_then(|m| setup.board[m.from().index()]).map_or(Color::Red, |p| p.color);
    let start = Position::from_setup(&setup, Validation::Lenient)
        .map_err(|e| XqfError::Invalid(format!("the start position is not legal: {e}")))?;
    let fen = (start != Position::start()).then(|| start.fen());

    let result = match header[0x33] {
        1 => Some(GameResult::Win(Color::Red)),
        2 => Some(GameResult::Win(Color::Black)),
        3 | 4 => Some(GameResult::Draw),
        _ => None,
    };
    let mut tags = Vec::new();
    for (name, at, cap) in [
        ("Title", 0x50, 63),
        ("Event", 0xD0, 63),
        ("Date", 0x110, 15),
        ("Site", 0x120, 15),
        ("Red", 0x130, 15),
        ("Black", 0x140, 15),
    ] {
        let value = header_string(header, at, cap);
        if !value.is_empty() {
            tags.push((name.to_string(), value));
        }
    }
    tags.push(("Result".into(), result.map_or("*", GameResult::as_pgn).into()));
    if let Some(f) = &fen {
        tags.push(("FEN".into(), f.clone()));
    }
    Ok(SourceGame {
        number: 1,
        tags,
        fen,
        result,
        moves: moves.into_iter().map(RecordedMove::Points).collect(),
    })
}

/// A move as XQF points `((x, y), (x, y))`, origin then target (test support).
#[cfg(test)]
type PointMove = ((u8, u8), (u8, u8));

/// Writes an XQF file (test support: the inverse of [`read_xqf`], built from the same
/// specification) with the header key bytes `key_bytes` (`[mask, KeyOrA..D, KeysSum, KeyXY,
/// KeyXYf, KeyXYt]`; ignored for versions up to 10), pieces at `points` (the header's order,
/// `None` off the board), and a main line of `moves` with a comment on the first.
#[cfg(test)]
pub(crate) fn write_xqf_for_test(
    version: u8,
    key_bytes: [u8; 9],
    points: &[Option<(u8, u8)>; 32],
    moves: &[PointMove],
    result: u8,
    red_gbk: &[u8],
) -> Vec<u8> {
    let mut h = vec![0u8; HEADER];
    h[0] = b'X';
    h[1] = b'Q';
    h[2] = version;
    h[3] = key_bytes[0];
    h[8..16].copy_from_slice(&key_bytes[1..9]);
    let keys = if version > 10 { Keys::of(&h) } else { Keys::default() };
    let mut codes = [0u8; 32];
    for (i, p) in points.iter().enumerate() {
        codes[i] = match p {
            Some((x, y)) => (x * 10 + y).wrapping_add(keys.xy),
            None => 0xFFu8.wrapping_add(keys.xy),
        };
    }
    for i in 0..32 {
        let slot = if version >= 12 { (usize::from(keys.xy) + i + 1) % 32 } else { i };
        h[0x10 + i] = codes[slot];
    }
    h[0x33] = result;
    h[0x130] = red_gbk.len() as u8;
    h[0x131..0x131 + red_gbk.len()].copy_from_slice(red_gbk);
    let mut body = Vec::new();
    let comment = b"comment";
    let push = |body: &mut Vec<u8>, from: u8, to: u8, next: bool, with_comment: bool| {
        let flags = if version <= 10 {
            if next { 0xF0 } else { 0 }
        } else {
            (if next { 0x80 } else { 0 }) | (if with_comment { 0x20 } else { 0 })
        };
        body.extend_from_slice(&[
            from.wrapping_add(0x18).wrapping_add(keys.xyf),
            to.wrapping_add(0x20).wrapping_add(keys.xyt),
            flags,
            0,
        ]);
        if version <= 10 {
            let len = if with_comment { comment.len() as u32 } else { 0 };
            body.extend_from_slice(&len.to_le_bytes());
        } else if with_comment {
            body.extend_from_slice(&(comment.len() as u32 + keys.rmk_size).to_le_bytes());
        }
        if with_comment {
            body.extend_from_slice(comment);
        }
    };
    push(&mut body, 0, 0, !moves.is_empty(), false);
    for (i, &((fx, fy), (tx, ty))) in moves.iter().enumerate() {
        push(&mut body, fx * 10 + fy, tx * 10 + ty, i + 1 < moves.len(), i == 0);
    }
    if let (Some(key), true) = (keys.body, version > 10) {
        for (i, b) in body.iter_mut().enumerate() {
            *b = b.wrapping_add(key[(HEADER + i) % 32]);
        }
    }
    h.extend_from_slice(&body);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard start in the header's order: Red's back rank right to left as XQF lists
    /// it (a0 chariot ... i0 chariot), cannons b2 and h2, soldiers a3 c3 e3 g3 i3; Black's
    /// likewise on ranks 9, 7 and 6.
    fn start_points() -> [Option<(u8, u8)>; 32] {
        let mut p = [None; 32];
        for color in 0..2u8 {
            let (back, cannon, soldier) = if color == 0 { (0, 2, 3) } else { (9, 7, 6) };
            let base = usize::from(color) * 16;
            for x in 0..9u8 {
                p[base + usize::from(x)] = Some((x, back));
            }
            p[base + 9] = Some((1, cannon));
            p[base + 10] = Some((7, cannon));
            for (k, x) in [0u8, 2, 4, 6, 8].into_iter().enumerate() {
                p[base + 11 + k] = Some((x, soldier));
            }
        }
        p
    }

    /// h2e2 (cannon to the centre), h9g7, h0g2 as XQF points (x, y).
    const LINE: [PointMove; 3] = [((7, 2), (4, 2)), ((7, 9), (6, 7)), ((7, 0), (6, 2))];

    fn uci(g: &SourceGame) -> Vec<String> {
        g.moves
            .iter()
            .map(|m| match m {
                RecordedMove::Points(m) => m.to_string(),
                RecordedMove::Text(t) => t.clone(),
            })
            .collect()
    }

    #[test]
    fn plain_and_encrypted_files_read_alike() {
        // "王" in GBK is CD F5.
        let red = b"\xCD\xF5";
        for (version, keys) in [
            (10, [0u8; 9]),
            (11, [0xFF, 0, 0, 0, 0, 0x21, 0x35, 0x77, 0xC3]),
            (12, [0xE7, 0x10, 0x01, 0x80, 0x02, 0x5A, 0x9B, 0x11, 0x4E]),
            (18, [0x5F, 0x03, 0x50, 0x0C, 0xA0, 0xF1, 0x07, 0xFE, 0x80]),
        ] {
            let file = write_xqf_for_test(version, keys, &start_points(), &LINE, 1, red);
            let g = read_xqf(&file).unwrap_or_else(|e| panic!("version {version}: {e}"));
            assert_eq!(uci(&g), ["h2e2", "h9g7", "h0g2"], "version {version}");
            assert_eq!(g.fen, None, "version {version}");
            assert_eq!(g.result, Some(GameResult::Win(Color::Red)));
            assert_eq!(g.tag("Red"), Some("王"));
            // Every truncation and every single damaged byte is an error or a game, never a
            // panic.
            for cut in 0..file.len() {
                let _ = read_xqf(&file[..cut]);
            }
            for i in 0..file.len() {
                let mut bad = file.clone();
                bad[i] ^= 0x5A;
                let _ = read_xqf(&bad);
            }
        }
    }

    #[test]
    fn a_set_up_position_with_black_to_move() {
        // Red general e0 and chariot a0, Black general d9 and a soldier on e3; Black plays
        // d9d8 first, so Black is to move at the start.
        let mut points = [None; 32];
        points[4] = Some((4, 0));
        points[0] = Some((0, 0));
        points[16 + 4] = Some((3, 9));
        points[16 + 11] = Some((4, 3));
        let moves = [((3, 9), (3, 8)), ((0, 0), (0, 8))];
        let file = write_xqf_for_test(18, [0xFF, 1, 2, 3, 4, 5, 6, 7, 8], &points, &moves, 3, b"");
        let g = read_xqf(&file).unwrap();
        assert_eq!(g.fen.as_deref(), Some("3k5/9/9/9/9/9/4p4/9/9/R3K4 b - - 0 1"));
        assert_eq!(uci(&g), ["d9d8", "a0a8"]);
        assert_eq!(g.result, Some(GameResult::Draw));
    }

    #[test]
    fn damage_is_named() {
        assert_eq!(read_xqf(b"PK\x03\x04"), Err(XqfError::Signature));
        assert!(matches!(read_xqf(b"XQ\x0a"), Err(XqfError::Truncated { .. })));
        let mut file = write_xqf_for_test(10, [0; 9], &start_points(), &LINE, 0, b"");
        file[2] = 40;
        assert_eq!(read_xqf(&file), Err(XqfError::Version(40)));
        file[2] = 10;
        file[0x10 + 1] = 0; // Red's horse onto a0, the chariot's point.
        assert!(read_xqf(&file).unwrap_err().to_string().contains("two pieces"));
    }
}
