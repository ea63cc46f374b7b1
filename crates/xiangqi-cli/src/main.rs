//! `xqz`: the command-line tool of xiangqi-zero.
//!
//! The only place that reads arguments and the environment, chooses paths, sets up logging and
//! seeds random generators. Each subcommand lives in its own module with a `run` function.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `print!` to standard output, except that a reader that has gone away (`xqz perft | head`)
/// ends the program quietly, as Unix tools end on a closed pipe, instead of a panic.
macro_rules! out {
    ($($arg:tt)*) => { $crate::write_stdout(format_args!($($arg)*), false) };
}

/// `println!` to standard output, with [`out!`]'s handling of a closed pipe.
macro_rules! outln {
    () => { $crate::write_stdout(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::write_stdout(format_args!($($arg)*), true) };
}

/// `eprintln!` that never panics: a closed or full standard error (`xqz train 2>&1 | head -1`,
/// `2>/dev/full`) must not stop a run, so a failed write of a log line is ignored.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Exit status after standard output was closed by its reader (128 + SIGPIPE, as a shell
/// reports a process ended by the signal).
pub const EXIT_CLOSED_PIPE: i32 = 141;

/// Writes to standard output; exits with [`EXIT_CLOSED_PIPE`] if the reader has gone, and with
/// status 1 and a message on standard error for any other failed write (a full disk).
pub fn write_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let result =
        out.write_fmt(args).and_then(|()| if newline { out.write_all(b"\n") } else { Ok(()) });
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(EXIT_CLOSED_PIPE)
        }
        Err(e) => {
            errln!("error: cannot write to standard output: {e}");
            std::process::exit(1);
        }
    }
}

mod analysis;
mod arena;
mod bench;
mod calibrate;
mod config;
mod engine;
mod export;
mod import;
mod label;
mod net;
mod outcome;
mod perft;
mod selfplay;
mod store;
mod tactics;
mod train;
mod uci;
mod uci_search;
mod worker;

/// Train and play neural xiangqi engines by self-play.
#[derive(Parser)]
#[command(name = "xqz", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the leaves of the legal move tree (move generator check and speed test).
    Perft(perft::Args),
    /// Play moves from a position and print the verdict of the rules: `RESULT REASON`.
    Outcome(outcome::Args),
    /// Train a network by self-play (the main job); Ctrl-C checkpoints, `--resume` continues.
    Train(train::Args),
    /// Play self-play games and write replay shards and a PGN file.
    Selfplay(selfplay::Args),
    /// Play a match between two players (baselines, the search, external UCI/UCCI engines).
    Arena(arena::Args),
    /// Speak UCI (and UCCI) on standard input and output, for GUIs and match tools.
    Uci(uci::Args),
    /// The batched analysis engine for servers: JSON queries in, JSON answers out (after
    /// KataGo's analysis engine), many positions searched at once.
    Analysis(analysis::Args),
    /// Measure the Elo of the engine's skill levels with a network against a fixed ladder
    /// (random = 0, greedy, an external engine) and write the table into its export.
    Calibrate(calibrate::Args),
    /// Export a checkpoint as a self-contained net, with safetensors and a JSON description.
    Export(export::Args),
    /// Score a player on tactical test positions kept back from training (mate in one,
    /// stopping a mate in one, winning a piece for nothing).
    Tactics(tactics::Args),
    /// Measure the network's speed on a device: inference positions/s and training samples/s.
    Bench(bench::Args),
    /// Read game records (PGN with ICCS, UCI, WXF, Chinese or SAN moves; XQF) into replay
    /// shards: the move played is the policy target, the recorded result the value target.
    Import(import::Args),
    /// Label replay shards with an external UCI engine: its best move becomes the policy
    /// target, its score (as win/draw/loss) the value target `root_value`.
    Label(label::Args),
}

/// Exit status for bad input (an illegal move, a malformed FEN, ...).
pub const EXIT_BAD_INPUT: u8 = 2;

/// The error and its causes, joined by `: `, leaving out a cause whose text the message already
/// holds (many errors print their cause and also return it as their source).
fn error_chain(e: &anyhow::Error) -> String {
    let mut message = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
    }
    message
}

/// Makes burn's default device its CPU backend (`BURN_DEVICE=flex`) for this process.
///
/// `xqz` names every device it uses (`--device`); burn falls back to its default device only
/// inside burn, where it takes no device argument: loading an optimizer state
/// (`ModuleOptimizer::load_record` in burn-optim 0.22.1 materialises the state there and moves
/// it to each parameter's device at the next step). With the `wgpu` feature that default is
/// the wgpu device, so every `--resume` of a CPU run brought a Vulkan driver up (and its
/// loader's `XDG_RUNTIME_DIR` complaints). A `BURN_DEVICE` of the user's is replaced: it means
/// nothing to `xqz`, and an unknown value would make burn panic.
#[allow(unsafe_code)]
fn pin_burn_default_device() {
    // SAFETY: called first thing in `main`, before this process has any other thread (nothing
    // runs before `main` here), so no thread can read or write the environment meanwhile.
    unsafe { std::env::set_var("BURN_DEVICE", "flex") };
}

/// Keeps the memory that burn's CPU backend frees in the process, for its next allocations.
///
/// Burn allocates a new buffer for the result of every tensor operation and frees it soon after:
/// a training step of the main job's net allocates and frees buffers of up to a few megabytes
/// hundreds of times. With glibc's defaults, blocks above 128 KiB (the threshold then grows with
/// what is freed) come from `mmap` and go back to the kernel when freed, and the top of each heap
/// is returned once 128 KiB of it are free, so the same pages are faulted in and zeroed again at
/// every step: about a tenth of a training step's time went to page faults and their zeroing
/// (`perf`, 2026-12-07). Here every block under 64 MiB comes from the heaps, and a heap keeps up
/// to 512 MiB of free memory at its top (glibc's `M_MMAP_THRESHOLD` and `M_TRIM_THRESHOLD`). The
/// memory stays the process's until it ends; the main job's peak grows by about that much at most.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn keep_freed_memory() {
    // SAFETY: `mallopt` only sets parameters of glibc's allocator, which it reads under its own
    // locks; called first thing in `main`, before this process has any other thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

fn main() -> ExitCode {
    pin_burn_default_device();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    keep_freed_memory();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Perft(args) => perft::run(&args),
        Command::Outcome(args) => outcome::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Selfplay(args) => selfplay::run(&args),
        Command::Arena(args) => arena::run(&args),
        Command::Uci(args) => uci::run(&args),
        Command::Analysis(args) => analysis::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Tactics(args) => tactics::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Label(args) => label::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            errln!("error: {}", error_chain(&e));
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
