//! What `xqz train` writes while the loop runs: the progress bar and log lines, TensorBoard
//! scalars, `metrics.csv` and `arena.csv` (upgraded in place when an older version wrote them,
//! and cut back to the checkpoint on resume), as the loop's [`Observer`].

use super::*;

/// Keeps the header and the rows of a CSV file whose first field, an iteration, is at most
/// `keep_to` (and the first row of each iteration in `metrics.csv` style files: a row repeated
/// by an older version is dropped too); rewrites the file atomically if anything is dropped.
/// Returns how many rows were dropped. A missing file is left missing.
pub(super) fn truncate_csv(path: &Path, keep_to: u64) -> anyhow::Result<usize> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut kept = String::with_capacity(text.len());
    let mut dropped = 0;
    for (i, line) in text.lines().enumerate() {
        let iteration = line.split(',').next().and_then(|f| f.parse::<u64>().ok());
        let keep = match iteration {
            Some(it) => it <= keep_to,
            // The header, and a line cut short by a kill while it was written (no complete
            // iteration field): only the header is kept.
            None => i == 0,
        };
        if keep && (i == 0 || line.contains(',')) {
            kept.push_str(line);
            kept.push('\n');
        } else {
            dropped += 1;
        }
    }
    // Rewritten also when the last line lacks its newline, so that the next row starts a line.
    if dropped > 0 || !text.ends_with('\n') && !text.is_empty() {
        write_atomically(path, kept.as_bytes())?;
    }
    Ok(dropped)
}

/// Writes a small file atomically ([`xiangqi_train::atomic::write_atomically`]).
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    xiangqi_train::atomic::write_atomically(path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

pub(super) const METRICS_HEADER: &str = "iteration,elapsed_s,total_samples,total_steps,games,samples,\
mean_game_length,games_per_s,simulations_per_s,evaluations_per_s,batch_fill,train_samples_per_s,\
loss,policy_loss,value_loss,weight_decay_loss,policy_entropy,value_accuracy,learning_rate,\
grad_norm,window_samples,false_resign_rate,end_checkmate,end_no_legal_moves,end_perpetual_check,\
end_perpetual_chase,end_repetition,end_no_capture_limit,end_move_limit,end_insufficient_material,\
end_resignation,end_length_cap,resign_threshold,heldout_samples,heldout_policy_loss,\
heldout_value_loss,heldout_result_loss,heldout_material_loss,store_shards,store_workers,store_mb,\
stale_shards,bad_shards,data_age_mean,data_age_max,ingest_s,waiting_shards,opponent_policy_loss,\
short_term_value_loss,moves_left_loss,soft_policy_loss";

pub(super) const ARENA_HEADER: &str =
    "iteration,elapsed_s,opponent,games,wins,draws,losses,score,elo,elo_low,elo_high";

/// Writes TensorBoard events, the CSV files and the progress bar.
pub(super) struct CliObserver {
    stop: Arc<AtomicBool>,
    /// `None` once writing events has failed (a full disk): the run goes on without them.
    tb: Option<SummaryWriter>,
    metrics: BufWriter<File>,
    arena: BufWriter<File>,
    bar: ProgressBar,
    quiet: bool,
    games_per_iteration: u64,
    iteration: u64,
    /// The run's elapsed seconds (summed over resumes) at the last iteration report, and when.
    elapsed_mark: (f64, Instant),
    last_flush: Instant,
    headline: String,
    /// `--hours`: when this invocation stops, and whether it stopped for that.
    deadline: Option<Instant>,
    pub(super) timed_out: bool,
    /// The config's time and step budgets (0 = none), for the time left in the progress line.
    max_hours: f64,
    max_steps: u64,
    /// Iterations reported in this invocation.
    pub(super) iterations_done: u64,
    /// The planned steps of the pretraining under way, if one is.
    pretraining: Option<u64>,
    /// Optimizer steps and elapsed run seconds when this invocation started, and the newest
    /// step, for the step budget's rate.
    first_step: Option<(u64, Instant)>,
}

/// Brings a CSV file written by an earlier version up to `header`: when its header is a
/// prefix of `header` (columns were added at the end), the header is replaced and every row
/// padded with empty cells, atomically; a file with any other header is renamed to
/// `<name>.old` (or `<name>.old-K`) and a new one started. Returns the new name of a file moved
/// aside.
pub(super) fn upgrade_csv(path: &Path, header: &str) -> anyhow::Result<Option<PathBuf>> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let Some(old) = text.lines().next() else { return Ok(None) };
    if old == header {
        return Ok(None);
    }
    let columns = header.split(',').count();
    if header.starts_with(old) && header[old.len()..].starts_with(',') {
        let mut out = String::with_capacity(text.len() * 2);
        out.push_str(header);
        out.push('\n');
        // Each row filled with empty cells up to the header's width (a row already that wide,
        // or wider, is kept as it is).
        for line in text.lines().skip(1) {
            out.push_str(line);
            let cells = line.split(',').count();
            out.push_str(&",".repeat(columns.saturating_sub(cells)));
            out.push('\n');
        }
        write_atomically(path, out.as_bytes())?;
        return Ok(None);
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let aside = (0..)
        .map(|k| {
            path.with_file_name(if k == 0 {
                format!("{name}.old")
            } else {
                format!("{name}.old-{k}")
            })
        })
        .find(|p| !p.exists())
        .expect("some name is free");
    fs::rename(path, &aside)
        .with_context(|| format!("cannot move {} aside to {}", path.display(), aside.display()))?;
    Ok(Some(aside))
}

pub(super) fn open_csv(path: &Path, header: &str) -> anyhow::Result<BufWriter<File>> {
    if let Some(aside) = upgrade_csv(path, header)? {
        errln!(
            "warning: {} has columns this version does not write; moved aside to {}",
            path.display(),
            aside.display()
        );
    }
    let new = !path.exists() || fs::metadata(path).map(|m| m.len() == 0).unwrap_or(true);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut w = BufWriter::new(file);
    if new {
        writeln!(w, "{header}").with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(w)
}

impl CliObserver {
    /// An observer of a run that has already run for `run_elapsed` (summed over earlier
    /// invocations), so that what it writes before this invocation's first iteration report (a
    /// replayed arena's rows) carries the run's time, not the invocation's.
    pub(super) fn new(
        run_dir: &Path,
        stop: Arc<AtomicBool>,
        quiet: bool,
        config: &CheckedRunConfig,
        deadline: Option<Instant>,
        run_elapsed: Duration,
    ) -> anyhow::Result<CliObserver> {
        let tb_dir = run_dir.join("tensorboard");
        fs::create_dir_all(&tb_dir)
            .with_context(|| format!("cannot create {}", tb_dir.display()))?;
        // tensorboard-rs panics when it cannot create its event file: find out first.
        let probe = tb_dir.join(format!(".write-test-{}", std::process::id()));
        fs::write(&probe, b"").with_context(|| {
            format!("cannot write TensorBoard events into {}", tb_dir.display())
        })?;
        let _ = fs::remove_file(&probe);
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        };
        Ok(CliObserver {
            stop,
            tb: Some(SummaryWriter::new(&tb_dir)),
            metrics: open_csv(&run_dir.join("metrics.csv"), METRICS_HEADER)?,
            arena: open_csv(&run_dir.join("arena.csv"), ARENA_HEADER)?,
            bar,
            quiet,
            games_per_iteration: config.run().games_per_iteration,
            iteration: 0,
            elapsed_mark: (run_elapsed.as_secs_f64(), Instant::now()),
            last_flush: Instant::now(),
            headline: String::new(),
            deadline,
            timed_out: false,
            max_hours: config.run().max_hours,
            max_steps: config.run().max_steps,
            iterations_done: 0,
            pretraining: None,
            first_step: None,
        })
    }

    /// Seconds the run has been going, summed over resumes (as `metrics.csv` counts them).
    pub(super) fn run_elapsed(&self) -> f64 {
        self.elapsed_mark.0 + self.elapsed_mark.1.elapsed().as_secs_f64()
    }

    /// The time left until the run stops by itself, when it can be told: the nearest of
    /// `--hours`, `loop.max_hours` and `loop.max_steps` at this invocation's step rate so far.
    pub(super) fn time_left(&self, step: Option<u64>) -> Option<Duration> {
        let mut left: Option<f64> = None;
        let mut nearest = |s: f64| left = Some(left.map_or(s, |l: f64| l.min(s)));
        if let Some(d) = self.deadline {
            nearest(d.saturating_duration_since(Instant::now()).as_secs_f64());
        }
        if self.max_hours > 0.0 {
            nearest((self.max_hours * 3600.0 - self.run_elapsed()).max(0.0));
        }
        if let (Some(step), Some((first, since))) = (step, self.first_step)
            && self.max_steps > 0
            && step > first
        {
            let rate = (step - first) as f64 / since.elapsed().as_secs_f64().max(1e-9);
            nearest(self.max_steps.saturating_sub(step) as f64 / rate);
        }
        left.map(Duration::from_secs_f64)
    }

    /// `| left 1:02:03` for the progress line, or nothing.
    pub(super) fn left_text(&self, step: Option<u64>) -> String {
        self.time_left(step).map_or(String::new(), |d| {
            let s = d.as_secs();
            format!(" | left {}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
        })
    }

    pub(super) fn log(&self, line: &str) {
        // A hidden bar (--quiet, or stderr not a terminal: nohup, a log file) prints nothing.
        if self.quiet || self.bar.is_hidden() {
            errln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    pub(super) fn finish(&mut self) {
        self.bar.finish_and_clear();
        self.tb_flush();
        let _ = self.metrics.flush();
        let _ = self.arena.flush();
    }

    /// Runs `f` on the TensorBoard writer. tensorboard-rs panics when its event file cannot be
    /// written (a full disk): the panic is caught, TensorBoard output stops with a warning, and
    /// the writer is leaked rather than dropped (its destructor would panic again and abort).
    pub(super) fn with_tb(&mut self, f: impl FnOnce(&mut SummaryWriter)) {
        let Some(tb) = self.tb.as_mut() else { return };
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(tb))).is_ok();
        if !ok {
            if let Some(tb) = self.tb.take() {
                std::mem::forget(tb);
            }
            self.log(
                "warning: TensorBoard events can no longer be written (see the message above); \
                 training goes on, metrics.csv still gets every row",
            );
        }
    }

    pub(super) fn tb_flush(&mut self) {
        self.with_tb(SummaryWriter::flush);
    }

    pub(super) fn scalar(&mut self, tag: &str, value: f64, step: u64) {
        if value.is_finite() {
            self.with_tb(|tb| tb.add_scalar(tag, value as f32, step as usize));
        }
    }
}

impl CliObserver {
    /// The iteration's TensorBoard scalars.
    fn iteration_scalars(&mut self, r: &IterationReport, rates: &IterationRates) {
        let it = r.iteration;
        let st = &r.selfplay.stats;
        if rates.played {
            self.scalar("selfplay/games_per_sec", rates.games_per_s, it);
            self.scalar("selfplay/simulations_per_sec", rates.sims_per_s, it);
            self.scalar("selfplay/evaluations_per_sec", rates.evals_per_s, it);
            self.scalar("selfplay/batch_fill", st.batch_fill(), it);
            self.scalar("selfplay/mean_game_length", r.selfplay.mean_game_length(), it);
            for reason in OutcomeReason::ALL {
                self.scalar(
                    &format!("selfplay/ending/{}", reason.name()),
                    r.selfplay.reason_share(reason),
                    it,
                );
            }
        }
        if let Some(t) = r.selfplay.resign_threshold.filter(|_| rates.played) {
            self.scalar("selfplay/resign_threshold", f64::from(t), it);
        }
        if let Some(h) = &r.heldout {
            for (name, x) in [
                ("heldout/policy_loss", h.policy_loss),
                ("heldout/value_loss", h.value_loss),
                ("heldout/result_loss", h.result_loss),
                ("heldout/material_loss", h.material_loss),
            ] {
                if x.is_finite() {
                    self.scalar(name, x, it);
                }
            }
        }
        if let Some(rate) = rates.false_resign {
            self.scalar("selfplay/false_resign_rate", rate, it);
        }
        if r.steps > 0 {
            self.scalar("train/samples_per_sec", r.train_samples_per_sec, it);
        }
        self.scalar("replay/window_samples", r.window_samples as f64, it);
        self.scalar("replay/total_samples", r.total_samples as f64, it);
        if let Some(g) = &r.ingest {
            self.scalar("store/shards", g.shards as f64, it);
            self.scalar("store/workers", g.workers as f64, it);
            self.scalar("store/megabytes", g.bytes as f64 / 1e6, it);
            self.scalar("store/stale_shards", g.stale_shards as f64, it);
            self.scalar("store/data_age_mean", g.age_mean, it);
            self.scalar("store/data_age_max", g.age_max as f64, it);
            self.scalar("store/waiting_shards", g.waiting_shards as f64, it);
        }
    }
}

impl Observer for CliObserver {
    fn iteration_started(&mut self, iteration: u64) {
        self.iteration = iteration;
        self.bar.set_message(format!(
            "iteration {iteration}: self-play {}{}",
            self.headline,
            self.left_text(None)
        ));
    }

    fn selfplay_progress(&mut self, stats: &SelfPlayStats) {
        let secs = stats.elapsed.as_secs_f64().max(1e-9);
        self.bar.set_message(format!(
            "iteration {}: self-play {}/{} games, {:.0} sims/s, batch fill {:.0}% {}{}",
            self.iteration,
            stats.games_finished,
            self.games_per_iteration,
            stats.simulations as f64 / secs,
            100.0 * stats.batch_fill(),
            self.headline,
            self.left_text(None)
        ));
    }

    fn step(&mut self, m: &StepMetrics) {
        let s = m.step;
        self.scalar("loss/total", f64::from(m.loss), s);
        self.scalar("loss/policy", f64::from(m.policy_loss), s);
        self.scalar("loss/value", f64::from(m.value_loss), s);
        self.scalar("loss/weight_decay", f64::from(m.weight_decay_loss), s);
        self.scalar("policy/entropy", f64::from(m.policy_entropy), s);
        self.scalar("value/accuracy", f64::from(m.value_accuracy), s);
        // The auxiliary heads' losses, for a network that has them (0 otherwise).
        for (tag, x) in [
            ("loss/opponent_policy", m.opponent_policy_loss),
            ("loss/short_term_value", m.short_term_value_loss),
            ("loss/moves_left", m.moves_left_loss),
            ("loss/soft_policy", m.soft_policy_loss),
        ] {
            if x > 0.0 {
                self.scalar(tag, f64::from(x), s);
            }
        }
        self.scalar("train/learning_rate", m.learning_rate, s);
        self.scalar("train/grad_norm", f64::from(m.grad_norm), s);
        if self.first_step.is_none() {
            self.first_step = Some((s, Instant::now()));
        }
        if let Some(planned) = self.pretraining {
            self.bar.set_message(format!(
                "pretraining: step {s} of {planned} loss {:.3} (policy {:.3}, value {:.3}) {}{}",
                m.loss,
                m.policy_loss,
                m.value_loss,
                self.headline,
                self.left_text(Some(s))
            ));
            return;
        }
        self.bar.set_message(format!(
            "iteration {}: training step {} loss {:.3} (policy {:.3}, value {:.3}) {}{}",
            self.iteration,
            s,
            m.loss,
            m.policy_loss,
            m.value_loss,
            self.headline,
            self.left_text(Some(s))
        ));
        if self.last_flush.elapsed() > Duration::from_secs(10) {
            self.tb_flush();
            self.last_flush = Instant::now();
        }
    }

    fn iteration(&mut self, r: &IterationReport) {
        self.elapsed_mark = (r.elapsed.as_secs_f64(), Instant::now());
        self.iterations_done += 1;
        let rates = IterationRates::of(r);
        self.iteration_scalars(r, &rates);
        let row = metrics_row(r, &rates);
        // Written through to the file before the iteration's checkpoint (a kill after this line
        // and before the checkpoint replays the iteration, and the resume drops this row).
        let _ = writeln!(self.metrics, "{row}");
        let _ = self.metrics.flush();
        let _ = self.metrics.get_ref().sync_data();
        self.tb_flush();
        let line = iteration_line(r, &rates);
        self.log(&format!("{line}{}", self.left_text(Some(r.total_steps))));
    }

    fn arena(&mut self, r: &ArenaReport) {
        let wdl = &r.stats.wdl;
        let elo = wdl.elo();
        let opp = r.opponent.replace('/', "_");
        // "ckpt-NNNNNN" opponents change over time: one tag for "the previous arena net".
        let tag = if opp.starts_with("ckpt-") { "previous".to_string() } else { opp.clone() };
        self.scalar(&format!("arena/{tag}/score"), wdl.score(), r.iteration);
        self.scalar(&format!("arena/{tag}/elo"), elo.elo, r.iteration);
        self.scalar(&format!("arena/{tag}/elo_low"), elo.lower, r.iteration);
        self.scalar(&format!("arena/{tag}/elo_high"), elo.upper, r.iteration);
        let _ = writeln!(
            self.arena,
            "{},{:.1},{},{},{},{},{},{:.4},{:.1},{:.1},{:.1}",
            r.iteration,
            self.run_elapsed(),
            opp,
            wdl.wins + wdl.draws + wdl.losses,
            wdl.wins,
            wdl.draws,
            wdl.losses,
            wdl.score(),
            elo.elo,
            elo.lower,
            elo.upper
        );
        let _ = self.arena.flush();
        self.tb_flush();
        self.headline = format!("| vs {opp}: {:.0}%", 100.0 * wdl.score());
        self.log(&format!(
            "arena after iteration {}: vs {opp}: +{} ={} -{}, score {:.1}%, Elo {:+.0} [{:+.0}, {:+.0}]",
            r.iteration,
            wdl.wins,
            wdl.draws,
            wdl.losses,
            100.0 * wdl.score(),
            elo.elo,
            elo.lower,
            elo.upper
        ));
    }

    fn should_stop(&mut self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out = true;
        }
        self.timed_out || self.stop.load(Ordering::SeqCst)
    }

    fn warning(&mut self, message: &str) {
        self.log(&format!("warning: {message}"));
    }

    fn pretrain_started(&mut self, p: &xiangqi_nn::checkpoint::Pretraining) {
        self.pretraining = Some(p.planned_steps);
        let from = if p.steps > 0 { format!(" (from step {})", p.steps) } else { String::new() };
        self.log(&format!(
            "pretraining on {}: {} shard{}, {} game{}, {} samples; {} steps{from}",
            p.source,
            p.shards,
            if p.shards == 1 { "" } else { "s" },
            p.games,
            if p.games == 1 { "" } else { "s" },
            p.samples,
            p.planned_steps
        ));
    }

    fn pretrained(&mut self, r: &xiangqi_train::pipeline::PretrainReport) {
        self.pretraining = None;
        let what = if r.finished { "pretrained" } else { "pretraining stopped" };
        self.log(&format!(
            "{what}: step {} of {} ({} this session, {:.0} samples/s), loss {:.3} (policy {:.3}, \
             value {:.3})",
            r.record.steps,
            r.record.planned_steps,
            r.steps,
            r.samples_per_sec,
            r.mean.loss,
            r.mean.policy_loss,
            r.mean.value_loss
        ));
    }
}

/// An iteration's self-play rates, and whether they are known: a resumed iteration whose shard
/// was written before the stop played no games in this session, so its self-play figures are
/// unknown, not zero (empty CSV cells, no scalars).
struct IterationRates {
    played: bool,
    games_per_s: f64,
    sims_per_s: f64,
    evals_per_s: f64,
    false_resign: Option<f64>,
}

impl IterationRates {
    fn of(r: &IterationReport) -> IterationRates {
        let st = &r.selfplay.stats;
        let secs = r.selfplay.elapsed.as_secs_f64();
        let per_sec = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let played = secs > 0.0 && st.games_finished > 0;
        IterationRates {
            played,
            games_per_s: per_sec(r.selfplay.games),
            sims_per_s: per_sec(st.simulations),
            evals_per_s: per_sec(st.evaluations),
            false_resign: st.resign_false_positive_rate().filter(|_| played),
        }
    }
}

/// The iteration's `metrics.csv` row, in the header's column order.
fn metrics_row(r: &IterationReport, rates: &IterationRates) -> String {
    let st = &r.selfplay.stats;
    // A cell with `digits` decimals where its value was measured, else empty.
    let cell_if = |measured: bool, x: f64, digits: usize| {
        if measured { format!("{x:.digits$}") } else { String::new() }
    };
    let known = |x: f64, digits: usize| cell_if(rates.played, x, digits);
    let m = &r.mean;
    // The training columns stay empty in an iteration that took no optimizer step (the window
    // still filling, or a stop during self-play): there is no loss to report, and a 0 would
    // read as a perfect one.
    let trained = |x: f64, digits: usize| cell_if(r.steps > 0, x, digits);
    let mut row = format!(
        "{},{:.1},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        r.iteration,
        r.elapsed.as_secs_f64(),
        r.total_samples,
        r.total_steps,
        r.selfplay.games,
        r.selfplay.samples,
        known(r.selfplay.mean_game_length(), 2),
        known(rates.games_per_s, 4),
        known(rates.sims_per_s, 1),
        known(rates.evals_per_s, 1),
        known(st.batch_fill(), 4),
        trained(r.train_samples_per_sec, 1),
        trained(f64::from(m.loss), 5),
        trained(f64::from(m.policy_loss), 5),
        trained(f64::from(m.value_loss), 5),
        trained(f64::from(m.weight_decay_loss), 6),
        trained(f64::from(m.policy_entropy), 4),
        trained(f64::from(m.value_accuracy), 4),
        trained(m.learning_rate, 6),
        trained(f64::from(m.grad_norm), 4),
        r.window_samples,
        rates.false_resign.map_or(String::new(), |x| format!("{x:.4}")),
    );
    // The share of the iteration's games that ended for each reason (OutcomeReason::ALL
    // order, as in the header).
    for reason in OutcomeReason::ALL {
        row.push(',');
        row.push_str(&known(r.selfplay.reason_share(reason), 4));
    }
    row.push(',');
    if let Some(t) = r.selfplay.resign_threshold.filter(|_| rates.played) {
        row.push_str(&format!("{t:.2}"));
    }
    let cell = |x: f64| if x.is_finite() { format!("{x:.5}") } else { String::new() };
    match &r.heldout {
        Some(h) => row.push_str(&format!(
            ",{},{},{},{},{}",
            h.samples,
            cell(h.policy_loss),
            cell(h.value_loss),
            cell(h.result_loss),
            cell(h.material_loss)
        )),
        None => row.push_str(",,,,,"),
    }
    match &r.ingest {
        Some(g) => row.push_str(&format!(
            ",{},{},{:.3},{},{},{:.2},{},{:.2},{}",
            g.shards,
            g.workers,
            g.bytes as f64 / 1e6,
            g.stale_shards,
            g.bad_shards,
            g.age_mean,
            g.age_max,
            g.seconds,
            g.waiting_shards
        )),
        None => row.push_str(",,,,,,,,,"),
    }
    // The auxiliary heads' losses: empty where the loss is 0, for a network without the head
    // or an iteration with no sample for it (no full search, for the soft policy).
    for x in
        [m.opponent_policy_loss, m.short_term_value_loss, m.moves_left_loss, m.soft_policy_loss]
    {
        row.push(',');
        if x > 0.0 {
            row.push_str(&format!("{x:.5}"));
        }
    }
    row
}

/// The iteration's log line, without the time-left estimate.
fn iteration_line(r: &IterationReport, rates: &IterationRates) -> String {
    let games = if rates.played {
        format!(
            "{} games ({:.1} plies avg, {:.0} sims/s)",
            r.selfplay.games,
            r.selfplay.mean_game_length(),
            rates.sims_per_s
        )
    } else {
        match &r.ingest {
            Some(g) => format!(
                "{} games from the store ({} shard{} of {} worker{}, data age {:.1} \
                 generations)",
                r.selfplay.games,
                g.shards,
                if g.shards == 1 { "" } else { "s" },
                g.workers,
                if g.workers == 1 { "" } else { "s" },
                g.age_mean
            ),
            None => format!(
                "{} games (played before the run was stopped and resumed)",
                r.selfplay.games
            ),
        }
    };
    let m = &r.mean;
    let before = if r.steps_before_stop > 0 {
        format!(" (and {} before the stop)", r.steps_before_stop)
    } else {
        String::new()
    };
    let training = if r.steps > 0 {
        format!(
            "{} steps{before}, loss {:.3} (policy {:.3}, value {:.3})",
            r.steps, m.loss, m.policy_loss, m.value_loss
        )
    } else if r.steps_before_stop > 0 {
        format!("{} steps, all before the stop", r.steps_before_stop)
    } else {
        "no training step".to_string()
    };
    format!(
        "iteration {}: {games}, {training}, window {} samples, {:.1} min",
        r.iteration,
        r.window_samples,
        r.elapsed.as_secs_f64() / 60.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resumed run's observer counts on from the run's time before any iteration report: the
    /// rows of an arena replayed first carry it (they carried the invocation's seconds).
    #[test]
    fn a_resumed_runs_observer_starts_at_the_runs_elapsed_time() {
        let dir = std::env::temp_dir().join(format!("xqz-observer-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let config = xiangqi_train::pipeline::RunConfig::default().check().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let resumed =
            CliObserver::new(&dir, stop.clone(), true, &config, None, Duration::from_secs(106))
                .unwrap();
        let elapsed = resumed.run_elapsed();
        assert!((106.0..107.0).contains(&elapsed), "{elapsed}");
        drop(resumed);
        let fresh = CliObserver::new(&dir, stop, true, &config, None, Duration::ZERO).unwrap();
        assert!(fresh.run_elapsed() < 1.0, "{}", fresh.run_elapsed());
        drop(fresh);
        let _ = fs::remove_dir_all(&dir);
    }

    /// An iteration without an optimizer step leaves every training column empty (a loss of 0
    /// would plot as a perfect net), and one with steps fills them; both rows keep the header's
    /// column count.
    #[test]
    fn an_iteration_without_steps_has_empty_training_cells() {
        let header: Vec<&str> = METRICS_HEADER.split(',').collect();
        let col = |name: &str| header.iter().position(|&h| h == name).unwrap();
        let training = [
            "train_samples_per_s",
            "loss",
            "policy_loss",
            "value_loss",
            "weight_decay_loss",
            "policy_entropy",
            "value_accuracy",
            "learning_rate",
            "grad_norm",
        ];
        let mean = StepMetrics {
            loss: 2.5,
            policy_loss: 2.0,
            value_loss: 0.5,
            weight_decay_loss: 0.001,
            policy_entropy: 3.0,
            value_accuracy: 0.5,
            learning_rate: 0.002,
            grad_norm: 1.25,
            ..StepMetrics::default()
        };
        let report = |steps: u64| IterationReport {
            iteration: 3,
            steps,
            mean: if steps > 0 { mean } else { StepMetrics::default() },
            train_samples_per_sec: if steps > 0 { 2500.0 } else { 0.0 },
            window_samples: 1200,
            ..IterationReport::default()
        };
        let idle = report(0);
        let row = metrics_row(&idle, &IterationRates::of(&idle));
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{row}");
        for name in training {
            assert_eq!(cells[col(name)], "", "{name} in {row}");
        }
        assert_eq!(cells[col("window_samples")], "1200");
        assert!(iteration_line(&idle, &IterationRates::of(&idle)).contains("no training step"));
        // Steps taken before a stop, none after the resume: not measured here, so the cells
        // stay empty, but the line does not say that no step was taken.
        let resumed = IterationReport { steps_before_stop: 257, ..report(0) };
        let row = metrics_row(&resumed, &IterationRates::of(&resumed));
        assert_eq!(row.split(',').nth(col("loss")), Some(""), "{row}");
        let line = iteration_line(&resumed, &IterationRates::of(&resumed));
        assert!(line.contains("257 steps, all before the stop"), "{line}");
        // Some before the stop, some after: the line's loss is over these, and it says so.
        let both = IterationReport { steps_before_stop: 51, ..report(35) };
        let line = iteration_line(&both, &IterationRates::of(&both));
        assert!(line.contains("35 steps (and 51 before the stop), loss 2.500"), "{line}");

        let busy = report(40);
        let row = metrics_row(&busy, &IterationRates::of(&busy));
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{row}");
        assert_eq!(cells[col("loss")].parse::<f64>().unwrap(), 2.5);
        assert_eq!(cells[col("grad_norm")].parse::<f64>().unwrap(), 1.25);
        assert_eq!(cells[col("train_samples_per_s")].parse::<f64>().unwrap(), 2500.0);
        assert!(iteration_line(&busy, &IterationRates::of(&busy)).contains("40 steps, loss 2.500"));
    }
}
