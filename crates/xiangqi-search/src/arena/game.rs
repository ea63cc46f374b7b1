//! One arena game judged by the rules ([`play_game`], [`ArenaGame`], [`Forfeit`]) and its PGN.

use std::fmt;
use std::io::{self, Write};
use std::time::Instant;

use xiangqi::{Color, Move, Outcome, OutcomeReason};

use crate::game::GameEnv;
use crate::record::GameRecord;

use super::opening::Opening;
use super::player::{MoveLimit, Player, PlayerError};

/// Why a player lost a game without the rules deciding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForfeitKind {
    /// It proposed an illegal or unreadable move.
    IllegalMove,
    /// It exceeded its time.
    Timeout,
    /// Its process died.
    Crash,
    /// Any other failure.
    Error,
}

impl ForfeitKind {
    /// Every kind.
    pub const ALL: [ForfeitKind; 4] =
        [ForfeitKind::IllegalMove, ForfeitKind::Timeout, ForfeitKind::Crash, ForfeitKind::Error];

    /// The name used in tables and PGN (`illegal_move`, `timeout`, `crash`, `error`).
    pub const fn name(self) -> &'static str {
        match self {
            ForfeitKind::IllegalMove => "illegal_move",
            ForfeitKind::Timeout => "timeout",
            ForfeitKind::Crash => "crash",
            ForfeitKind::Error => "error",
        }
    }

    /// Index in [`ForfeitKind::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ForfeitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PlayerError {
    /// The kind of forfeit this error causes.
    pub fn kind(&self) -> ForfeitKind {
        match self {
            PlayerError::Illegal(_) => ForfeitKind::IllegalMove,
            PlayerError::Timeout(_) => ForfeitKind::Timeout,
            PlayerError::Crashed(_) => ForfeitKind::Crash,
            PlayerError::Failed(_) => ForfeitKind::Error,
        }
    }
}

/// A game lost by a player's failure rather than by the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forfeit {
    /// The side that lost.
    pub loser: Color,
    /// How.
    pub kind: ForfeitKind,
    /// The details (the move text, the time taken, the exit status, ...).
    pub detail: String,
}

/// Settings of every game of a match (of game `G`, xiangqi by default).
#[derive(Debug)]
pub struct GameSettings<G: GameEnv> {
    /// The rule set that judges the games.
    pub rules: G::Rules,
    /// Plies (opening included) after which an undecided game is stopped and scored as a draw
    /// ([`OutcomeReason::LengthCap`]; not a rule verdict).
    pub max_plies: u32,
    /// The limit of every move.
    pub limit: MoveLimit,
}

impl<G: GameEnv> Clone for GameSettings<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: GameEnv> Copy for GameSettings<G> {}

impl<G: GameEnv> PartialEq for GameSettings<G> {
    fn eq(&self, other: &Self) -> bool {
        (self.rules, self.max_plies, self.limit) == (other.rules, other.max_plies, other.limit)
    }
}

impl<G: GameEnv> Eq for GameSettings<G> {}

impl<G: GameEnv> Default for GameSettings<G> {
    /// The game's default rules (xiangqi `asian`, janggi `site`), 600 plies,
    /// [`MoveLimit::default`].
    fn default() -> Self {
        GameSettings { rules: G::default_rules(), max_plies: 600, limit: MoveLimit::default() }
    }
}

/// A finished arena game.
#[derive(Clone, Debug)]
pub struct ArenaGame<G: GameEnv> {
    /// The moves and the verdict. A forfeit is recorded as a win for the other side with reason
    /// [`OutcomeReason::Resignation`] (the rules have no forfeit verdict); see `forfeit`.
    pub record: GameRecord<G>,
    /// The first player's name (xiangqi's Red, janggi's Cho).
    pub first: String,
    /// The second player's name (xiangqi's Black, janggi's Han).
    pub second: String,
    /// The opening's name.
    pub opening: String,
    /// Set when a player lost by failing rather than by the rules.
    pub forfeit: Option<Forfeit>,
}

impl<G: GameEnv> PartialEq for ArenaGame<G> {
    fn eq(&self, other: &Self) -> bool {
        self.record == other.record
            && self.first == other.first
            && self.second == other.second
            && self.opening == other.opening
            && self.forfeit == other.forfeit
    }
}

impl<G: GameEnv> ArenaGame<G> {
    /// The game's outcome.
    pub fn outcome(&self) -> Outcome {
        self.record.outcome
    }

    /// Writes the game in the PGN form of self-play ([`GameRecord::write_pgn`]), with
    /// `[Event "{event}"]`, the players' names in `[Red]` and `[Black]` (janggi: `[Cho]`,
    /// `[Han]`), an `[Opening]` tag, and
    /// for a forfeit `[Termination "{kind}"]` with a `[Forfeit "..."]` tag giving the details.
    ///
    /// # Errors
    /// I/O errors of `w`.
    pub fn write_pgn<W: Write>(&self, w: &mut W, event: &str) -> io::Result<()> {
        let mut buf = Vec::new();
        self.record.write_pgn(&mut buf)?;
        let text = String::from_utf8_lossy(&buf);
        for line in text.lines() {
            if line.starts_with("[Event ") {
                writeln!(w, "[Event \"{}\"]", escape_tag(event))?;
            } else if line.starts_with(&format!("[{} ", G::SIDE_TAGS[0])) {
                writeln!(w, "[{} \"{}\"]", G::SIDE_TAGS[0], escape_tag(&self.first))?;
            } else if line.starts_with(&format!("[{} ", G::SIDE_TAGS[1])) {
                writeln!(w, "[{} \"{}\"]", G::SIDE_TAGS[1], escape_tag(&self.second))?;
            } else if line.starts_with("[Termination ") {
                match &self.forfeit {
                    Some(f) => {
                        writeln!(w, "[Termination \"{}\"]", f.kind)?;
                        writeln!(
                            w,
                            "[Forfeit \"{} {}: {}\"]",
                            G::SIDE_TAGS[f.loser.index()].to_lowercase(),
                            f.kind,
                            escape_tag(&f.detail)
                        )?;
                    }
                    None => writeln!(w, "{line}")?,
                }
                writeln!(w, "[Opening \"{}\"]", escape_tag(&self.opening))?;
            } else {
                writeln!(w, "{line}")?;
            }
        }
        Ok(())
    }
}

/// A PGN tag value: backslashes and quotes escaped, line breaks and control characters dropped,
/// at most 200 characters.
fn escape_tag(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().filter(|c| !c.is_control()).take(200) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Plays one game from `opening` between `first`, who plays the first player's colour
/// (xiangqi's Red, janggi's Cho), and `second`, whichever side the opening leaves to move, and
/// returns it. Never fails: a player's failure is a [`Forfeit`]. Every verdict not a forfeit
/// comes from the rules ([`GameRules::outcome`](crate::GameRules::outcome)), or from
/// `max_plies` (a draw by [`OutcomeReason::LengthCap`]).
pub fn play_game<G: GameEnv>(
    first: &mut dyn Player<G>,
    second: &mut dyn Player<G>,
    opening: &Opening<G>,
    settings: &GameSettings<G>,
    game_id: u64,
) -> ArenaGame<G> {
    let mut game = opening.game(settings.rules);
    let mut forfeit = None;
    for color in [Color::Red, Color::Black] {
        let player: &mut dyn Player<G> =
            if color == Color::Red { &mut *first } else { &mut *second };
        if let Err(e) = player.new_game(game_id) {
            forfeit.get_or_insert(Forfeit { loser: color, kind: e.kind(), detail: e.to_string() });
        }
    }
    while forfeit.is_none() && game.outcome().is_none() {
        if reached_length_cap(&mut game, settings) {
            break;
        }
        let color = game.turn();
        let player: &mut dyn Player<G> =
            if color == Color::Red { &mut *first } else { &mut *second };
        forfeit = play_player_move(player, &mut game, &settings.limit);
    }
    finished_game(&game, forfeit, settings, game_id, [first.name(), second.name()], opening.name())
}

/// Ends an undecided `game` as a draw by [`OutcomeReason::LengthCap`] once it has
/// `max_plies` plies; returns whether it did.
pub(super) fn reached_length_cap<G: GameEnv>(game: &mut G, settings: &GameSettings<G>) -> bool {
    let capped = game.moves().len() >= settings.max_plies as usize;
    if capped {
        game.set_outcome(Outcome::Draw { reason: OutcomeReason::LengthCap });
    }
    capped
}

/// Asks `player` for a move in `game` (not over) within `limit` and plays it. Returns the
/// forfeit of the side to move if the player fails, answers late or proposes an illegal move.
pub(super) fn play_player_move<G: GameEnv>(
    player: &mut dyn Player<G>,
    game: &mut G,
    limit: &MoveLimit,
) -> Option<Forfeit> {
    let color = game.turn();
    let started = Instant::now();
    let answer = player.choose_move(game, limit);
    let elapsed = started.elapsed();
    let late = limit.deadline().is_some_and(|d| elapsed > d);
    let lose = |kind, detail| Some(Forfeit { loser: color, kind, detail });
    match answer {
        Err(e) => lose(e.kind(), e.to_string()),
        Ok(_) if late => lose(
            ForfeitKind::Timeout,
            format!(
                "took {} ms for a {} ms move (margin {} ms)",
                elapsed.as_millis(),
                limit.movetime.unwrap_or_default().as_millis(),
                limit.margin.as_millis()
            ),
        ),
        Ok(m) => play_checked(game, m),
    }
}

/// Plays `m` in `game`; the forfeit of the side to move if it is illegal.
pub(super) fn play_checked<G: GameEnv>(game: &mut G, m: Move) -> Option<Forfeit> {
    let color = game.turn();
    match game.play_checked(m) {
        Ok(_) => None,
        Err(e) => Some(Forfeit {
            loser: color,
            kind: ForfeitKind::IllegalMove,
            detail: format!("{m} at ply {}: {e}", game.moves().len()),
        }),
    }
}

/// The record of a finished (or forfeited) game; `names` are Red's and Black's.
pub(super) fn finished_game<G: GameEnv>(
    game: &G,
    forfeit: Option<Forfeit>,
    settings: &GameSettings<G>,
    game_id: u64,
    names: [&str; 2],
    opening: &str,
) -> ArenaGame<G> {
    let outcome = match &forfeit {
        Some(f) => Outcome::Win { winner: f.loser.other(), reason: OutcomeReason::Resignation },
        None => game.outcome().unwrap_or(Outcome::Draw { reason: OutcomeReason::LengthCap }),
    };
    ArenaGame {
        record: GameRecord {
            game_id,
            rules: settings.rules,
            start: game.start().clone(),
            moves: game.moves().to_vec(),
            outcome,
            samples: Vec::new(),
            resign_disabled: false,
            would_have_resigned: None,
            lowest_value: [1.0; 2],
            final_material: Some(crate::record::material_of(game)),
        },
        first: names[0].to_string(),
        second: names[1].to_string(),
        opening: opening.to_string(),
        forfeit,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use xiangqi::Game;

    use crate::arena::player::RandomPlayer;

    use super::*;

    /// A player that always proposes the same (illegal) move, or sleeps.
    struct Broken {
        sleep: Duration,
    }

    impl Player<Game> for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        fn choose_move(
            &mut self,
            game: &xiangqi::Game,
            _: &MoveLimit,
        ) -> Result<Move, PlayerError> {
            std::thread::sleep(self.sleep);
            let legal = game.legal_moves();
            if self.sleep.is_zero() {
                Ok(Move::new(
                    game.position().general(Color::Red),
                    game.position().general(Color::Black),
                ))
            } else {
                Ok(legal[0])
            }
        }
    }

    #[test]
    fn illegal_and_late_moves_forfeit() {
        let opening = &Opening::<xiangqi::Game>::builtin()[0];
        let mut random = RandomPlayer::new(1);
        let settings = GameSettings::default();
        let g =
            play_game(&mut Broken { sleep: Duration::ZERO }, &mut random, opening, &settings, 0);
        let f = g.forfeit.clone().unwrap();
        assert_eq!((f.loser, f.kind), (Color::Red, ForfeitKind::IllegalMove));
        assert_eq!(g.outcome().winner(), Some(Color::Black));
        let mut pgn = Vec::new();
        g.write_pgn(&mut pgn, "x").unwrap();
        let text = String::from_utf8(pgn).unwrap();
        assert!(text.contains("[Termination \"illegal_move\"]"), "{text}");
        assert!(text.contains("[Red \"broken\"]") && text.contains("[Event \"x\"]"), "{text}");
        // Game 0 is the first: round 1, as the forfeit message counts it.
        assert!(text.contains("[Round \"1\"]"), "{text}");

        // A 1 ms move with a 1 s margin: generous for the random player on a loaded machine
        // (it answers in microseconds), missed by a player that takes 2 s.
        let timed = GameSettings {
            limit: MoveLimit {
                simulations: None,
                movetime: Some(Duration::from_millis(1)),
                margin: Duration::from_secs(1),
            },
            ..settings
        };
        let mut slow = Broken { sleep: Duration::from_secs(2) };
        let g = play_game(&mut random, &mut slow, opening, &timed, 1);
        let f = g.forfeit.unwrap();
        assert_eq!((f.loser, f.kind), (Color::Black, ForfeitKind::Timeout), "{}", f.detail);
        assert!(f.detail.contains("for a 1 ms move (margin 1000 ms)"), "{}", f.detail);
    }

    #[test]
    fn max_plies_draws_by_length_cap() {
        let mut a = RandomPlayer::new(1);
        let mut b = RandomPlayer::new(2);
        let settings: GameSettings<Game> =
            GameSettings { max_plies: 10, ..GameSettings::default() };
        let g = play_game(&mut a, &mut b, &Opening::<xiangqi::Game>::builtin()[0], &settings, 0);
        assert_eq!(g.record.moves.len(), 10);
        assert_eq!(g.outcome(), Outcome::Draw { reason: OutcomeReason::LengthCap });
    }
}
