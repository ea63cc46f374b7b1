//! The game interface of the framework, in two layers:
//!
//! * [`SearchGame`]: what the search needs (legal moves, play, the rules' verdict as a value,
//!   cloning). The search, the evaluator interface and the tree know nothing else.
//! * [`GameEnv`]: a [`SearchGame`] together with what every layer above the search needs, in
//!   four small traits, each readable on its own:
//!   * [`GameRules`]: the game's id ([`GameKind`]) and rule sets, positions, a game's state and
//!     history, checked moves;
//!   * [`Notation`]: the game's texts (FEN, UCI move text, PGN tags, named openings);
//!   * [`NetView`]: what the network sees and answers (input planes, the action space: policy
//!     index ↔ move for the side to move, the left–right mirror, names for `model.json`);
//!   * [`Material`]: the material scale (the greedy baseline, value targets).
//!
//!   [`GameEnv`] has no items of its own: every type with the four is one (a blanket
//!   implementation). Self-play, records, replay shards, the arena, the network's evaluator,
//!   the trainer, export and the engine are written once over it.
//!
//! Implemented for [`xiangqi::Game`] (`xiangqi_env.rs`) and [`xiangqi::janggi::Game`]
//! (`janggi_env.rs`). Everything is monomorphic: the command-line tool picks the game once
//! (`match` on [`GameKind`]) and calls generic code; nothing matches on the game per move.
//! Code that handles planes without the game's type uses [`Encoding`].
//!
//! Terminal values come from the game's own adjudication (xiangqi: checkmate, no legal move,
//! repetition and move limits; janggi: checkmate and the no-capture limit), never from an
//! evaluator.

use std::fmt;
use std::str::FromStr;

use xiangqi::env::{InvalidPieceCode, PlaneInputs};
use xiangqi::{Color, Game, Move, Outcome};

mod encoding;
mod janggi_env;
mod xiangqi_env;

pub use encoding::Encoding;
pub use janggi_env::JANGGI_HALF_PAWNS;
pub use xiangqi_env::XIANGQI_HALF_PAWNS;

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

    /// Whether any of `moves` (legal moves of this state) is a winning move
    /// ([`SearchGame::is_winning_move`]). The default asks each move; a game may share the work
    /// between them.
    fn has_winning_move(&self, moves: &[Self::Move]) -> bool {
        moves.iter().any(|&m| self.is_winning_move(m))
    }

    /// Appends to `out` the indices (into `moves`, legal moves of this state, in order) of the
    /// winning moves ([`SearchGame::is_winning_move`]). The default asks each move; a game may
    /// share the work between them.
    fn winning_moves(&self, moves: &[Self::Move], out: &mut Vec<u32>) {
        out.extend((0..moves.len() as u32).filter(|&a| self.is_winning_move(moves[a as usize])));
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

    /// The first player's material minus the second's on a compact board
    /// ([`PlaneInputs::board`]), in half-pawns: [`Material::material_half_pawns`] of this
    /// game's type. Codes that are no piece count nothing.
    pub fn material_half_pawns(self, board: &[u8; 90]) -> i16 {
        match self {
            GameKind::Xiangqi => <Game as Material>::material_half_pawns(board),
            GameKind::Janggi => <xiangqi::janggi::Game as Material>::material_half_pawns(board),
        }
    }

    /// The default rule set's name: `"asian"` for xiangqi, `"site"` for janggi.
    pub const fn default_rules(self) -> &'static str {
        match self {
            GameKind::Xiangqi => "asian",
            GameKind::Janggi => "site",
        }
    }

    /// The accepted rule-set names, in the order of their shard codes
    /// ([`GameRules::rules_code`]: 0 first).
    pub const fn rule_names(self) -> &'static [&'static str] {
        match self {
            GameKind::Xiangqi => &["asian", "simple"],
            GameKind::Janggi => &["site", "traditional"],
        }
    }

    /// The name of the rule set with shard code `code` ([`GameRules::rules_code`]), `None` for a
    /// code the game has not.
    pub fn rule_name(self, code: u8) -> Option<&'static str> {
        self.rule_names().get(usize::from(code)).copied()
    }

    /// Checks a rule-set name against [`GameKind::rule_names`].
    ///
    /// # Errors
    /// Why it is no rule set of this game, naming the accepted ones.
    pub fn check_rule_name(self, name: &str) -> Result<(), String> {
        let known = self.rule_names();
        if known.contains(&name) {
            return Ok(());
        }
        Err(format!(
            "'{}' is no {self} rule set (expected {})",
            name.chars().take(32).collect::<String>(),
            known.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(" or ")
        ))
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

/// A game of the family with its rules: which game, its rule sets, positions, and a game's
/// state and history. The first layer above [`SearchGame`].
///
/// Both games play on the 9 × 10 board with [`xiangqi::Move`] (a pass is a move from the
/// general's point to itself) and [`xiangqi::Color`] (`Red` moves first: xiangqi's Red,
/// janggi's Cho).
pub trait GameRules: SearchGame<Move = Move> + fmt::Debug + 'static {
    /// A position (placement, side to move, clocks) without history.
    type Position: Clone + PartialEq + Send + Sync + fmt::Debug + 'static;
    /// The rule set (xiangqi: [`xiangqi::RuleSet`]; janggi: [`xiangqi::janggi::Rules`]).
    type Rules: Copy + Eq + Send + Sync + fmt::Debug + fmt::Display + 'static;
    /// Which game this is.
    const KIND: GameKind;
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
    /// The rules' verdict (or one set by [`GameRules::set_outcome`]), `None` while going on.
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
}

/// A game's texts: FEN, UCI move text, the PGN tags and the arena's named openings.
pub trait Notation: GameRules {
    /// The PGN `Game` tag.
    const PGN_GAME: &'static str;
    /// The PGN tags naming the first and the second player (`Red`/`Black`, `Cho`/`Han`).
    const SIDE_TAGS: [&'static str; 2];
    /// The arena's built-in openings: a name and a line in the form of
    /// `arena::Opening::parse` (a FEN, FEN with moves, or UCI moves from the start).
    const OPENINGS: &'static [(&'static str, &'static str)];
    /// A position from FEN (the game's dialect; janggi's positions take the rule set).
    ///
    /// # Errors
    /// The parser's message, naming the field and what was wrong.
    fn position_from_fen(fen: &str, rules: Self::Rules) -> Result<Self::Position, String>;
    /// A position from FEN as an engine front end takes it: for xiangqi also composed
    /// positions (lenient validation); for janggi as [`Notation::position_from_fen`].
    ///
    /// # Errors
    /// As [`Notation::position_from_fen`].
    fn position_from_fen_lenient(fen: &str, rules: Self::Rules) -> Result<Self::Position, String> {
        Self::position_from_fen(fen, rules)
    }
    /// The FEN of a position.
    fn position_fen(pos: &Self::Position) -> String;
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
}

/// What the network sees and answers for a game: the input planes and the action space.
///
/// # Shapes
/// Input planes are `[PLANES, 10, 9]` floats (plane, rank, file) from the side to move's view;
/// the policy is `[POLICY_SIZE]` logits or probabilities indexed by [`NetView::move_to_index`].
pub trait NetView: GameRules {
    /// Version of the plane layout and action order; checkpoints and exports record it.
    const ENCODING_VERSION: u32;
    /// Input planes per position.
    const PLANES: usize;
    /// Number of policy indices (actions).
    const POLICY_SIZE: usize;
    /// Floats of one encoded position: `PLANES · 90`.
    const INPUT_SIZE: usize = Self::PLANES * 90;
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
    /// Names of the input planes, in order (for `model.json`).
    fn plane_names() -> Vec<String>;
    /// The encoding version of a net that also takes the game's tactical feature planes
    /// ([`NetView::FEATURE_PLANES`] after the [`NetView::PLANES`] base planes); equal to
    /// [`NetView::ENCODING_VERSION`] for a game that has none.
    const FEATURES_ENCODING_VERSION: u32 = Self::ENCODING_VERSION;
    /// Tactical feature planes computed by the rules (attacks, hanging and pinned pieces,
    /// check) that a net may take after the base planes; 0 if the game has none.
    const FEATURE_PLANES: usize = 0;
    /// Writes the feature planes of the current position into `out`
    /// (`[FEATURE_PLANES, 10, 9]`).
    fn encode_features(&self, out: &mut [f32]) {
        debug_assert!(out.is_empty());
    }
    /// Rebuilds the feature planes of a shard sample into `out` (`[FEATURE_PLANES, 10, 9]`).
    ///
    /// # Errors
    /// A board code that is no piece.
    fn features_from_inputs(inputs: &PlaneInputs, out: &mut [f32]) -> Result<(), InvalidPieceCode> {
        let _ = (inputs, out);
        Ok(())
    }
    /// Names of the feature planes, in order (for `model.json`).
    fn feature_plane_names() -> Vec<String> {
        Vec::new()
    }
    /// The move text of every policy index for the first player (for `model.json`); the pass,
    /// where a game has one, is written `pass`.
    fn action_names() -> Vec<String>;
}

/// A game's material scale, in half-pawns (a soldier is 2).
pub trait Material: GameRules {
    /// The value of the piece `mv` captures (0 for none) on the game's material scale, for the
    /// greedy baseline.
    fn capture_value(&self, mv: Move) -> i32;
    /// First player's material minus the second's, in half-pawns (a soldier is 2), of a
    /// compact board ([`PlaneInputs::board`]); codes that are no piece
    /// count nothing.
    fn material_half_pawns(board: &[u8; 90]) -> i16;
}

/// A game with its environment view: everything self-play, the replay buffer, the trainer, the
/// arena, export and the engine need beyond the search's [`SearchGame`]. It has no items of
/// its own and is implemented for every type with the four parts.
pub trait GameEnv: GameRules + Notation + NetView + Material {}

impl<G: GameRules + Notation + NetView + Material> GameEnv for G {}

/// The value of a finished xiangqi game for the side to move in its final position.
pub fn outcome_value(outcome: Outcome, game: &Game) -> f32 {
    match outcome.winner() {
        Some(w) if w == game.position().turn() => 1.0,
        Some(_) => -1.0,
        None => 0.0,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi::{Position, RuleSet};

    #[test]
    fn rule_names_are_in_shard_code_order() {
        for rules in [RuleSet::Asian, RuleSet::Simple] {
            let code = <Game as GameRules>::rules_code(rules);
            assert_eq!(GameKind::Xiangqi.rule_name(code), Some(rules.to_string().as_str()));
        }
        for rules in [xiangqi::janggi::Rules::Site, xiangqi::janggi::Rules::Traditional] {
            let code = <xiangqi::janggi::Game as GameRules>::rules_code(rules);
            assert_eq!(GameKind::Janggi.rule_name(code), Some(rules.to_string().as_str()));
        }
        assert_eq!(GameKind::Janggi.rule_name(2), None);
    }

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
