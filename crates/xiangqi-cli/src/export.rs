//! `xqz export`: a checkpoint as a self-contained net directory that `xqz uci --net` and
//! `xqz arena` load on any machine, with the same weights as safetensors and a JSON description
//! for other frameworks (see `xiangqi_nn::export`).

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use xiangqi_nn::{checkpoint, cpu_device, export};

#[derive(clap::Args)]
pub struct Args {
    /// A checkpoint directory (`runs/NAME/checkpoints/ckpt-NNNNNN`), an earlier export, or a run
    /// directory (its newest checkpoint is exported)
    #[arg(long)]
    checkpoint: PathBuf,
    /// Output directory: must not exist, be empty, or hold an earlier export and nothing else
    /// (replaced); never a training checkpoint or a directory inside or around the source
    #[arg(long)]
    out: PathBuf,
}

/// `path` made absolute without `.` components, symbolic links resolved in the part that
/// exists (so `DIR/.` and a link to an export name the directory itself).
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Ok(out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            }
            _ => anyhow::bail!("'{}' cannot be resolved to a directory", path.display()),
        }
    }
}

/// `out` (the value of the flag `flag`) made absolute, as a directory an export may be written
/// to: refused when it is written with `..`, is or contains `source`, or lies inside a
/// checkpoint or an export (which may be replaced or pruned, taking the export with it).
///
/// # Errors
/// One of those refusals, naming the flag and the path.
pub(crate) fn export_target(
    flag: &str,
    out: &Path,
    source: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    let given = out;
    let out = absolute(given)?;
    if out.components().any(|c| c == Component::ParentDir) {
        anyhow::bail!("{flag} '{}': write the path without '..'", given.display());
    }
    let refuse = |why: &str| {
        anyhow::bail!("{flag} '{}' {why}: export into another directory", given.display())
    };
    if let Some(source) = source {
        if out == source {
            return refuse("is the checkpoint itself");
        }
        if source.starts_with(&out) {
            return refuse("contains the checkpoint, which replacing it would delete");
        }
    }
    if let Some(parent) = out.ancestors().skip(1).find(|a| a.join(checkpoint::MANIFEST).is_file()) {
        return refuse(&format!(
            "is inside the checkpoint or export '{}', which may be replaced or pruned with it",
            parent.display()
        ));
    }
    Ok(out)
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if !args.checkpoint.exists() {
        anyhow::bail!("--checkpoint '{}' does not exist", args.checkpoint.display());
    }
    let source = crate::net::resolve(&args.checkpoint)?.canonicalize()?;
    let out = export_target("--out", &args.out, Some(&source))?;
    let device = cpu_device();
    let (net, manifest) = checkpoint::load_net(&source, None, &device)
        .with_context(|| format!("cannot load the checkpoint '{}'", source.display()))?;
    let summary = export::export_net(&net, &manifest, &out)
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
