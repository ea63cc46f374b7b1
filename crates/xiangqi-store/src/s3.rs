//! The S3 backend (AWS S3, MinIO, Ceph RGW, R2 and other S3-compatible stores): its client,
//! which only a build with the `s3` feature has, and the lossy listing that pages through a
//! bucket itself.

use std::sync::Arc;
#[cfg(feature = "s3")]
use std::time::Duration;

use object_store::ObjectStore;
use object_store::path::Path as KeyPath;

use crate::{Entry, Problem, Store, StoreError};

/// The S3 client's own retries of a failed request: a few, within seconds (a dropped
/// connection, a 5xx); longer failures are the [`Patience`](crate::Patience) loop's.
#[cfg(feature = "s3")]
fn s3_retry() -> object_store::RetryConfig {
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 4,
        retry_timeout: Duration::from_secs(15),
    }
}

#[cfg(feature = "s3")]
#[allow(clippy::type_complexity)]
pub(crate) fn open_s3(
    bucket: &str,
    options: &[(String, String)],
) -> Result<(Arc<dyn ObjectStore>, Arc<dyn object_store::list::PaginatedListStore>), String> {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
    // A request may take up to 2 minutes (a net of a large model on a slow link); connecting
    // up to 5 s. The options below may change either.
    let client = object_store::ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(120));
    let mut builder = AmazonS3Builder::new()
        .with_client_options(client)
        .with_retry(s3_retry())
        .with_bucket_name(bucket);
    for (key, value) in options {
        if let Ok(k) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(k, value.clone());
        }
    }
    let store = Arc::new(builder.build().map_err(|e| e.to_string())?);
    Ok((
        store.clone() as Arc<dyn ObjectStore>,
        store as Arc<dyn object_store::list::PaginatedListStore>,
    ))
}

#[cfg(not(feature = "s3"))]
#[allow(clippy::type_complexity)]
pub(crate) fn open_s3(
    _bucket: &str,
    _options: &[(String, String)],
) -> Result<(Arc<dyn ObjectStore>, Arc<dyn object_store::list::PaginatedListStore>), String> {
    Err("this build has no S3 client: build xqz with the `s3` feature (on by default)".into())
}

impl Store {
    /// [`Store::scan`] on S3: page by page; a page that fails on a key that cannot be a path
    /// is listed again in smaller pages up to that key, and the listing goes on after it.
    pub(crate) async fn scan_s3(
        &self,
        pager: &dyn object_store::list::PaginatedListStore,
        dir: &str,
        after: Option<&str>,
    ) -> Result<(Vec<Entry>, Vec<Problem>), StoreError> {
        use object_store::list::PaginatedListOptions;
        let base = self.path(dir);
        let prefix = (!base.as_ref().is_empty()).then(|| format!("{base}/"));
        let mut offset = after.map(|a| self.path(a).to_string());
        let mut token: Option<String> = None;
        let mut out = Vec::new();
        let mut problems = Vec::new();
        let opts = |offset: &Option<String>, token: &Option<String>, max_keys: Option<usize>| {
            PaginatedListOptions {
                offset: offset.clone(),
                page_token: token.clone(),
                max_keys,
                ..Default::default()
            }
        };
        loop {
            let page = pager.list_paginated(prefix.as_deref(), opts(&offset, &token, None)).await;
            let bad = match page {
                Ok(page) => {
                    out.extend(
                        page.result
                            .objects
                            .iter()
                            .map(|m| Entry { key: self.relative(&m.location), size: m.size }),
                    );
                    token = page.page_token;
                    if token.is_none() {
                        return Ok((out, problems));
                    }
                    continue;
                }
                Err(object_store::Error::InvalidPath { source }) => match source {
                    object_store::path::Error::EmptySegment { path }
                    | object_store::path::Error::BadSegment { path, .. } => path,
                    other => return Err(self.err("list", dir, &other.into())),
                },
                Err(e) => return Err(self.err("list", dir, &e)),
            };
            // The keys before `bad` on its page: the longest page that lists (a page of `n`
            // keys fails exactly when `bad` is among them).
            let (mut lo, mut hi) = (0usize, 1000usize);
            let mut good = Vec::new();
            while lo + 1 < hi {
                let mid = (lo + hi) / 2;
                match pager
                    .list_paginated(prefix.as_deref(), opts(&offset, &token, Some(mid)))
                    .await
                {
                    Ok(page) => {
                        lo = mid;
                        good = page.result.objects;
                    }
                    Err(object_store::Error::InvalidPath { .. }) => hi = mid,
                    Err(e) => return Err(self.err("list", dir, &e)),
                }
            }
            out.extend(
                good.iter().map(|m| Entry { key: self.relative(&m.location), size: m.size }),
            );
            let root = self.root.as_ref();
            let relative = if root.is_empty() {
                bad.clone()
            } else {
                bad.strip_prefix(root).and_then(|k| k.strip_prefix('/')).unwrap_or(&bad).to_string()
            };
            problems.push(Problem {
                key: relative,
                reason: "a key with an empty, '.' or '..' segment or a control character, which \
                         no store path can name"
                    .into(),
            });
            match restart_after(&bad) {
                Some(next) if offset.as_ref().is_none_or(|o| next > *o) => {
                    offset = Some(next);
                    token = None;
                }
                _ => return Ok((out, problems)),
            }
        }
    }
}

/// The smallest key after every key that shares `bad`'s first segment that no path can hold
/// (empty, `.`, `..`, or with a control character), itself a key a path can hold: where a
/// listing goes on after `bad`. Only keys that no path can hold lie between the two.
fn restart_after(bad: &str) -> Option<String> {
    let mut head = String::new();
    for segment in bad.split('/') {
        let control = segment.find(|c: char| c.is_ascii_control());
        if segment.is_empty() || segment == "." || segment == ".." || control.is_some() {
            let next = match control {
                // The first character after the control one that no path refuses.
                Some(at) => {
                    let c = segment[at..].chars().next()?;
                    let after = if c < ' ' { ' ' } else { '\u{80}' };
                    format!("{}{after}", &segment[..at])
                }
                // '0' is the character right after '/': past `bad/...` and nothing else.
                None => format!("{segment}0"),
            };
            let key = format!("{head}{next}");
            return KeyPath::parse(&key).is_ok().then_some(key);
        }
        head.push_str(segment);
        head.push('/');
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_goes_on_after_a_key_no_path_can_hold_and_passes_over_nothing_else() {
        // '0' follows '/': only the keys under the bad segment lie between.
        assert_eq!(restart_after("p/shards/ab/../0.npz").as_deref(), Some("p/shards/ab/..0"));
        assert_eq!(restart_after("p/./x").as_deref(), Some("p/.0"));
        assert_eq!(restart_after("p//x").as_deref(), Some("p/0"));
        assert_eq!(restart_after("p/a\u{1}b/x").as_deref(), Some("p/a "));
        assert_eq!(restart_after("p/a\u{7f}").as_deref(), Some("p/a\u{80}"));
        assert_eq!(restart_after("p/fine/x"), None);
        for (bad, next) in [("a/../b", "a/..0"), ("a\u{1}", "a ")] {
            assert!(bad < next);
            // A key a path can hold between the two would be passed over: there is none of
            // the shape of a key one character longer than the bad segment's folder.
            assert!(KeyPath::parse(next).is_ok());
        }
    }
}
