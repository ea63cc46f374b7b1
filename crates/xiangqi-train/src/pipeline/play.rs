//! The self-play phase of an iteration on the run's own threads, and its sample games in
//! `games.pgn`.

use super::*;

pub(super) fn write_game_pgn<G: GameEnv>(
    out: &mut Vec<u8>,
    record: &GameRecord<G>,
    iteration: u64,
) -> io::Result<()> {
    use std::io::Write as _;
    writeln!(out, "[Iteration \"{iteration}\"]")?;
    record.write_pgn(out)?;
    writeln!(out)
}

pub(super) fn append(path: &Path, bytes: &[u8]) -> Result<(), PipelineError> {
    use std::io::Write as _;
    if bytes.is_empty() {
        return Ok(());
    }
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| PipelineError::Io { what: "opening", path: path.into(), source })?;
    f.write_all(bytes).map_err(|source| PipelineError::Io {
        what: "writing",
        path: path.into(),
        source,
    })
}

/// The games of one self-play phase ([`TrainingRun::play_iteration_games`]).
pub(super) struct PlayedGames {
    pub(super) shard: Shard,
    pub(super) report: SelfPlayReport,
    /// The games' resignation counts (from the games played out without resignation).
    pub(super) resign_counts: ResignCalibration,
    /// The PGN of the iteration's first games, for `games.pgn`.
    pub(super) pgn: Vec<u8>,
}

/// Continuous self-play's state between iterations (`loop.continuous_selfplay`): the seed of
/// the games' generators, fixed from the first iteration this process played on, and the
/// [`InFlight`] games of the run's game.
pub(super) struct Continuing {
    seed: u64,
    games: Box<dyn std::any::Any + Send>,
}

impl TrainingRun {
    /// Plays the iteration's games with the current network and writes its shard; `None` if
    /// interrupted (the partial games are dropped).
    pub(super) fn self_play(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<Option<PlayedGames>, PipelineError> {
        let Some(played) = self.play_iteration_games(iteration, observer, None)? else {
            return Ok(None);
        };
        let path = shard_path(&self.paths, iteration);
        if self.config.run().resign_target_false_positive > 0.0 {
            // Before the shard: a resume that finds the shard finds its counts too.
            write_resign_pending(&self.paths, iteration, &played.resign_counts)?;
        }
        write_shard(&path, &played.shard)
            .map_err(|e| PipelineError::Shard { path: path.clone(), reason: shard_reason(&e) })?;
        append(&self.paths.games_pgn, &played.pgn)?;
        Ok(Some(played))
    }

    /// Plays the iteration's games with the current network (on `threads` threads, if given,
    /// else `selfplay.threads`); `None` if interrupted. Returns the shard, the report, the
    /// games' resignation counts and the PGN of the first games. Without `threads` (the
    /// trainer's own self-play) and with `loop.continuous_selfplay`, the games go on from the
    /// last iteration's and leave theirs for the next.
    pub(super) fn play_iteration_games(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
        threads: Option<u32>,
    ) -> Result<Option<PlayedGames>, PipelineError> {
        match self.config.selfplay().game {
            GameKind::Xiangqi => self.play_iteration_games_of::<Game>(iteration, observer, threads),
            GameKind::Janggi => {
                self.play_iteration_games_of::<janggi::Game>(iteration, observer, threads)
            }
        }
    }

    /// Refuses a shard of the run's directory that holds another game's samples: it would be
    /// trained on as this game's. (A shard of the same game under another rule set is the
    /// run's own history after a `--resume` that changed `selfplay.rules`: kept.)
    pub(super) fn check_shard_game(&self, path: &Path, shard: &Shard) -> Result<(), PipelineError> {
        let game = self.config.selfplay().game;
        if shard.game == game {
            return Ok(());
        }
        Err(PipelineError::Shard {
            path: path.to_path_buf(),
            reason: format!("it holds {} samples; this run plays {game}", shard.game),
        })
    }

    /// The encoding the run's net takes (the game's, with the feature planes if
    /// `network.input_features`; the config's check refused a game without them).
    pub(super) fn encoding(&self) -> Encoding {
        let base = Encoding::of_kind(self.config.selfplay().game);
        base.with_features(self.config.network().input_features).unwrap_or(base)
    }

    /// The shard code of the run's rule set.
    pub(super) fn rules_code(&self) -> Result<u8, PipelineError> {
        rules_code_of(self.config.selfplay())
    }

    /// [`TrainingRun::play_iteration_games`] for the run's game `G`.
    pub(super) fn play_iteration_games_of<G: GameEnv>(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
        threads: Option<u32>,
    ) -> Result<Option<PlayedGames>, PipelineError> {
        let mut evaluator = NnEvaluator::new(self.play_net()?);
        let mut selfplay = self.config.selfplay().clone().into_inner();
        selfplay.seed = derive_seed(self.config.run().seed, 1, iteration);
        let continuous = threads.is_none() && self.config.run().continuous_selfplay;
        // Taken out for the call (and put back after it): an error or an interruption drops
        // the carried games.
        let mut carried = None;
        if continuous {
            let c = self.in_flight.take().filter(|c| c.games.is::<InFlight<G>>());
            let c = c.unwrap_or_else(|| Continuing {
                seed: selfplay.seed,
                games: Box::new(InFlight::<G>::default()),
            });
            selfplay.seed = c.seed;
            carried = Some(c);
        }
        if let Some(t) = threads {
            selfplay.threads = t;
        }
        let generation = u32::try_from(self.iteration).unwrap_or(u32::MAX - 1);
        let tuning = self.config.run().resign_target_false_positive > 0.0;
        selfplay.resign_threshold = self.resign_threshold();
        let threshold = selfplay.resign_threshold;
        // This iteration's games alone; merged into the run's counts by the caller.
        let mut calibration = ResignCalibration::new(RESIGN_CALIBRATION_CAPACITY);
        let mut shard = Shard::new::<G>(selfplay.rules_for::<G>()?);
        let mut pgn = Vec::new();
        let mut plies = 0u64;
        let keep_pgn = self.config.run().pgn_games_per_iteration;
        let started = Instant::now();
        let mut games = 0u64;
        // The iteration's seed, threads and threshold are new values: checked as such.
        let selfplay = Checked::new(selfplay)?;
        let forks = self.fork_pools.of::<G>();
        let in_flight = carried.as_mut().and_then(|c| c.games.downcast_mut::<InFlight<G>>());
        let on_event = |event: SelfPlayEvent<'_, G>| {
            match event {
                SelfPlayEvent::GameFinished(record, stats) => {
                    shard.push_game(record, generation);
                    if tuning {
                        calibration.add_game(record, threshold);
                    }
                    plies += record.moves.len() as u64;
                    games += 1;
                    if (games as usize) <= keep_pgn {
                        write_game_pgn(&mut pgn, record, iteration)?;
                    }
                    observer.selfplay_progress(stats);
                }
                SelfPlayEvent::Progress(stats) => observer.selfplay_progress(stats),
            }
            if observer.should_stop() { Err("interrupted".into()) } else { Ok(()) }
        };
        let count = self.config.run().games_per_iteration;
        let search = self.config.search();
        let result = match in_flight {
            Some(in_flight) => play_games_continuing(
                in_flight,
                forks,
                search,
                &selfplay,
                count,
                &mut evaluator,
                on_event,
            ),
            None => {
                play_games_forking(0, forks, search, &selfplay, count, &mut evaluator, on_event)
            }
        };
        let stats = match result {
            Ok(stats) => stats,
            Err(_) if observer.should_stop() => return Ok(None),
            Err(e) => return Err(PipelineError::SelfPlay(e.to_string())),
        };
        self.in_flight = carried;
        let report = SelfPlayReport {
            games,
            samples: shard.len(),
            plies,
            stats,
            elapsed: started.elapsed(),
            resign_threshold: Some(threshold),
        };
        Ok(Some(PlayedGames { shard, report, resign_counts: calibration, pgn }))
    }
}

/// The shard code of the rule set `sp` plays ([`GameRules::rules_code`]).
pub(super) fn rules_code_of(sp: &SelfPlayConfig) -> Result<u8, PipelineError> {
    Ok(match sp.game {
        GameKind::Xiangqi => Game::rules_code(sp.rules_for::<Game>()?),
        GameKind::Janggi => janggi::Game::rules_code(sp.rules_for::<janggi::Game>()?),
    })
}
