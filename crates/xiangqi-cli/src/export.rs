//! `xqz export`: a checkpoint as a self-contained net directory that `xqz uci --net` and
//! `xqz arena` load on any machine, with the same weights as safetensors and a JSON description
//! for other frameworks (see `xiangqi_nn::export`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use xiangqi_nn::{checkpoint, cpu_device, export};

#[derive(clap::Args)]
pub struct Args {
    /// A checkpoint directory (`runs/NAME/checkpoints/ckpt-NNNNNN`), or a run directory (its
    /// newest checkpoint is exported)
    #[arg(long)]
    checkpoint: PathBuf,
    /// Output directory: must not exist, be empty, or hold an earlier export (replaced)
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let source = crate::net::resolve(&args.checkpoint)?;
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize())
    {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(&source, &args.out) {
        anyhow::bail!(
            "--out '{}' is the checkpoint itself: export into another directory",
            args.out.display()
        );
    }
    let device = cpu_device();
    let (net, manifest) = checkpoint::load_net(&source, None, &device)
        .with_context(|| format!("cannot load the checkpoint '{}'", source.display()))?;
    let summary = export::export_net(&net, &manifest, &args.out)
        .with_context(|| format!("cannot export to '{}'", args.out.display()))?;
    let c = net.config();
    outln!(
        "exported {} (step {}, {} blocks x {} filters, {} parameters, {} tensors) to {}",
        source.display(),
        manifest.step,
        c.blocks,
        c.filters,
        summary.parameters,
        summary.tensors,
        args.out.display()
    );
    for (name, size) in &summary.files {
        outln!("  {name:<20} {size:>10} bytes");
    }
    outln!("  {:<20} {:>10} bytes", "total", summary.total_bytes());
    outln!("play it: xqz uci --net {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}
