//! `go`: its limits as parsed, a level's budget, and the search it starts (a method of
//! [`Engine`], with the rest of the protocol loop in the parent module).

use super::*;

/// Limits of one `go`, as parsed.
#[derive(Clone, Debug, Default)]
struct Go {
    nodes: Option<u64>,
    depth: Option<u32>,
    movetime: Option<Duration>,
    /// Own remaining time and increment (UCI: by colour; UCCI: `time`, `increment`).
    wtime: Option<Duration>,
    btime: Option<Duration>,
    winc: Option<Duration>,
    binc: Option<Duration>,
    time: Option<Duration>,
    increment: Option<Duration>,
    movestogo: Option<u32>,
    infinite: bool,
    ponder: bool,
    searchmoves: Vec<String>,
}

const GO_KEYWORDS: [&str; 21] = [
    "nodes",
    "depth",
    "movetime",
    "wtime",
    "btime",
    "winc",
    "binc",
    "time",
    "increment",
    "opptime",
    "oppincrement",
    "movestogo",
    "infinite",
    "ponder",
    "draw",
    "searchmoves",
    "mate",
    "perft",
    "nodestime",
    "hashfull",
    "wdl",
];

impl<E: Evaluator<G> + Send + 'static, G: GameEnv> Engine<E, G> {
    /// The level to play at, if below full strength, the full budget its simulations are a
    /// share of, and what to tell the GUI about it.
    fn strength(&mut self, table: Option<&StrengthTable>) -> Option<(Strength, u64, String)> {
        let o = &self.options;
        let (strength, why) = match (o.limit_strength, table) {
            (true, Some(t)) => {
                let (low, _) = t.elo_range();
                let elo = o.elo.unwrap_or(low as f64);
                let s = t.level_for_elo(elo);
                (s, format!("UCI_Elo {elo}: {s}"))
            }
            (true, None) => {
                let note = format!(
                    "UCI_LimitStrength: this network has no measured levels (run xqz calibrate \
                     on its export), so UCI_Elo cannot be met; playing Skill Level {}",
                    o.skill
                );
                self.info(&note);
                (Strength::skill(self.options.skill), format!("Skill Level {}", self.options.skill))
            }
            (false, _) => (Strength::skill(o.skill), format!("Skill Level {}", o.skill)),
        };
        let o = &self.options;
        // Full strength is unlimited, except where UCI_Elo names the top of a table: that Elo
        // was measured at the table's budget.
        if strength.is_full() && !(o.limit_strength && table.is_some()) {
            return None;
        }
        // The measured Elo holds for the budget the table was measured with.
        let full = table.map_or(o.simulations, |t| u64::from(t.simulations));
        Some((strength, full, why))
    }

    /// Milliseconds, or seconds in UCCI unless `usemillisec` is on (`movetime`: always
    /// milliseconds); a finite number, negative ones kept as they are for the caller to judge.
    fn clock_value(&self, key: &str, text: &str) -> Option<f64> {
        let v: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
        let ucci_seconds = self.dialect == Dialect::Ucci && !self.options.usemillisec;
        Some(if ucci_seconds && key != "movetime" { v * 1000.0 } else { v })
    }

    fn parse_go(&self, words: &[&str]) -> Go {
        let mut go = Go::default();
        let mut i = 0;
        while i < words.len() {
            let key = words[i];
            i += 1;
            let value = words.get(i).copied().filter(|v| !GO_KEYWORDS.contains(v));
            let mut used = true;
            let mut bad = false;
            match key {
                "infinite" => {
                    go.infinite = true;
                    used = false;
                }
                "ponder" => {
                    go.ponder = true;
                    used = false;
                }
                "draw" => used = false,
                "searchmoves" => {
                    while let Some(w) = words.get(i).filter(|w| !GO_KEYWORDS.contains(*w)) {
                        go.searchmoves.push(w.to_string());
                        i += 1;
                    }
                    used = false;
                }
                "nodes" => match value.and_then(|v| v.parse::<u64>().ok()) {
                    Some(n) => go.nodes = Some(n.clamp(1, uci_search::MAX_SIMULATIONS)),
                    None => bad = true,
                },
                "depth" => match value.and_then(|v| v.parse::<u32>().ok()) {
                    Some(d) => go.depth = Some(d),
                    None => bad = true,
                },
                "movestogo" => match value.and_then(|v| v.parse::<u32>().ok()) {
                    Some(d) => go.movestogo = Some(d),
                    None => bad = true,
                },
                "movetime" | "wtime" | "btime" | "winc" | "binc" | "time" | "increment" => {
                    let ms = value.and_then(|v| self.clock_value(key, v));
                    let parsed = match ms {
                        // A clock that ran out (a GUI's lag) is no time left, said so.
                        Some(ms) if ms < 0.0 && matches!(key, "wtime" | "btime" | "time") => {
                            let shown: String = value.unwrap_or("").chars().take(24).collect();
                            self.info(&format!(
                                "go: negative {key} '{shown}' taken as no time left (0 ms)"
                            ));
                            Some(0.0)
                        }
                        Some(ms) if ms < 0.0 => {
                            let shown: String = value.unwrap_or("").chars().take(24).collect();
                            self.info(&format!(
                                "go: bad value '{shown}' for {key}: a time may not be negative; \
                                 ignored"
                            ));
                            None
                        }
                        Some(ms) => Some(ms),
                        None => {
                            bad = true;
                            None
                        }
                    };
                    // None: explained above.
                    if let Some(d) =
                        parsed.map(|ms| Duration::from_micros((ms.min(1e12) * 1000.0) as u64))
                    {
                        let slot = match key {
                            "movetime" => &mut go.movetime,
                            "wtime" => &mut go.wtime,
                            "btime" => &mut go.btime,
                            "winc" => &mut go.winc,
                            "binc" => &mut go.binc,
                            "time" => &mut go.time,
                            _ => &mut go.increment,
                        };
                        *slot = Some(d);
                    }
                }
                "opptime" | "oppincrement" | "mate" | "nodestime" => {
                    if value.is_none() {
                        bad = true;
                    }
                }
                other => {
                    let shown: String = other.chars().take(24).collect();
                    self.info(&format!("go: unknown parameter '{shown}' ignored"));
                    used = false;
                }
            }
            if bad {
                let shown: String = value.unwrap_or("").chars().take(24).collect();
                self.info(&format!("go: bad value '{shown}' for {key}; ignored"));
                if value.is_none() {
                    used = false;
                }
            }
            if used {
                i += 1;
            }
        }
        go
    }

    pub(super) fn go(&mut self, words: &[&str]) {
        self.stop_search();
        let go = self.parse_go(words);
        if let Some(note) = self.evaluator_note() {
            self.info(&note);
        }
        let banned_by_command = std::mem::take(&mut self.banned);
        let dialect = self.dialect;
        let no_move = || match dialect {
            Dialect::Uci => "bestmove (none)",
            Dialect::Ucci => "nobestmove",
        };
        let mut root = self.game.clone();
        if root.outcome().is_some() && G::position_legal_moves(root.position()).is_empty() {
            if dialect == Dialect::Uci {
                // No legal move: the side to move has lost.
                let wdl = if self.options.show_wdl { " wdl 0 0 1000" } else { "" };
                self.out.line(&format!("info depth 0 score mate 0{wdl}"));
            }
            self.out.line(no_move());
            return;
        }
        if let Some((at, o)) = self.verdict {
            let n = self.line.len();
            let searched = if at == n {
                "the position without its history".to_string()
            } else {
                format!("the position after all {n} moves")
            };
            let at = if at == 0 { String::new() } else { format!(" at move {at}") };
            self.info(&format!("the rules have ended this game{at} ({o}); searching {searched}"));
        }
        if root.outcome().is_some() {
            root = root.without_history();
        }
        // The position's moves: `Game::legal_moves` is empty once the rules ended the game.
        let legal = G::position_legal_moves(root.position());
        let mut banned: Vec<Move> =
            legal.iter().copied().filter(|m| banned_by_command.contains(m)).collect();
        if !go.searchmoves.is_empty() {
            let allowed: Vec<Move> =
                go.searchmoves.iter().filter_map(|t| root.parse_move(t).ok()).collect();
            if allowed.is_empty() {
                self.info("go: no legal move in searchmoves; searching every move");
            } else {
                banned.extend(legal.iter().copied().filter(|m| !allowed.contains(m)));
            }
        }
        if !legal.is_empty() && legal.iter().all(|m| banned.contains(m)) {
            self.info("every legal move is excluded; searching them all");
            banned.clear();
        }
        if root.outcome().is_some() {
            // Still decided without history (dead material): any allowed move will do.
            let m = legal.iter().copied().find(|m| !banned.contains(m));
            match m {
                Some(m) => self.out.line(&format!("bestmove {m}")),
                None => self.out.line(no_move()),
            }
            return;
        }
        let turn = root.turn();
        let (own, inc) = match dialect {
            Dialect::Uci if turn == xiangqi::Color::Red => {
                (go.wtime.or(go.time), go.winc.or(go.increment))
            }
            Dialect::Uci => (go.btime.or(go.time), go.binc.or(go.increment)),
            Dialect::Ucci => (
                go.time.or(if turn == xiangqi::Color::Red { go.wtime } else { go.btime }),
                go.increment,
            ),
        };
        let time = go.movetime.or_else(|| {
            own.map(|t| uci_search::time_budget(t, inc.unwrap_or_default(), go.movestogo))
        });
        let simulations = match (go.nodes, go.depth) {
            (Some(n), _) => Some(n),
            (None, Some(d)) => Some(uci_search::depth_simulations(d)),
            (None, None) if time.is_none() => Some(self.options.simulations),
            (None, None) => None,
        };
        let hash = (self.options.hash_mb as usize).saturating_mul(1 << 20);
        let max_nodes = (hash / uci_search::bytes_per_node::<G>(root.moves().len())).max(64);
        let record = self.net_record();
        // A level below full strength searches its share of the full budget (fewer where the
        // `go` asks for fewer), whatever else limits the search.
        let level = self.strength(record.strength.as_ref());
        let simulations = match &level {
            Some((strength, full, why)) => {
                let full = u32::try_from(*full).unwrap_or(u32::MAX);
                let n = u64::from(strength.simulations(full));
                let n = simulations.map_or(n, |g| g.min(n));
                let unit = if n == 1 { "simulation" } else { "simulations" };
                self.info(&format!("playing at {why}: {n} {unit} a move"));
                Some(n)
            }
            None => simulations,
        };
        // Gumbel needs its budget beforehand: a search until `stop` is PUCT.
        let budget = if (go.infinite || go.ponder) && level.is_none() { None } else { simulations };
        let (search, notes) = self.options.search.for_search(record.search.as_ref(), budget);
        for note in notes {
            self.info(&note);
        }
        self.searches += 1;
        let job = Job {
            game: root,
            search,
            show_wdl: self.options.show_wdl,
            banned,
            simulations,
            time: if go.ponder { None } else { time },
            multipv: self.options.multipv as usize,
            max_nodes,
            dialect,
            strength: level.map(|(strength, _, _)| strength),
            seed: self.seed ^ self.searches.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        };
        let controls = Arc::new(Controls::new(go.infinite || go.ponder, job.time));
        let handle = uci_search::spawn(
            job,
            Arc::clone(&self.evaluator),
            Arc::clone(&controls),
            self.out.clone(),
        );
        self.running = Some(Running {
            controls,
            ponder_time: if go.ponder && !go.infinite { time } else { None },
            handle,
        });
    }

    pub(super) fn ponderhit(&mut self) {
        if let Some(r) = &self.running {
            let c = &r.controls;
            if let Some(t) = r.ponder_time {
                let now = c.started.elapsed() + t;
                c.deadline_ms.store(now.as_millis() as u64, Ordering::Relaxed);
            }
            c.infinite.store(false, Ordering::Relaxed);
        }
    }
}
