//! Sequential matches: [`run_match`] and its [`MatchConfig`].

use xiangqi::Color;

use crate::game::GameEnv;

use super::game::{ArenaGame, GameSettings, play_game};
use super::opening::Opening;
use super::player::Player;
use super::stats::{MatchStats, Sprt, SprtVerdict};

/// Settings of a match.
#[derive(Debug)]
pub struct MatchConfig<G: GameEnv> {
    /// Games to play (at most; an SPRT may stop earlier).
    pub games: u32,
    /// Settings of each game.
    pub settings: GameSettings<G>,
    /// A test that stops the match once decided.
    pub sprt: Option<Sprt>,
}

impl<G: GameEnv> Clone for MatchConfig<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: GameEnv> Copy for MatchConfig<G> {}

impl<G: GameEnv> PartialEq for MatchConfig<G> {
    fn eq(&self, other: &Self) -> bool {
        self.games == other.games && self.settings == other.settings && self.sprt == other.sprt
    }
}

/// Plays a match of `config.games` games between `a` and `b`: game `i` uses opening
/// `openings[(i / 2) % len]`, with A as Red when `i` is even and as Black when it is odd, so
/// each opening is played once with each colour. After each game `on_game` gets the game and
/// the statistics so far; returning false stops the match. With an SPRT the match stops as soon
/// as it accepts a hypothesis.
///
/// # Panics
/// If `openings` is empty.
pub fn run_match<G: GameEnv>(
    a: &mut dyn Player<G>,
    b: &mut dyn Player<G>,
    openings: &[Opening<G>],
    config: &MatchConfig<G>,
    mut on_game: impl FnMut(&ArenaGame<G>, &MatchStats) -> bool,
) -> MatchStats {
    assert!(!openings.is_empty(), "run_match without openings");
    let mut stats = MatchStats::default();
    for i in 0..u64::from(config.games) {
        let opening = &openings[(i / 2) as usize % openings.len()];
        // The opening's side to move after its moves does not matter: A is Red on even games.
        let a_color = if i % 2 == 0 { Color::Red } else { Color::Black };
        let game = if a_color == Color::Red {
            play_game(a, b, opening, &config.settings, i)
        } else {
            play_game(b, a, opening, &config.settings, i)
        };
        stats.add(&game, a_color);
        let verdict = config.sprt.map(|s| (s.llr(&stats.wdl), s.verdict(&stats.wdl)));
        stats.sprt = verdict;
        let go_on = on_game(&game, &stats);
        if !go_on || verdict.is_some_and(|(_, v)| v != SprtVerdict::Continue) {
            break;
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use xiangqi::{Game, RuleSet};

    use crate::arena::player::{GreedyPlayer, RandomPlayer};
    use crate::record::parse_pgn_moves;

    use super::*;

    #[test]
    fn greedy_beats_random_clearly() {
        let mut greedy = GreedyPlayer::new(7);
        let mut random = RandomPlayer::new(8);
        let config: MatchConfig<Game> =
            MatchConfig { games: 20, settings: GameSettings::default(), sprt: None };
        let stats = run_match(
            &mut greedy,
            &mut random,
            &Opening::<xiangqi::Game>::builtin(),
            &config,
            |g, _| {
                // Every game is a legal game judged by the rules.
                let mut pgn = Vec::new();
                g.write_pgn(&mut pgn, "test").unwrap();
                let text = String::from_utf8(pgn).unwrap();
                let (_, moves) = parse_pgn_moves::<xiangqi::Game>(&text, RuleSet::Asian).unwrap();
                assert_eq!(moves, g.record.moves);
                assert!(g.forfeit.is_none());
                true
            },
        );
        assert_eq!(stats.games(), 20);
        assert!(stats.wdl.score() > 0.75, "{} {:?}", stats.wdl, stats.reasons);
        assert_eq!(stats.a_first.games(), 10);
    }
}
