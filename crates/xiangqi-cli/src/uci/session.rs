//! The `xqz uci` process: the protocol loop over standard input for one game's engine after
//! another (`UCI_Variant` and a `NetPath` of another game switch the game), with what carries
//! over between them ([`Session`]).

use super::*;

/// Runs the command.
///
/// The game is the network's (from its manifest). Without `--net` the engine starts as a
/// xiangqi engine and `setoption name UCI_Variant value janggi` (or `xiangqi`) switches it:
/// the options set so far are set again on the new game's engine (`Rules` only where it was
/// set for that game: each game's rule set is its own, the game's default until set), and the
/// position is the new game's start. A `NetPath` of the other game's network switches the same
/// way (its manifest names the game), so a GUI that only sets `NetPath` gets a janggi engine
/// for a janggi network; an `info string` says so. With `--net`, the network fixes the game: a
/// `UCI_Variant` or `NetPath` of another game is refused with an `info string`.
///
/// # Errors
/// A `--net` that cannot be loaded (with the reason), and I/O errors on standard input.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let device = crate::net::NetDevice::open(&args.device, args.precision)?;
    let mut game = match &args.net {
        Some(path) => crate::net::game_of(path)?,
        None => GameKind::Xiangqi,
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut session = Session {
        replay: Vec::new(),
        rules: Vec::new(),
        dialect: None,
        pinned: args.net.is_some(),
        net_path: args.net.as_ref().map(|p| p.display().to_string()),
    };
    let mut evaluator = crate::net::AnyEvaluator::load_optional(args.net.as_deref(), &device)?;
    loop {
        let next = match game {
            GameKind::Xiangqi => serve_as::<Game>(evaluator, &device, &mut input, &mut session)?,
            GameKind::Janggi => {
                serve_as::<janggi::Game>(evaluator, &device, &mut input, &mut session)?
            }
        };
        match next {
            Some((other, net)) => {
                game = other;
                evaluator = net
                    .unwrap_or(crate::net::AnyEvaluator::Uniform(xiangqi_search::UniformEvaluator));
            }
            None => return Ok(ExitCode::SUCCESS),
        }
    }
}

/// What carries over when the engine switches games.
struct Session {
    /// The `setoption` lines so far other than `UCI_Variant`, `Rules` and `NetPath`.
    replay: Vec<String>,
    /// The last `Rules` line sent to each game's engine.
    rules: Vec<(GameKind, String)>,
    /// The protocol chosen by `uci` or `ucci`.
    dialect: Option<Dialect>,
    /// Whether a network fixes the game.
    pinned: bool,
    /// `--net`, shown as `NetPath`'s default.
    net_path: Option<String>,
}

/// The option name (lower case) and value of a `setoption` line: UCI `setoption name N...
/// [value V...]` or UCCI `setoption N V...`; the value as [`raw_value`] reads it.
fn setoption_parts(line: &str) -> Option<(String, String)> {
    let line = line.trim_end_matches(['\r', '\n']);
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    match words.as_slice() {
        ["setoption", "name", rest @ ..] => {
            let at = rest.iter().position(|w| *w == "value").unwrap_or(rest.len());
            let value = match rest.get(at) {
                Some(_) => raw_value(line).unwrap_or_default().to_string(),
                None => String::new(),
            };
            Some((rest[..at].join(" ").to_ascii_lowercase(), value))
        }
        ["setoption", name, value @ ..] => Some((name.to_ascii_lowercase(), value.join(" "))),
        _ => None,
    }
}

/// The game a `setoption ... UCI_Variant ...` line asks for, if the line is one.
fn variant_request(line: &str) -> Option<Result<GameKind, String>> {
    let (name, value) = setoption_parts(line)?;
    (name == "uci_variant").then(|| value.trim().parse::<GameKind>().map_err(|e| e.to_string()))
}

/// Serves the protocol as an engine of game `G` until `quit`, the end of input (`None`), or a
/// request to switch to another game (`Some`, only without `--net`), with the network that
/// asked for it if a `NetPath` did.
fn serve_as<G: GameEnv>(
    evaluator: crate::net::AnyEvaluator,
    device: &crate::net::NetDevice,
    input: &mut impl BufRead,
    session: &mut Session,
) -> anyhow::Result<Option<(GameKind, Option<crate::net::AnyEvaluator>)>> {
    let loader_device = device.clone();
    let loader: NetLoader<crate::net::AnyEvaluator> = Box::new(move |path: &str| {
        let e = crate::net::AnyEvaluator::load_optional(
            Some(std::path::Path::new(path)),
            &loader_device,
        )
        .map_err(|e| format!("{e:#}"))?;
        e.expect_game(G::KIND, path).map_err(|e| format!("{e:#}"))?;
        Ok(e)
    });
    let note: EvaluatorNote<crate::net::AnyEvaluator> =
        Box::new(|e| e.game().is_none().then(|| NO_NETWORK.to_string()));
    let mut engine: Engine<_, G> = Engine::new(evaluator, Output::new(Box::new(io::stdout())))
        .with_net_loader(loader)
        .with_evaluator_note(note)
        .with_net_record(Box::new(crate::net::AnyEvaluator::record));
    if session.pinned {
        engine = engine.with_fixed_game();
    }
    if let Some(path) = &session.net_path {
        engine = engine.with_net_path(path);
    }
    if let Some(d) = session.dialect {
        engine.dialect = d;
    }
    for line in &session.replay {
        engine.handle_line(line);
    }
    if let Some((_, line)) = session.rules.iter().find(|(g, _)| *g == G::KIND) {
        engine.handle_line(line);
    }
    let mut buf = Vec::new();
    loop {
        match read_line(input, &mut buf)? {
            LineRead::Eof => {
                engine.finish_search();
                break;
            }
            LineRead::TooLong => engine.info("input line longer than 1 MiB ignored"),
            LineRead::Line => {
                let line = String::from_utf8_lossy(&buf).into_owned();
                let option = setoption_parts(&line);
                match option.as_ref().map(|(name, value)| (name.as_str(), value.as_str())) {
                    Some(("uci_variant", _)) => {
                        // A network (from --net or NetPath) fixes the game; the uniform
                        // evaluator plays either.
                        if let Some(Ok(g)) = variant_request(&line)
                            && g != G::KIND
                            && !session.pinned
                            && !engine.with_evaluator(|e| e.game().is_some())
                        {
                            engine.stop_search();
                            engine.info(&format!("playing {g}"));
                            return Ok(Some((g, None)));
                        }
                    }
                    Some(("rules", _)) => {
                        session.rules.retain(|(g, _)| *g != G::KIND);
                        session.rules.push((G::KIND, line.clone()));
                    }
                    Some(("netpath", value)) => match net_of_another_game(&engine, value, device) {
                        NetSwitch::Stay => {}
                        NetSwitch::To(game, net) => {
                            engine.stop_search();
                            let path = net_path_value(value).unwrap_or_default();
                            engine.info(&format!(
                                "network loaded from {path}; it plays {game}: playing {game} \
                                 from its start position"
                            ));
                            return Ok(Some((game, Some(net))));
                        }
                        NetSwitch::Failed(why) => {
                            engine.info(&why);
                            continue;
                        }
                    },
                    Some(_) => session.replay.push(line.clone()),
                    None => {}
                }
                if engine.handle_line(&line) == Flow::Quit {
                    break;
                }
                session.dialect = Some(engine.dialect);
            }
        }
    }
    engine.stop_search();
    Ok(None)
}

/// What a `NetPath` value means for the engine's game.
enum NetSwitch {
    /// Nothing: the engine's own `NetPath` handling loads it or explains why not.
    Stay,
    /// A network of this other game, loaded.
    To(GameKind, crate::net::AnyEvaluator),
    /// A network of another game that does not load, and why.
    Failed(String),
}

/// Whether a `NetPath` value names a network of another game than `G` (by its manifest) for an
/// engine no `--net` fixes, and if so the network loaded.
fn net_of_another_game<G: GameEnv>(
    engine: &Engine<crate::net::AnyEvaluator, G>,
    value: &str,
    device: &crate::net::NetDevice,
) -> NetSwitch {
    let Some(path) = net_path_value(value).filter(|_| !engine.fixed_game) else {
        return NetSwitch::Stay;
    };
    let path = std::path::Path::new(path);
    match crate::net::game_of(path) {
        Ok(game) if game != G::KIND => {
            match crate::net::AnyEvaluator::load_optional(Some(path), device) {
                Ok(net) => NetSwitch::To(game, net),
                Err(e) => {
                    NetSwitch::Failed(format!("option NetPath: {e:#}; keeping the current network"))
                }
            }
        }
        _ => NetSwitch::Stay,
    }
}
