//! Opening the store of a distributed run (`--store URL` of `xqz train` and `xqz selfplay`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

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
