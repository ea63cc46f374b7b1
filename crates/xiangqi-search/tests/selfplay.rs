//! The actor pool, game records, PGN and replay shards.

use std::fs;
use std::path::PathBuf;

use xiangqi::{Color, Game, OutcomeReason, RuleSet};
use xiangqi_search::resign::BINS;
use xiangqi_search::shard::temp_path;
use xiangqi_search::{
    Algorithm, Checked, ForkPool, GameRecord, InFlight, RecordedValue, ResignCalibration,
    ScriptedEvaluator, SearchConfig, SelfPlayConfig, SelfPlayEvent, SelfPlayStats, Shard,
    ShardError, UniformEvaluator, Validate, list_shards, parse_pgn_moves, play_games,
    play_games_continuing, play_games_forking, read_shard, write_shard,
};

/// `config`, checked (the tests' settings are valid).
fn checked<T: Validate + Clone>(config: &T) -> Checked<T> {
    Checked::new(config.clone()).unwrap()
}

fn small_search() -> SearchConfig {
    SearchConfig {
        simulations: 24,
        cheap_simulations: 8,
        full_search_prob: 0.5,
        virtual_loss_batch: 4,
        ..SearchConfig::default()
    }
}

fn small_selfplay() -> SelfPlayConfig {
    SelfPlayConfig {
        games_in_flight: 6,
        max_batch: 64,
        threads: 2,
        opening_random_plies: 2,
        temperature_plies: 8,
        length_cap: 24,
        seed: 11,
        ..SelfPlayConfig::default()
    }
}

fn play(
    search: &SearchConfig,
    selfplay: &SelfPlayConfig,
    games: u64,
) -> (Vec<GameRecord<xiangqi::Game>>, SelfPlayStats) {
    play_with(search, selfplay, games, &mut UniformEvaluator)
}

/// [`play`] with another evaluator.
fn play_with<E: xiangqi_search::Evaluator<xiangqi::Game>>(
    search: &SearchConfig,
    selfplay: &SelfPlayConfig,
    games: u64,
    eval: &mut E,
) -> (Vec<GameRecord<xiangqi::Game>>, SelfPlayStats) {
    let mut records = Vec::new();
    let stats =
        play_games::<xiangqi::Game, _, _>(&checked(search), &checked(selfplay), games, eval, |e| {
            if let SelfPlayEvent::GameFinished(r, _) = e {
                records.push(r.clone());
            }
            Ok(())
        })
        .unwrap();
    (records, stats)
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-search-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn pool_batches_leaves_across_games() {
    let search = small_search();
    let selfplay = small_selfplay();
    let mut eval = ScriptedEvaluator::uniform();
    let mut finished = 0;
    let stats = play_games::<xiangqi::Game, _, _>(
        &checked(&search),
        &checked(&selfplay),
        6,
        &mut eval,
        |e| {
            if let SelfPlayEvent::GameFinished(..) = e {
                finished += 1;
            }
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(finished, 6);
    assert_eq!(stats.games_finished, 6);
    let sizes = &eval.log().batch_sizes;
    let max = sizes.iter().copied().max().unwrap();
    // One tree sends at most virtual_loss_batch = 4 leaves; a larger batch mixes games.
    assert!(max > 4, "largest batch {max}: leaves of several games must share a batch");
    assert!(max <= 64, "largest batch {max} exceeds max_batch");
    assert_eq!(sizes.iter().sum::<usize>() as u64, stats.evaluations);
    assert!(stats.simulations > 0 && stats.moves > 0);
}

#[test]
fn max_batch_is_respected() {
    let search = SearchConfig { virtual_loss_batch: 8, ..small_search() };
    let selfplay = SelfPlayConfig { games_in_flight: 8, max_batch: 5, ..small_selfplay() };
    let mut eval = ScriptedEvaluator::uniform();
    play_games::<xiangqi::Game, _, _>(&checked(&search), &checked(&selfplay), 8, &mut eval, |_| {
        Ok(())
    })
    .unwrap();
    assert!(eval.log().batch_sizes.iter().all(|&n| (1..=5).contains(&n)));
}

#[test]
fn same_seed_same_games_whatever_the_thread_count() {
    for algorithm in [Algorithm::Puct, Algorithm::Gumbel] {
        let search = SearchConfig { algorithm, ..small_search() };
        let one = SelfPlayConfig { threads: 1, ..small_selfplay() };
        let two = SelfPlayConfig { threads: 2, ..small_selfplay() };
        let (a, _) = play(&search, &one, 6);
        let (b, _) = play(&search, &two, 6);
        assert_eq!(a, b, "{algorithm:?}");
        let (c, _) = play(&search, &SelfPlayConfig { seed: 12, ..two }, 6);
        assert_ne!(a, c, "{algorithm:?}: another seed must give other games");
    }
}

/// `selfplay.recorded_value` changes only the recorded values: the same seed plays the same
/// games with the same policy targets, and under Gumbel the recorded values differ.
#[test]
fn the_recorded_value_changes_the_values_and_nothing_else() {
    let search = SearchConfig { algorithm: Algorithm::Gumbel, ..small_search() };
    let mean = small_selfplay();
    let improved = SelfPlayConfig { recorded_value: RecordedValue::Improved, ..small_selfplay() };
    // Values that differ from position to position (by the number of legal moves), so that
    // the moves' Q differ and the two values can.
    let games = |selfplay: &SelfPlayConfig| {
        let mut eval =
            ScriptedEvaluator::new(|_: &Game, moves: &[xiangqi::Move], _: &mut [f32]| {
                (moves.len() % 7) as f32 / 3.0 - 1.0
            });
        play_with(&search, selfplay, 4, &mut eval).0
    };
    let (a, b) = (games(&mean), games(&improved));
    assert_eq!(a.len(), b.len());
    let mut differ = 0;
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.moves, y.moves);
        assert_eq!(x.samples.len(), y.samples.len());
        for (s, t) in x.samples.iter().zip(&y.samples) {
            assert_eq!((s.ply, &s.probs, s.full_search), (t.ply, &t.probs, t.full_search));
            assert!((-1.0..=1.0).contains(&t.root_value), "{}", t.root_value);
            differ += usize::from(s.root_value != t.root_value);
        }
    }
    assert!(differ > 0, "no recorded value changed");
}

#[test]
fn records_hold_legal_games_and_proper_targets() {
    let (records, stats) = play(&small_search(), &small_selfplay(), 6);
    assert_eq!(records.len(), 6);
    let mut ids: Vec<u64> = records.iter().map(|r| r.game_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..6).collect::<Vec<_>>());
    let (mut full, mut cheap) = (0, 0);
    for r in &records {
        assert!(r.moves.len() <= 24, "length cap 24, got {}", r.moves.len());
        // Replaying through the rules reproduces the verdict (or the cap).
        let mut g = Game::new(r.start, r.rules);
        for &m in &r.moves {
            g.play(m).unwrap();
        }
        match g.outcome() {
            Some(o) => assert_eq!(o, r.outcome),
            None => assert_eq!(r.outcome.reason(), OutcomeReason::LengthCap),
        }
        // Opening plies are not samples; every searched ply is.
        assert_eq!(r.samples.len(), r.moves.len() - 2);
        for s in &r.samples {
            let mut g = Game::new(r.start, r.rules);
            for &m in &r.moves[..s.ply as usize] {
                g.play(m).unwrap();
            }
            let legal: Vec<u16> = g.legal_moves().iter().map(|m| m.to_u16()).collect();
            assert_eq!(s.moves, legal);
            assert_eq!(s.inputs.turn, g.position().turn());
            let sum: f32 = s.probs.iter().sum();
            assert!((sum - 1.0).abs() < 1e-4);
            if s.full_search { full += 1 } else { cheap += 1 }
        }
    }
    assert!(full > 0 && cheap > 0, "full_search_prob 0.5 must give both: {full} {cheap}");
    assert_eq!(stats.full_searches, full);
    assert_eq!(stats.moves, full + cheap);
}

#[test]
fn resignation_and_its_false_positives() {
    // Black always believes it is lost: it resigns at its first move, except in games where
    // resignation is disabled; those end at the length cap, a draw, so each is a false positive.
    let mut eval =
        ScriptedEvaluator::new(
            |g: &Game, _: &[xiangqi::Move], _: &mut [f32]| {
                if g.position().turn() == Color::Black { -1.0 } else { 1.0 }
            },
        );
    let selfplay = SelfPlayConfig {
        resign_threshold: -0.9,
        resign_disabled_fraction: 0.5,
        length_cap: 12,
        games_in_flight: 4,
        ..small_selfplay()
    };
    let search = SearchConfig { full_search_prob: 1.0, ..small_search() };
    let mut records = Vec::new();
    let stats = play_games::<xiangqi::Game, _, _>(
        &checked(&search),
        &checked(&selfplay),
        12,
        &mut eval,
        |e| {
            if let SelfPlayEvent::GameFinished(r, _) = e {
                records.push(r.clone());
            }
            Ok(())
        },
    )
    .unwrap();
    let disabled = records.iter().filter(|r| r.resign_disabled).count() as u64;
    assert!(disabled > 0 && disabled < 12, "about half the games: {disabled}");
    for r in &records {
        if r.resign_disabled {
            assert_eq!(r.would_have_resigned, Some(Color::Black));
            assert_ne!(r.outcome.reason(), OutcomeReason::Resignation);
        } else {
            assert_eq!(r.outcome.reason(), OutcomeReason::Resignation);
            assert_eq!(r.outcome.winner(), Some(Color::Red));
        }
    }
    assert_eq!(stats.resignations, 12 - disabled);
    assert_eq!(stats.resign_disabled_games, disabled);
    assert_eq!(stats.would_have_resigned, disabled);
    let fp = records.iter().filter(|r| r.resign_false_positive()).count() as u64;
    assert_eq!(stats.resign_false_positives, fp);
    assert!(fp > 0, "a capped draw is a false positive");
    // The lowest best-move values: Black's near -1 (below the threshold), Red's near +1.
    for r in &records {
        assert!(r.lowest_value[Color::Black.index()] < -0.9, "{:?}", r.lowest_value);
        assert!(r.lowest_value[Color::Red.index()] > 0.5, "{:?}", r.lowest_value);
    }
    // The calibration counts the played-out games only (a threshold was in effect), and every
    // Black side of them would have resigned falsely (a capped draw): no threshold qualifies.
    let mut calibration = ResignCalibration::new(1000);
    let counted = records.iter().filter(|r| calibration.add_game(r, -0.9)).count() as u64;
    assert_eq!(counted, disabled);
    assert_eq!(calibration.total(), 2 * disabled);
    assert_eq!(calibration.resigners(BINS - 1), (disabled, disabled));
    assert_eq!(calibration.choose(0.05, 1), -1.0);
    // With no threshold in effect every game counts.
    let mut all = ResignCalibration::new(1000);
    assert!(records.iter().all(|r| all.add_game(r, -1.0)));
}

#[test]
fn shard_round_trip_and_interrupted_writes() {
    let (records, _) = play(&small_search(), &small_selfplay(), 4);
    let mut shard = Shard::new::<xiangqi::Game>(RuleSet::Asian);
    for r in &records {
        shard.push_game(r, 0);
    }
    assert_eq!(shard.len(), records.iter().map(|r| r.samples.len()).sum::<usize>());
    let dir = scratch_dir("shards");
    let path = dir.join("shard-000000.npz");
    write_shard(&path, &shard).unwrap();
    assert!(!temp_path(&path).exists(), "the temporary file is renamed away");
    let back = read_shard(&path).unwrap();
    assert_eq!(back, shard);
    // Results are seen from the side to move.
    let r = &records[0];
    let s = back.sample(0);
    assert_eq!(s.result, r.result_for(s.inputs.turn));
    assert_eq!(s.moves, r.samples[0].moves.as_slice());

    // An interrupted write: a truncated copy, under the final name and as a leftover .tmp.
    let bytes = fs::read(&path).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 1, 10] {
        let broken = dir.join(format!("shard-cut-{cut}.npz"));
        fs::write(&broken, &bytes[..cut]).unwrap();
        let err = read_shard(&broken).unwrap_err();
        assert!(err.to_string().contains("shard-cut"), "the error names the file: {err}");
    }
    let tmp = temp_path(&dir.join("shard-000001.npz"));
    fs::write(&tmp, &bytes).unwrap();
    let err = read_shard(&tmp).unwrap_err();
    let ShardError::File { source, .. } = &err else { panic!("{err}") };
    assert!(matches!(**source, ShardError::Temporary { .. }), "{err}");
    let listed = list_shards(&dir).unwrap();
    assert!(listed.iter().all(|p| p.extension().is_some_and(|e| e == "npz")));
    assert!(!listed.contains(&tmp));
    assert!(listed.contains(&path));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shard_reader_rejects_bad_contents() {
    let (records, _) = play(&small_search(), &small_selfplay(), 1);
    let mut shard = Shard::new::<xiangqi::Game>(RuleSet::Simple);
    shard.push_game(&records[0], 0);
    let dir = scratch_dir("bad");
    let mut bad = shard.clone();
    bad.result[0] = 3;
    assert!(write_shard(&dir.join("a.npz"), &bad).is_err(), "the writer validates too");
    assert!(!dir.join("a.npz").exists() && !dir.join("a.npz.tmp").exists());
    let mut bad = shard.clone();
    *bad.policy_offsets.last_mut().unwrap() += 1;
    assert!(bad.validate().is_err());
    assert!(write_shard(&dir.join("b.tmp"), &shard).is_err(), "only .npz names");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pgn_moves_reparse() {
    let (records, _) = play(&small_search(), &small_selfplay(), 3);
    for r in &records {
        let mut text = Vec::new();
        r.write_pgn(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("[Game \"Chinese Chess\"]"));
        assert!(text.contains("[Format \"ICCS\"]"));
        assert!(text.contains(&format!("[Result \"{}\"]", r.outcome.result_str())));
        assert!(text.contains(&format!("[Termination \"{}\"]", r.outcome.reason())));
        assert!(!text.contains("[FEN"), "a game from the start position has no FEN tag");
        let (start, moves) = parse_pgn_moves::<xiangqi::Game>(&text, r.rules).unwrap();
        assert_eq!(start, r.start);
        assert_eq!(moves, r.moves);
    }
    // From a set-up position, with Black to move first.
    let start = xiangqi::Position::from_fen("4k4/R8/1R7/9/9/9/9/9/1r7/3K5 b - - 0 1").unwrap();
    let mut g = Game::new(start, RuleSet::Asian);
    let mut moves = Vec::new();
    for uci in ["b1b7", "a8a9"] {
        let m = g.position().parse_uci(uci).unwrap();
        g.play(m).unwrap();
        moves.push(m);
    }
    let record: GameRecord<xiangqi::Game> = GameRecord {
        game_id: 0,
        rules: RuleSet::Asian,
        start,
        moves,
        outcome: xiangqi::Outcome::Draw { reason: OutcomeReason::LengthCap },
        samples: Vec::new(),
        resign_disabled: false,
        would_have_resigned: None,
        lowest_value: [1.0; 2],
        final_material: None,
    };
    let mut text = Vec::new();
    record.write_pgn(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("[SetUp \"1\"]") && text.contains(&format!("[FEN \"{}\"]", start.fen())));
    assert!(text.contains("1... B1-B7 2. A8-A9 1/2-1/2"), "{text}");
    let (s, m) = parse_pgn_moves::<xiangqi::Game>(&text, RuleSet::Asian).unwrap();
    assert_eq!((s, m), (start, record.moves.clone()));
}

#[test]
fn shards_record_each_games_ending_length_and_final_material() {
    use xiangqi::{Outcome, Position};
    use xiangqi_search::{GameRecord, Material, read_shard_from, write_shard_to};
    let material_balance = <xiangqi::Game as Material>::material_half_pawns;
    // Material by hand: the start position is even; without Black's a9 chariot Red is 9 pawns
    // (18 half-pawns) up; without a Red cannon (4.5) and a Black soldier (1), Black is 3.5 up.
    let start = Position::start();
    assert_eq!(material_balance(&xiangqi::env::encode_board_compact(&start)), 0);
    let up =
        Position::from_fen("1nbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1")
            .unwrap();
    assert_eq!(material_balance(&xiangqi::env::encode_board_compact(&up)), 18);
    let down =
        Position::from_fen("rnbakabnr/9/1c5c1/2p1p1p1p/9/9/P1P1P1P1P/7C1/9/RNBAKABNR w - - 0 1")
            .unwrap();
    assert_eq!(material_balance(&xiangqi::env::encode_board_compact(&down)), -7);

    // A game from the chariot-up position in which Red's cannon takes Black's knight
    // (h2h9: +8 more), cut at its length cap: every sample records the cap, the length and
    // the final balance from its own side.
    let (records, _) = play(&small_search(), &small_selfplay(), 1);
    let mut record: GameRecord<xiangqi::Game> = records[0].clone();
    record.start = up;
    record.moves = vec![up.parse_uci("h2h9").unwrap()];
    record.outcome = Outcome::Draw { reason: OutcomeReason::LengthCap };
    record.final_material = None; // edited by hand: the writer replays the moves
    record.samples.truncate(2);
    record.samples[0].inputs.turn = Color::Red;
    record.samples[1].inputs.turn = Color::Black;
    let mut shard = Shard::new::<xiangqi::Game>(RuleSet::Asian);
    shard.push_game(&record, 0);
    let cap = OutcomeReason::LengthCap.index() as u8;
    assert_eq!(shard.ending, [cap, cap]);
    assert_eq!(shard.game_plies, [1, 1]);
    assert_eq!(shard.final_material, [26, -26]);
    let s = shard.sample(1);
    assert_eq!((s.ending, s.game_plies, s.final_material), (cap, 1, -26));

    // Played games: the ending is the verdict, the length the number of moves.
    let mut shard = Shard::new::<xiangqi::Game>(RuleSet::Asian);
    for r in &records {
        shard.push_game(r, 0);
    }
    let mut i = 0;
    for r in &records {
        for _ in &r.samples {
            assert_eq!(shard.ending[i], r.outcome.reason().index() as u8);
            assert_eq!(usize::from(shard.game_plies[i]), r.moves.len());
            i += 1;
        }
    }
    let bytes = write_shard_to(std::io::Cursor::new(Vec::new()), &shard).unwrap().into_inner();
    assert_eq!(read_shard_from(std::io::Cursor::new(bytes)).unwrap(), shard);
}

#[test]
fn version_1_shards_still_read_with_unknown_endings() {
    use xiangqi_search::{UNKNOWN_ENDING, UNKNOWN_MATERIAL, read_shard_from};
    let (records, _) = play(&small_search(), &small_selfplay(), 2);
    let mut shard = Shard::new::<xiangqi::Game>(RuleSet::Asian);
    for r in &records {
        shard.push_game(r, 0);
    }
    // The arrays of format version 1, as the earlier writer laid them out.
    let n = shard.len();
    let bytes = arrays_of_version(&shard, 1, &|_| {});
    let old = read_shard_from(std::io::Cursor::new(bytes)).unwrap();
    assert_eq!(old.len(), n);
    assert_eq!(old.result, shard.result);
    assert!(old.ending.iter().all(|&e| e == UNKNOWN_ENDING));
    assert!(old.final_material.iter().all(|&m| m == UNKNOWN_MATERIAL));
    assert!(old.game_plies.iter().all(|&p| p == 0));
}

#[test]
fn self_play_records_the_final_material_its_moves_lead_to() {
    // Long enough for captures: 60 plies a game, a dozen games.
    let selfplay = SelfPlayConfig { length_cap: 60, ..small_selfplay() };
    let (records, _) = play(&small_search(), &selfplay, 12);
    let mut uneven = 0;
    for r in &records {
        let measured = r.final_material.expect("self-play measures the final material");
        // The same record without the measurement: the moves are replayed from the start.
        let replayed = GameRecord { final_material: None, ..r.clone() }.final_material();
        assert_eq!(Some(measured), replayed, "game {}", r.game_id);
        uneven += usize::from(measured != 0);
    }
    assert!(uneven > 0, "no game ended with uneven material: the check shows nothing");
    // A record whose moves do not replay has no final material.
    let mut broken = GameRecord { final_material: None, ..records[0].clone() };
    broken.moves.insert(0, broken.moves[1]);
    assert_eq!(broken.final_material(), None);
}

/// `fork_game_prob = 1`: once a game has finished, every new game branches off a finished one:
/// the same moves up to a searched ply, another legal move there, and samples only from the
/// position after it, the first a full search.
#[test]
fn forked_games_branch_off_finished_games() {
    let search = SearchConfig { full_search_prob: 0.0, ..small_search() };
    let selfplay = SelfPlayConfig { games_in_flight: 2, fork_game_prob: 1.0, ..small_selfplay() };
    let (records, stats) = play(&search, &selfplay, 12);
    assert_eq!(records.len(), 12);
    let opening = selfplay.opening_random_plies as usize;
    let mut forks = 0;
    for (k, r) in records.iter().enumerate() {
        let first = r.samples.first().map_or(r.moves.len(), |s| s.ply as usize);
        if first == opening {
            // A game from the start: every searched ply a sample, full_search_prob 0.
            assert!(r.samples.iter().all(|s| !s.full_search));
            continue;
        }
        forks += 1;
        // The fork point `first - 1`: an earlier finished game played the same moves before it
        // and another move at it.
        let p = first - 1;
        assert!(p >= opening, "game {}: fork at ply {p}, before the opening's end", r.game_id);
        let source = records[..k].iter().rev().find(|s| {
            s.moves.len() > p && s.moves[..p] == r.moves[..p] && s.moves[p] != r.moves[p]
        });
        assert!(source.is_some(), "game {}: no earlier game it forks from", r.game_id);
        // Legal all through; samples are the plies after the fork, the first a full search.
        let mut g = Game::new(r.start, r.rules);
        for &m in &r.moves {
            g.play(m).unwrap();
        }
        assert!(r.samples[0].full_search, "game {}: first search after a fork", r.game_id);
        assert!(r.samples[1..].iter().all(|s| !s.full_search));
        let plies: Vec<u32> = r.samples.iter().map(|s| s.ply).collect();
        let after: Vec<u32> = (first as u32..r.moves.len() as u32).collect();
        assert_eq!(plies, after, "game {}", r.game_id);
    }
    assert_eq!(forks, stats.games_forked);
    // The first games (two in flight) cannot fork; with probability 1 most later ones do.
    assert!(forks >= 6, "only {forks} of 12 games forked");

    let bad = SelfPlayConfig { fork_game_prob: 1.5, ..small_selfplay() }.validate().unwrap_err();
    assert_eq!(bad.key, "selfplay.fork_game_prob");
    // Opening plies that reach the length cap would leave no searched ply (and played one past
    // the cap): refused.
    let capped = SelfPlayConfig { opening_random_plies: 24, length_cap: 24, ..small_selfplay() };
    assert_eq!(capped.validate().unwrap_err().key, "selfplay.opening_random_plies");
    let fine = SelfPlayConfig { opening_random_plies: 23, length_cap: 24, ..small_selfplay() };
    fine.validate().unwrap();
}

/// A pool kept across calls: with as many games in flight as a call plays, no game of a call
/// finishes before all have started, so forks come only from the pool's earlier games.
#[test]
fn a_fork_pool_carries_games_from_one_call_to_the_next() {
    let search = small_search();
    let selfplay = SelfPlayConfig { games_in_flight: 4, fork_game_prob: 1.0, ..small_selfplay() };
    let mut pool = ForkPool::<Game>::default();
    let mut calls: Vec<(Vec<GameRecord<Game>>, SelfPlayStats)> = Vec::new();
    for first in [0, 4] {
        let mut records = Vec::new();
        let stats = play_games_forking(
            first,
            &mut pool,
            &checked(&search),
            &checked(&selfplay),
            4,
            &mut UniformEvaluator,
            |e| {
                if let SelfPlayEvent::GameFinished(r, _) = e {
                    records.push(r.clone());
                }
                Ok(())
            },
        )
        .unwrap();
        calls.push((records, stats));
    }
    assert_eq!(pool.len(), 4, "the pool keeps the newest games_in_flight games");
    assert_eq!(calls[0].1.games_forked, 0, "an empty pool: nothing to fork from");
    assert_eq!(calls[1].1.games_forked, 4);
    let opening = selfplay.opening_random_plies as usize;
    for r in &calls[1].0 {
        let p = r.samples[0].ply as usize - 1;
        assert!(p >= opening);
        let from_first_call = calls[0]
            .0
            .iter()
            .any(|s| s.moves.len() > p && s.moves[..p] == r.moves[..p] && s.moves[p] != r.moves[p]);
        assert!(from_first_call, "game {} forks from none of the first call's games", r.game_id);
    }
    // Without the pool the same call cannot fork at all.
    let (_, alone) = play(&search, &selfplay, 4);
    assert_eq!(alone.games_forked, 0);
}

/// One call of continuous self-play: the games it reported, its counters, and the ids of the
/// games it left in flight.
type ContinuousCall = (Vec<GameRecord<Game>>, SelfPlayStats, Vec<u64>);

/// Three calls of continuous self-play of `games` games each, with `games_in_flight` = `games`.
fn continuous_calls(games: u64) -> (Vec<ContinuousCall>, u64) {
    let search = small_search();
    let selfplay = SelfPlayConfig { games_in_flight: games as u32, ..small_selfplay() };
    let mut in_flight = InFlight::<Game>::default();
    let mut forks = ForkPool::default();
    let mut calls = Vec::new();
    for _ in 0..3 {
        let mut records = Vec::new();
        let stats = play_games_continuing(
            &mut in_flight,
            &mut forks,
            &checked(&search),
            &checked(&selfplay),
            games,
            &mut UniformEvaluator,
            |e| {
                if let SelfPlayEvent::GameFinished(r, _) = e {
                    records.push(r.clone());
                }
                Ok(())
            },
        )
        .unwrap();
        calls.push((records, stats, in_flight.game_ids()));
    }
    (calls, in_flight.next_game_id())
}

/// Continuous self-play reports exactly the count asked for in each call, leaves every slot
/// busy when a call ends, plays the carried games on without a gap in their samples, loses no
/// game and reports none twice; the same calls give the same games; and its batches stay
/// fuller than those of calls that wait for their last game.
#[test]
fn continuous_self_play_carries_unfinished_games_to_the_next_call() {
    let (calls, next_id) = continuous_calls(6);
    let opening = small_selfplay().opening_random_plies;
    let mut reported = Vec::new();
    for (i, (records, stats, carried)) in calls.iter().enumerate() {
        assert_eq!(records.len(), 6, "call {i}");
        assert_eq!(stats.games_finished, 6, "call {i}");
        assert!(carried.len() >= 6, "call {i} left {} games: a slot went idle", carried.len());
        for r in records {
            let plies: Vec<u32> = r.samples.iter().map(|s| s.ply).collect();
            let searched: Vec<u32> = (opening..r.moves.len() as u32).collect();
            assert_eq!(
                plies, searched,
                "game {}: every ply after the opening recorded once",
                r.game_id
            );
            reported.push(r.game_id);
        }
    }
    // Games started in one call and finished in the next.
    let first_call_ids: Vec<u64> = calls[0].2.clone();
    let spanned = calls[1].0.iter().filter(|r| first_call_ids.contains(&r.game_id)).count();
    assert!(spanned > 0, "no game of the first call's slots finished in the second");
    // Every game started is reported once or still in flight.
    let mut all = reported.clone();
    all.extend(&calls[2].2);
    all.sort_unstable();
    assert_eq!(all, (0..next_id).collect::<Vec<u64>>());
    // Deterministic: the same calls, the same games.
    let (again, again_next) = continuous_calls(6);
    assert_eq!(again_next, next_id);
    for (a, b) in calls.iter().zip(&again) {
        let moves = |c: &ContinuousCall| -> Vec<(u64, Vec<xiangqi::Move>)> {
            c.0.iter().map(|r| (r.game_id, r.moves.clone())).collect()
        };
        assert_eq!(moves(a), moves(b));
        assert_eq!(a.2, b.2);
    }
    // The point of it: a bounded call's batches thin out while its last games finish.
    let (_, bounded) = play(&small_search(), &small_selfplay(), 6);
    let mean = |s: &SelfPlayStats| s.evaluations as f64 / s.batches as f64;
    let continuing = &calls[1].1;
    assert!(
        mean(continuing) > mean(&bounded),
        "mean batch {:.2} continuing, {:.2} bounded",
        mean(continuing),
        mean(&bounded)
    );
}

/// Continuous self-play keeps to `max_batch` across calls too: the second group's carried
/// games wait on leaves gathered in the last call, and a new call must not gather a full batch
/// beside them. Many short calls, far more games in flight than each reports, a small batch.
#[test]
fn continuous_self_play_keeps_to_max_batch_from_call_to_call() {
    let search = small_search();
    let selfplay = SelfPlayConfig { games_in_flight: 16, max_batch: 8, ..small_selfplay() };
    let mut in_flight = InFlight::<Game>::default();
    let mut forks = ForkPool::default();
    let mut eval = ScriptedEvaluator::uniform();
    let mut reported = 0;
    for _ in 0..8 {
        play_games_continuing(
            &mut in_flight,
            &mut forks,
            &checked(&search),
            &checked(&selfplay),
            1,
            &mut eval,
            |e| {
                if let SelfPlayEvent::GameFinished(..) = e {
                    reported += 1;
                }
                Ok(())
            },
        )
        .unwrap();
    }
    assert_eq!(reported, 8);
    let sizes = &eval.log().batch_sizes;
    let max = sizes.iter().copied().max().unwrap();
    assert!(max <= 8, "a batch of {max} leaves, max_batch 8");
}

/// Every self-play sample records its search's policy surprise: with the uniform evaluator the
/// prior over `n` legal moves is `1/n`, so the surprise is `Σ p ln(p n)` of the sample's
/// target. The column survives a shard's round trip; a version 4 shard, which lacks it, reads as
/// unknown; a value that is no divergence is refused with the array named.
/// An npz archive being written in memory.
type Npz = ndarray_npy::NpzWriter<std::io::Cursor<Vec<u8>>>;

/// The arrays of `shard` as the writer of format `version` laid them out: versions 1 and on the
/// board, search and policy arrays; 2 and on `ending`, `game_plies`, `final_material`; 3 and on
/// `worker`, `generation`; 4 and on `game`. No `policy_surprise` (version 5's): `extra` adds
/// any further array.
fn arrays_of_version(shard: &Shard, version: u32, extra: &dyn Fn(&mut Npz)) -> Vec<u8> {
    use ndarray::{Array1, Array2};
    let n = shard.len();
    let mut npz = Npz::new_compressed(std::io::Cursor::new(Vec::new()));
    npz.add_array("format_version", &Array1::from_vec(vec![version])).unwrap();
    if version >= 4 {
        npz.add_array("game", &Array1::from_vec(vec![0u8])).unwrap();
    }
    npz.add_array("rules", &Array1::from_vec(vec![0u8])).unwrap();
    let flat: Vec<u8> = shard.boards.iter().flatten().copied().collect();
    npz.add_array("boards", &Array2::from_shape_vec((n, 90), flat).unwrap()).unwrap();
    npz.add_array("turn", &Array1::from_vec(shard.turn.clone())).unwrap();
    npz.add_array("halfmove_clock", &Array1::from_vec(shard.halfmove_clock.clone())).unwrap();
    npz.add_array("repeated", &Array1::from_vec(shard.repeated.clone())).unwrap();
    npz.add_array("result", &Array1::from_vec(shard.result.clone())).unwrap();
    npz.add_array("full_search", &Array1::from_vec(shard.full_search.clone())).unwrap();
    npz.add_array("root_value", &Array1::from_vec(shard.root_value.clone())).unwrap();
    npz.add_array("game_id", &Array1::from_vec(shard.game_id.clone())).unwrap();
    npz.add_array("ply", &Array1::from_vec(shard.ply.clone())).unwrap();
    npz.add_array("policy_offsets", &Array1::from_vec(shard.policy_offsets.clone())).unwrap();
    npz.add_array("policy_moves", &Array1::from_vec(shard.policy_moves.clone())).unwrap();
    npz.add_array("policy_probs", &Array1::from_vec(shard.policy_probs.clone())).unwrap();
    if version >= 2 {
        npz.add_array("ending", &Array1::from_vec(shard.ending.clone())).unwrap();
        npz.add_array("game_plies", &Array1::from_vec(shard.game_plies.clone())).unwrap();
        npz.add_array("final_material", &Array1::from_vec(shard.final_material.clone())).unwrap();
    }
    if version >= 3 {
        npz.add_array("worker", &Array1::from_vec(shard.worker.clone())).unwrap();
        npz.add_array("generation", &Array1::from_vec(shard.generation.clone())).unwrap();
    }
    extra(&mut npz);
    npz.finish().unwrap().into_inner()
}

#[test]
fn self_play_records_the_policy_surprise_and_shards_keep_it() {
    use ndarray::Array1;
    use xiangqi_search::{UNKNOWN_SURPRISE, read_shard_from, write_shard_to};
    let (records, _) = play(&small_search(), &small_selfplay(), 3);
    let mut surprising = 0;
    for r in &records {
        for s in &r.samples {
            let n = s.moves.len() as f32;
            let expected: f32 =
                s.probs.iter().filter(|&&p| p > 0.0).map(|&p| p * (p * n).ln()).sum();
            let got = s.policy_surprise.expect("a searched sample knows its surprise");
            assert!(
                (got - expected).abs() < 1e-4,
                "game {} ply {}: {got} vs {expected}",
                r.game_id,
                s.ply
            );
            surprising += usize::from(got > 1e-3);
        }
    }
    assert!(surprising > 0, "no sample's target left the uniform prior: the check shows nothing");
    let mut shard = Shard::new::<xiangqi::Game>(RuleSet::Asian);
    for r in &records {
        shard.push_game(r, 0);
    }
    let flat: Vec<Option<f32>> =
        records.iter().flat_map(|r| r.samples.iter().map(|s| s.policy_surprise)).collect();
    assert_eq!((0..shard.len()).map(|i| shard.sample(i).policy_surprise).collect::<Vec<_>>(), flat);
    let bytes = write_shard_to(std::io::Cursor::new(Vec::new()), &shard).unwrap().into_inner();
    assert_eq!(read_shard_from(std::io::Cursor::new(bytes)).unwrap(), shard);

    let arrays = |version: u32, extra: &dyn Fn(&mut Npz)| arrays_of_version(&shard, version, extra);
    // Version 4 had no surprise: unknown.
    let bytes = arrays(4, &|_| {});
    let old = read_shard_from(std::io::Cursor::new(bytes)).unwrap();
    assert_eq!(old.root_value, shard.root_value);
    assert!(old.policy_surprise.iter().all(|&s| s == UNKNOWN_SURPRISE));
    assert_eq!(old.sample(0).policy_surprise, None);
    // Version 5 without the column, and with it as float64 (numpy's default float): refused,
    // the array named, and for the float64 its dtype.
    let err = read_shard_from(std::io::Cursor::new(arrays(5, &|_| {}))).unwrap_err();
    assert!(matches!(err, ShardError::Array { name: "policy_surprise", .. }), "{err}");
    let f64s = Array1::from_vec(shard.policy_surprise.iter().map(|&s| f64::from(s)).collect());
    let bytes = arrays(5, &|npz| npz.add_array("policy_surprise", &f64s).unwrap());
    let err = read_shard_from(std::io::Cursor::new(bytes)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("'policy_surprise'") && text.contains("'<f8'"), "{text}");
    assert!(text.contains("f32"), "{text}");
    let f32s = Array1::from_vec(shard.policy_surprise.clone());
    let bytes = arrays(5, &|npz| npz.add_array("policy_surprise", &f32s).unwrap());
    assert_eq!(read_shard_from(std::io::Cursor::new(bytes)).unwrap(), shard);

    for bad in [-0.5, f32::NAN, f32::INFINITY, 18.6, 3e38] {
        let mut broken = shard.clone();
        broken.policy_surprise[1] = bad;
        let err = write_shard_to(std::io::Cursor::new(Vec::new()), &broken).unwrap_err();
        assert!(matches!(err, ShardError::Invalid { name: "policy_surprise", .. }), "{bad}: {err}");
        assert!(err.to_string().contains("sample 1"), "{err}");
    }
}

/// `label::relabel` keeps a labelled sample's position and game columns, makes the engine's
/// move the one-hot policy target and its value the root value, and marks the policy surprise
/// unknown (the search's target it measured is gone); the result is a valid shard.
#[test]
fn relabelled_samples_have_an_unknown_surprise() {
    use xiangqi_search::label::{Label, relabel};
    use xiangqi_search::{UNKNOWN_SURPRISE, read_shard_from, write_shard_to};
    let (records, _) = play(&small_search(), &small_selfplay(), 2);
    let mut shard = Shard::new::<xiangqi::Game>(RuleSet::Asian);
    for r in &records {
        shard.push_game(r, 0);
    }
    assert!(shard.policy_surprise.iter().all(|&s| s >= 0.0));
    // Every other sample labelled with its last legal move at value 0.25.
    let labels: Vec<Option<Label>> = (0..shard.len())
        .map(|i| {
            (i % 2 == 0).then(|| {
                let s = shard.sample(i);
                let best = xiangqi::Move::from_u16(*s.moves.last().unwrap()).unwrap();
                Label { best, value: 0.25 }
            })
        })
        .collect();
    let out = relabel(&shard, &labels).unwrap();
    assert_eq!(out.len(), shard.len().div_ceil(2));
    assert!(out.policy_surprise.iter().all(|&s| s == UNKNOWN_SURPRISE));
    for j in 0..out.len() {
        let (a, b) = (out.sample(j), shard.sample(2 * j));
        assert_eq!((a.inputs, a.moves), (b.inputs, b.moves));
        assert_eq!(a.probs.last(), Some(&1.0));
        assert_eq!(a.probs.iter().sum::<f32>(), 1.0);
        assert_eq!(a.root_value, 0.25);
        assert_eq!(a.policy_surprise, None);
    }
    let bytes = write_shard_to(std::io::Cursor::new(Vec::new()), &out).unwrap().into_inner();
    assert_eq!(read_shard_from(std::io::Cursor::new(bytes)).unwrap(), out);
}
