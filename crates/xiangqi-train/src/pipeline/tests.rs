//! Unit tests of the value target and of the consumed-shard record.

use super::{Targets, value_target};

fn close(a: [f32; 3], b: [f32; 3]) -> bool {
    a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6)
}

fn t(q_weight: f32, material_weight: f32) -> Targets {
    Targets {
        q_weight,
        material_weight,
        material_scale: 4.0,
        material_plies: 0,
        cheap_weight: 1.0,
        opponent_policy: false,
        moves_left: false,
        short_term_plies: None,
    }
}

/// The target alone, for an uncapped full-search sample with no material known.
fn plain(result: i8, q: f32, q_weight: f32) -> [f32; 3] {
    let (target, weight) = value_target(result, q, None, false, true, &t(q_weight, 0.0));
    assert!((weight - 1.0).abs() < 1e-6, "{weight}");
    target
}

#[test]
fn value_target_mixes_the_result_with_the_root_value() {
    // λ = 0: the game result alone, whatever the search said.
    assert!(close(plain(1, -0.8, 0.0), [1.0, 0.0, 0.0]));
    assert!(close(plain(0, 0.5, 0.0), [0.0, 1.0, 0.0]));
    assert!(close(plain(-1, 0.9, 0.0), [0.0, 0.0, 1.0]));
    // λ = 1: the root value alone, q = 0.4 → (0.4, 0.6, 0), q = −1 → a sure loss.
    assert!(close(plain(-1, 0.4, 1.0), [0.4, 0.6, 0.0]));
    assert!(close(plain(1, -1.0, 1.0), [0.0, 0.0, 1.0]));
    // λ = 0.5, a drawn game whose search saw a win at 0.6: 0.5·(0,1,0) + 0.5·(0.6,0.4,0).
    assert!(close(plain(0, 0.6, 0.5), [0.3, 0.7, 0.0]));
    // A lost game, q = −0.2: 0.5·(0,0,1) + 0.5·(0,0.8,0.2).
    assert!(close(plain(-1, -0.2, 0.5), [0.0, 0.4, 0.6]));
    // Out-of-range or non-finite q never makes a target that is not a distribution.
    for q in [f32::NAN, f32::INFINITY, 3.0, -7.0] {
        let t = plain(1, q, 0.5);
        assert!(t.iter().all(|x| (0.0..=1.0).contains(x)), "{q}: {t:?}");
        assert!((t.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{q}: {t:?}");
    }
}

#[test]
fn a_capped_game_teaches_no_result() {
    // Game result alone: a game cut at the length cap has weight 0 (it is no draw).
    let (_, w) = value_target(0, 0.3, Some(9.0), true, true, &t(0.0, 0.0));
    assert_eq!(w, 0.0);
    // With a material target of weight 0.25, a capped game teaches the material alone,
    // with that weight: 9 pawns up at scale 4 is tanh(2.25) = 0.97803.
    let (target, w) = value_target(0, 0.3, Some(9.0), true, true, &t(0.0, 0.25));
    let m = 2.25f32.tanh();
    assert!((w - 0.25).abs() < 1e-6, "{w}");
    assert!(close(target, [(1.0 + m) / 2.0, 0.0, (1.0 - m) / 2.0]), "{target:?}");
    // The same game not capped (a repetition draw): 0.75 · draw + 0.25 · material.
    let (target, w) = value_target(0, 0.3, Some(9.0), false, true, &t(0.0, 0.25));
    assert_eq!(w, 1.0);
    let expected = [0.25 * (1.0 + m) / 2.0, 0.75, 0.25 * (1.0 - m) / 2.0];
    assert!(close(target, expected), "{target:?} vs {expected:?}");
    // Unknown material (a version 1 shard): the result alone, renormalised.
    let (target, w) = value_target(-1, 0.3, None, false, true, &t(0.0, 0.25));
    assert_eq!(w, 1.0);
    assert!(close(target, [0.0, 0.0, 1.0]), "{target:?}");
}

#[test]
fn cheap_search_samples_take_their_own_value_weight() {
    let targets = Targets { cheap_weight: 0.0, ..t(0.0, 0.0) };
    assert_eq!(value_target(1, 0.0, None, false, false, &targets).1, 0.0);
    assert_eq!(value_target(1, 0.0, None, false, true, &targets).1, 1.0);
    let targets = Targets { cheap_weight: 0.5, ..t(0.0, 0.0) };
    assert_eq!(value_target(1, 0.0, None, false, false, &targets).1, 0.5);
}

#[test]
fn an_iterations_store_record_reads_back_whole_and_an_old_one_as_a_cursor() {
    use super::{ConsumedShard, IngestReport, RunPaths, ShardFate, parse_consumed};
    let dir = std::env::temp_dir().join(format!("xqz-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let paths = RunPaths::under(&dir);
    std::fs::create_dir_all(&paths.shards).unwrap();
    let mut cursor = crate::distributed::ShardCursor::default();
    cursor.consume(0xab, 6);
    cursor.seen_in(0xab, 3);
    let shard = |seq: u64, samples, games, fate| ConsumedShard {
        key: crate::distributed::shard_key(0xab, seq),
        samples,
        games,
        fate,
    };
    let ingest = IngestReport {
        shards: 1,
        workers: 1,
        bytes: 12345,
        stale_shards: 1,
        bad_shards: 1,
        age_mean: 1.0 / 3.0,
        age_max: 2,
        seconds: 0.1 + 0.2,
        waiting_shards: 4,
        waiting_workers: 2,
        consumed: vec![
            shard(4, 311, 4, ShardFate::Trained),
            shard(5, 0, 0, ShardFate::Bad),
            shard(6, 97, 1, ShardFate::Stale),
        ],
    };
    super::write_consumed(&paths, 3, &ingest, &cursor).unwrap();
    let text = std::fs::read_to_string(super::consumed_path(&paths, 3)).unwrap();
    // One line per shard: what a user's awk counts.
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("shard ")).collect();
    assert_eq!(
        lines,
        [
            "shard 3 shards/00000000000000ab/000000000004.npz 311 4 trained",
            "shard 3 shards/00000000000000ab/000000000005.npz 0 0 bad",
            "shard 3 shards/00000000000000ab/000000000006.npz 97 1 stale",
        ]
    );
    assert_eq!(super::read_consumed(&paths, 3).unwrap(), Some((cursor, Some(ingest))));
    // An earlier version's record: the cursor alone.
    let (old, none) = parse_consumed("00000000000000ab 7\n").unwrap();
    assert_eq!((old.next(0xab), none), (7, None));
    for bad in ["shard 3 k 1 1 eaten\n", "ingest shards=x\n", "zz 1\n", "shard 3 k 1\n"] {
        assert_eq!(parse_consumed(bad), None, "{bad}");
    }
    assert_eq!(super::read_consumed(&paths, 4).unwrap(), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

mod material_horizon {
    //! The material target at a horizon, on a real opening: Red's cannon takes the horse on
    //! b9 at once, Black's chariot takes the cannon back.

    use xiangqi::env::encode_board_compact;
    use xiangqi::{Move, Position, RankBase};
    use xiangqi_search::{GameKind, Shard, UNKNOWN_MATERIAL};

    use super::super::material_target;

    /// The four recorded positions of the game `b2b9 a9b9 h2e2` (plies 0–3; the game went on
    /// to ply 40, unrecorded here), its final balance `final_half_pawns` for Red.
    fn game(final_half_pawns: Option<i16>) -> Shard {
        let mut position = Position::start();
        let mut shard = Shard { game: GameKind::Xiangqi, ..Shard::default() };
        for (ply, next) in ["b2b9", "a9b9", "h2e2", ""].into_iter().enumerate() {
            let red = ply % 2 == 0;
            shard.boards.push(encode_board_compact(&position));
            shard.turn.push(if red { 0 } else { 1 });
            shard.result.push(0);
            shard.game_id.push(3);
            shard.worker.push(0);
            shard.ply.push(ply as u16);
            shard.game_plies.push(40);
            shard.final_material.push(match final_half_pawns {
                None => UNKNOWN_MATERIAL,
                Some(m) if red => m,
                Some(m) => -m,
            });
            if !next.is_empty() {
                position.play(Move::from_uci(next, RankBase::Zero).unwrap()).unwrap();
            }
        }
        shard
    }

    #[test]
    fn the_target_is_the_balance_the_horizon_later_for_the_side_to_move() {
        let shard = game(Some(-18));
        // One ply after the start Red is a horse (4 pawns) up; Black sees it as 4 down.
        assert_eq!(material_target(&shard, 0, 1), Some(4.0));
        // One ply after Black's position the cannon (4.5) is gone too: Black is half a pawn up.
        assert_eq!(material_target(&shard, 1, 1), Some(0.5));
        // Two plies after the start: the trade, half a pawn down for Red.
        assert_eq!(material_target(&shard, 0, 2), Some(-0.5));
        assert_eq!(material_target(&shard, 1, 2), Some(0.5));
        // Horizon 0, or a position beyond the recorded ones: the final balance (Red 9 pawns
        // down, a chariot), for each side to move.
        assert_eq!(material_target(&shard, 0, 0), Some(-9.0));
        assert_eq!(material_target(&shard, 1, 0), Some(9.0));
        assert_eq!(material_target(&shard, 2, 2), Some(-9.0));
        assert_eq!(material_target(&shard, 3, 1), Some(9.0));
    }

    #[test]
    fn another_games_position_is_not_the_horizon_and_an_unknown_end_stays_unknown() {
        let mut shard = game(None);
        assert_eq!(material_target(&shard, 0, 3), Some(-0.5));
        assert_eq!(material_target(&shard, 0, 4), None);
        assert_eq!(material_target(&shard, 0, 0), None);
        // The third position belongs to another game: sample 0 cannot read two plies ahead.
        shard.game_id[2] = 4;
        assert_eq!(material_target(&shard, 0, 2), None);
        assert_eq!(material_target(&shard, 0, 1), Some(4.0));
    }
}

mod auxiliary {
    //! The auxiliary heads' targets, on a hand-made game of five recorded plies.

    use xiangqi::env::encode_board_compact;
    use xiangqi::{Color, Move, OutcomeReason, Position, RankBase};
    use xiangqi_nn::TrainBatch;
    use xiangqi_search::{Encoding, Shard, UNKNOWN_MATERIAL, UNKNOWN_SURPRISE};

    use super::super::{Targets, push_sample};
    use super::t;

    /// The search values of the five positions, each for its own side to move.
    const VALUES: [f32; 5] = [0.2, -0.4, 0.6, -0.8, 1.0];

    /// A game of `plies` plies (Red moves first) whose positions at plies 0–4 are recorded, the
    /// search values [`VALUES`], ended by `ending` with Red the winner. The policies are two
    /// moves each: Red's `h2e2` 0.7 and `b2e2` 0.3, Black's `h9g7` 0.6 and `b9c7` 0.4 (the
    /// board is the start position throughout: the targets do not look at it). Ply 3 was a
    /// cheap search.
    fn game(plies: u16, ending: OutcomeReason) -> Shard {
        let board = encode_board_compact(&Position::start());
        let mv = |s: &str| Move::from_uci(s, RankBase::Zero).unwrap().to_u16();
        let mut shard = Shard::default();
        shard.policy_offsets.push(0);
        for ply in 0..5u16 {
            let red = ply % 2 == 0;
            shard.boards.push(board);
            shard.turn.push(if red { 0 } else { 1 });
            shard.halfmove_clock.push(ply);
            shard.repeated.push(0);
            shard.result.push(if red { 1 } else { -1 });
            shard.full_search.push(u8::from(ply != 3));
            shard.root_value.push(VALUES[ply as usize]);
            shard.game_id.push(7);
            shard.worker.push(0);
            shard.generation.push(0);
            shard.ply.push(ply);
            shard.ending.push(ending.index() as u8);
            shard.game_plies.push(plies);
            shard.final_material.push(UNKNOWN_MATERIAL);
            shard.policy_surprise.push(UNKNOWN_SURPRISE);
            let (a, b) = if red { ("h2e2", "b2e2") } else { ("h9g7", "b9c7") };
            let p = if red { [0.7, 0.3] } else { [0.6, 0.4] };
            shard.policy_moves.extend([mv(a), mv(b)]);
            shard.policy_probs.extend(p);
            shard.policy_offsets.push(shard.policy_moves.len() as u32);
        }
        shard
    }

    fn all_heads(h: f32) -> Targets {
        Targets {
            opponent_policy: true,
            moves_left: true,
            short_term_plies: Some(h),
            ..t(0.0, 0.0)
        }
    }

    fn batch_of(shard: &Shard, targets: &Targets) -> TrainBatch {
        let mut batch = TrainBatch::for_encoding(Encoding::of::<xiangqi::Game>(), 5);
        for i in 0..shard.len() {
            push_sample(&mut batch, shard, i, targets).unwrap();
        }
        batch
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
    }

    #[test]
    fn the_opponent_reply_is_the_next_full_search_policy_in_the_opponents_frame() {
        let shard = game(5, OutcomeReason::Checkmate);
        let batch = batch_of(&shard, &all_heads(6.0));
        let enc = *batch.encoding();
        let size = enc.policy_size;
        let (rows, weights) = batch.opponent_policy();
        // Plies 0, 1, 3 are followed by full searches; ply 2 by the cheap one (3), ply 4 by none.
        assert_eq!(weights, &[1.0, 1.0, 0.0, 1.0, 0.0]);
        let index = |s: &str, c: Color| {
            (enc.move_to_index)(Move::from_uci(s, RankBase::Zero).unwrap(), c).unwrap()
        };
        // After Red's ply 0, Black's reply at ply 1, indexed as Black sees the board.
        let row0 = &rows[..size];
        assert!((row0[index("h9g7", Color::Black)] - 0.6).abs() < 1e-6);
        assert!((row0[index("b9c7", Color::Black)] - 0.4).abs() < 1e-6);
        assert!((row0.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        // After Black's ply 1, Red's reply at ply 2.
        let row1 = &rows[size..2 * size];
        assert!((row1[index("h2e2", Color::Red)] - 0.7).abs() < 1e-6);
        assert!((row1[index("b2e2", Color::Red)] - 0.3).abs() < 1e-6);
        // No target: an all-zero row.
        assert!(rows[2 * size..3 * size].iter().all(|&x| x == 0.0));
        // Black's frame is not Red's: the same move has another index.
        assert_ne!(index("h9g7", Color::Black), index("h9g7", Color::Red));
    }

    #[test]
    fn moves_left_counts_the_plies_to_the_games_end_and_is_unknown_after_a_length_cap() {
        let batch = batch_of(&game(5, OutcomeReason::Checkmate), &all_heads(6.0));
        let (left, weights) = batch.moves_left();
        // Plies 5, 4, 3, 2, 1 left, in units of 100 plies.
        assert!(close(left, &[0.05, 0.04, 0.03, 0.02, 0.01]), "{left:?}");
        assert_eq!(weights, &[1.0; 5]);
        let batch = batch_of(&game(5, OutcomeReason::LengthCap), &all_heads(6.0));
        assert_eq!(batch.moves_left().1, &[0.0; 5]);
    }

    #[test]
    fn the_short_term_value_decays_over_the_next_search_values_and_ends_on_the_result() {
        // h = 2: λ = 1/2, weights 1/2, 1/4, 1/8, 1/16, 1/32 and 1/32 left for the result.
        // From ply 0's side (Red) the values are 0.2, 0.4, 0.6, 0.8, 1.0 (Black's negated),
        // each (q, 1 − q, 0); Red wins the game.
        let batch = batch_of(&game(5, OutcomeReason::Checkmate), &all_heads(2.0));
        let (t, w) = batch.short_term_value();
        assert_eq!(w, &[1.0; 5]);
        let win = 0.5 * 0.2 + 0.25 * 0.4 + 0.125 * 0.6 + 0.0625 * 0.8 + 0.03125 * 1.0 + 0.03125;
        let draw = 0.5 * 0.8 + 0.25 * 0.6 + 0.125 * 0.4 + 0.0625 * 0.2;
        assert!(close(&t[..3], &[win, draw, 0.0]), "{:?}", &t[..3]);
        // Ply 3 (Black, q = −0.8 for it): 1/2 · (0, 0.2, 0.8) + 1/4 · (0, 0, 1) from ply 4's
        // 1.0 for Red, and 1/4 left for Black's lost game.
        assert!(close(&t[9..12], &[0.0, 0.1, 0.9]), "{:?}", &t[9..12]);

        // Cut off at the length cap: no result, the recorded weights renormalised (31/32).
        let batch = batch_of(&game(5, OutcomeReason::LengthCap), &all_heads(2.0));
        let t = batch.short_term_value().0;
        let (win, draw) = ((win - 0.03125) / 0.96875, draw / 0.96875);
        assert!(close(&t[..3], &[win, draw, 0.0]), "{:?}", &t[..3]);

        // A longer game whose plies after 4 are not recorded: renormalised likewise.
        let batch = batch_of(&game(9, OutcomeReason::Checkmate), &all_heads(2.0));
        assert!(close(&batch.short_term_value().0[..3], &[win, draw, 0.0]));

        // A resigned game records the resigner's own position as its last (ply 4 = game_plies,
        // Red to move resigns): the result still takes the weight left, here Red's loss.
        let mut resigned = game(4, OutcomeReason::Resignation);
        for r in &mut resigned.result {
            *r = -*r;
        }
        let batch = batch_of(&resigned, &all_heads(2.0));
        let win = 0.5 * 0.2 + 0.25 * 0.4 + 0.125 * 0.6 + 0.0625 * 0.8 + 0.03125 * 1.0;
        let draw = 0.5 * 0.8 + 0.25 * 0.6 + 0.125 * 0.4 + 0.0625 * 0.2;
        let t = batch.short_term_value().0;
        assert!(close(&t[..3], &[win, draw, 0.03125]), "{:?}", &t[..3]);
        assert_eq!(batch.moves_left().0[4], 0.0);

        // h = 1 reads the sample's own value alone: ply 1, q = −0.4 for Black.
        let batch = batch_of(&game(5, OutcomeReason::Checkmate), &all_heads(1.0));
        assert!(close(&batch.short_term_value().0[3..6], &[0.0, 0.6, 0.4]));
    }

    #[test]
    fn a_net_without_the_heads_gets_no_auxiliary_targets() {
        let batch = batch_of(&game(5, OutcomeReason::Checkmate), &t(0.0, 0.0));
        assert!(batch.opponent_policy().0.is_empty());
        assert_eq!(batch.opponent_policy().1, &[0.0; 5]);
        assert_eq!(batch.short_term_value().1, &[0.0; 5]);
        assert_eq!(batch.moves_left().1, &[0.0; 5]);
    }

    #[test]
    fn another_games_sample_is_not_read_as_the_next_ply() {
        let mut shard = game(5, OutcomeReason::Checkmate);
        shard.game_id[1] = 8;
        let batch = batch_of(&shard, &all_heads(2.0));
        // Ply 0's game has no recorded next ply: no reply, and its own value alone.
        assert_eq!(batch.opponent_policy().1[0], 0.0);
        assert!(close(&batch.short_term_value().0[..3], &[0.2, 0.8, 0.0]));
    }

    /// A batch drawn from the replay window is the drawn samples pushed one by one in order,
    /// however many threads encode it; a damaged sample is named.
    #[test]
    fn a_drawn_batch_is_its_samples_pushed_in_order() {
        use rand::SeedableRng;
        use rand_chacha::ChaCha8Rng;

        use super::super::window::ReplayWindow;

        let mut window = ReplayWindow::default();
        window.push(1, game(5, OutcomeReason::Checkmate), usize::MAX, 0.0);
        window.push(2, game(9, OutcomeReason::LengthCap), usize::MAX, 0.0);
        let targets = all_heads(2.0);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut batch = TrainBatch::for_encoding(Encoding::of::<xiangqi::Game>(), 0);
            pool.install(|| window.fill_batch(&mut batch, 53, 9, &targets)).unwrap();
            let mut want = TrainBatch::for_encoding(Encoding::of::<xiangqi::Game>(), 53);
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            for _ in 0..53 {
                let (shard, i) = window.draw(&mut rng, None);
                push_sample(&mut want, shard, i, &targets).unwrap();
            }
            assert_eq!(batch, want, "{threads} threads");
        }
        let mut bad = game(5, OutcomeReason::Checkmate);
        bad.policy_moves[7] = u16::MAX;
        let mut batch = TrainBatch::for_encoding(Encoding::of::<xiangqi::Game>(), 0);
        let mut window = ReplayWindow::default();
        window.push(4, game(5, OutcomeReason::Checkmate), usize::MAX, 0.0);
        window.push(7, bad, usize::MAX, 0.0);
        let (shard, err) = window.fill_batch(&mut batch, 40, 9, &targets).unwrap_err();
        // The shard that holds the damaged sample, by the number it was pushed with.
        assert_eq!(shard, 7, "{err}");
        assert!(err.contains("sample 3: bad move code 65535"), "{err}");
    }
}

/// `loop.keep_every_minutes`: the first checkpoint at or after each multiple of the period.
#[test]
fn the_first_checkpoint_of_each_period_is_kept() {
    use super::checkpoints::period_firsts;
    let min = 60_000;
    // Checkpoints every 10 minutes (plus a few seconds), with a 30-minute period: 0 is before
    // the first multiple; 30:05 is the first at or after 30, 60:05 after 60.
    let every_10: Vec<(u64, u64)> = (0..8).map(|i| (i, i * 10 * min + 5_000)).collect();
    assert_eq!(period_firsts(&every_10, 30 * min), [3, 6]);
    // At exactly a multiple the checkpoint is that multiple's.
    assert_eq!(period_firsts(&[(1, 29 * min), (2, 30 * min), (3, 31 * min)], 30 * min), [2]);
    // One long iteration across two multiples: one checkpoint stands for both (30 and 60).
    assert_eq!(period_firsts(&[(1, 20 * min), (2, 65 * min), (3, 70 * min)], 30 * min), [2]);
    // Unordered input and equal times: the least time, then the lowest number.
    assert_eq!(period_firsts(&[(9, 45 * min), (7, 40 * min), (8, 40 * min)], 30 * min), [7]);
    // Nothing has reached the first multiple.
    assert!(period_firsts(&[(0, 0), (1, 29 * min)], 30 * min).is_empty());
}

/// Policy-surprise weighting: the weights of a shard by hand, and draws from a window in
/// proportion to them.
mod surprise {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use xiangqi::RuleSet;
    use xiangqi_search::{Shard, UNKNOWN_SURPRISE};

    use super::super::window::{ReplayWindow, sampling_weights};

    /// A shard of `surprise.len()` samples with these surprises; `full[i]` whether sample `i`
    /// was a full search (of the other columns only `result`, which counts the samples, is
    /// filled: the weights do not read them).
    fn shard(surprise: &[f32], full: &[bool]) -> Shard {
        let mut s = Shard::new::<xiangqi::Game>(RuleSet::Asian);
        for (&x, &f) in surprise.iter().zip(full) {
            s.policy_surprise.push(x);
            s.full_search.push(u8::from(f));
            s.result.push(0);
        }
        s
    }

    #[test]
    fn weights_by_hand() {
        // Full searches of surprise 0.1 and 0.3 (mean 0.2), a cheap search and a full search of
        // unknown surprise. w = 0.5: 0.5 + 0.5 · 0.1/0.2 = 0.75, 0.5 + 0.5 · 0.3/0.2 = 1.25,
        // then 1 and 1. The full searches of known surprise keep their total (2).
        let s = shard(&[0.1, 0.3, 5.0, UNKNOWN_SURPRISE], &[true, true, false, true]);
        let w = sampling_weights(&s, 0.5).unwrap();
        let expected = [0.75, 1.25, 1.0, 1.0];
        assert!(w.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-6), "{w:?}");
        // w = 1: in proportion to the surprise alone.
        let w = sampling_weights(&s, 1.0).unwrap();
        assert!((w[0] - 0.5).abs() < 1e-6 && (w[1] - 1.5).abs() < 1e-6, "{w:?}");
        // Off, or nothing to weigh by: every sample weighs 1.
        assert_eq!(sampling_weights(&s, 0.0), None);
        let zero = shard(&[0.0, 0.0], &[true, true]);
        assert_eq!(sampling_weights(&zero, 0.5), None);
        let unknown = shard(&[UNKNOWN_SURPRISE; 3], &[true; 3]);
        assert_eq!(sampling_weights(&unknown, 0.5), None);
    }

    #[test]
    fn draws_follow_the_weights() {
        let mut window = ReplayWindow::default();
        // Shard 0: the weights above (0.75, 1.25, 1, 1); shard 1: unknown surprise, 1 and 1.
        let a = shard(&[0.1, 0.3, 5.0, UNKNOWN_SURPRISE], &[true, true, false, true]);
        let b = shard(&[UNKNOWN_SURPRISE; 2], &[true; 2]);
        window.push(1, a.clone(), usize::MAX, 0.5);
        window.push(2, b.clone(), usize::MAX, 0.5);
        let total = window.total_weight().expect("a weighted shard");
        assert!((total - 6.0).abs() < 1e-9, "{total}");
        let expected = [0.75, 1.25, 1.0, 1.0, 1.0, 1.0];
        let draws = 120_000;
        let mut counts = [0usize; 6];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..draws {
            let (s, i) = window.draw(&mut rng, Some(total));
            let first = std::ptr::eq(s, &window.shards[0].1);
            counts[if first { i } else { 4 + i }] += 1;
        }
        for (k, (&c, &w)) in counts.iter().zip(&expected).enumerate() {
            let p = w / total;
            let mean = draws as f64 * p;
            let sd = (draws as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (c as f64 - mean).abs() < 5.0 * sd,
                "sample {k}: drawn {c} times, expected {mean:.0} ± {sd:.0} ({counts:?})"
            );
        }
        // Unweighted (w = 0), the window draws by index: no total.
        let mut plain = ReplayWindow::default();
        plain.push(1, a, usize::MAX, 0.0);
        plain.push(2, b, usize::MAX, 0.0);
        assert_eq!(plain.total_weight(), None);
    }

    /// An empty shard (an iteration whose games gave no sample) takes no draws, even as the
    /// newest; a draw at the very end of the total (rounding) lands on the newest sample.
    #[test]
    fn empty_shards_take_no_draws() {
        let mut window = ReplayWindow::default();
        window.push(1, shard(&[0.1, 0.3], &[true, true]), usize::MAX, 0.5);
        window.push(2, shard(&[], &[]), usize::MAX, 0.5);
        let total = window.total_weight().unwrap();
        assert!((total - 2.0).abs() < 1e-9, "{total}");
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for _ in 0..1000 {
            let (s, i) = window.draw(&mut rng, Some(total));
            assert_eq!(s.len(), 2);
            assert!(i < 2);
        }
        // The end of the total and past it: the last sample of the last shard holding one.
        let (s, i) = window.locate_weighted(total);
        assert_eq!((s.len(), i), (2, 1));
        let (s, i) = window.locate_weighted(total * 1.5);
        assert_eq!((s.len(), i), (2, 1));
    }

    #[test]
    fn dropping_the_oldest_shard_drops_its_weights() {
        let mut window = ReplayWindow::default();
        let a = shard(&[0.1, 0.3], &[true, true]);
        let b = shard(&[0.2, 0.2, 0.2], &[true, true, true]);
        window.push(1, a, 3, 1.0);
        window.push(2, b, 3, 1.0);
        // Shard 1 left (the newest holds the cap): the total is shard 2's, 3 samples of mean
        // weight 1, and every draw lands in it.
        assert_eq!(window.shards.len(), 1);
        let total = window.total_weight().unwrap();
        assert!((total - 3.0).abs() < 1e-9, "{total}");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..100 {
            let (s, i) = window.draw(&mut rng, Some(total));
            assert_eq!(s.len(), 3);
            assert!(i < 3);
        }
    }
}
