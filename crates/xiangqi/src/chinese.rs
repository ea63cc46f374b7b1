//! Chinese move notation (`炮二平五`, `马8进7`, `前车进二`): [`Position::parse_chinese`] reads
//! it and checks legality, [`Position::to_chinese`] writes it.
//!
//! # The notation
//! Sources: the Chinese Xiangqi Association's competition rules (中国象棋协会《象棋竞赛规则》,
//! the chapter on recording a game, 记录方法), and the World Xiangqi Federation's notation page
//! (<http://www.wxf.org/xq/computer/wxf_notation.html>), whose WXF notation is a letter-for-letter
//! transcription of the Chinese one. A Chinese move is therefore read as the WXF move it spells
//! (see [`crate::Position::parse_wxf`]); what follows says it in our own words.
//!
//! A move is four characters: piece, file, direction, number.
//! - **Piece**: general 帅/帥 (Red) and 将/將 (Black); advisor 仕/士; elephant 相/象; horse
//!   马/馬/傌; chariot 车/車/俥; cannon 炮/砲/包; soldier 兵/卒. The traditional and simplified
//!   forms and either side's name are all read as the piece of the side to move.
//! - **File**: 1–9 counted from the mover's own right, as in WXF. Red's files are written with
//!   the Chinese numerals 一二三四五六七八九, Black's with digits, full-width `１`–`９` or ASCII
//!   `1`–`9` (both are in use). Either kind of numeral is read for either side.
//! - **Direction**: 进/進 forward, 退 backward, 平 sideways.
//! - **Number**: as in WXF, the points moved for a piece moving along a line (general, chariot,
//!   cannon, soldier) going forward or back, else the destination file.
//!
//! **Tandem pieces.** When two or more like pieces share a file, the first character names the
//! piece by its place from the front (the end nearer the opponent) and the second is the piece
//! name: 前 front and 后/後 rear of two (`前车进二`, `后炮平四`); 前, 中 (middle) and 后 of three;
//! of four or five soldiers 一二三四五 counted from the front, with 前 also read as the first
//! and 后 as the last. When soldiers stand two or more on each of two files, the piece name is
//! replaced by the file (`前七平六`, `中三进一`). The plain form (`车二进三`) is read for a piece
//! of a tandem too, when exactly one piece on that file can make the move; advisors and
//! elephants are written plainly, as the direction tells them apart.
//!
//! Anything that names no legal move, or more than one, is an error that says why; no input
//! makes the parser panic. Whitespace around the move is ignored.

use arrayvec::ArrayVec;

use crate::error::{ParseMoveError, kind_name};
use crate::moves::Move;
use crate::position::Position;
use crate::types::{Color, File, Piece, PieceKind, Square};
use crate::wxf::{Dir, moves_diagonally, target, up, wxf_file};

/// The piece a Chinese piece name denotes.
fn kind_of(c: char) -> Option<PieceKind> {
    Some(match c {
        '帅' | '帥' | '将' | '將' => PieceKind::General,
        '仕' | '士' => PieceKind::Advisor,
        '相' | '象' => PieceKind::Elephant,
        '马' | '馬' | '傌' => PieceKind::Horse,
        '车' | '車' | '俥' => PieceKind::Chariot,
        '炮' | '砲' | '包' => PieceKind::Cannon,
        '兵' | '卒' => PieceKind::Soldier,
        _ => return None,
    })
}

/// The value 1–9 of a Chinese numeral or an ASCII or full-width digit.
fn number_of(c: char) -> Option<u8> {
    const NUMERALS: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];
    if let Some(i) = NUMERALS.iter().position(|&n| n == c) {
        return Some(i as u8 + 1);
    }
    match c {
        '1'..='9' => Some(c as u8 - b'0'),
        '１'..='９' => Some((c as u32 - '０' as u32) as u8),
        _ => None,
    }
}

fn dir_of(c: char) -> Option<Dir> {
    match c {
        '进' | '進' => Some(Dir::Forward),
        '退' => Some(Dir::Backward),
        '平' => Some(Dir::Sideways),
        _ => None,
    }
}

/// Which piece of a file's column a leading place character names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// 前: the front one.
    Front,
    /// 中: the middle one of an odd number (three or five).
    Middle,
    /// 后/後: the rear one.
    Rear,
    /// 一..五: the n-th from the front (1-based).
    Nth(u8),
}

fn place_of(c: char) -> Option<Place> {
    match c {
        '前' => Some(Place::Front),
        '中' => Some(Place::Middle),
        '后' | '後' => Some(Place::Rear),
        '一' => Some(Place::Nth(1)),
        '二' => Some(Place::Nth(2)),
        '三' => Some(Place::Nth(3)),
        '四' => Some(Place::Nth(4)),
        '五' => Some(Place::Nth(5)),
        _ => None,
    }
}

impl Place {
    /// The index (front first) this place names in a column of `len`, if any.
    fn index(self, len: usize) -> Option<usize> {
        match self {
            Place::Front => Some(0),
            Place::Rear => len.checked_sub(1),
            Place::Middle => (len % 2 == 1 && len >= 3).then_some(len / 2),
            Place::Nth(n) => (usize::from(n) <= len).then(|| usize::from(n) - 1),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Place::Front => "front (前)",
            Place::Middle => "middle (中)",
            Place::Rear => "rear (后)",
            Place::Nth(_) => "numbered",
        }
    }
}

/// The Chinese name written for a piece.
const fn piece_name(piece: Piece) -> char {
    match (piece.color, piece.kind) {
        (Color::Red, PieceKind::General) => '帅',
        (Color::Black, PieceKind::General) => '将',
        (Color::Red, PieceKind::Advisor) => '仕',
        (Color::Black, PieceKind::Advisor) => '士',
        (Color::Red, PieceKind::Elephant) => '相',
        (Color::Black, PieceKind::Elephant) => '象',
        (_, PieceKind::Horse) => '马',
        (_, PieceKind::Chariot) => '车',
        (_, PieceKind::Cannon) => '炮',
        (Color::Red, PieceKind::Soldier) => '兵',
        (Color::Black, PieceKind::Soldier) => '卒',
    }
}

/// The numeral written for `n` (1–9) by `color`: Chinese for Red, an ASCII digit for Black.
fn numeral(color: Color, n: u8) -> char {
    const NUMERALS: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];
    let n = n.clamp(1, 9);
    match color {
        Color::Red => NUMERALS[usize::from(n) - 1],
        Color::Black => char::from(b'0' + n),
    }
}

/// The place character of index `i` (front first) in a column of `count` (two or more).
fn place_char(i: usize, count: usize) -> char {
    const ORDINALS: [char; 5] = ['一', '二', '三', '四', '五'];
    if count >= 4 {
        ORDINALS[i.min(4)]
    } else if i == 0 {
        '前'
    } else if i + 1 == count {
        '后'
    } else {
        '中'
    }
}

impl Position {
    /// Reads a move in Chinese notation (`炮二平五`, `马8进7`, `马８进７`, `前车进二`, `后炮平四`,
    /// `中兵进一`, `前七平六`, ...) for the side to move and checks that it is legal here.
    ///
    /// The forms accepted are described in the [module documentation](self).
    ///
    /// # Errors
    /// A [`ParseMoveError`] saying what was wrong: not four characters of the shape piece, file,
    /// direction, number (or place, piece, direction, number), an unknown piece name or numeral,
    /// no such piece on the file named, a movement the piece cannot make, a text that fits more
    /// than one legal move, or an illegal move (with the reason).
    ///
    /// # Examples
    /// ```
    /// use xiangqi::Position;
    /// let pos = Position::start();
    /// let m = pos.parse_chinese("炮二平五").unwrap();
    /// assert_eq!(m.to_string(), "h2e2");
    /// assert_eq!(pos.parse_wxf("C2.5"), Ok(m));
    /// assert!(pos.parse_chinese("炮三平五").is_err()); // no cannon on file 3
    /// ```
    pub fn parse_chinese(&self, text: &str) -> Result<Move, ParseMoveError> {
        let err = |reason: String| ParseMoveError::new(text, reason);
        let mut chars = text.trim().chars();
        let (Some(c0), Some(c1), Some(c2), Some(c3), None) =
            (chars.next(), chars.next(), chars.next(), chars.next(), chars.next())
        else {
            return Err(err("expected four characters: piece, file, direction, number (such as \
                 炮二平五) or place, piece, direction, number (such as 前车进二)"
                .into()));
        };
        let color = self.turn();
        // Which pieces the first two characters may name.
        let candidates: ArrayVec<Square, 10>;
        let kind;
        if let Some(k) = kind_of(c0) {
            kind = k;
            let n = number_of(c1).ok_or_else(|| {
                err(format!("after the piece name comes a file numeral 1-9, not {c1:?}"))
            })?;
            let piece = Piece::new(color, kind);
            candidates = File::new(crate::wxf::file_index(color, n) as u8)
                .map(|file| self.wxf_column(piece, file))
                .unwrap_or_default();
            if candidates.is_empty() {
                return Err(err(format!("{color} has no {} on file {n}", kind_name(kind))));
            }
        } else if let Some(place) = place_of(c0) {
            let (k, file) = if let Some(k) = kind_of(c1) {
                (k, None)
            } else if let Some(n) = number_of(c1) {
                (PieceKind::Soldier, Some(n))
            } else {
                return Err(err(format!(
                    "after a place character {c0:?} comes a piece name, or a soldier's file, \
                     not {c1:?}"
                )));
            };
            kind = k;
            let piece = Piece::new(color, kind);
            let tandems = self.wxf_tandems(piece);
            let mut found = ArrayVec::new();
            let mut any_column = false;
            for (n, col) in &tandems {
                if file.is_some_and(|f| f != *n) {
                    continue;
                }
                any_column = true;
                if let Some(i) = place.index(col.len()) {
                    found.push(col[i]);
                }
            }
            if !any_column {
                return Err(err(match file {
                    Some(n) => format!("{color} has not two soldiers or more on file {n}"),
                    None => format!(
                        "{color} has no two {}s on one file, so the {} one names none",
                        kind_name(kind),
                        place.name()
                    ),
                }));
            }
            if found.is_empty() {
                return Err(err(format!(
                    "{color} has no {} {} {}",
                    place.name(),
                    kind_name(kind),
                    match file {
                        Some(n) => format!("on file {n}"),
                        None => "in a column".into(),
                    }
                )));
            }
            candidates = found;
        } else {
            return Err(err(format!(
                "a move starts with a piece name (车马相仕帅炮兵...) or a place (前中后一二三四五), \
                 not {c0:?}"
            )));
        }
        let dir = dir_of(c2).ok_or_else(|| {
            err(format!(
                "the third character {c2:?} must be a direction: 进 (forward), 退 (backward) or \
                 平 (sideways)"
            ))
        })?;
        let n = number_of(c3)
            .ok_or_else(|| err(format!("the last character {c3:?} must be a numeral 1-9")))?;
        self.wxf_resolve(Piece::new(color, kind), &candidates, dir, n).map_err(err)
    }

    /// Writes a legal move in Chinese notation: simplified piece names (帅仕相马车炮兵 for Red,
    /// 将士象马车炮卒 for Black), Chinese numerals for Red and ASCII digits for Black, 前/中/后
    /// for two or three like pieces on a file and 一..五 for four or five soldiers.
    ///
    /// `m` should be legal here. For any other move the text is unspecified but this does not
    /// panic; if the origin is empty, the UCI form is returned.
    ///
    /// # Examples
    /// ```
    /// use xiangqi::Position;
    /// let mut pos = Position::start();
    /// let m = pos.parse_uci("h2e2").unwrap();
    /// assert_eq!(pos.to_chinese(m), "炮二平五");
    /// pos.play(m).unwrap();
    /// assert_eq!(pos.to_chinese(pos.parse_uci("h9g7").unwrap()), "马8进7");
    /// ```
    pub fn to_chinese(&self, m: Move) -> String {
        let (from, to) = (m.from(), m.to());
        let Some(piece) = self.piece_at(from) else {
            return m.to_string();
        };
        let color = piece.color;
        let forward = (to.rank().index() as i32 - from.rank().index() as i32) * up(color);
        let (dir, n, dir_char) = if moves_diagonally(piece.kind) {
            if forward > 0 {
                (Dir::Forward, wxf_file(color, to.file()), '进')
            } else {
                (Dir::Backward, wxf_file(color, to.file()), '退')
            }
        } else if forward > 0 {
            (Dir::Forward, forward as u8, '进')
        } else if forward < 0 {
            (Dir::Backward, (-forward) as u8, '退')
        } else {
            (Dir::Sideways, wxf_file(color, to.file()), '平')
        };
        let file_numeral = numeral(color, wxf_file(color, from.file()));
        let col = self.wxf_column(piece, from.file());
        let count = col.len();
        let i = col.iter().position(|&s| s == from).unwrap_or(0);
        let name = piece_name(piece);
        let [a, b] = if count < 2 {
            [name, file_numeral]
        } else {
            match piece.kind {
                PieceKind::Soldier if self.wxf_tandems(piece).len() >= 2 => {
                    [place_char(i, count), file_numeral]
                }
                PieceKind::Advisor | PieceKind::Elephant => {
                    let clash = col.iter().any(|&other| {
                        other != from
                            && target(other, piece, dir, n)
                                .is_ok_and(|t| self.is_legal(Move::new(other, t)))
                    });
                    if clash { [place_char(i, count), name] } else { [name, file_numeral] }
                }
                _ => [place_char(i, count), name],
            }
        };
        [a, b, dir_char, numeral(color, n)].iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Validation;

    fn pos(fen: &str) -> Position {
        Position::from_fen(fen).unwrap()
    }

    /// `text` reads as the UCI move `uci`, and the move is written as `written`.
    #[track_caller]
    fn check(p: &Position, text: &str, uci: &str, written: &str) {
        let m = p.parse_chinese(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(m.to_string(), uci, "{text}");
        assert_eq!(p.to_chinese(m), written, "{text}");
    }

    #[track_caller]
    fn refuse(p: &Position, text: &str, why: &str) {
        let e = p.parse_chinese(text).expect_err(text).to_string();
        assert!(e.contains(why), "{text}: {e}");
    }

    #[test]
    fn opening_moves_from_the_rule_text() {
        // Red's files count from Red's right: file 二 is h, 五 is e, 三 is g; Black's from
        // Black's right: file 8 is b, 7 is c, 2 is h.
        let p = Position::start();
        check(&p, "炮二平五", "h2e2", "炮二平五");
        check(&p, "炮二進四", "h2h6", "炮二进四");
        check(&p, "砲二平五", "h2e2", "炮二平五");
        check(&p, "包二平五", "h2e2", "炮二平五");
        check(&p, "马二进三", "h0g2", "马二进三");
        check(&p, "馬二進三", "h0g2", "马二进三");
        check(&p, "傌二进一", "h0i2", "马二进一");
        check(&p, "车九进一", "a0a1", "车九进一");
        check(&p, "俥九進二", "a0a2", "车九进二");
        check(&p, "相三进五", "g0e2", "相三进五");
        check(&p, "象七进五", "c0e2", "相七进五");
        check(&p, "仕四进五", "f0e1", "仕四进五");
        check(&p, "士六进五", "d0e1", "仕六进五");
        check(&p, "兵七进一", "c3c4", "兵七进一");
        check(&p, "帅五进一", "e0e1", "帅五进一");
        check(&p, "帥五进一", "e0e1", "帅五进一");
        check(&p, " 炮二平五 ", "h2e2", "炮二平五");
        // Numerals of either kind for either side.
        check(&p, "炮2平5", "h2e2", "炮二平五");
        check(&p, "炮２平５", "h2e2", "炮二平五");

        let mut b = p;
        b.play(p.parse_uci("h2e2").unwrap()).unwrap();
        check(&b, "马8进7", "h9g7", "马8进7");
        check(&b, "马８进７", "h9g7", "马8进7");
        check(&b, "馬８進７", "h9g7", "马8进7");
        check(&b, "马2进3", "b9c7", "马2进3");
        check(&b, "车1进1", "a9a8", "车1进1");
        check(&b, "車９進１", "i9i8", "车9进1");
        check(&b, "炮8平5", "h7e7", "炮8平5");
        check(&b, "砲２平５", "b7e7", "炮2平5");
        check(&b, "卒7进1", "g6g5", "卒7进1");
        check(&b, "象3进5", "c9e7", "象3进5");
        check(&b, "士4进5", "d9e8", "士4进5");
        check(&b, "将5进1", "e9e8", "将5进1");
        check(&b, "將5进1", "e9e8", "将5进1");
        check(&b, "马二进三", "b9c7", "马2进3");
    }

    #[test]
    fn tandem_pieces() {
        // Red chariots on e5 (front) and e2 (rear), both on Red's file 五.
        let p = pos("3k5/9/9/9/4R4/9/9/4R4/9/5K3 w - - 0 1");
        check(&p, "前车进二", "e5e7", "前车进二");
        check(&p, "後車退一", "e2e1", "后车退一");
        check(&p, "后车平四", "e2f2", "后车平四");
        check(&p, "前车平六", "e5d5", "前车平六");
        refuse(&p, "车五进一", "ambiguous");
        check(&p, "车五进四", "e5e9", "前车进四"); // only the front one can
        refuse(&p, "中车进一", "no middle");
        refuse(&p, "前炮进一", "no two cannons");

        // Black cannons on d5 (the front one for Black: nearer Red) and d7, Black's file 4.
        let p = pos("4k4/9/3c5/9/3c5/9/9/9/9/5K3 b - - 0 1");
        check(&p, "前炮平5", "d5e5", "前炮平5");
        check(&p, "后炮进1", "d7d6", "后炮进1");
        check(&p, "后炮平３", "d7c7", "后炮平3");
    }

    #[test]
    fn tandem_soldiers() {
        // Red soldiers c7, c6, c5 on Red's file 七: front, middle, rear.
        let p = pos("4k4/9/2P6/2P6/2P6/9/9/9/9/3K5 w - - 0 1");
        check(&p, "前兵平六", "c7d7", "前兵平六");
        check(&p, "中兵平六", "c6d6", "中兵平六");
        check(&p, "后兵平六", "c5d5", "后兵平六");
        check(&p, "一兵进一", "c7c8", "前兵进一");
        check(&p, "三兵平八", "c5b5", "后兵平八");
        refuse(&p, "四兵平八", "no numbered");

        // Four soldiers on one file (c8..c5): 一二三四 from the front.
        let p = pos("4k4/2P6/2P6/2P6/2P6/9/9/9/9/3K5 w - - 0 1");
        check(&p, "一兵平六", "c8d8", "一兵平六");
        check(&p, "前兵平六", "c8d8", "一兵平六");
        check(&p, "二兵平六", "c7d7", "二兵平六");
        check(&p, "三兵平六", "c6d6", "三兵平六");
        check(&p, "四兵平六", "c5d5", "四兵平六");
        check(&p, "后兵平六", "c5d5", "四兵平六");
        refuse(&p, "中兵平六", "no middle");

        // Soldiers on two files: c7, c6, c5 (七) and g6, g5 (三): the file replaces the name.
        let p = pos("4k4/9/2P6/2P3P2/2P3P2/9/9/9/9/3K5 w - - 0 1");
        check(&p, "前七平六", "c7d7", "前七平六");
        check(&p, "中七平六", "c6d6", "中七平六");
        check(&p, "后七平六", "c5d5", "后七平六");
        check(&p, "前三平四", "g6f6", "前三平四");
        check(&p, "后三平四", "g5f5", "后三平四");
        refuse(&p, "前兵进一", "ambiguous");
        refuse(&p, "中三平四", "no middle");
        refuse(&p, "前五平四", "not two soldiers");
    }

    #[test]
    fn errors_name_the_fault() {
        let p = Position::start();
        refuse(&p, "", "four characters");
        refuse(&p, "炮二平", "four characters");
        refuse(&p, "炮二平五五", "four characters");
        refuse(&p, "C2.5", "starts with a piece name");
        refuse(&p, "炮X平五", "file numeral");
        refuse(&p, "炮二走五", "direction");
        refuse(&p, "炮二平零", "numeral 1-9");
        refuse(&p, "炮三平五", "no cannon on file 3");
        refuse(&p, "炮二平二", "must leave file 2");
        refuse(&p, "马二平三", "never moves sideways");
        refuse(&p, "车一退一", "leaves the board");
        refuse(&p, "炮二进五五", "four characters");
        refuse(&p, "前马进三", "no two horses");
        refuse(&p, "前X进三", "piece name");
        refuse(&p, "车一进三", "illegal");
    }

    /// A deterministic linear congruential generator (Knuth's MMIX constants).
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) % n as u64) as usize
        }
    }

    /// Every legal move round-trips, agrees with its WXF text, and no two share a text.
    fn check_round_trip(p: &Position) {
        let moves = p.legal_moves();
        let mut texts: Vec<String> = Vec::with_capacity(moves.len());
        for &m in &moves {
            let t = p.to_chinese(m);
            assert_eq!(t.chars().count(), 4, "{t} for {m} in {p:?}");
            assert_eq!(p.parse_chinese(&t), Ok(m), "{t} for {m} in {p:?}");
            texts.push(t);
        }
        texts.sort();
        let n = texts.len();
        texts.dedup();
        assert_eq!(texts.len(), n, "duplicate Chinese texts in {p:?}");
    }

    #[test]
    fn round_trip_on_random_playouts_and_composed_positions() {
        let mut rng = Lcg(0x5eed);
        for _ in 0..40 {
            let mut p = Position::start();
            for _ in 0..200 {
                check_round_trip(&p);
                let moves = p.legal_moves();
                if moves.is_empty() {
                    break;
                }
                p.play(moves[rng.below(moves.len())]).unwrap();
            }
        }
        // Soldiers packed on one or two files (three to five on a file).
        let mut tested = 0;
        while tested < 1_500 {
            let mut setup = crate::position::Setup::empty();
            setup.board[4] = Some(Piece::new(Color::Red, PieceKind::General));
            setup.board[84] = Some(Piece::new(Color::Black, PieceKind::General));
            for color in Color::ALL {
                let files = [rng.below(9), rng.below(9)];
                for _ in 0..5 {
                    let r = 3 + rng.below(6);
                    let sq = r * 9 + files[rng.below(2)];
                    if setup.board[sq].is_none() {
                        setup.board[sq] = Some(Piece::new(color, PieceKind::Soldier));
                    }
                }
                for kind in [PieceKind::Chariot, PieceKind::Cannon, PieceKind::Horse] {
                    for _ in 0..2 {
                        let sq = rng.below(10) * 9 + files[0];
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
        }
    }

    #[test]
    fn parser_never_panics() {
        let alphabet: Vec<char> =
            "车马相仕帅炮兵卒將前中后一二三四五六七八九进退平123456789１９X 。\u{0}"
                .chars()
                .collect();
        let p = pos("4k4/9/2P6/2P3P2/2P3P2/9/9/9/9/3K5 w - - 0 1");
        let positions = [Position::start(), p];
        let mut rng = Lcg(7);
        for _ in 0..50_000 {
            let p = &positions[rng.below(2)];
            let len = if rng.below(4) == 0 { rng.below(7) } else { 4 };
            let text: String = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            if let Ok(m) = p.parse_chinese(&text) {
                assert!(p.is_legal(m), "{text} read as illegal {m}");
                assert_eq!(p.parse_chinese(&p.to_chinese(m)), Ok(m));
            }
        }
    }
}
