//! Game records written by other programs, read for training: PGN collections of xiangqi (moves
//! in ICCS, UCI, WXF or Chinese) and janggi (coordinates, passes, Fairy-Stockfish's SAN), and
//! XQStudio's binary XQF files, encrypted variants included.
//!
//! Reading is in two steps. [`pgn::read_pgn`] and [`xqf::read_xqf`] turn a file's bytes into
//! [`SourceGame`]s: tags, the start position's FEN, the result, and the main line's moves as
//! written. [`replay`] then plays a game's moves under a rule set, reading each move's text in
//! whichever notation it is written ([`ImportGame::read_move`]), and stops at the first move
//! that is malformed or illegal, naming it. Nothing here panics on damaged input: a reader
//! bounds every length it takes from a file, and a game that cannot be read is reported, never
//! half-imported.

pub mod pgn;
pub mod xqf;

use std::borrow::Cow;

use xiangqi::env::PlaneInputs;
use xiangqi::{Color, Move, Outcome, OutcomeReason, PieceKind, RankBase, Square};

use crate::game::{GameEnv, GameRules};
use crate::record::{GameRecord, SampleTarget, parse_iccs};

/// A move of a [`SourceGame`]: text to read in the position it is played in, or a move a binary
/// format gives by its points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordedMove {
    /// Move text as written (`H2-E2`, `h2e2`, `C2.5`, `炮二平五`, `Nc3`, ...).
    Text(String),
    /// A move given by origin and target (XQF).
    Points(Move),
}

/// A game's result as its record states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameResult {
    /// `1-0` or `0-1`: this side won.
    Win(Color),
    /// `1/2-1/2`.
    Draw,
}

impl GameResult {
    /// Reads a PGN result (`1-0`, `0-1`, `1/2-1/2`, also `½-½`); `None` for `*` or anything else.
    pub fn from_pgn(text: &str) -> Option<GameResult> {
        match text.trim() {
            "1-0" => Some(GameResult::Win(Color::Red)),
            "0-1" => Some(GameResult::Win(Color::Black)),
            "1/2-1/2" | "½-½" => Some(GameResult::Draw),
            _ => None,
        }
    }

    /// The PGN form.
    pub const fn as_pgn(self) -> &'static str {
        match self {
            GameResult::Win(Color::Red) => "1-0",
            GameResult::Win(Color::Black) => "0-1",
            GameResult::Draw => "1/2-1/2",
        }
    }
}

/// One game of a file, as written: not yet checked against the rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceGame {
    /// The game's number in its file, from 1.
    pub number: usize,
    /// The tag pairs in file order (`Event`, `Red`, `Result`, ...).
    pub tags: Vec<(String, String)>,
    /// The start position's FEN (the `FEN` tag; XQF's set-up), `None` for the standard start.
    pub fen: Option<String>,
    /// The result (the `Result` tag, else the move text's terminator; XQF's result byte);
    /// `None` when unknown (`*`).
    pub result: Option<GameResult>,
    /// The main line, variations left out.
    pub moves: Vec<RecordedMove>,
}

impl SourceGame {
    /// The value of tag `name` (case-insensitive), if present.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Decodes a text file: UTF-8 (a byte-order mark is dropped) when the bytes are valid UTF-8,
/// else GBK (GB2312/GB18030, the encoding of older Chinese tools' files). Returns the text and
/// the encoding's name. Never fails: bytes that are neither decode to U+FFFD.
pub fn decode_text(bytes: &[u8]) -> (Cow<'_, str>, &'static str) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => (Cow::Borrowed(s), "UTF-8"),
        Err(_) => {
            // encoding_rs's GBK decoder reads all of GB18030, which extends GBK and GB2312.
            let (text, _) = encoding_rs::GBK.decode_without_bom_handling(bytes);
            (text, "GBK")
        }
    }
}

/// A move of a game that could not be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayError {
    /// The move's number among the game's plies, from 1 (0: the start position itself).
    pub ply: usize,
    /// The full-move number of the position the move was played in (as PGN numbers moves).
    pub move_number: u32,
    /// The move as written.
    pub text: String,
    /// Why it could not be played.
    pub reason: String,
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ply == 0 {
            write!(f, "start position: {}", self.reason)
        } else {
            write!(
                f,
                "move {} (ply {}) '{}': {}",
                self.move_number, self.ply, self.text, self.reason
            )
        }
    }
}

/// A game replayed under the rules.
#[derive(Debug)]
pub struct Replayed<G: GameEnv> {
    /// The start position.
    pub start: G::Position,
    /// The moves played.
    pub moves: Vec<Move>,
    /// The game after the last move (its verdict, if the rules gave one).
    pub game: G,
    /// Before each move: the position as a shard stores it and its legal moves
    /// ([`Move::to_u16`]).
    pub positions: Vec<(PlaneInputs, Vec<u16>)>,
}

/// A game whose moves can be read from the notations of game records.
pub trait ImportGame: GameEnv {
    /// The rank numbers of plain coordinates (`h2e2`) tried first when a game's text does not
    /// tell (a rank `0` means 0–9, a rank `10` means 1–10): xiangqi's Pikafish and UCCI
    /// dialect counts from 0, Fairy-Stockfish (the janggi tools) from 1.
    const PREFERRED_BASE: RankBase;

    /// Reads notation only this game has (xiangqi: WXF and Chinese; janggi: the pass words),
    /// legality checked. `None` if `text` is no such notation.
    fn read_native(&self, text: &str) -> Option<Result<Move, String>>;

    /// Reads one move of any notation the importer knows, in the current position, checked for
    /// legality: ICCS (`H2-E2`), UCI coordinates with `base`'s ranks (`h2e2`), this game's own
    /// notations ([`ImportGame::read_native`]), then SAN as Fairy-Stockfish writes it
    /// (`Nc3`, `Rxa10+`, `e4`; ranks 1–10).
    ///
    /// # Errors
    /// What is wrong with the text, or why the move is illegal.
    fn read_move(&self, text: &str, base: RankBase) -> Result<Move, String> {
        let text = text.trim_end_matches(['!', '?']);
        let m = if is_iccs(text) {
            parse_iccs(text).map_err(|e| e.to_string())?
        } else if is_uci(text) {
            Self::move_from_uci(&text.to_ascii_lowercase(), base)?
        } else if let Some(read) = self.read_native(text) {
            return read;
        } else if let Some(m) = read_san(self, text)? {
            return Ok(m);
        } else {
            return Err(format!("'{}' is no move in any known notation", clip(text)));
        };
        if self.legal_moves_vec().contains(&m) {
            Ok(m)
        } else {
            let mut probe = self.without_history();
            match probe.play_checked(m) {
                Err(reason) => Err(format!("illegal {}: {reason}", clip(text))),
                Ok(_) => Err(format!("{} is not legal here (the game is over)", clip(text))),
            }
        }
    }
}

/// At most 24 characters of `text`, for messages.
fn clip(text: &str) -> String {
    text.chars().take(24).collect()
}

/// `H2-E2` or `h2-e2`.
fn is_iccs(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 5
        && b[2] == b'-'
        && matches!(b[0].to_ascii_lowercase(), b'a'..=b'i')
        && b[1].is_ascii_digit()
        && matches!(b[3].to_ascii_lowercase(), b'a'..=b'i')
        && b[4].is_ascii_digit()
}

/// `h2e2`, `a10a9`, `H2E2`: two points, a file letter and one or two digits each.
fn is_uci(t: &str) -> bool {
    let b = t.as_bytes();
    if !(4..=6).contains(&b.len()) || !t.is_ascii() {
        return false;
    }
    let Some(split) = (1..b.len()).find(|&i| b[i].is_ascii_alphabetic()) else {
        return false;
    };
    let point = |p: &[u8]| {
        p.len() >= 2
            && p.len() <= 3
            && matches!(p[0].to_ascii_lowercase(), b'a'..=b'i')
            && p[1..].iter().all(u8::is_ascii_digit)
    };
    point(&b[..split]) && point(&b[split..])
}

/// The piece kind of a SAN letter (Fairy-Stockfish's letters for both games, and WXF's).
fn san_kind(c: u8) -> Option<PieceKind> {
    Some(match c {
        b'K' => PieceKind::General,
        b'A' => PieceKind::Advisor,
        b'B' | b'E' => PieceKind::Elephant,
        b'N' | b'H' => PieceKind::Horse,
        b'R' => PieceKind::Chariot,
        b'C' => PieceKind::Cannon,
        b'P' => PieceKind::Soldier,
        _ => return None,
    })
}

/// The piece kind on `sq` of a compact board ([`xiangqi::env::encode_board_compact`]).
fn kind_at(board: &[u8; 90], sq: Square) -> Option<PieceKind> {
    let code = board[sq.index()];
    (1..=14).contains(&code).then(|| PieceKind::ALL[usize::from(code - 1) % 7])
}

/// Reads SAN with ranks 1–10 (Fairy-Stockfish's default notation, which pychess-variants writes
/// for janggi): `[piece letter][origin file and/or rank][x or -]target[+ or #]`, no letter for a
/// soldier. `Ok(None)` if `text` does not have that shape.
fn read_san<G: GameEnv>(game: &G, text: &str) -> Result<Option<Move>, String> {
    let t = text.trim_end_matches(['+', '#']).as_bytes();
    if t.is_empty() || !t.is_ascii() {
        return Ok(None);
    }
    let (kind, rest) = match san_kind(t[0]) {
        Some(k) => (k, &t[1..]),
        None => (PieceKind::Soldier, t),
    };
    // The target: the last file letter and the digits after it.
    let Some(tf) = rest.iter().rposition(|b| matches!(b, b'a'..=b'i')) else {
        return Ok(None);
    };
    let rank_of = |digits: &[u8]| -> Option<u8> {
        if digits.is_empty() || digits.len() > 2 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n: u8 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        (1..=10).contains(&n).then(|| n - 1)
    };
    let Some(to_rank) = rank_of(&rest[tf + 1..]) else {
        return Ok(None);
    };
    let to_file = rest[tf] - b'a';
    // What stands between the letter and the target: an optional origin file and rank.
    let mut mid = &rest[..tf];
    if let Some((&last, head)) = mid.split_last() {
        if last == b'x' || last == b'-' {
            mid = head;
        }
    }
    let mut from_file = None;
    let mut from_rank = None;
    if let Some((&f, tail)) = mid.split_first() {
        if matches!(f, b'a'..=b'i') {
            from_file = Some(f - b'a');
            mid = tail;
        }
    }
    if !mid.is_empty() {
        match rank_of(mid) {
            Some(r) => from_rank = Some(r),
            None => return Ok(None),
        }
    }
    let to = Square::new(to_rank * 9 + to_file).ok_or("target off the board")?;
    let board = game.plane_inputs().board;
    let mut found: Option<Move> = None;
    for m in game.legal_moves_vec() {
        let from = m.from();
        if m.to() != to
            || kind_at(&board, from) != Some(kind)
            || from_file.is_some_and(|f| from.file().index() as u8 != f)
            || from_rank.is_some_and(|r| from.rank().index() as u8 != r)
        {
            continue;
        }
        if let Some(first) = found {
            return Err(format!("'{}' is ambiguous: it fits both {first} and {m}", clip(text)));
        }
        found = Some(m);
    }
    found
        .map(Some)
        .ok_or_else(|| format!("'{}' names no legal move here (read as SAN)", clip(text)))
}

impl ImportGame for xiangqi::Game {
    const PREFERRED_BASE: RankBase = RankBase::Zero;

    fn read_native(&self, text: &str) -> Option<Result<Move, String>> {
        let pos = self.position();
        if !text.is_ascii() {
            return Some(pos.parse_chinese(text).map_err(|e| e.to_string()));
        }
        let b = text.as_bytes();
        // WXF: four characters, the third a direction (`C2.5`, `R+.3`, `H8+7`).
        if b.len() == 4 && matches!(b[2], b'+' | b'-' | b'.' | b'=') && b[3].is_ascii_digit() {
            return Some(pos.parse_wxf(text).map_err(|e| e.to_string()));
        }
        None
    }
}

impl ImportGame for xiangqi::janggi::Game {
    const PREFERRED_BASE: RankBase = RankBase::One;

    fn read_native(&self, text: &str) -> Option<Result<Move, String>> {
        // A pass as Fairy-Stockfish's xboard mode (`@@@@`), UCI's null move or people write it.
        if matches!(text, "@@@@" | "0000" | "pass" | "Pass" | "PASS" | "--") {
            let pass = self.legal_moves_vec().into_iter().find(|m| m.from() == m.to());
            return Some(pass.ok_or_else(|| "a pass is not legal here".to_string()));
        }
        None
    }
}

/// Whether a coordinate token pins the rank numbers: `Some(Zero)` for a rank 0, `Some(One)` for
/// a rank 10.
fn base_hint(text: &str) -> Option<RankBase> {
    if !is_uci(text) {
        return None;
    }
    let b = text.as_bytes();
    let split = (1..b.len()).find(|&i| b[i].is_ascii_alphabetic())?;
    for p in [&b[1..split], &b[split + 1..]] {
        match p {
            b"0" => return Some(RankBase::Zero),
            b"10" => return Some(RankBase::One),
            _ => {}
        }
    }
    None
}

/// Replays `source` under `rules`: its start position, then each move read in the position
/// it is played in. Coordinate moves (`h2e2`) use the rank numbers the game's text pins (a rank
/// 0 or 10), else [`ImportGame::PREFERRED_BASE`] and, if that fails, the other.
///
/// # Errors
/// A [`ReplayError`] naming the first move that is malformed or illegal (or, with `ply` 0, a
/// bad start position).
pub fn replay<G: ImportGame>(
    source: &SourceGame,
    rules: G::Rules,
) -> Result<Replayed<G>, ReplayError> {
    let start = match &source.fen {
        Some(fen) => G::position_from_fen_lenient(fen, rules).map_err(|reason| ReplayError {
            ply: 0,
            move_number: 0,
            text: String::new(),
            reason: format!("bad FEN: {reason}"),
        })?,
        None => G::start_position(rules),
    };
    let pinned = source.moves.iter().find_map(|m| match m {
        RecordedMove::Text(t) => base_hint(t),
        RecordedMove::Points(_) => None,
    });
    let has_coordinates =
        source.moves.iter().any(|m| matches!(m, RecordedMove::Text(t) if is_uci(t)));
    let first = pinned.unwrap_or(G::PREFERRED_BASE);
    let result = replay_with::<G>(source, &start, rules, first);
    match result {
        Err(e) if pinned.is_none() && has_coordinates => {
            let other = match first {
                RankBase::Zero => RankBase::One,
                RankBase::One => RankBase::Zero,
            };
            replay_with::<G>(source, &start, rules, other).map_err(|_| e)
        }
        r => r,
    }
}

fn replay_with<G: ImportGame>(
    source: &SourceGame,
    start: &G::Position,
    rules: G::Rules,
    base: RankBase,
) -> Result<Replayed<G>, ReplayError> {
    let mut game = G::new_game(start.clone(), rules);
    let mut moves = Vec::with_capacity(source.moves.len());
    let mut positions = Vec::with_capacity(source.moves.len());
    for (i, recorded) in source.moves.iter().enumerate() {
        let fail = |text: String, reason: String, game: &G| ReplayError {
            ply: i + 1,
            move_number: G::position_fullmove(game.position()),
            text,
            reason,
        };
        let (m, text) = match recorded {
            RecordedMove::Text(t) => match game.read_move(t, base) {
                Ok(m) => (m, t.clone()),
                Err(reason) => return Err(fail(clip(t), reason, &game)),
            },
            RecordedMove::Points(m) => (*m, m.to_string()),
        };
        let inputs = game.plane_inputs();
        let legal: Vec<u16> = game.legal_moves_vec().iter().map(|m| m.to_u16()).collect();
        if let Err(reason) = game.play_checked(m) {
            return Err(fail(text, reason, &game));
        }
        positions.push((inputs, legal));
        moves.push(m);
    }
    Ok(Replayed { start: start.clone(), moves, game, positions })
}

/// Why a game was not imported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// A move is malformed or illegal (or the start position is bad).
    Illegal(ReplayError),
    /// The game has no moves.
    NoMoves,
    /// Neither the record nor the rules say how the game ended.
    NoResult,
    /// The record's result is not the rules' verdict on its final position.
    Contradicts {
        /// The record's result.
        stated: GameResult,
        /// The rules' verdict.
        rules: Outcome,
    },
    /// The record is of another game (its `Game` or `Variant` tag).
    OtherGame(String),
}

impl Skip {
    /// A short name of the reason, for summaries (`illegal move`, `no moves`, ...).
    pub const fn kind(&self) -> &'static str {
        match self {
            Skip::Illegal(_) => "illegal move",
            Skip::NoMoves => "no moves",
            Skip::NoResult => "no result",
            Skip::Contradicts { .. } => "result contradicts the rules",
            Skip::OtherGame(_) => "another game",
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Illegal(e) => write!(f, "{e}"),
            Skip::NoMoves => write!(f, "no moves"),
            Skip::NoResult => write!(f, "no result (the Result tag is missing or '*')"),
            Skip::Contradicts { stated, rules } => write!(
                f,
                "the record says {} but the rules end it {} ({})",
                stated.as_pgn(),
                rules.result_str(),
                rules.reason()
            ),
            Skip::OtherGame(tag) => write!(f, "a game of another kind ('{tag}')"),
        }
    }
}

/// An imported game: its record for a replay shard.
#[derive(Debug)]
pub struct Imported<G: GameEnv> {
    /// One sample per position before a move: the policy target is the move played
    /// (probability 1 among the legal moves), the root value the game's result for the side to
    /// move (no search valued it), every sample a full-search one.
    pub record: GameRecord<G>,
    /// Whether the outcome is the rules' verdict on the final position; otherwise it comes from
    /// the record's result with a placeholder reason (`resignation` for a win, `length_cap`
    /// for a draw), which a shard should store as an unknown ending.
    pub rules_verdict: bool,
}

/// Whether the tags say the game is of another kind than `G` (`[Game "Janggi"]` or
/// `[Variant "janggi"]` in a xiangqi import, `Chinese Chess` or `xiangqi` in a janggi one).
fn other_game<G: GameEnv>(source: &SourceGame) -> Option<String> {
    for name in ["Variant", "Game"] {
        if let Some(v) = source.tag(name) {
            let l = v.to_ascii_lowercase();
            let janggi = l.contains("janggi");
            let xiangqi = l.contains("xiangqi") || l.contains("chinese");
            let other = match G::KIND {
                crate::game::GameKind::Xiangqi => janggi,
                crate::game::GameKind::Janggi => xiangqi,
            };
            if other {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// Replays `source` under `rules` and builds its record (see [`Imported`]) with number
/// `game_id`.
///
/// # Errors
/// A [`Skip`] saying why the game cannot be imported.
pub fn import_game<G: ImportGame>(
    source: &SourceGame,
    rules: G::Rules,
    game_id: u64,
) -> Result<Imported<G>, Skip> {
    if let Some(tag) = other_game::<G>(source) {
        return Err(Skip::OtherGame(tag));
    }
    let replayed = replay::<G>(source, rules).map_err(Skip::Illegal)?;
    if replayed.moves.is_empty() {
        return Err(Skip::NoMoves);
    }
    let (outcome, rules_verdict) = match (replayed.game.outcome(), source.result) {
        (Some(o), None) => (o, true),
        (Some(o), Some(stated)) => {
            let agrees = match stated {
                GameResult::Win(c) => o.winner() == Some(c),
                GameResult::Draw => o.winner().is_none(),
            };
            if !agrees {
                return Err(Skip::Contradicts { stated, rules: o });
            }
            (o, true)
        }
        (None, Some(GameResult::Win(winner))) => {
            (Outcome::Win { winner, reason: OutcomeReason::Resignation }, false)
        }
        (None, Some(GameResult::Draw)) => {
            (Outcome::Draw { reason: OutcomeReason::LengthCap }, false)
        }
        (None, None) => return Err(Skip::NoResult),
    };
    let final_material = Some(crate::record::material_of(&replayed.game));
    let Replayed { start, moves, positions, .. } = replayed;
    let samples = positions
        .into_iter()
        .zip(&moves)
        .enumerate()
        .map(|(ply, ((inputs, legal), played))| {
            let code = played.to_u16();
            let probs = legal.iter().map(|&m| if m == code { 1.0 } else { 0.0 }).collect();
            let value = match outcome.winner() {
                Some(w) if w == inputs.turn => 1.0,
                Some(_) => -1.0,
                None => 0.0,
            };
            SampleTarget {
                ply: ply as u32,
                inputs,
                moves: legal,
                probs,
                full_search: true,
                root_value: value,
                policy_surprise: None,
            }
        })
        .collect();
    let record = GameRecord {
        game_id,
        rules,
        start,
        moves,
        outcome,
        samples,
        resign_disabled: false,
        would_have_resigned: None,
        lowest_value: [1.0; 2],
        final_material,
    };
    Ok(Imported { record, rules_verdict })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_game(fen: Option<&str>, moves: &[&str]) -> SourceGame {
        SourceGame {
            number: 1,
            fen: fen.map(str::to_string),
            moves: moves.iter().map(|m| RecordedMove::Text(m.to_string())).collect(),
            ..SourceGame::default()
        }
    }

    #[test]
    fn every_xiangqi_notation_names_the_same_moves() {
        // Cannon h2 to the centre, Black's horse h9 to g7, Red's horse h0 to g2, Black's
        // chariot i9 to h9: written in ICCS, UCI, WXF, Chinese (both digit forms) and SAN.
        let expected = ["h2e2", "h9g7", "h0g2", "i9h9"];
        for line in [
            ["H2-E2", "H9-G7", "H0-G2", "I9-H9"],
            ["h2e2", "h9g7", "h0g2", "i9h9"],
            ["C2.5", "H8+7", "H2+3", "R9.8"],
            ["炮二平五", "马8进7", "马二进三", "车9平8"],
            ["炮二平五", "马８进７", "马二进三", "車９平８"],
            ["Che3", "Ng8", "Ng3", "Rh10"],
        ] {
            let r = replay::<xiangqi::Game>(&text_game(None, &line), xiangqi::RuleSet::Asian)
                .unwrap_or_else(|e| panic!("{line:?}: {e}"));
            let got: Vec<String> = r.moves.iter().map(|m| m.to_string()).collect();
            assert_eq!(got, expected, "{line:?}");
        }
        // UCI in Fairy-Stockfish's ranks 1-10 (h3e3 is h2e2), told apart by the failed try.
        let r =
            replay::<xiangqi::Game>(&text_game(None, &["h3e3", "b8e8"]), xiangqi::RuleSet::Asian)
                .unwrap();
        let got: Vec<String> = r.moves.iter().map(|m| m.to_string()).collect();
        assert_eq!(got, ["h2e2", "b7e7"]);
    }

    #[test]
    fn an_illegal_move_is_named_with_its_number() {
        let e = replay::<xiangqi::Game>(
            &text_game(None, &["H2-E2", "H9-G7", "E2-E9"]),
            xiangqi::RuleSet::Asian,
        )
        .unwrap_err();
        assert_eq!((e.ply, e.move_number), (3, 2), "{e}");
        assert!(e.reason.contains("illegal"), "{e}");
        let e = replay::<xiangqi::Game>(&text_game(None, &["Q9-Z1"]), xiangqi::RuleSet::Asian)
            .unwrap_err();
        assert_eq!(e.ply, 1);
        let e = replay::<xiangqi::Game>(&text_game(Some("bad fen"), &[]), xiangqi::RuleSet::Asian)
            .unwrap_err();
        assert_eq!(e.ply, 0);
    }

    #[test]
    fn janggi_coordinates_passes_and_san() {
        // Fairy-Stockfish's janggi start (Cho, the first player, at the bottom): the right
        // horse h1 (rank 1-10) to g3, Han's soldier a7 to b7, Cho passes, Han's horse b10 to c8.
        let rules = xiangqi::janggi::Rules::Site;
        let r = replay::<xiangqi::janggi::Game>(
            &text_game(None, &["h1g3", "a7b7", "e2e2", "b10c8"]),
            rules,
        )
        .unwrap();
        let got: Vec<String> = r.moves.iter().map(|m| m.to_string()).collect();
        assert_eq!(got, ["h0g2", "a6b6", "e1e1", "b9c7"]);
        for line in [
            ["H0-G2", "A6-B6", "E1-E1", "B9-C7"],
            ["Ng3", "ab7", "@@@@", "Nc8"],
            ["Ng3", "a7b7", "pass", "Nbc8"],
        ] {
            let r = replay::<xiangqi::janggi::Game>(&text_game(None, &line), rules)
                .unwrap_or_else(|e| panic!("{line:?}: {e}"));
            let got: Vec<String> = r.moves.iter().map(|m| m.to_string()).collect();
            assert_eq!(got, ["h0g2", "a6b6", "e1e1", "b9c7"], "{line:?}");
        }
    }

    const VOCABULARY: [&str; 24] = [
        "[Event \"x\"]",
        "[FEN \"",
        "4k4/9/9/9/9/9/9/9/4R4/3K5 w - - 0 1",
        "\"]",
        "{",
        "}",
        "(",
        ")",
        ";",
        "\n",
        "1.",
        "2...",
        "H2-E2",
        "h2e2",
        "C2.5",
        "炮二平五",
        "马８进７",
        "Nc3",
        "@@@@",
        "1-0",
        "*",
        "$1",
        "[Result \"0-1\"]",
        "e1e1",
    ];

    proptest::proptest! {
        /// Damaged files of either kind never make a reader or the replay panic.
        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
            version in 0u8..20,
        ) {
            let mut xqf = bytes.clone();
            if xqf.len() >= 3 {
                xqf[0] = b'X';
                xqf[1] = b'Q';
                xqf[2] = version;
            }
            if let Ok(g) = xqf::read_xqf(&xqf) {
                let _ = import_game::<xiangqi::Game>(&g, xiangqi::RuleSet::Asian, 0);
            }
            let (text, _) = decode_text(&bytes);
            for g in pgn::read_pgn(&text) {
                let _ = import_game::<xiangqi::Game>(&g, xiangqi::RuleSet::Asian, 0);
            }
        }

        /// PGN made of fragments of real PGN in any order never makes the reader or the replay
        /// panic, and what imports has a sample per move.
        #[test]
        fn shuffled_pgn_fragments_never_panic(picks in proptest::collection::vec(0usize..24, 0..60)) {
            let text: Vec<&str> = picks.iter().map(|&i| VOCABULARY[i]).collect();
            for g in pgn::read_pgn(&text.join(" ")) {
                if let Ok(i) = import_game::<xiangqi::Game>(&g, xiangqi::RuleSet::Asian, 0) {
                    proptest::prop_assert_eq!(i.record.samples.len(), i.record.moves.len());
                }
                let _ = import_game::<xiangqi::janggi::Game>(
                    &g,
                    xiangqi::janggi::Rules::Site,
                    0,
                );
            }
        }
    }

    #[test]
    fn imported_samples_target_the_move_played() {
        let pgn = "[Result \"0-1\"]\n1. H2-E2 H9-G7 0-1\n";
        let g = &pgn::read_pgn(pgn)[0];
        let i = import_game::<xiangqi::Game>(g, xiangqi::RuleSet::Asian, 7).unwrap();
        assert!(!i.rules_verdict);
        let r = &i.record;
        assert_eq!((r.game_id, r.samples.len()), (7, 2));
        assert_eq!(r.outcome.winner(), Some(Color::Black));
        // 44 legal moves at the start; for Black after the centre cannon 45: the h7 cannon
        // loses its capture of h0 over the h2 screen but gains h2 and h1 down its file.
        assert_eq!(r.samples[0].moves.len(), 44);
        assert_eq!(r.samples[1].moves.len(), 45);
        for (s, m) in r.samples.iter().zip(&r.moves) {
            let played = s.moves.iter().position(|&c| c == m.to_u16()).unwrap();
            assert_eq!(s.probs[played], 1.0);
            assert_eq!(s.probs.iter().sum::<f32>(), 1.0);
            assert_eq!(s.root_value, if s.inputs.turn == Color::Black { 1.0 } else { -1.0 });
        }
        // A result the rules contradict: Black mated on the board but the record says 1/2.
        let pgn = "[FEN \"3k5/7R1/9/9/9/9/9/9/9/4K3R w - - 0 1\"]\n[Result \"1/2-1/2\"]\n1. I0-I9 1/2-1/2";
        let g = &pgn::read_pgn(pgn)[0];
        let e = import_game::<xiangqi::Game>(g, xiangqi::RuleSet::Asian, 0).unwrap_err();
        assert_eq!(e.kind(), "result contradicts the rules", "{e}");
        let pgn = "[Game \"Janggi\"]\n1. E1-E1 *";
        let e = import_game::<xiangqi::Game>(&pgn::read_pgn(pgn)[0], xiangqi::RuleSet::Asian, 0)
            .unwrap_err();
        assert_eq!(e.kind(), "another game");
        let e = import_game::<xiangqi::Game>(
            &pgn::read_pgn("1. H2-E2 *")[0],
            xiangqi::RuleSet::Asian,
            0,
        )
        .unwrap_err();
        assert_eq!(e, Skip::NoResult);
    }

    #[test]
    fn gbk_text_is_decoded() {
        // "炮二平五" in GBK: 炮 C5DA, 二 B6FE, 平 C6BD, 五 CEE5.
        let bytes = b"1. \xC5\xDA\xB6\xFE\xC6\xBD\xCE\xE5";
        let (text, name) = decode_text(bytes);
        assert_eq!(name, "GBK");
        assert_eq!(text, "1. 炮二平五");
        let (text, name) = decode_text("\u{feff}1. 炮二平五".as_bytes());
        assert_eq!((text.as_ref(), name), ("1. 炮二平五", "UTF-8"));
    }
}
