//! Opening the store of a distributed run (`--store URL` of `xqz train` and `xqz selfplay`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use xiangqi_store::{Patience, Store};

/// The S3 settings of the environment: every `AWS_*` variable, lower-cased to object_store's
/// option names (`AWS_ENDPOINT` → `aws_endpoint`, `AWS_ACCESS_KEY_ID`, `AWS_REGION`,
/// `AWS_ALLOW_HTTP`, `AWS_VIRTUAL_HOSTED_STYLE_REQUEST`, ...).
fn s3_options() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

/// Opens the store at `location`: a directory path, `file:///path` or `s3://bucket/prefix`,
/// and checks that it answers ([`Store::check`]). Transient failures (a server that does not
/// answer, a full or read-only disk) are waited out from then on, 1 s to 60 s between tries,
/// each failed try reported on standard error, until `stop` is set; permanent ones (a bucket
/// that does not exist, refused credentials) are errors at once.
///
/// # Errors
/// A location this build cannot open, or a store that fails for good, with the reason.
pub fn open(location: &str, stop: &Arc<AtomicBool>) -> anyhow::Result<Store> {
    if location.starts_with("s3://") {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if var("AWS_ENDPOINT").is_some_and(|e| e.starts_with("http://"))
            && !var("AWS_ALLOW_HTTP").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            anyhow::bail!(
                "--store {location}: AWS_ENDPOINT is a plain http:// address; set \
                 AWS_ALLOW_HTTP=true to allow unencrypted HTTP (a server on loopback or a \
                 trusted network), or use https://"
            );
        }
        if var("AWS_ACCESS_KEY_ID").is_none() {
            errln!(
                "warning: --store {location}: AWS_ACCESS_KEY_ID is not set; the S3 client will \
                 look for credentials elsewhere (web identity, the instance metadata service) \
                 and fail with their error if there are none"
            );
        }
    }
    let mut store =
        Store::open(location, &s3_options()).with_context(|| format!("--store {location}"))?;
    store.set_patience(Some(Patience::new(
        Arc::clone(stop),
        Arc::new(|line: &str| errln!("warning: {line}")),
    )));
    store.check().with_context(|| format!("--store {location}"))?;
    Ok(store)
}

/// The store at `location` without patience: each operation fails at once on a failure (after
/// the S3 client's own few retries, at most 15 s), as a last quick look does.
///
/// # Errors
/// A location this build cannot open.
pub fn open_impatient(location: &str) -> anyhow::Result<Store> {
    Store::open(location, &s3_options()).with_context(|| format!("--store {location}"))
}

/// Refuses a directory store that does not exist (a worker's: the trainer creates the store,
/// and a worker on a typo'd path would otherwise wait for a trainer forever). An S3 location,
/// or a location that does not parse (opening it gives its error), passes.
///
/// # Errors
/// `store S: no such directory`, with what to do.
pub fn require_existing_directory(location: &str) -> anyhow::Result<()> {
    if let Ok(xiangqi_store::Kind::Directory(dir)) = xiangqi_store::Kind::parse(location)
        && !dir.is_dir()
    {
        anyhow::bail!(
            "store {location}: no such directory; a trainer creates it (xqz train --store \
             {location}); check the path"
        );
    }
    Ok(())
}

/// A second signal this soon after the first is the same stop (`timeout -s TERM` and some
/// supervisors send two in quick succession) and is ignored.
pub const SAME_STOP: Duration = Duration::from_secs(1);

/// Installs the handler of Ctrl-C, SIGTERM and SIGHUP (ctrlc's `termination` feature): the
/// first signal sets `stop` and calls `first`; a second one within [`SAME_STOP`] of it is
/// ignored; a later one calls `again` (which exits the process, as a rule).
pub fn on_stop_signal(
    stop: &Arc<AtomicBool>,
    first: impl Fn() + Send + 'static,
    again: impl Fn() + Send + 'static,
) {
    let stop = Arc::clone(stop);
    let since: Mutex<Option<Instant>> = Mutex::new(None);
    let _ = ctrlc::set_handler(move || {
        let mut since = since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match *since {
            None => {
                *since = Some(Instant::now());
                stop.store(true, Ordering::SeqCst);
                first();
            }
            Some(t) if t.elapsed() < SAME_STOP => {}
            Some(_) => again(),
        }
    });
}
