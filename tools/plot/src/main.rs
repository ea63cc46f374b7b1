//! `xqz-plot`: PNG charts of a training run of `xqz train` from its `metrics.csv` and
//! `arena.csv`, for experiment records and for machines without TensorBoard.
//!
//! ```sh
//! cargo run --release --manifest-path tools/plot/Cargo.toml -- --run-dir runs/cpu
//! ```
//!
//! Writes `losses.png` (every loss term against optimizer steps), `arena.png` (the arena score
//! against each opponent over the run's hours) and `selfplay.png` (mean game length and value
//! accuracy per iteration). Text is drawn with a TrueType font read at run time (`--font`, or
//! the first of a few usual system paths). A chart whose columns hold no data (a worker-fed
//! `--store` run's trainer plays no self-play, so its self-play columns are empty) is skipped
//! with a note on standard error; the others are still written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use anyhow::{Context, bail};
use clap::Parser;
use plotters::prelude::*;

/// Draw PNG charts of an xqz training run.
#[derive(Parser)]
#[command(name = "xqz-plot", version, about)]
struct Args {
    /// The run directory of `xqz train` (holds metrics.csv and arena.csv)
    #[arg(long)]
    run_dir: PathBuf,
    /// Where to write the PNG files [default: RUN_DIR/plots]
    #[arg(long)]
    out: Option<PathBuf>,
    /// A TrueType font for the text [default: DejaVu Sans, Liberation Sans or Arial from the
    /// usual system font folders]
    #[arg(long)]
    font: Option<PathBuf>,
}

/// Usual places of a sans-serif TrueType font on Linux, macOS and Windows.
const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

fn load_font(explicit: Option<&Path>) -> anyhow::Result<()> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => FONT_CANDIDATES.iter().map(PathBuf::from).find(|p| p.is_file()).with_context(
            || "no TrueType font found in the usual places; pass one with --font FILE.ttf",
        )?,
    };
    let bytes = std::fs::read(&path)
        .with_context(|| format!("cannot read the font '{}'", path.display()))?;
    // plotters keeps registered fonts for the whole process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| anyhow::anyhow!("'{}' is not a TrueType font plotters can read", path.display()))
}

/// The columns of a CSV file, by header name; empty or unparsable cells are `None`.
struct Table {
    columns: BTreeMap<String, Vec<Option<f64>>>,
    text: BTreeMap<String, Vec<String>>,
}

impl Table {
    fn read(path: &Path) -> anyhow::Result<Table> {
        let mut reader = csv::Reader::from_path(path)
            .with_context(|| format!("cannot read '{}'", path.display()))?;
        let headers: Vec<String> = reader
            .headers()
            .with_context(|| format!("'{}' has no header line", path.display()))?
            .iter()
            .map(str::to_string)
            .collect();
        let mut columns: BTreeMap<String, Vec<Option<f64>>> =
            headers.iter().map(|h| (h.clone(), Vec::new())).collect();
        let mut text: BTreeMap<String, Vec<String>> =
            headers.iter().map(|h| (h.clone(), Vec::new())).collect();
        for (line, record) in reader.records().enumerate() {
            let record =
                record.with_context(|| format!("{}: line {}", path.display(), line + 2))?;
            for (h, cell) in headers.iter().zip(record.iter()) {
                columns.get_mut(h).map(|c| c.push(cell.trim().parse().ok()));
                text.get_mut(h).map(|c| c.push(cell.trim().to_string()));
            }
        }
        Ok(Table { columns, text })
    }

    fn rows(&self) -> usize {
        self.text.values().next().map_or(0, Vec::len)
    }

    fn column(&self, name: &str, path: &Path) -> anyhow::Result<&[Option<f64>]> {
        self.columns
            .get(name)
            .map(Vec::as_slice)
            .with_context(|| format!("'{}' has no column '{name}'", path.display()))
    }

    /// `(x, y)` points of two columns, skipping rows where either is missing or not finite.
    fn points(&self, x: &str, y: &str, path: &Path) -> anyhow::Result<Vec<(f64, f64)>> {
        let (xs, ys) = (self.column(x, path)?, self.column(y, path)?);
        Ok(xs
            .iter()
            .zip(ys)
            .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .collect())
    }
}

/// A line chart with one series per entry (points drawn too, for short series); series with no
/// points are left out. Returns false, drawing nothing, when no series has a point.
fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    y_range: Option<(f64, f64)>,
) -> anyhow::Result<bool> {
    let series: Vec<&(String, Vec<(f64, f64)>)> = series.iter().filter(|(_, s)| !s.is_empty()).collect();
    let all = series.iter().flat_map(|(_, s)| s.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        return Ok(false);
    }
    if x0 == x1 {
        x1 = x0 + 1.0;
    }
    if let Some(r) = y_range {
        (y0, y1) = r;
    } else {
        let pad = ((y1 - y0) * 0.05).max(1e-6);
        (y0, y1) = (y0 - pad, y1 + pad);
    }
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 26))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style(("sans-serif", 16))
            .draw()?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
            if points.len() <= 60 {
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 16))
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow::anyhow!("cannot draw '{}': {e}", path.display()))?;
    Ok(true)
}

fn main() -> anyhow::Result<()> {
    let args = &Args::parse();
    load_font(args.font.as_deref())?;
    let out = args.out.clone().unwrap_or_else(|| args.run_dir.join("plots"));
    for f in plot(&args.run_dir, &out)? {
        println!("{}", f.display());
    }
    Ok(())
}

/// Draws the charts of the run in `run_dir` into `out` (created if missing) and returns the
/// files written; a chart without data is skipped with a note on standard error.
///
/// # Errors
/// An unreadable or empty `metrics.csv`, a missing column, a file that cannot be written.
fn plot(run_dir: &Path, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create '{}'", out.display()))?;

    let metrics_path = run_dir.join("metrics.csv");
    let metrics = Table::read(&metrics_path)?;
    if metrics.rows() == 0 {
        bail!("'{}' has no iteration yet", metrics_path.display());
    }
    let m = &metrics_path;
    let mut written = Vec::new();
    let mut chart = |name: &str, title: &str, x: &str, y: &str, series: &[(String, Vec<(f64, f64)>)], range: Option<(f64, f64)>| -> anyhow::Result<()> {
        let file = out.join(name);
        if line_chart(&file, title, x, y, series, range)? {
            written.push(file);
        } else {
            let columns: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
            eprintln!("{title}: no data in '{}' ({}): no {name}", m.display(), columns.join(", "));
        }
        Ok(())
    };
    let losses: Vec<(String, Vec<(f64, f64)>)> = [
        ("total", "loss"),
        ("policy (cross-entropy)", "policy_loss"),
        ("value (WDL cross-entropy)", "value_loss"),
        ("weight decay", "weight_decay_loss"),
    ]
    .into_iter()
    .map(|(name, col)| Ok((name.to_string(), metrics.points("total_steps", col, m)?)))
    .collect::<anyhow::Result<_>>()?;
    chart("losses.png", "Training losses (mean per iteration)", "optimizer steps", "loss", &losses, None)?;

    let hours = |col: &str| -> anyhow::Result<Vec<(f64, f64)>> {
        Ok(metrics.points("elapsed_s", col, m)?.into_iter().map(|(x, y)| (x / 3600.0, y)).collect())
    };
    chart(
        "selfplay.png",
        "Self-play: mean game length",
        "hours",
        "plies",
        &[("mean game length".to_string(), hours("mean_game_length")?)],
        None,
    )?;
    chart(
        "value.png",
        "Value head accuracy and policy entropy",
        "hours",
        "accuracy / entropy (nats)",
        &[
            ("value accuracy (argmax WDL = result)".to_string(), hours("value_accuracy")?),
            ("policy entropy".to_string(), hours("policy_entropy")?),
        ],
        None,
    )?;

    let arena_path = run_dir.join("arena.csv");
    if arena_path.is_file() {
        let arena = Table::read(&arena_path)?;
        let a = &arena_path;
        let (elapsed, score) = (arena.column("elapsed_s", a)?, arena.column("score", a)?);
        let opponents = arena.text.get("opponent").with_context(|| format!("'{}' has no column 'opponent'", a.display()))?;
        let mut by_opponent: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for ((t, s), o) in elapsed.iter().zip(score).zip(opponents) {
            let (Some(t), Some(s)) = (t, s) else { continue };
            let name = match o.as_str() {
                "random" | "greedy" => format!("vs {o}"),
                _ => "vs previous arena net".to_string(),
            };
            by_opponent.entry(name).or_default().push((t / 3600.0, 100.0 * s));
        }
        if by_opponent.is_empty() {
            eprintln!(
                "no arena results yet in '{}' (the first comes after loop.arena_every iterations): no arena.png",
                a.display()
            );
        } else {
            let series: Vec<_> = by_opponent.into_iter().collect();
            let file = out.join("arena.png");
            if line_chart(&file, "Arena score of the current net", "hours", "score (%)", &series, Some((0.0, 100.0)))? {
                written.push(file);
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory holding `metrics.csv` with `text`.
    fn run_with(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xqz-plot-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("metrics.csv"), text).unwrap();
        dir
    }

    fn font() -> bool {
        match load_font(None) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("skipped: {e}");
                false
            }
        }
    }

    const HEADER: &str = "iteration,total_steps,elapsed_s,loss,policy_loss,value_loss,weight_decay_loss,mean_game_length,value_accuracy,policy_entropy\n";

    /// A trainer fed by workers (`--store`) plays no self-play: its self-play columns are empty.
    /// The charts with data are written, the one without is skipped, and plot succeeds.
    #[test]
    fn a_chart_without_data_is_skipped_and_the_others_are_written() {
        if !font() {
            return;
        }
        let csv = format!("{HEADER}1,10,60,3.0,2.5,0.4,0.1,,,2.9\n2,20,120,2.8,2.4,0.3,0.1,,,2.7\n");
        let dir = run_with("store", &csv);
        let out = dir.join("plots");
        let written = plot(&dir, &out).unwrap();
        let names: Vec<String> =
            written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["losses.png", "value.png"]);
        for f in &written {
            assert!(std::fs::metadata(f).unwrap().len() > 1000, "{}", f.display());
        }
        assert!(!out.join("selfplay.png").exists());

        // With self-play data every chart is written.
        let csv = format!("{HEADER}1,10,60,3.0,2.5,0.4,0.1,80,0.4,2.9\n");
        let dir = run_with("local", &csv);
        let written = plot(&dir, &dir.join("plots")).unwrap();
        assert_eq!(written.len(), 3, "{written:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_run_without_iterations_is_an_error() {
        let dir = run_with("empty", HEADER);
        let e = plot(&dir, &dir.join("plots")).unwrap_err().to_string();
        assert!(e.contains("has no iteration yet"), "{e}");
    }
}
