//! The game interface of the framework, in two layers:
//!
//! * [`SearchGame`]: what the search needs (legal moves, play, the rules' verdict as a value,
//!   cloning). The search, the evaluator interface and the tree know nothing else.
//! * [`GameEnv`]: a [`SearchGame`] together with its environment view and the few facts every
//!   layer above the search needs: the game's id ([`GameKind`]) and rule sets, positions and
//!   FEN, UCI move text, the input planes and the action space (policy index ↔ move for the
//!   side to move), the left–right mirror, and material values for the greedy baseline.
//!   Self-play, records, replay shards, the arena, the network's evaluator, the trainer, export
//!   and the engine are written once over it.
//!
//! Implemented for [`xiangqi::Game`] and [`xiangqi::janggi::Game`]. Everything is monomorphic:
//! the command-line tool picks the game once (`match` on [`GameKind`]) and calls generic code;
//! nothing matches on the game per move.
//!
//! Terminal values come from the game's own adjudication (xiangqi: checkmate, no legal move,
//! repetition and move limits; janggi: checkmate and the no-capture limit), never from an
//! evaluator.

use std::fmt;
use std::str::FromStr;

use xiangqi::env::{InvalidPieceCode, PlaneInputs};
use xiangqi::{Color, Game, Move, MoveList, Outcome, janggi};

/// A game state the search can explore: a position together with whatever history its rules
/// need (repetitions, move counters).
///
/// # Value perspective
/// [`SearchGame::terminal_value`] is in `[-1, 1]` from the point of view of the side to move:
/// `-1` when the side to move has lost, `0` for a draw, `+1` when it has won.
pub trait SearchGame: Clone + Send + Sync + 'static {
    /// A move; compact and copyable.
    type Move: Copy + Eq + Send + Sync + fmt::Debug + 'static;

    /// Appends the legal moves of the side to move to `out` (without clearing it). Appends
    /// nothing once the game is over. The order is the one evaluators and search results use.
    fn legal_moves_into(&self, out: &mut Vec<Self::Move>);

    /// Plays a move.
    ///
    /// # Panics
    /// May panic, or corrupt the state, if `mv` is not among the moves from
    /// [`SearchGame::legal_moves_into`] of this state.
    fn play(&mut self, mv: Self::Move);

    /// If the rules have ended the game: its value in `[-1, 1]` for the side to move.
    fn terminal_value(&self) -> Option<f32>;

    /// Whether playing `mv` (one of [`SearchGame::legal_moves_into`]) ends the game at once with
    /// a win for the side that plays it, that is with [`SearchGame::terminal_value`] `-1` for
    /// the opponent. The default plays the move on a clone; a game may answer more cheaply.
    fn is_winning_move(&self, mv: Self::Move) -> bool {
        let mut next = self.clone();
        next.play(mv);
        next.terminal_value().is_some_and(|v| v <= -1.0)
    }
}

/// Which game a net, a shard, a checkpoint or a run is for. Written by its name
/// (`"xiangqi"`, `"janggi"`) in configs, manifests and `model.json`, and by its code
/// ([`GameKind::code`]) in replay shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GameKind {
    /// Xiangqi (Chinese chess), [`xiangqi::Game`].
    #[default]
    Xiangqi,
    /// Janggi (Korean chess), [`xiangqi::janggi::Game`].
    Janggi,
}

impl GameKind {
    /// Every game, in code order.
    pub const ALL: [GameKind; 2] = [GameKind::Xiangqi, GameKind::Janggi];

    /// The name: `"xiangqi"` or `"janggi"`.
    pub const fn name(self) -> &'static str {
        match self {
            GameKind::Xiangqi => "xiangqi",
            GameKind::Janggi => "janggi",
        }
    }

    /// The code stored in replay shards: 0 for xiangqi, 1 for janggi.
    pub const fn code(self) -> u8 {
        match self {
            GameKind::Xiangqi => 0,
            GameKind::Janggi => 1,
        }
    }

    /// The game of a shard code, `None` for an unknown code.
    pub const fn from_code(code: u8) -> Option<GameKind> {
        match code {
            0 => Some(GameKind::Xiangqi),
            1 => Some(GameKind::Janggi),
            _ => None,
        }
    }

    /// The default rule set's name: `"asian"` for xiangqi, `"site"` for janggi.
    pub const fn default_rules(self) -> &'static str {
        match self {
            GameKind::Xiangqi => "asian",
            GameKind::Janggi => "site",
        }
    }

    /// The accepted rule-set names.
    pub const fn rule_names(self) -> &'static [&'static str] {
        match self {
            GameKind::Xiangqi => &["asian", "simple"],
            GameKind::Janggi => &["site", "traditional"],
        }
    }
}

impl fmt::Display for GameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A game name that is neither `xiangqi` nor `janggi`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown game '{0}' (expected 'xiangqi' or 'janggi')")]
pub struct ParseGameKindError(pub String);

impl FromStr for GameKind {
    type Err = ParseGameKindError;

    fn from_str(s: &str) -> Result<GameKind, ParseGameKindError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "xiangqi" => Ok(GameKind::Xiangqi),
            "janggi" => Ok(GameKind::Janggi),
            _ => Err(ParseGameKindError(s.chars().take(32).collect())),
        }
    }
}

impl serde::Serialize for GameKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for GameKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<GameKind, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A game with its environment view: everything self-play, the replay buffer, the trainer, the
/// arena, export and the engine need beyond the search's [`SearchGame`].
///
/// Both games of the family play on the 9 × 10 board with [`xiangqi::Move`] (a pass is a move
/// from the general's point to itself) and [`xiangqi::Color`] (`Red` moves first: xiangqi's Red,
/// janggi's Cho).
///
/// # Shapes
/// Input planes are `[PLANES, 10, 9]` floats (plane, rank, file) from the side to move's view;
/// the policy is `[POLICY_SIZE]` logits or probabilities indexed by [`GameEnv::move_to_index`].
pub trait GameEnv: SearchGame<Move = Move> + fmt::Debug + 'static {
    /// A position (placement, side to move, clocks) without history.
    type Position: Clone + PartialEq + Send + Sync + fmt::Debug + 'static;
    /// The rule set (xiangqi: [`xiangqi::RuleSet`]; janggi: [`janggi::Rules`]).
    type Rules: Copy + Eq + Send + Sync + fmt::Debug + fmt::Display + 'static;

    /// Which game this is.
    const KIND: GameKind;
    /// Version of the plane layout and action order; checkpoints and exports record it.
    const ENCODING_VERSION: u32;
    /// Input planes per position.
    const PLANES: usize;
    /// Number of policy indices (actions).
    const POLICY_SIZE: usize;
    /// Floats of one encoded position: `PLANES · 90`.
    const INPUT_SIZE: usize = Self::PLANES * 90;
    /// The PGN `Game` tag.
    const PGN_GAME: &'static str;
    /// The PGN tags naming the first and the second player (`Red`/`Black`, `Cho`/`Han`).
    const SIDE_TAGS: [&'static str; 2];
    /// The arena's built-in openings: a name and a line in the form of
    /// `arena::Opening::parse` (a FEN, FEN with moves, or UCI moves from the start).
    const OPENINGS: &'static [(&'static str, &'static str)];

    /// The rule set used when none is named.
    fn default_rules() -> Self::Rules;
    /// The rule set of a name (`asian`, `simple`; `site`, `traditional`).
    ///
    /// # Errors
    /// A message naming the accepted names.
    fn parse_rules(name: &str) -> Result<Self::Rules, String>;
    /// The rule set's code in replay shards.
    fn rules_code(rules: Self::Rules) -> u8;
    /// The rule set of a shard code.
    fn rules_from_code(code: u8) -> Option<Self::Rules>;

    /// The standard start position.
    fn start_position(rules: Self::Rules) -> Self::Position;
    /// A position from FEN (the game's dialect; janggi's positions take the rule set).
    ///
    /// # Errors
    /// The parser's message, naming the field and what was wrong.
    fn position_from_fen(fen: &str, rules: Self::Rules) -> Result<Self::Position, String>;
    /// A position from FEN as an engine front end takes it: for xiangqi also composed
    /// positions (lenient validation); for janggi as [`GameEnv::position_from_fen`].
    ///
    /// # Errors
    /// As [`GameEnv::position_from_fen`].
    fn position_from_fen_lenient(fen: &str, rules: Self::Rules) -> Result<Self::Position, String> {
        Self::position_from_fen(fen, rules)
    }
    /// The FEN of a position.
    fn position_fen(pos: &Self::Position) -> String;
    /// The legal moves of a position by the rules of movement alone (no history, no verdict).
    fn position_legal_moves(pos: &Self::Position) -> Vec<Move>;
    /// A new game from the current position without its history, its no-capture clock and
    /// move number reset (what an engine searches when the rules have ended the game but the
    /// position still has moves).
    fn without_history(&self) -> Self;
    /// The side to move in a position.
    fn position_turn(pos: &Self::Position) -> Color;
    /// The full-move number of a position (starts at 1, grows after the second player's move).
    fn position_fullmove(pos: &Self::Position) -> u32;

    /// A new game from `start` under `rules`.
    fn new_game(start: Self::Position, rules: Self::Rules) -> Self;
    /// The game's rule set.
    fn rules(&self) -> Self::Rules;
    /// Where the game began.
    fn start(&self) -> &Self::Position;
    /// The current position.
    fn position(&self) -> &Self::Position;
    /// The side to move.
    fn turn(&self) -> Color {
        Self::position_turn(self.position())
    }
    /// The moves played so far.
    fn moves(&self) -> &[Move];
    /// The rules' verdict (or one set by [`GameEnv::set_outcome`]), `None` while going on.
    fn outcome(&self) -> Option<Outcome>;
    /// Ends the game with a verdict the rules did not give (resignation, a length cap).
    fn set_outcome(&mut self, outcome: Outcome);
    /// The legal moves (none once the game is over), in the order the search uses.
    fn legal_moves_vec(&self) -> Vec<Move> {
        let mut out = Vec::new();
        self.legal_moves_into(&mut out);
        out
    }
    /// Plays a move after checking it.
    ///
    /// # Errors
    /// Why the move is not legal here (or that the game is over).
    fn play_checked(&mut self, mv: Move) -> Result<Option<Outcome>, String>;
    /// Parses UCI move text (ranks 0–9 from the first player's side) in the current position.
    ///
    /// # Errors
    /// What was wrong with the text, or why the move is illegal.
    fn parse_move(&self, text: &str) -> Result<Move, String>;

    /// Reads a move's text with `base`'s rank numbers (syntax only: not checked for legality;
    /// a janggi pass is the general's point twice).
    ///
    /// # Errors
    /// What is wrong with the text.
    fn move_from_uci(text: &str, base: xiangqi::RankBase) -> Result<Move, String>;

    /// The compact inputs of the current position (what a shard sample stores).
    fn plane_inputs(&self) -> PlaneInputs;
    /// Writes the input planes of the current position into `out` (`[PLANES, 10, 9]`).
    fn encode_planes(&self, out: &mut [f32]);
    /// Rebuilds the planes of a shard sample into `out` (`[PLANES, 10, 9]`).
    ///
    /// # Errors
    /// A board code that is no piece.
    fn planes_from_inputs(inputs: &PlaneInputs, out: &mut [f32]) -> Result<(), InvalidPieceCode>;
    /// The policy index of `mv` played by `turn`; `None` if no piece could ever play it (every
    /// legal move has one).
    fn move_to_index(mv: Move, turn: Color) -> Option<usize>;
    /// The move of policy index `i` for the side to move of this game, `None` if out of range.
    fn index_to_move(&self, i: usize) -> Option<Move>;
    /// The index of the left–right mirror image of action `i` (an involution).
    fn mirror_index(i: usize) -> usize;
    /// Mirrors one or more encoded positions (`[PLANES, 10, 9]` each) in place.
    fn mirror_planes(planes: &mut [f32]);
    /// Mirrors one or more policies (`[POLICY_SIZE]` each) in place.
    fn mirror_policy_in_place(policy: &mut [f32]) {
        let mut tmp = vec![0.0f32; Self::POLICY_SIZE];
        for p in policy.chunks_exact_mut(Self::POLICY_SIZE) {
            for (i, &v) in p.iter().enumerate() {
                tmp[Self::mirror_index(i)] = v;
            }
            p.copy_from_slice(&tmp);
        }
    }
    /// The value of the piece `mv` captures (0 for none) on the game's material scale, for the
    /// greedy baseline.
    fn capture_value(&self, mv: Move) -> i32;
    /// First player's material minus the second's, in half-pawns (a soldier is 2), of a
    /// compact board ([`PlaneInputs::board`]); codes that are no piece
    /// count nothing.
    fn material_half_pawns(board: &[u8; 90]) -> i16;
    /// Names of the input planes, in order (for `model.json`).
    fn plane_names() -> Vec<String>;
    /// The move text of every policy index for the first player (for `model.json`); the pass,
    /// where a game has one, is written `pass`.
    fn action_names() -> Vec<String>;
}

/// The value of a finished xiangqi game for the side to move in its final position.
pub fn outcome_value(outcome: Outcome, game: &Game) -> f32 {
    match outcome.winner() {
        Some(w) if w == game.position().turn() => 1.0,
        Some(_) => -1.0,
        None => 0.0,
    }
}

impl SearchGame for Game {
    type Move = Move;

    #[inline]
    fn legal_moves_into(&self, out: &mut Vec<Move>) {
        if !self.is_over() {
            let mut list = MoveList::new();
            self.position().legal_moves_into(&mut list);
            out.extend_from_slice(&list);
        }
    }

    #[inline]
    fn play(&mut self, mv: Move) {
        self.play_unchecked(mv);
    }

    #[inline]
    fn terminal_value(&self) -> Option<f32> {
        self.outcome().map(|o| outcome_value(o, self))
    }

    #[inline]
    fn is_winning_move(&self, mv: Move) -> bool {
        Game::is_winning_move(self, mv)
    }
}

/// A game's encoding as plain data, for the code that handles planes and policies without
/// knowing the game's type (the trainer's batches and mirror augmentation, checkpoints, the
/// network's shapes): which game, the encoding version, the sizes, and the game's functions on
/// planes and policies.
#[derive(Clone, Copy)]
pub struct Encoding {
    /// The game.
    pub game: GameKind,
    /// The encoding version ([`GameEnv::ENCODING_VERSION`]).
    pub version: u32,
    /// Input planes per position.
    pub planes: usize,
    /// Policy indices.
    pub policy_size: usize,
    /// [`GameEnv::planes_from_inputs`].
    pub planes_from_inputs: fn(&PlaneInputs, &mut [f32]) -> Result<(), InvalidPieceCode>,
    /// [`GameEnv::mirror_planes`].
    pub mirror_planes: fn(&mut [f32]),
    /// [`GameEnv::mirror_policy_in_place`].
    pub mirror_policy: fn(&mut [f32]),
    /// [`GameEnv::move_to_index`].
    pub move_to_index: fn(Move, Color) -> Option<usize>,
}

impl Encoding {
    /// The encoding of game `G`.
    pub fn of<G: GameEnv>() -> Encoding {
        Encoding {
            game: G::KIND,
            version: G::ENCODING_VERSION,
            planes: G::PLANES,
            policy_size: G::POLICY_SIZE,
            planes_from_inputs: G::planes_from_inputs,
            mirror_planes: G::mirror_planes,
            mirror_policy: G::mirror_policy_in_place,
            move_to_index: G::move_to_index,
        }
    }

    /// The encoding of a game named by its kind.
    pub fn of_kind(game: GameKind) -> Encoding {
        match game {
            GameKind::Xiangqi => Encoding::of::<Game>(),
            GameKind::Janggi => Encoding::of::<janggi::Game>(),
        }
    }

    /// Floats of one encoded position: `planes · 90`.
    pub fn input_size(&self) -> usize {
        self.planes * 90
    }
}

impl Default for Encoding {
    fn default() -> Self {
        Encoding::of::<Game>()
    }
}

impl fmt::Debug for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoding")
            .field("game", &self.game)
            .field("version", &self.version)
            .field("planes", &self.planes)
            .field("policy_size", &self.policy_size)
            .finish()
    }
}

impl PartialEq for Encoding {
    fn eq(&self, other: &Self) -> bool {
        (self.game, self.version, self.planes, self.policy_size)
            == (other.game, other.version, other.planes, other.policy_size)
    }
}

/// Janggi's built-in arena openings: the four horse and elephant arrangements each side may
/// choose before the game, in eight pairings, with Cho to move. A name gives Cho's arrangement,
/// then Han's, each as the pieces on files b–c and g–h read from file a to file i (H horse,
/// E elephant), not from the player's own seat. The first is the site's fixed start.
pub const JANGGI_OPENINGS: [(&str, &str); 8] = [
    ("HE-EH vs HE-EH", "rnba1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR w - - 0 1"),
    ("EH-HE vs EH-HE", "rbna1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ANBR w - - 0 1"),
    ("HE-HE vs HE-HE", "rnba1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ANBR w - - 0 1"),
    ("EH-EH vs EH-EH", "rbna1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ABNR w - - 0 1"),
    ("HE-EH vs EH-HE", "rbna1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR w - - 0 1"),
    ("EH-HE vs HE-EH", "rnba1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ANBR w - - 0 1"),
    ("HE-HE vs EH-EH", "rbna1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ANBR w - - 0 1"),
    ("EH-EH vs HE-HE", "rnba1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ABNR w - - 0 1"),
];

/// Xiangqi's material scale in half-pawns, by piece-kind index (general, advisor, elephant,
/// horse, chariot, cannon, soldier): the common scale of xiangqi programs (chariot 9, cannon
/// 4.5, horse 4, advisor and elephant 2, soldier 1 pawn; the general 0, as it is never captured).
pub const XIANGQI_HALF_PAWNS: [i16; 7] = [0, 4, 4, 8, 18, 9, 2];

/// Janggi's material scale, by piece-kind index (general, guard, elephant, horse, chariot,
/// cannon, soldier): the conventional janggi point values (chariot 13, cannon 7, horse 5,
/// elephant 3, guard 3, soldier 2; the general 0), which are half-pawns already (a soldier is 2).
pub const JANGGI_HALF_PAWNS: [i16; 7] = [0, 3, 3, 5, 13, 7, 2];

fn half_pawns(board: &[u8; 90], values: &[i16; 7]) -> i16 {
    board
        .iter()
        .map(|&c| match c {
            1..=7 => values[usize::from(c - 1)],
            8..=14 => -values[usize::from(c - 8)],
            _ => 0,
        })
        .sum()
}

fn plane_names_of(clock_scale: u32, guard: &str) -> Vec<String> {
    let kinds = ["general", guard, "elephant", "horse", "chariot", "cannon", "soldier"];
    let mut out = Vec::with_capacity(16);
    for side in ["side to move", "opponent"] {
        for kind in kinds {
            out.push(format!("{side}: {kind} (1.0 where one stands)"));
        }
    }
    out.push(
        "1.0 everywhere if the position occurred before (xiangqi: in the game; janggi: since the \
         last capture), else 0.0"
            .to_string(),
    );
    out.push(format!("plies since the last capture / {clock_scale}, capped at 1.0, everywhere"));
    out
}

impl GameEnv for Game {
    type Position = xiangqi::Position;
    type Rules = xiangqi::RuleSet;

    const KIND: GameKind = GameKind::Xiangqi;
    const ENCODING_VERSION: u32 = xiangqi::env::ENCODING_VERSION;
    const PLANES: usize = xiangqi::env::PLANES;
    const POLICY_SIZE: usize = xiangqi::env::POLICY_SIZE;
    const PGN_GAME: &'static str = "Chinese Chess";
    const SIDE_TAGS: [&'static str; 2] = ["Red", "Black"];
    const OPENINGS: &'static [(&'static str, &'static str)] = &crate::arena::BUILTIN_OPENINGS;

    fn default_rules() -> xiangqi::RuleSet {
        xiangqi::RuleSet::Asian
    }

    fn parse_rules(name: &str) -> Result<xiangqi::RuleSet, String> {
        name.parse().map_err(|_| {
            format!("unknown xiangqi rule set '{}' (expected 'asian' or 'simple')", name.trim())
        })
    }

    fn rules_code(rules: xiangqi::RuleSet) -> u8 {
        match rules {
            xiangqi::RuleSet::Asian => 0,
            xiangqi::RuleSet::Simple => 1,
        }
    }

    fn rules_from_code(code: u8) -> Option<xiangqi::RuleSet> {
        match code {
            0 => Some(xiangqi::RuleSet::Asian),
            1 => Some(xiangqi::RuleSet::Simple),
            _ => None,
        }
    }

    fn start_position(_rules: xiangqi::RuleSet) -> xiangqi::Position {
        xiangqi::Position::start()
    }

    fn position_from_fen(fen: &str, _rules: xiangqi::RuleSet) -> Result<xiangqi::Position, String> {
        xiangqi::Position::from_fen(fen).map_err(|e| e.to_string())
    }

    fn position_from_fen_lenient(
        fen: &str,
        _rules: xiangqi::RuleSet,
    ) -> Result<xiangqi::Position, String> {
        xiangqi::Position::from_fen_with(fen, xiangqi::Validation::Lenient)
            .map_err(|e| e.to_string())
    }

    fn position_fen(pos: &xiangqi::Position) -> String {
        pos.fen()
    }

    fn position_legal_moves(pos: &xiangqi::Position) -> Vec<Move> {
        pos.legal_moves().to_vec()
    }

    fn without_history(&self) -> Game {
        let pos = Game::position(self);
        let mut setup = pos.to_setup();
        setup.halfmove_clock = 0;
        setup.fullmove_number = 1;
        let start =
            xiangqi::Position::from_setup(&setup, xiangqi::Validation::Lenient).unwrap_or(*pos);
        Game::new(start, Game::rules(self))
    }

    fn position_turn(pos: &xiangqi::Position) -> Color {
        pos.turn()
    }

    fn position_fullmove(pos: &xiangqi::Position) -> u32 {
        pos.fullmove_number()
    }

    fn new_game(start: xiangqi::Position, rules: xiangqi::RuleSet) -> Game {
        Game::new(start, rules)
    }

    fn rules(&self) -> xiangqi::RuleSet {
        Game::rules(self)
    }

    fn start(&self) -> &xiangqi::Position {
        Game::start(self)
    }

    fn position(&self) -> &xiangqi::Position {
        Game::position(self)
    }

    fn moves(&self) -> &[Move] {
        Game::moves(self)
    }

    fn outcome(&self) -> Option<Outcome> {
        Game::outcome(self)
    }

    fn set_outcome(&mut self, outcome: Outcome) {
        Game::set_outcome(self, outcome);
    }

    fn play_checked(&mut self, mv: Move) -> Result<Option<Outcome>, String> {
        self.play(mv).map_err(|e| e.to_string())
    }

    fn parse_move(&self, text: &str) -> Result<Move, String> {
        Game::position(self).parse_uci(text).map_err(|e| e.to_string())
    }

    fn move_from_uci(text: &str, base: xiangqi::RankBase) -> Result<Move, String> {
        Move::from_uci(text, base).map_err(|e| e.to_string())
    }

    fn plane_inputs(&self) -> PlaneInputs {
        PlaneInputs::from_game(self)
    }

    fn encode_planes(&self, out: &mut [f32]) {
        xiangqi::env::encode_planes(self, out);
    }

    fn planes_from_inputs(inputs: &PlaneInputs, out: &mut [f32]) -> Result<(), InvalidPieceCode> {
        xiangqi::env::planes_from_compact(inputs, out)
    }

    fn move_to_index(mv: Move, turn: Color) -> Option<usize> {
        xiangqi::env::move_to_index(mv, turn)
    }

    fn index_to_move(&self, i: usize) -> Option<Move> {
        xiangqi::env::index_to_move(i, Game::position(self).turn())
    }

    fn mirror_index(i: usize) -> usize {
        xiangqi::env::mirror_index(i)
    }

    fn mirror_planes(planes: &mut [f32]) {
        xiangqi::env::mirror_planes(planes);
    }

    fn mirror_policy_in_place(policy: &mut [f32]) {
        xiangqi::env::mirror_policy_in_place(policy);
    }

    fn capture_value(&self, mv: Move) -> i32 {
        Game::position(self)
            .piece_at(mv.to())
            .map_or(0, |p| i32::from(XIANGQI_HALF_PAWNS[p.kind.index()]))
    }

    fn material_half_pawns(board: &[u8; 90]) -> i16 {
        half_pawns(board, &XIANGQI_HALF_PAWNS)
    }

    fn plane_names() -> Vec<String> {
        plane_names_of(xiangqi::env::CLOCK_SCALE, "advisor")
    }

    fn action_names() -> Vec<String> {
        (0..xiangqi::env::POLICY_SIZE)
            .map(|i| {
                xiangqi::env::index_to_move(i, Color::Red)
                    .map(|m| m.to_string())
                    .unwrap_or_default()
            })
            .collect()
    }
}

impl SearchGame for janggi::Game {
    type Move = Move;

    #[inline]
    fn legal_moves_into(&self, out: &mut Vec<Move>) {
        if !self.is_over() {
            let mut list = janggi::MoveList::new();
            self.position().legal_moves_into(&mut list);
            out.extend_from_slice(&list);
        }
    }

    #[inline]
    fn play(&mut self, mv: Move) {
        self.play_unchecked(mv);
    }

    #[inline]
    fn terminal_value(&self) -> Option<f32> {
        self.outcome().map(|o| match o.winner() {
            Some(w) if w == self.position().turn() => 1.0,
            Some(_) => -1.0,
            None => 0.0,
        })
    }

    #[inline]
    fn is_winning_move(&self, mv: Move) -> bool {
        janggi::Game::is_winning_move(self, mv)
    }
}

impl GameEnv for janggi::Game {
    type Position = janggi::Position;
    type Rules = janggi::Rules;

    const KIND: GameKind = GameKind::Janggi;
    const ENCODING_VERSION: u32 = janggi::env::ENCODING_VERSION;
    const PLANES: usize = janggi::env::PLANES;
    const POLICY_SIZE: usize = janggi::env::POLICY_SIZE;
    const PGN_GAME: &'static str = "Janggi";
    const SIDE_TAGS: [&'static str; 2] = ["Cho", "Han"];
    const OPENINGS: &'static [(&'static str, &'static str)] = &JANGGI_OPENINGS;

    fn default_rules() -> janggi::Rules {
        janggi::Rules::Site
    }

    fn parse_rules(name: &str) -> Result<janggi::Rules, String> {
        name.trim().parse().map_err(|_| {
            format!("unknown janggi rule set '{}' (expected 'site' or 'traditional')", name.trim())
        })
    }

    fn rules_code(rules: janggi::Rules) -> u8 {
        match rules {
            janggi::Rules::Site => 0,
            janggi::Rules::Traditional => 1,
        }
    }

    fn rules_from_code(code: u8) -> Option<janggi::Rules> {
        match code {
            0 => Some(janggi::Rules::Site),
            1 => Some(janggi::Rules::Traditional),
            _ => None,
        }
    }

    fn start_position(rules: janggi::Rules) -> janggi::Position {
        janggi::Position::start(rules)
    }

    fn position_from_fen(fen: &str, rules: janggi::Rules) -> Result<janggi::Position, String> {
        janggi::Position::from_fen(fen, rules).map_err(|e| e.to_string())
    }

    fn position_fen(pos: &janggi::Position) -> String {
        pos.fen()
    }

    fn position_legal_moves(pos: &janggi::Position) -> Vec<Move> {
        pos.legal_moves().to_vec()
    }

    fn without_history(&self) -> janggi::Game {
        let pos = janggi::Game::position(self);
        let mut setup = pos.to_setup();
        setup.halfmove_clock = 0;
        setup.fullmove_number = 1;
        let start = janggi::Position::from_setup(&setup, pos.rules()).unwrap_or(*pos);
        janggi::Game::new(start)
    }

    fn position_turn(pos: &janggi::Position) -> Color {
        pos.turn()
    }

    fn position_fullmove(pos: &janggi::Position) -> u32 {
        pos.fullmove_number()
    }

    fn new_game(start: janggi::Position, rules: janggi::Rules) -> janggi::Game {
        // A janggi position carries its rule set (the cannon's moves depend on it); the same
        // placement is legal under both.
        let start = if start.rules() == rules {
            start
        } else {
            janggi::Position::from_setup(&start.to_setup(), rules).unwrap_or(start)
        };
        janggi::Game::new(start)
    }

    fn rules(&self) -> janggi::Rules {
        janggi::Game::rules(self)
    }

    fn start(&self) -> &janggi::Position {
        janggi::Game::start(self)
    }

    fn position(&self) -> &janggi::Position {
        janggi::Game::position(self)
    }

    fn moves(&self) -> &[Move] {
        janggi::Game::moves(self)
    }

    fn outcome(&self) -> Option<Outcome> {
        janggi::Game::outcome(self)
    }

    fn set_outcome(&mut self, outcome: Outcome) {
        janggi::Game::set_outcome(self, outcome);
    }

    fn play_checked(&mut self, mv: Move) -> Result<Option<Outcome>, String> {
        self.play(mv).map_err(|e| e.to_string())
    }

    fn parse_move(&self, text: &str) -> Result<Move, String> {
        janggi::Game::position(self).parse_uci(text).map_err(|e| e.to_string())
    }

    fn move_from_uci(text: &str, base: xiangqi::RankBase) -> Result<Move, String> {
        janggi::parse_uci_with(text, base).map_err(|e| e.to_string())
    }

    fn plane_inputs(&self) -> PlaneInputs {
        janggi::env::plane_inputs(self)
    }

    fn encode_planes(&self, out: &mut [f32]) {
        janggi::env::encode_planes(self, out);
    }

    fn planes_from_inputs(inputs: &PlaneInputs, out: &mut [f32]) -> Result<(), InvalidPieceCode> {
        janggi::env::planes_from_compact(inputs, out)
    }

    fn move_to_index(mv: Move, turn: Color) -> Option<usize> {
        janggi::env::move_to_index(mv, turn)
    }

    fn index_to_move(&self, i: usize) -> Option<Move> {
        janggi::env::index_to_move(i, janggi::Game::position(self))
    }

    fn mirror_index(i: usize) -> usize {
        janggi::env::mirror_index(i)
    }

    fn mirror_planes(planes: &mut [f32]) {
        janggi::env::mirror_planes(planes);
    }

    fn mirror_policy_in_place(policy: &mut [f32]) {
        janggi::env::mirror_policy_in_place(policy);
    }

    fn capture_value(&self, mv: Move) -> i32 {
        if mv.from() == mv.to() {
            return 0;
        }
        janggi::Game::position(self)
            .piece_at(mv.to())
            .map_or(0, |p| i32::from(JANGGI_HALF_PAWNS[p.kind.index()]))
    }

    fn material_half_pawns(board: &[u8; 90]) -> i16 {
        half_pawns(board, &JANGGI_HALF_PAWNS)
    }

    fn plane_names() -> Vec<String> {
        plane_names_of(janggi::env::CLOCK_SCALE, "guard")
    }

    fn action_names() -> Vec<String> {
        (0..janggi::env::POLICY_SIZE)
            .map(|i| {
                if i == janggi::env::PASS_INDEX {
                    "pass".to_string()
                } else {
                    janggi::env::index_to_move(i, &janggi::Position::start(janggi::Rules::Site))
                        .map(|m| m.to_string())
                        .unwrap_or_default()
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi::{Position, RuleSet};

    #[test]
    fn checkmated_side_to_move_has_value_minus_one() {
        // Red chariot b7-b9 mates (see the search tests for the hand check).
        let pos = Position::from_fen("4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1").unwrap();
        let mut game = Game::new(pos, RuleSet::Asian);
        assert_eq!(game.terminal_value(), None);
        let mv = game.position().parse_uci("b7b9").unwrap();
        SearchGame::play(&mut game, mv);
        assert_eq!(game.terminal_value(), Some(-1.0));
        let mut moves = Vec::new();
        game.legal_moves_into(&mut moves);
        assert!(moves.is_empty());
    }
}
