//! Opening the store of a distributed run (`--store URL` of `xqz train` and `xqz selfplay`).

use anyhow::Context;
use xiangqi_store::Store;

/// The S3 settings of the environment: every `AWS_*` variable, lower-cased to object_store's
/// option names (`AWS_ENDPOINT` → `aws_endpoint`, `AWS_ACCESS_KEY_ID`, `AWS_REGION`,
/// `AWS_ALLOW_HTTP`, `AWS_VIRTUAL_HOSTED_STYLE_REQUEST`, ...).
fn s3_options() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

/// Opens the store at `location`: a directory path, `file:///path` or `s3://bucket/prefix`.
///
/// # Errors
/// A location this build cannot open, with the reason.
pub fn open(location: &str) -> anyhow::Result<Store> {
    Store::open(location, &s3_options()).with_context(|| format!("--store {location}"))
}
