//! The game interface for janggi ([`xiangqi::janggi::Game`]).

use xiangqi::env::{InvalidPieceCode, PlaneInputs};
use xiangqi::{Color, Move, Outcome, janggi};

use super::{
    GameKind, GameRules, Material, NetView, Notation, SearchGame, half_pawns, plane_names_of,
};

/// Janggi's material scale, by piece-kind index (general, guard, elephant, horse, chariot,
/// cannon, soldier): the conventional janggi point values (chariot 13, cannon 7, horse 5,
/// elephant 3, guard 3, soldier 2; the general 0), which are half-pawns already (a soldier is 2).
pub const JANGGI_HALF_PAWNS: [i16; 7] = [0, 3, 3, 5, 13, 7, 2];

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

impl GameRules for janggi::Game {
    type Position = janggi::Position;

    type Rules = janggi::Rules;

    const KIND: GameKind = GameKind::Janggi;

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
}

impl Notation for janggi::Game {
    const PGN_GAME: &'static str = "Janggi";

    const SIDE_TAGS: [&'static str; 2] = ["Cho", "Han"];

    const OPENINGS: &'static [(&'static str, &'static str)] = &crate::arena::JANGGI_OPENINGS;

    fn position_from_fen(fen: &str, rules: janggi::Rules) -> Result<janggi::Position, String> {
        janggi::Position::from_fen(fen, rules).map_err(|e| e.to_string())
    }

    fn position_fen(pos: &janggi::Position) -> String {
        pos.fen()
    }

    fn parse_move(&self, text: &str) -> Result<Move, String> {
        janggi::Game::position(self).parse_uci(text).map_err(|e| e.to_string())
    }

    fn move_from_uci(text: &str, base: xiangqi::RankBase) -> Result<Move, String> {
        janggi::parse_uci_with(text, base).map_err(|e| e.to_string())
    }
}

impl NetView for janggi::Game {
    const ENCODING_VERSION: u32 = janggi::env::ENCODING_VERSION;

    const PLANES: usize = janggi::env::PLANES;

    const POLICY_SIZE: usize = janggi::env::POLICY_SIZE;

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

    fn plane_names() -> Vec<String> {
        plane_names_of(janggi::env::CLOCK_SCALE, "guard")
    }

    const FEATURES_ENCODING_VERSION: u32 = janggi::env::FEATURES_ENCODING_VERSION;

    const FEATURE_PLANES: usize = janggi::env::FEATURE_PLANES;

    fn encode_features(&self, out: &mut [f32]) {
        janggi::env::encode_features(self, out);
    }

    fn features_from_inputs(inputs: &PlaneInputs, out: &mut [f32]) -> Result<(), InvalidPieceCode> {
        janggi::env::features_from_compact(inputs, out)
    }

    fn feature_plane_names() -> Vec<String> {
        // Xiangqi's planes and sentences; the attacks follow janggi's movement.
        <xiangqi::Game as NetView>::feature_plane_names()
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

impl Material for janggi::Game {
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
}
