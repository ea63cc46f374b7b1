//! External engines as arena players: `uci:COMMAND` and `ucci:COMMAND`.
//!
//! The engine runs as a child process with piped standard input and output (its standard error
//! is discarded). A reader thread forwards its output lines through a channel, so every wait has
//! a deadline:
//!
//! * start: `uci` → wait for `uciok` (or `ucci` → `ucciok`), then one `setoption` per
//!   `--a-option`/`--b-option` (`setoption name N value V`, or UCCI's `setoption N V`), then
//!   `isready` → `readyok`; a UCCI engine that offers `usemillisec` gets
//!   `setoption usemillisec true`;
//! * each game: `ucinewgame` (UCI only) and `isready` → `readyok`;
//! * each move: `position fen START [moves M1 M2 ...]` (the game's start position and every
//!   move since, so the engine sees the history), then `go movetime MS` with a move time, else
//!   `go nodes N` (800 without any limit); UCCI: `go time T movestogo 1` (milliseconds with `usemillisec`, else whole
//!   seconds, at least 1) or `go nodes N`; then wait for `bestmove M` (or UCCI's `nobestmove`).
//!
//! [`EnginePlayer::analyse`] is the same exchange for `xqz label`: it also keeps the score (and
//! `wdl`) of the engine's `info` lines ([`Analysis`]), and waits as long as its caller says.
//!
//! Moves in both directions use the engine's rank numbers ([`RankBase`]; Fairy-Stockfish writes
//! ranks 1–10). An engine that does not answer within the move time plus the arena's margin
//! (or 60 s for a node-limited search, 10 s for the handshake), closes its output, or names
//! something that is not a move loses the game (timeout, crash, illegal move); after a timeout
//! or a crash the process is killed and a fresh one is started for the next game.
//!
//! A hostile engine cannot hang the arena or exhaust its memory: every deadline is checked on
//! each line read (an engine that floods `info` lines still loses on time), at most
//! [`LINE_QUEUE`] lines wait in the queue (the reader then stops reading and the engine blocks
//! on its full pipe), a line is cut at [`MAX_LINE`] bytes, and the engine runs in a process
//! group of its own that is killed as a whole (children of a script engine included).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use xiangqi::{Move, RankBase};
use xiangqi_search::arena::{MoveLimit, Player, PlayerError};
use xiangqi_search::label::Score;
use xiangqi_search::{GameEnv, GameKind};

/// The protocol an engine speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// UCI as Pikafish speaks it.
    Uci,
    /// UCCI (ElephantEye and other Chinese engines).
    Ucci,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Uci => "uci",
            Protocol::Ucci => "ucci",
        }
    }
}

/// Starts the external engine `engine` (`uci:COMMAND` or `ucci:COMMAND`, with `NAME=VALUE`
/// `options` and rank numbers `ranks`, if given) and sets it up for `game` ([`set_up`]).
///
/// # Errors
/// A malformed player or option, an engine that does not start or answer, named with
/// `engine`.
pub(crate) fn start_for_game(
    engine: &str,
    options: &[String],
    ranks: Option<u8>,
    game: GameKind,
    show_wdl: bool,
) -> anyhow::Result<EnginePlayer> {
    use anyhow::{Context, bail};
    let spec = match crate::arena::parse_player(engine, options, ranks, 0, Default::default())
        .context("--engine")?
    {
        crate::arena::PlayerSpec::Engine(spec) => spec,
        _ => bail!("--engine '{engine}': expected uci:COMMAND or ucci:COMMAND"),
    };
    let mut player = EnginePlayer::start(spec)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("engine '{engine}'"))?;
    set_up(&mut player, game, show_wdl).map_err(|e| anyhow::anyhow!("engine '{engine}': {e}"))?;
    Ok(player)
}

/// Sets a started engine up for `game`: an engine that offers `UCI_Variant` is told the game
/// unless its options name it, and Fairy-Stockfish (by its `id name`) reads and writes its
/// moves with ranks 1–10 unless its rank numbers were given; with `show_wdl`, an engine that offers
/// `UCI_ShowWDL` is asked for its win/draw/loss figures unless its options name it.
///
/// # Errors
/// The engine does not take an option (it does not answer `isready`).
pub(crate) fn set_up(
    player: &mut EnginePlayer,
    game: GameKind,
    show_wdl: bool,
) -> Result<(), PlayerError> {
    let given = |name: &str| player.spec.options.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let (variant_given, wdl_given) = (given("UCI_Variant"), given("UCI_ShowWDL"));
    if player.offers("UCI_Variant") {
        if !variant_given {
            player
                .set_option("UCI_Variant", game.name())
                .map_err(|e| PlayerError::Failed(format!("UCI_Variant: {e}")))?;
        }
        // Fairy-Stockfish numbers xiangqi's and janggi's ranks 1-10 (engines of the game
        // itself, xqz among them, 0-9).
        if !player.spec.ranks_given && player.name.to_ascii_lowercase().contains("fairy-stockfish")
        {
            player.set_ranks(RankBase::One);
        }
    }
    if show_wdl && player.offers("UCI_ShowWDL") && !wdl_given {
        player
            .set_option("UCI_ShowWDL", "true")
            .map_err(|e| PlayerError::Failed(format!("UCI_ShowWDL: {e}")))?;
    }
    Ok(())
}

/// How to start and talk to an engine.
#[derive(Clone, Debug)]
pub struct EngineSpec {
    /// The protocol.
    pub protocol: Protocol,
    /// The program and its arguments (the command split as a POSIX shell splits words:
    /// quotes and backslashes work, nothing is expanded).
    pub command: Vec<String>,
    /// Options to set after the handshake, `(name, value)`.
    pub options: Vec<(String, String)>,
    /// The engine's rank numbers.
    pub ranks: RankBase,
    /// A node limit of this engine's own (`go nodes N` every move), in place of the match's
    /// limit.
    pub nodes: Option<u32>,
    /// Whether `ranks` was given (else [`set_up`] chooses it from the engine's options).
    pub ranks_given: bool,
}

/// The node budget of a move when the limit names neither time nor simulations.
const DEFAULT_NODES: u32 = 800;
/// How long the handshake and `isready` may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a search without a move time may take.
const NODES_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of the engine's output that may wait unread.
const LINE_QUEUE: usize = 1024;
/// The longest line kept (bytes); the rest of a longer line is read and dropped.
const MAX_LINE: usize = 64 * 1024;

/// A running engine process.
struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    usemillisec: bool,
    name: Option<String>,
    /// The option names the engine listed in its handshake (`option name N type ...`).
    offered: Vec<String>,
}

/// Why a wait ended without the expected line.
enum WaitError {
    Timeout,
    Closed,
}

impl Process {
    fn spawn(spec: &EngineSpec) -> Result<Process, PlayerError> {
        let program = spec
            .command
            .first()
            .ok_or_else(|| PlayerError::Crashed("empty engine command".to_string()))?;
        let mut command = Command::new(program);
        command
            .args(&spec.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // A process group of its own, so that a kill reaches the engine's children too.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(|e| PlayerError::Crashed(format!("cannot start '{program}': {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(PlayerError::Crashed("no pipes to the engine".to_string()));
        };
        // Bounded: when the arena does not keep up, the reader blocks and so does the engine.
        let (tx, lines) = mpsc::sync_channel(LINE_QUEUE);
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match read_line_capped(&mut reader, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).trim().to_string();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut p =
            Process { child, stdin, lines, usemillisec: false, name: None, offered: Vec::new() };
        p.handshake(spec)?;
        Ok(p)
    }

    fn handshake(&mut self, spec: &EngineSpec) -> Result<(), PlayerError> {
        let hello = spec.protocol.name();
        self.send(hello)?;
        let ok = format!("{hello}ok");
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        let mut name = None;
        let mut usemillisec = false;
        let mut offered = Vec::new();
        self.wait_for(deadline, |line| {
            if let Some(n) = line.strip_prefix("id name ") {
                name = Some(n.trim().to_string());
            }
            let mut words = line.split_ascii_whitespace();
            if words.next() == Some("option") {
                let rest: Vec<&str> = words.collect();
                if rest.first().is_some_and(|w| w.eq_ignore_ascii_case("usemillisec")) {
                    usemillisec = true;
                }
                // UCI: `option name NAME (may have spaces) type ...`.
                if rest.first() == Some(&"name") {
                    let end = rest.iter().position(|&w| w == "type").unwrap_or(rest.len());
                    offered.push(rest[1..end].join(" "));
                }
            }
            (line == ok).then_some(())
        })
        .map_err(|e| self.fail(e, &format!("no '{ok}' after '{hello}'")))?;
        self.name = name;
        self.offered = offered;
        if spec.protocol == Protocol::Ucci && usemillisec {
            self.send("setoption usemillisec true")?;
            self.usemillisec = true;
        }
        for (n, v) in &spec.options {
            let line = match spec.protocol {
                Protocol::Uci => format!("setoption name {n} value {v}"),
                Protocol::Ucci => format!("setoption {n} {v}"),
            };
            self.send(&line)?;
        }
        self.ready()
    }

    fn ready(&mut self) -> Result<(), PlayerError> {
        self.send("isready")?;
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        self.wait_for(deadline, |line| (line == "readyok").then_some(()))
            .map_err(|e| self.fail(e, "no 'readyok' after 'isready'"))
    }

    fn send(&mut self, line: &str) -> Result<(), PlayerError> {
        let result = writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush());
        match result {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                let status = match self.child.try_wait() {
                    Ok(Some(s)) => format!(" ({s})"),
                    _ => String::new(),
                };
                Err(PlayerError::Crashed(format!(
                    "the engine exited or closed its input{status}; cannot send '{line}'"
                )))
            }
            Err(e) => Err(PlayerError::Crashed(format!("cannot write to the engine: {e}"))),
        }
    }

    /// Kills the engine and every process of its group, and reaps it.
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Ok(pid) = i32::try_from(self.child.id()) {
            use nix::sys::signal::{Signal, killpg};
            let _ = killpg(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Reads lines until `f` accepts one or the deadline passes. The deadline is checked
    /// before every line, so an engine that writes without pause still runs out of time.
    fn wait_for<T>(
        &self,
        deadline: Instant,
        mut f: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, WaitError> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(WaitError::Timeout);
            }
            match self.lines.recv_timeout(deadline - now) {
                Ok(line) => {
                    if let Some(t) = f(&line) {
                        return Ok(t);
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Err(WaitError::Timeout),
                Err(RecvTimeoutError::Disconnected) => return Err(WaitError::Closed),
            }
        }
    }

    /// The player error for a failed wait, with the exit status of a dead process.
    fn fail(&mut self, e: WaitError, what: &str) -> PlayerError {
        match e {
            WaitError::Timeout => PlayerError::Timeout(what.to_string()),
            WaitError::Closed => {
                let status = (0..20)
                    .find_map(|_| match self.child.try_wait() {
                        Ok(Some(s)) => Some(s.to_string()),
                        Ok(None) => {
                            thread::sleep(Duration::from_millis(5));
                            None
                        }
                        Err(_) => Some("unknown status".to_string()),
                    })
                    .unwrap_or_else(|| "closed its output".to_string());
                PlayerError::Crashed(format!("{what}: engine exited ({status})"))
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit").and_then(|()| self.stdin.flush());
        for _ in 0..40 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }
}

/// Reads one line (up to and without caring for its `\n`) into `buf`, keeping at most
/// [`MAX_LINE`] bytes of it; returns the bytes consumed (0 at the end of the stream).
fn read_line_capped(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(consumed);
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let room = MAX_LINE.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        reader.consume(n);
        consumed += n;
        if done {
            return Ok(consumed);
        }
    }
}

/// An external engine as an arena [`Player`].
pub struct EnginePlayer {
    spec: EngineSpec,
    name: String,
    process: Option<Process>,
}

impl EnginePlayer {
    /// Starts the engine and runs the handshake, so that a wrong command fails at once.
    ///
    /// # Errors
    /// A [`PlayerError`] if the engine cannot be started or does not answer the handshake.
    pub fn start(spec: EngineSpec) -> Result<EnginePlayer, PlayerError> {
        let process = Process::spawn(&spec)?;
        let fallback = spec.command.first().map_or("engine", |c| {
            std::path::Path::new(c).file_name().and_then(|n| n.to_str()).unwrap_or(c)
        });
        let name = format!(
            "{}:{}",
            spec.protocol.name(),
            process.name.clone().unwrap_or_else(|| fallback.to_string())
        );
        Ok(EnginePlayer { spec, name, process: Some(process) })
    }

    fn process(&mut self) -> Result<&mut Process, PlayerError> {
        if self.process.is_none() {
            self.process = Some(Process::spawn(&self.spec)?);
        }
        self.process.as_mut().ok_or_else(|| PlayerError::Crashed("no process".to_string()))
    }

    /// Runs `f` on the process; after a timeout or a crash the process is dropped (killed) so
    /// that the next game starts a fresh one.
    fn with_process<T>(
        &mut self,
        f: impl FnOnce(&mut Process, &EngineSpec) -> Result<T, PlayerError>,
    ) -> Result<T, PlayerError> {
        let spec = self.spec.clone();
        let result = self.process().and_then(|p| f(p, &spec));
        if matches!(result, Err(PlayerError::Timeout(_) | PlayerError::Crashed(_))) {
            if let Some(p) = self.process.as_mut() {
                p.kill();
            }
            self.process = None;
        }
        result
    }
}

fn position_command<G: GameEnv>(game: &G, ranks: RankBase) -> String {
    let mut line = format!("position fen {}", G::position_fen(game.start()));
    if !game.moves().is_empty() {
        line.push_str(" moves");
        for m in game.moves() {
            line.push(' ');
            line.push_str(&m.to_uci(ranks));
        }
    }
    line
}

fn go_command(protocol: Protocol, limit: &MoveLimit, usemillisec: bool) -> String {
    match (protocol, limit.movetime, limit.simulations) {
        (Protocol::Uci, Some(t), _) => format!("go movetime {}", t.as_millis().max(1)),
        (Protocol::Ucci, Some(t), _) if usemillisec => {
            format!("go time {} movestogo 1", t.as_millis().max(1))
        }
        (Protocol::Ucci, Some(t), _) => format!("go time {} movestogo 1", t.as_secs().max(1)),
        (_, None, Some(n)) => format!("go nodes {n}"),
        (_, None, None) => format!("go nodes {DEFAULT_NODES}"),
    }
}

/// What an engine said about a position: its move, and the score and WDL of its last `info`
/// line with a score (the last exact one; a bound, `lowerbound`/`upperbound`, only where no
/// exact one came; lines of a second or later `multipv` line and `info string` are ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Analysis {
    /// The move of `bestmove`.
    pub best: Move,
    /// `score cp X` / `score mate N` (UCCI: `score X`), for the side to move.
    pub score: Option<Score>,
    /// `wdl W D L` (per mille, for the side to move), where the engine reports it.
    pub wdl: Option<[u32; 3]>,
}

/// The score part of one `info` line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct InfoScore {
    score: Option<Score>,
    wdl: Option<[u32; 3]>,
    bound: bool,
}

/// The score and WDL of an `info` line of the first principal variation; `None` for another
/// line, a later `multipv` line, or one with neither.
fn parse_info(line: &str) -> Option<InfoScore> {
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    if words.first() != Some(&"info") || words.get(1) == Some(&"string") {
        return None;
    }
    let mut info = InfoScore::default();
    let mut i = 1;
    while i < words.len() {
        match words[i] {
            // The moves of the variation come last; nothing after them is a score.
            "pv" => break,
            "multipv" if words.get(i + 1).is_some_and(|k| *k != "1") => return None,
            "score" => match words.get(i + 1).copied() {
                Some("cp") => {
                    info.score = words.get(i + 2).and_then(|x| x.parse().ok()).map(Score::Cp);
                    i += 2;
                }
                Some("mate") => {
                    info.score = words.get(i + 2).and_then(|x| x.parse().ok()).map(Score::Mate);
                    i += 2;
                }
                Some(x) => {
                    info.score = x.parse().ok().map(Score::Cp);
                    i += 1;
                }
                None => {}
            },
            "lowerbound" | "upperbound" => info.bound = true,
            "wdl" => {
                let n = |k: usize| words.get(i + k).and_then(|x| x.parse::<u32>().ok());
                info.wdl = match (n(1), n(2), n(3)) {
                    (Some(w), Some(d), Some(l)) => Some([w, d, l]),
                    _ => None,
                };
                i += 3;
            }
            _ => {}
        }
        i += 1;
    }
    (info.score.is_some() || info.wdl.is_some()).then_some(info)
}

impl EnginePlayer {
    /// Whether the engine listed option `name` (case-insensitive) in its handshake.
    pub fn offers(&self, name: &str) -> bool {
        self.process
            .as_ref()
            .is_some_and(|p| p.offered.iter().any(|o| o.eq_ignore_ascii_case(name)))
    }

    /// Sets an option now and in every restarted process (`setoption`, then `isready`).
    ///
    /// # Errors
    /// The engine does not answer `isready` (it is killed; the next use starts a fresh one).
    pub fn set_option(&mut self, name: &str, value: &str) -> Result<(), PlayerError> {
        self.spec.options.push((name.to_string(), value.to_string()));
        let line = match self.spec.protocol {
            Protocol::Uci => format!("setoption name {name} value {value}"),
            Protocol::Ucci => format!("setoption {name} {value}"),
        };
        self.with_process(|p, _| {
            p.send(&line)?;
            p.ready()
        })
    }

    /// The engine's own node limit from now on (`go nodes N` every move, in place of the
    /// match's limit; `None`: the match's).
    pub fn set_nodes(&mut self, nodes: Option<u32>) {
        self.spec.nodes = nodes;
    }

    /// The engine's rank numbers from now on.
    pub fn set_ranks(&mut self, ranks: RankBase) {
        self.spec.ranks = ranks;
    }

    /// Kills the engine process; the next use starts a fresh one (with the handshake and
    /// every option).
    pub fn restart(&mut self) {
        if let Some(p) = self.process.as_mut() {
            p.kill();
        }
        self.process = None;
    }

    /// Asks the engine for the best move of `game`'s current position (`position`, `go` as the
    /// module documentation says) and the score it reported on the way. `wait` bounds the
    /// answer (default: the move time plus the limit's margin, or 60 s for a node-limited
    /// search). The move is read as a move, not checked for legality.
    ///
    /// # Errors
    /// [`PlayerError::Timeout`] (the process is killed), [`PlayerError::Crashed`],
    /// [`PlayerError::Illegal`] for text that is no move, [`PlayerError::Failed`] for
    /// `bestmove (none)` or `nobestmove`.
    pub fn analyse<G: GameEnv>(
        &mut self,
        game: &G,
        limit: &MoveLimit,
        wait: Option<Duration>,
    ) -> Result<Analysis, PlayerError> {
        let limit = *limit;
        self.with_process(|p, spec| {
            p.send(&position_command(game, spec.ranks))?;
            let limit = match spec.nodes {
                Some(n) => MoveLimit { simulations: Some(n), movetime: None, ..limit },
                None => limit,
            };
            p.send(&go_command(spec.protocol, &limit, p.usemillisec))?;
            let wait = wait.unwrap_or_else(|| limit.deadline().unwrap_or(NODES_TIMEOUT));
            let (mut exact, mut bound) = (None, None);
            let answer = p
                .wait_for(Instant::now() + wait, |line| {
                    let mut words = line.split_ascii_whitespace();
                    match words.next() {
                        Some("bestmove") => Some(words.next().map(str::to_string)),
                        Some("nobestmove") => Some(None),
                        Some("info") => {
                            match parse_info(line) {
                                Some(i) if i.bound => bound = Some(i),
                                Some(i) => exact = Some(i),
                                None => {}
                            }
                            None
                        }
                        _ => None,
                    }
                })
                .map_err(|e| match e {
                    WaitError::Timeout => {
                        PlayerError::Timeout(format!("no bestmove within {} ms", wait.as_millis()))
                    }
                    WaitError::Closed => p.fail(WaitError::Closed, "while searching"),
                })?;
            let text = match answer.as_deref() {
                None | Some("(none)") => {
                    return Err(PlayerError::Failed("the engine reports no move".to_string()));
                }
                Some(t) => t,
            };
            let best = G::move_from_uci(text, spec.ranks).map_err(PlayerError::Illegal)?;
            let info = exact.or(bound).unwrap_or_default();
            Ok(Analysis { best, score: info.score, wdl: info.wdl })
        })
    }
}

impl<G: GameEnv> Player<G> for EnginePlayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self, _game_id: u64) -> Result<(), PlayerError> {
        self.with_process(|p, spec| {
            if spec.protocol == Protocol::Uci {
                p.send("ucinewgame")?;
            }
            p.ready()
        })
    }

    fn choose_move(&mut self, game: &G, limit: &MoveLimit) -> Result<Move, PlayerError> {
        self.analyse(game, limit, None).map(|a| a.best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi::{Game, Position, RuleSet};

    #[test]
    fn commands_use_the_engine_ranks() {
        let mut game = Game::new(Position::start(), RuleSet::Asian);
        assert_eq!(
            position_command(&game, RankBase::Zero),
            format!("position fen {}", Position::start().fen())
        );
        let m = game.position().parse_uci("h2e2").unwrap();
        game.play(m).unwrap();
        assert!(position_command(&game, RankBase::One).ends_with(" moves h3e3"));
        let limit = MoveLimit {
            simulations: Some(50),
            movetime: Some(Duration::from_millis(1500)),
            margin: Duration::ZERO,
        };
        assert_eq!(go_command(Protocol::Uci, &limit, false), "go movetime 1500");
        assert_eq!(go_command(Protocol::Ucci, &limit, true), "go time 1500 movestogo 1");
        assert_eq!(go_command(Protocol::Ucci, &limit, false), "go time 1 movestogo 1");
        let nodes = MoveLimit { movetime: None, ..limit };
        assert_eq!(go_command(Protocol::Uci, &nodes, false), "go nodes 50");
    }

    #[test]
    fn info_lines_give_their_score_wdl_and_bound() {
        let line =
            "info depth 5 seldepth 6 multipv 1 score cp 94 upperbound nodes 1000 pv h1g3 h8c8";
        assert_eq!(
            parse_info(line),
            Some(InfoScore { score: Some(Score::Cp(94)), wdl: None, bound: true })
        );
        let line = "info depth 9 score mate -3 wdl 0 0 1000 nodes 10 pv a0a1";
        assert_eq!(
            parse_info(line),
            Some(InfoScore { score: Some(Score::Mate(-3)), wdl: Some([0, 0, 1000]), bound: false })
        );
        // UCCI's bare score; a second principal variation, a string and a line without a
        // score give nothing.
        assert_eq!(
            parse_info("info depth 3 score -35 pv h2e2").unwrap().score,
            Some(Score::Cp(-35))
        );
        assert_eq!(parse_info("info depth 3 multipv 2 score cp 10 pv h2e2"), None);
        assert_eq!(parse_info("info string score cp 10"), None);
        assert_eq!(parse_info("info depth 3 nodes 100 pv h2e2"), None);
        assert_eq!(parse_info("info score cp"), None);
    }

    #[test]
    fn a_missing_program_fails_to_start() {
        let spec = EngineSpec {
            protocol: Protocol::Uci,
            command: vec!["/nonexistent/engine-xyz".to_string()],
            options: Vec::new(),
            ranks: RankBase::Zero,
            nodes: None,
            ranks_given: true,
        };
        let err = EnginePlayer::start(spec).err().expect("no such program");
        assert!(matches!(err, PlayerError::Crashed(_)), "{err}");
    }
}
