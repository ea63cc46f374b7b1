//! The periodic arena: the current net against `random`, `greedy` and the previous arena's net.

use super::*;

impl TrainingRun {
    /// The current network against `random`, `greedy` and the network of the previous arena
    /// (or the initial network), `arena_games` games each.
    ///
    /// # Errors
    /// A refused checkpoint of the earlier network.
    pub fn arena(&mut self, observer: &mut dyn Observer) -> Result<(), PipelineError> {
        match self.config.selfplay().game {
            GameKind::Xiangqi => self.arena_of::<Game>(observer),
            GameKind::Janggi => self.arena_of::<janggi::Game>(observer),
        }
    }

    /// [`TrainingRun::arena`] for the run's game `G`.
    pub(super) fn arena_of<G: GameEnv>(
        &mut self,
        observer: &mut dyn Observer,
    ) -> Result<(), PipelineError> {
        let r = self.config.run();
        let mut search = self.config.search().clone().into_inner();
        search.dirichlet_epsilon = 0.0;
        let sims = if r.arena_simulations > 0 { r.arena_simulations } else { search.simulations };
        search.simulations = sims;
        search.cheap_simulations = search.cheap_simulations.min(sims);
        let settings = GameSettings::<G> {
            rules: self.config.selfplay().rules_for::<G>()?,
            max_plies: self.config.selfplay().length_cap.max(1),
            limit: MoveLimit { simulations: Some(sims), ..MoveLimit::default() },
        };
        let match_config = MatchConfig { games: r.arena_games, settings, sprt: None };
        let openings = Opening::<G>::builtin();
        let seed = derive_seed(r.seed, 3, self.iteration);
        let concurrency = (self.config.selfplay().games_in_flight as usize).max(1);
        let me = LocalPlayer::Mcts { name: "current".into(), config: search.clone() };
        let mut current = NnEvaluator::new(self.play_net()?);
        let mut previous = self.last_arena_checkpoint.unwrap_or(0);
        if !checkpoint_path(&self.paths, previous).is_dir() {
            // Pruned (a resume from an older checkpoint): the initial network is always kept.
            previous = 0;
        }
        let mut earlier = None;
        if previous < self.iteration {
            let dir = checkpoint_path(&self.paths, previous);
            let (net, manifest) =
                checkpoint::load_net(&dir, Some(self.config.network().get()), &self.device)?;
            manifest.expect_game(&dir, self.config.selfplay().game)?;
            let net = InferenceNet::from_net(&net, &self.device)?;
            earlier = Some(NnEvaluator::new(net.with_precision(r.precision)));
        }
        let mut opponents = vec![
            ("random".to_string(), LocalPlayer::Random { seed }),
            ("greedy".to_string(), LocalPlayer::Greedy { seed }),
        ];
        if earlier.is_some() {
            let name = format!("ckpt-{previous:06}");
            opponents.push((name.clone(), LocalPlayer::Mcts { name, config: search.clone() }));
        }
        for (name, opponent) in opponents {
            let mut stopped = false;
            let on_game = |_: &_, _: &_| {
                stopped = observer.should_stop();
                !stopped
            };
            let result = match (&opponent, earlier.as_mut()) {
                (LocalPlayer::Mcts { .. }, Some(eval_b)) => run_match_batched(
                    &me,
                    &opponent,
                    &mut current,
                    eval_b,
                    &openings,
                    &match_config,
                    concurrency,
                    on_game,
                ),
                _ => run_match_batched(
                    &me,
                    &opponent,
                    &mut current,
                    &mut UniformEvaluator,
                    &openings,
                    &match_config,
                    concurrency,
                    on_game,
                ),
            };
            let played = result.map_err(|e| PipelineError::Arena(e.to_string()))?;
            if stopped {
                return Ok(());
            }
            observer.arena(&ArenaReport {
                iteration: self.iteration,
                opponent: name,
                stats: played.stats,
            });
        }
        self.last_arena_checkpoint = Some(self.iteration);
        // Record it in this iteration's checkpoint, so that a run resumed from it measures the
        // next arena against this net (and pruning keeps this net).
        self.save_checkpoint()?;
        Ok(())
    }
}
