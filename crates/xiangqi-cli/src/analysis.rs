//! `xqz analysis --net NET`: the batched analysis engine for servers, after KataGo's analysis
//! engine (`docs/Analysis_Engine.md` of KataGo): one JSON query a line on standard input, one
//! JSON answer a line on standard output, many queries searched at once with their leaves
//! evaluated in shared batches (the one game driver, [`xiangqi_search::Lockstep`]).
//!
//! # Queries
//! ```json
//! {"id":"g1","initialFen":"...","moves":["h2e2","h9g7"],"maxVisits":800,"analyzeTurns":[1,2]}
//! ```
//! * `id` (string, required): copied into every answer and error of the query.
//! * `game` (`"xiangqi"` or `"janggi"`): must be the network's game (the default).
//! * `rules`: the rule set by name (`asian`, `simple`; `site`, `traditional`; default: the
//!   game's default).
//! * `initialFen`: the start position (default: the game's start). `moves`: moves played from
//!   it, in the engine's UCI text (`h2e2`; janggi's pass as `xqz uci` writes it).
//! * `maxVisits`: simulations of each search (default `--visits`, 800; at most `--max-visits`,
//!   100,000 unless set: a search holds about 1.3 KB a visit). Whole numbers may be written
//!   `3`, `3.0` or `3e2`.
//! * `analyzeTurns`: which positions to analyse, as the number of `moves` played before them
//!   (default: the last, after all of them; an empty list is an error); each gets its own
//!   answer.
//! * `maxMoveInfos`: at most this many candidate moves in an answer (default: every move the
//!   search visited). This field is this engine's; KataGo has none.
//! * `level`: a skill level from 0 to 20 (fractions allowed), as `xqz uci`'s `Skill Level`
//!   ([`xiangqi_search::strength`]): the search gets the level's share of the full budget, as
//!   in `xqz uci` (the budget the network's levels were calibrated with, `xqz calibrate`, else
//!   `--visits`; `maxVisits` can only lower it), and the answer adds `levelMove`, the move a
//!   player of that level plays (drawn with a seed from the `id` and the turn, so a query
//!   repeated gets the same move; the candidates stay the search's). This engine's field.
//!
//! An unknown field, a value of the wrong type, an illegal move or a game the network does not
//! play is answered by `{"id": ..., "error": "...", "field": ...}` (`field`: the one to blame;
//! `id` where the line had one), and the engine reads on; so is a line that is no JSON, not
//! UTF-8, or longer than 1 MiB (skipped without being held in memory). A position where the
//! game is already over gets an error with its `turnNumber`. (A key given twice counts once,
//! with its last value, as JSON parsers commonly read it.)
//!
//! # Answers
//! ```json
//! {"id":"g1","turnNumber":2,"isDuringSearch":false,
//!  "moveInfos":[{"move":"h7e7","order":0,"visits":412,"prior":0.31,"winrate":0.52,"q":0.04,
//!                "wdl":[0.21,0.62,0.17],"pv":["h7e7","b0c2"]}, ...],
//!  "rootInfo":{"visits":800,"winrate":0.52,"value":0.04,"wdl":[0.21,0.62,0.17]}}
//! ```
//! Every figure is from the side to move at the analysed position. `q` and `value` are mean
//! backed-up values in `[-1, 1]`; `wdl` is win, draw and loss (`W = (1 + q − d) / 2`,
//! `L = (1 − q − d) / 2`, `d` the mean draw probability of the network's WDL head), and
//! `winrate` the expected score `W + D / 2 = (1 + q) / 2`. Moves are ranked as `xqz uci` ranks
//! them (a move that wins at once first, a move the rules show to lose at once last, and between
//! them a Gumbel search's sequential-halving winner, then visits), `order` counting from 0 over
//! the visited moves; `pv` is the principal variation from the move on.
//!
//! The search settings are the engine's for that budget: the network's recorded `[search]`,
//! the algorithm chosen as `xqz uci`'s `Algorithm auto` chooses it, no root noise
//! ([`crate::uci_search::SearchOptions`]); so an answer equals what `xqz uci --net NET` finds
//! with `go nodes maxVisits` in the same position.
//!
//! Answers come in the order their searches end, not the order of the queries. Every search
//! gathers its full `virtual_loss_batch` of leaves each round, so an evaluation batch holds at
//! most `--max-concurrent` times that many, and no answer depends on what else is in flight.
//! When standard input closes, the queries already read are answered, then the engine exits
//! (with status 1 if standard input could not be read).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::thread;

use anyhow::Context;
use serde::Serialize;
use serde_json::Value;
use xiangqi::{Game, Move, janggi};
use xiangqi_nn::NnEvaluator;
use xiangqi_search::{
    Evaluator, GameEnv, GameKind, Lane, Lockstep, MAX_LEVEL, NodeId, Search, Strength,
    StrengthTable, game_rng,
};

use crate::net::PlayRecord;

use crate::uci::{self, LineRead};
use crate::uci_search::{self, SearchOptions};

/// `xqz analysis`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The network: a checkpoint of `xqz train`, an export of `xqz export`, or a run directory
    /// (its newest checkpoint).
    #[arg(long)]
    net: PathBuf,
    /// The network's device: cpu, wgpu, wgpu:N or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// The CPU kernels' arithmetic: f32; bf16, the network's tower in bfloat16 on Intel's AMX
    /// or AVX-512 BF16 (about twice the positions per second for the main job's 2 × 24 net on AMX,
    /// 1.4–1.7 times on AVX-512 BF16, nothing for the smallest nets; f32, with a warning, where it cannot run); or auto, bf16 where it can run
    /// and f32 elsewhere.
    #[arg(long, default_value = "f32")]
    precision: xiangqi_nn::Precision,
    /// Positions searched at once; their leaves share the network's batches.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    max_concurrent: u32,
    /// Visits of a query that names no `maxVisits`.
    #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u32).range(1..=(1 << 24)))]
    visits: u32,
    /// The most visits a query may ask for (a search holds about 1.3 KB a visit: at the
    /// default, up to 130 MB for each of the `--max-concurrent` searches).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=(1 << 24)))]
    max_visits: u32,
}

/// One query line, as read.
#[derive(Debug, Default)]
struct Query {
    id: String,
    game: Option<String>,
    rules: Option<String>,
    initial_fen: Option<String>,
    moves: Vec<String>,
    max_visits: Option<u64>,
    analyze_turns: Option<Vec<u64>>,
    max_move_infos: Option<u64>,
    level: Option<f64>,
}

/// The fields a query may have.
const FIELDS: [&str; 9] = [
    "id",
    "game",
    "rules",
    "initialFen",
    "moves",
    "maxVisits",
    "analyzeTurns",
    "maxMoveInfos",
    "level",
];

/// A JSON number that is a whole number ≥ 0 (`3`, `3.0`, `3e2`), as u64.
fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64().filter(|x| x.fract() == 0.0 && *x >= 0.0 && *x <= 9.0e15).map(|x| x as u64)
    })
}

impl Query {
    /// Reads the fields of a JSON object, naming the field of the first bad one.
    fn read(object: &serde_json::Map<String, Value>) -> Result<Query, (&'static str, String)> {
        let mut q = Query::default();
        for (key, v) in object {
            let Some(&field) = FIELDS.iter().find(|f| **f == key) else {
                let shown: String = key.chars().take(60).collect();
                return Err((
                    "",
                    format!("unknown field '{shown}'; the fields are {}", FIELDS.join(", ")),
                ));
            };
            let string = || {
                v.as_str().map(str::to_string).ok_or((field, format!("{field} must be a string")))
            };
            let number = || whole(v).ok_or((field, format!("{field} must be a whole number")));
            match field {
                "id" => q.id = string()?,
                "game" => q.game = Some(string()?),
                "rules" => q.rules = Some(string()?),
                "initialFen" => q.initial_fen = Some(string()?),
                "moves" => {
                    let list =
                        v.as_array().ok_or((field, "moves must be a list of strings".into()))?;
                    q.moves = list
                        .iter()
                        .map(|m| m.as_str().map(str::to_string))
                        .collect::<Option<_>>()
                        .ok_or((field, "moves must be a list of strings".into()))?;
                }
                "maxVisits" => q.max_visits = Some(number()?),
                "analyzeTurns" => {
                    let bad =
                        || (field, "analyzeTurns must be a list of whole numbers".to_string());
                    let list = v.as_array().ok_or_else(bad)?;
                    q.analyze_turns =
                        Some(list.iter().map(whole).collect::<Option<_>>().ok_or_else(bad)?);
                }
                "level" => {
                    let bad = || (field, format!("level must be a number from 0 to {MAX_LEVEL}"));
                    q.level = Some(v.as_f64().ok_or_else(bad)?);
                }
                _ => q.max_move_infos = Some(number()?),
            }
        }
        Ok(q)
    }
}

/// A bad query (or a bad turn of one), as its error line says it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_number: Option<usize>,
    error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
}

impl ErrorLine {
    fn new(id: Option<&str>, field: Option<&str>, error: impl Into<String>) -> ErrorLine {
        let field = field.map(str::to_string);
        ErrorLine { id: id.map(str::to_string), turn_number: None, error: error.into(), field }
    }
}

/// One position to search.
struct Task<G: GameEnv> {
    id: String,
    turn: usize,
    game: G,
    visits: u32,
    max_infos: Option<usize>,
    /// A level below full strength and the seed of its move draw.
    level: Option<(Strength, u64)>,
}

/// A candidate move of an answer.
#[derive(Debug, Serialize)]
struct MoveInfo {
    #[serde(rename = "move")]
    mv: String,
    order: usize,
    visits: u32,
    prior: f32,
    winrate: f32,
    q: f32,
    wdl: [f32; 3],
    pv: Vec<String>,
}

/// The analysed position as a whole.
#[derive(Debug, Serialize)]
struct RootInfo {
    visits: u32,
    winrate: f32,
    value: f32,
    wdl: [f32; 3],
}

/// One answer line.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    id: String,
    turn_number: usize,
    is_during_search: bool,
    move_infos: Vec<MoveInfo>,
    root_info: RootInfo,
    /// With a `level`: the move a player of that level plays here.
    #[serde(skip_serializing_if = "Option::is_none")]
    level_move: Option<String>,
}

/// Win, draw and loss probabilities, as `xqz uci` reads them ([`uci_search::wdl_share`]).
fn wdl(v: f32, d: f32) -> [f32; 3] {
    uci_search::wdl_share(v, d).map(|x| x as f32)
}

/// A place for one search: a task and its search, or nothing.
struct Slot<G: GameEnv> {
    running: Option<(Task<G>, Search<G>)>,
}

/// The leaves a search gathers a round: its `virtual_loss_batch`, as `xqz uci`'s search.
fn leaf_batch<G: GameEnv>(search: &Search<G>) -> usize {
    (search.config().virtual_loss_batch as usize).max(1)
}

impl<G: GameEnv> Lane<G> for Slot<G> {
    fn search(&self) -> Option<&Search<G>> {
        self.running.as_ref().map(|(_, s)| s)
    }

    fn search_mut(&mut self) -> Option<&mut Search<G>> {
        self.running.as_mut().map(|(_, s)| s)
    }

    fn leaves_wanted(&self) -> usize {
        match &self.running {
            Some((_, s)) if !s.is_done() => leaf_batch(s),
            _ => 0,
        }
    }

    fn advance(&mut self, quota: usize) {
        if let Some((_, search)) = &mut self.running
            && !search.is_done()
        {
            search.gather(quota);
        }
    }
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let device = crate::net::NetDevice::open(&args.device, args.precision)?;
    let game = crate::net::game_of(&args.net)?;
    let (evaluator, record) = crate::net::load_for_play(&args.net, &device)?;
    let lines = read_lines();
    let out = io::stdout();
    match game {
        GameKind::Xiangqi => serve::<Game>(args, evaluator, &record, lines, out.lock()),
        GameKind::Janggi => serve::<janggi::Game>(args, evaluator, &record, lines, out.lock()),
    }
}

/// What the reader thread passes on: a line, or why one was refused or reading stopped.
enum Input {
    Line(String),
    /// A line refused (too long, not UTF-8): answered with an error line, reading goes on.
    Refused(String),
    /// Standard input could not be read: the queries read so far are answered, then the engine
    /// exits with an error.
    Failed(String),
}

/// Standard input's lines, read on their own thread, as `xqz uci` reads them (at most
/// [`uci::MAX_LINE`] bytes with the line break; the rest of a longer line is read and dropped in
/// pieces, never held).
fn read_lines() -> Receiver<Input> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut buf = Vec::new();
        loop {
            let item = match uci::read_line(&mut input, &mut buf) {
                Ok(LineRead::Eof) => return,
                Ok(LineRead::TooLong) => Input::Refused(format!(
                    "an input line longer than {} bytes was skipped",
                    uci::MAX_LINE
                )),
                Ok(LineRead::Line) => match std::str::from_utf8(&buf) {
                    Ok(text) => Input::Line(text.trim().to_string()),
                    Err(e) => Input::Refused(format!("an input line is not UTF-8: {e}")),
                },
                Err(e) => Input::Failed(format!("cannot read standard input: {e}")),
            };
            let failed = matches!(item, Input::Failed(_));
            if tx.send(item).is_err() || failed {
                return;
            }
        }
    });
    rx
}

/// Writes one JSON line and flushes it.
fn emit(out: &mut impl Write, value: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string(value).context("encoding an answer")?;
    writeln!(out, "{text}").and_then(|()| out.flush()).context("writing to standard output")
}

/// The analysis loop for game `G`: queries in, answers out, until standard input closes and
/// every query read is answered.
fn serve<G: GameEnv>(
    args: &Args,
    mut evaluator: NnEvaluator,
    record: &PlayRecord,
    lines: Receiver<Input>,
    mut out: impl Write,
) -> anyhow::Result<ExitCode> {
    let net_search = record.search.as_ref();
    let table = record.strength.as_ref();
    let mut input_failed = false;
    let mut queue: VecDeque<Task<G>> = VecDeque::new();
    let mut slots: Vec<Slot<G>> =
        (0..args.max_concurrent).map(|_| Slot { running: None }).collect();
    // Each search gathers its full `virtual_loss_batch` every round, as `xqz uci` does, so that
    // its answer is the same whatever else is in flight: a batch holds at most
    // `--max-concurrent` times that many leaves.
    let mut driver = Lockstep::<G>::new(1, usize::MAX);
    let mut open = true;
    loop {
        // Read what has come; wait for input only when nothing is searching.
        let busy = !queue.is_empty() || slots.iter().any(|s| s.running.is_some());
        while open {
            let line = if busy {
                match lines.try_recv() {
                    Ok(line) => line,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        open = false;
                        break;
                    }
                }
            } else {
                match lines.recv() {
                    Ok(line) => line,
                    Err(_) => {
                        open = false;
                        break;
                    }
                }
            };
            match line {
                Input::Line(text) if text.is_empty() => continue,
                Input::Line(text) => match tasks_of::<G>(&text, args, table) {
                    Ok((tasks, errors)) => {
                        // A turn that cannot be analysed is answered at once; the others
                        // are searched.
                        for e in errors {
                            emit(&mut out, &e)?;
                        }
                        queue.extend(tasks);
                    }
                    Err(e) => emit(&mut out, &e)?,
                },
                Input::Refused(e) => emit(&mut out, &ErrorLine::new(None, None, e))?,
                Input::Failed(e) => {
                    emit(&mut out, &ErrorLine::new(None, None, e))?;
                    input_failed = true;
                }
            }
            if !busy {
                break;
            }
        }
        // Free slots take the next positions.
        for slot in slots.iter_mut().filter(|s| s.running.is_none()) {
            let Some(task) = queue.pop_front() else { break };
            // The engine's settings for this budget, as `xqz uci` chooses them (the built-in
            // defaults if the network's record fails its checks).
            let (settings, _) =
                SearchOptions::default().for_search(net_search, Some(u64::from(task.visits)));
            let mut search = Search::new(task.game.clone(), settings);
            // As `xqz uci` seeds its searches (no noise: the generator is not drawn from).
            search.start(task.visits, false, &mut game_rng(0, 0));
            search.gather(leaf_batch(&search));
            slot.running = Some((task, search));
        }
        if slots.iter().all(|s| s.running.is_none()) {
            if open || !queue.is_empty() {
                continue;
            }
            return Ok(if input_failed { ExitCode::FAILURE } else { ExitCode::SUCCESS });
        }
        if let Err(e) =
            driver.evaluate(&slots, |_, requests, answers| evaluator.evaluate(requests, answers))
        {
            // The network failed: every query in flight is answered with the error.
            for slot in &mut slots {
                if let Some((task, _)) = slot.running.take() {
                    let mut line = ErrorLine::new(Some(&task.id), None, format!("network: {e}"));
                    line.turn_number = Some(task.turn);
                    emit(&mut out, &line)?;
                }
            }
            anyhow::bail!("the network failed: {e}");
        }
        // The searches' tree work, spread over the cores (each search's own, so the answers do
        // not depend on the spread).
        driver.par_advance(&mut slots);
        for slot in &mut slots {
            if slot.running.as_ref().is_some_and(|(_, s)| s.is_done()) {
                let (task, search) = slot.running.take().expect("checked above");
                emit(&mut out, &answer(&task, &search))?;
            }
        }
    }
}

/// The positions a query line asks for, and the errors of turns it cannot analyse; or the
/// query's error.
fn tasks_of<G: GameEnv>(
    text: &str,
    args: &Args,
    table: Option<&StrengthTable>,
) -> Result<(Vec<Task<G>>, Vec<ErrorLine>), ErrorLine> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ErrorLine::new(None, None, format!("not JSON: {e}")))?;
    let id = value.get("id").and_then(Value::as_str).map(str::to_string);
    let bad = |field: Option<&str>, e: String| ErrorLine::new(id.as_deref(), field, e);
    let Some(object) = value.as_object() else {
        return Err(bad(None, "a query is a JSON object".into()));
    };
    if id.is_none() {
        return Err(bad(Some("id"), "a query needs an \"id\", a string".into()));
    }
    let q = Query::read(object).map_err(|(field, e)| {
        // An unknown field is to blame by its own name.
        let unknown = e.starts_with("unknown field").then(|| e.split('\'').nth(1)).flatten();
        bad(unknown.or((!field.is_empty()).then_some(field)), e.clone())
    })?;
    if let Some(name) = &q.game {
        let g: GameKind = name.parse().map_err(|e| bad(Some("game"), format!("{e}")))?;
        if g != G::KIND {
            return Err(bad(Some("game"), format!("the network plays {}, not {g}", G::KIND)));
        }
    }
    let rules = match &q.rules {
        None => G::default_rules(),
        Some(name) => {
            G::parse_rules(&name.trim().to_ascii_lowercase()).map_err(|e| bad(Some("rules"), e))?
        }
    };
    let start = match &q.initial_fen {
        None => G::start_position(rules),
        Some(fen) => {
            G::position_from_fen(fen, rules).map_err(|e| bad(Some("initialFen"), e.to_string()))?
        }
    };
    let level = match q.level {
        None => None,
        Some(l) => Some(Strength::new(l).map_err(|e| bad(Some("level"), e.to_string()))?),
    };
    // A level searches its share of the full budget, as `xqz uci` does: the budget its table
    // was measured with (a calibrated net), else --visits; maxVisits can only lower it.
    let visits = match level {
        Some(s) => {
            let full = table.map_or(args.visits, |t| t.simulations);
            let share = u64::from(s.simulations(full));
            q.max_visits.map_or(share, |m| m.min(share))
        }
        None => q.max_visits.unwrap_or(u64::from(args.visits)),
    };
    let most = args.max_visits;
    if !(1..=u64::from(most)).contains(&visits) {
        let field = if q.max_visits.is_some() || level.is_none() { "maxVisits" } else { "level" };
        return Err(bad(
            Some(field),
            format!("{visits} visits is not between 1 and {most} (this engine's --max-visits)"),
        ));
    }
    let visits = visits as u32;
    if q.max_move_infos == Some(0) {
        return Err(bad(Some("maxMoveInfos"), "must be at least 1".into()));
    }
    let max_infos = q.max_move_infos.map(|n| n.min(usize::MAX as u64) as usize);
    let mut turns: Vec<u64> = q.analyze_turns.clone().unwrap_or_else(|| vec![q.moves.len() as u64]);
    if turns.is_empty() {
        return Err(bad(Some("analyzeTurns"), "is empty: no position to analyse".into()));
    }
    turns.sort_unstable();
    turns.dedup();
    if let Some(&t) = turns.iter().find(|&&t| t > q.moves.len() as u64) {
        return Err(bad(
            Some("analyzeTurns"),
            format!("turn {t} is past the {} moves given", q.moves.len()),
        ));
    }
    // Replay the moves, keeping the positions asked for.
    let mut game = G::new_game(start, rules);
    let mut tasks = Vec::new();
    let mut errors = Vec::new();
    let mut take = |turn: usize, game: &G, errors: &mut Vec<ErrorLine>| {
        if let Some(o) = game.outcome() {
            let mut e = ErrorLine::new(
                Some(&q.id),
                Some("analyzeTurns"),
                format!("the game is over at turn {turn} ({o})"),
            );
            e.turn_number = Some(turn);
            errors.push(e);
        } else {
            // The draw of a level's move: seeded by the query's id and turn, so it repeats.
            let seed = q.id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            }) ^ turn as u64;
            let level = level.map(|s| (s, seed));
            tasks.push(Task {
                id: q.id.clone(),
                turn,
                game: game.clone(),
                visits,
                max_infos,
                level,
            });
        }
    };
    let mut wanted = turns.iter().peekable();
    for (k, text) in q.moves.iter().enumerate() {
        if wanted.peek() == Some(&&(k as u64)) {
            wanted.next();
            take(k, &game, &mut errors);
        }
        if game.outcome().is_some() {
            return Err(bad(
                Some("moves"),
                format!("move {} ({text}): the game is already over", k + 1),
            ));
        }
        let mv: Move = game
            .parse_move(text)
            .map_err(|e| bad(Some("moves"), format!("move {} ({text}): {e}", k + 1)))?;
        game.play_checked(mv)
            .map_err(|e| bad(Some("moves"), format!("move {} ({text}): {e}", k + 1)))?;
    }
    if wanted.peek().is_some() {
        take(q.moves.len(), &game, &mut errors);
    }
    Ok((tasks, errors))
}

/// The answer of a finished search.
fn answer<G: GameEnv>(task: &Task<G>, search: &Search<G>) -> Answer {
    let tree = search.tree();
    let root_q = tree.q(NodeId::ROOT).map_or(0.0, |q| -q);
    let root_d = tree.draw_rate(NodeId::ROOT).unwrap_or(0.0);
    let ranked = uci_search::ranked_root_moves(tree, &[], uci_search::halving_winner(search));
    let moves = tree.moves(NodeId::ROOT);
    let priors = tree.priors(NodeId::ROOT);
    let mut infos = Vec::new();
    for &(m, child, visits) in &ranked {
        // Unvisited moves are left out (but the first), wherever they rank: a move shown to
        // lose at once ranks after them and is still listed with its visits.
        if visits == 0 && !infos.is_empty() {
            continue;
        }
        if task.max_infos.is_some_and(|n| infos.len() >= n) {
            break;
        }
        let order = infos.len();
        let line = uci_search::line_from(tree, m, child, root_q);
        let prior = moves.iter().position(|&x| x == m).map_or(0.0, |i| priors[i]);
        infos.push(MoveInfo {
            mv: m.to_string(),
            order,
            visits,
            prior,
            winrate: (1.0 + line.value) / 2.0,
            q: line.value,
            wdl: wdl(line.value, line.draw),
            pv: line.moves.iter().map(|m| m.to_string()).collect(),
        });
    }
    let level_move = task.level.and_then(|(strength, seed)| {
        strength.choose(search, |_| true, &mut game_rng(seed, 1)).map(|m| m.to_string())
    });
    Answer {
        id: task.id.clone(),
        level_move,
        turn_number: task.turn,
        is_during_search: false,
        move_infos: infos,
        root_info: RootInfo {
            visits: tree.visits(NodeId::ROOT),
            winrate: (1.0 + root_q) / 2.0,
            value: root_q,
            wdl: wdl(root_q, root_d),
        },
    }
}
