//! Prints how busy the self-play pool keeps an evaluator that sleeps a fixed time per batch
//! (a stand-in for an accelerator), for a given delay, number of games and search threads.
//!
//! Run: `cargo run --release -p xiangqi-search --example pipeline -- [DELAY_MS] [GAMES] [THREADS]`
//! (defaults 4, 32, 2).

use std::time::Duration;

use xiangqi_search::{Checked, ScriptedEvaluator, SearchConfig, SelfPlayConfig, play_games};

fn arg(i: usize, default: u64) -> u64 {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn main() {
    let (delay_ms, games, threads) = (arg(1, 4), arg(2, 32), arg(3, 2));
    let search = SearchConfig {
        simulations: 32,
        cheap_simulations: 8,
        full_search_prob: 0.25,
        virtual_loss_batch: 8,
        ..SearchConfig::default()
    };
    let selfplay = SelfPlayConfig {
        games_in_flight: u32::try_from(games).unwrap_or(u32::MAX),
        max_batch: 256,
        threads: u32::try_from(threads).unwrap_or(2),
        length_cap: 30,
        seed: 1,
        ..SelfPlayConfig::default()
    };
    let mut eval = ScriptedEvaluator::uniform().with_delay(Duration::from_millis(delay_ms));
    let stats = match play_games::<xiangqi::Game, _, _>(
        &Checked::new(search).unwrap(),
        &Checked::new(selfplay).unwrap(),
        games,
        &mut eval,
        |_| Ok(()),
    ) {
        Ok(stats) => stats,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "evaluator busy {:.1}% of {:.2} s; {} batches of {:.1} states on average; {} simulations",
        100.0 * stats.busy_fraction(),
        stats.elapsed.as_secs_f64(),
        stats.batches,
        stats.evaluations as f64 / stats.batches.max(1) as f64,
        stats.simulations
    );
}
