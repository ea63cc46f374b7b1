//! The game interface for xiangqi ([`xiangqi::Game`]).

use xiangqi::env::{InvalidPieceCode, PlaneInputs};
use xiangqi::{Color, Game, Move, MoveList, Outcome};

use super::{
    GameKind, GameRules, Material, NetView, Notation, SearchGame, half_pawns, outcome_value,
    plane_names_of,
};

/// Xiangqi's material scale in half-pawns, by piece-kind index (general, advisor, elephant,
/// horse, chariot, cannon, soldier): the common scale of xiangqi programs (chariot 9, cannon
/// 4.5, horse 4, advisor and elephant 2, soldier 1 pawn; the general 0, as it is never captured).
pub const XIANGQI_HALF_PAWNS: [i16; 7] = [0, 4, 4, 8, 18, 9, 2];

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

    fn has_winning_move(&self, moves: &[Move]) -> bool {
        Game::has_winning_move(self, moves)
    }

    fn winning_moves(&self, moves: &[Move], out: &mut Vec<u32>) {
        out.extend(self.winning_move_indices(moves).map(|i| i as u32));
    }
}

impl GameRules for Game {
    type Position = xiangqi::Position;

    type Rules = xiangqi::RuleSet;

    const KIND: GameKind = GameKind::Xiangqi;

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
}

impl Notation for Game {
    const PGN_GAME: &'static str = "Chinese Chess";

    const SIDE_TAGS: [&'static str; 2] = ["Red", "Black"];

    const OPENINGS: &'static [(&'static str, &'static str)] = &crate::arena::XIANGQI_OPENINGS;

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

    fn parse_move(&self, text: &str) -> Result<Move, String> {
        Game::position(self).parse_uci(text).map_err(|e| e.to_string())
    }

    fn move_from_uci(text: &str, base: xiangqi::RankBase) -> Result<Move, String> {
        Move::from_uci(text, base).map_err(|e| e.to_string())
    }
}

impl NetView for Game {
    const ENCODING_VERSION: u32 = xiangqi::env::ENCODING_VERSION;

    const PLANES: usize = xiangqi::env::PLANES;

    const POLICY_SIZE: usize = xiangqi::env::POLICY_SIZE;

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

    fn plane_names() -> Vec<String> {
        plane_names_of(xiangqi::env::CLOCK_SCALE, "advisor")
    }

    const FEATURES_ENCODING_VERSION: u32 = xiangqi::env::FEATURES_ENCODING_VERSION;

    const FEATURE_PLANES: usize = xiangqi::env::FEATURE_PLANES;

    fn encode_features(&self, out: &mut [f32]) {
        xiangqi::env::encode_features(self, out);
    }

    fn features_from_inputs(inputs: &PlaneInputs, out: &mut [f32]) -> Result<(), InvalidPieceCode> {
        xiangqi::env::features_from_compact(inputs, out)
    }

    fn feature_plane_names() -> Vec<String> {
        let sentences = [
            "1.0 on every point the side to move attacks (own pieces there are protected)",
            "1.0 on every point the opponent attacks",
            "1.0 on each piece of the side to move that the opponent attacks and it does not \
             protect (not the general)",
            "1.0 on each piece of the opponent that the side to move attacks and the opponent \
             does not protect (not the general)",
            "1.0 on each piece of the side to move pinned to its general (its removal would \
             leave the general attacked)",
            "1.0 on each piece of the opponent pinned to its general",
            "1.0 everywhere if the side to move is in check, else 0.0",
        ];
        xiangqi::env::FEATURE_PLANE_NAMES
            .iter()
            .zip(sentences)
            .map(|(name, text)| format!("{name}: {text}"))
            .collect()
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

impl Material for Game {
    fn capture_value(&self, mv: Move) -> i32 {
        Game::position(self)
            .piece_at(mv.to())
            .map_or(0, |p| i32::from(XIANGQI_HALF_PAWNS[p.kind.index()]))
    }

    fn material_half_pawns(board: &[u8; 90]) -> i16 {
        half_pawns(board, &XIANGQI_HALF_PAWNS)
    }
}
