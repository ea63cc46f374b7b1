//! The object store where self-play workers and the trainer meet: a local directory (also a
//! shared mount such as NFS) or an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, R2; with the
//! `s3` feature), through the [`object_store`] crate, behind a small blocking API.
//!
//! Only operations that every backend implements are used (the README's "Scaling out" says
//! which were measured where): a create-only put ([`Store::put_new`]: `If-None-Match: *` on S3,
//! a staged file and `link(2)` in a directory), a plain atomic overwrite ([`Store::put`]:
//! `rename(2)` in a directory, a single PUT on S3), listings in key order, and conditional
//! GETs ([`Store::get_if_changed`]). No compare-and-swap: one trainer is the only writer of
//! the keys it overwrites.
//!
//! Keys are `/`-separated strings relative to the store's root (the directory, or the bucket
//! and prefix of the URL), such as `shards/00c0ffee/000000000001.npz`. A put is all-or-nothing:
//! a writer killed mid-upload leaves no visible object.
//!
//! # Failures
//! Every error says whether it is worth retrying ([`StoreError::is_transient`]): a server that
//! does not answer, answers 5xx or 429, a connection refused, reset or timed out; in a directory
//! a full disk or quota, a read-only file system, a permission refused, an I/O error or a stale
//! NFS handle. Permanent ones are those a retry answers the same: a bucket that does not exist,
//! credentials the server refuses (403, 401), a request it calls malformed (other 4xx). The S3
//! client retries a failed request a few times within seconds (object_store's `RetryConfig`:
//! 4 retries, 100 ms to 2 s apart, 15 s in all); a store given [`Patience`] then retries a
//! transient failure for as long as it lasts, 1 s to 60 s apart, and reports each try.
//!
//! One bad object never fails a listing: the lossy listings ([`Store::scan`] and the two
//! `_lossy` listings) pass over what they cannot list or name (a symbolic link loop, a name that
//! is not UTF-8, an S3 key with a `..` or empty segment) and say which key and why.
//!
//! This crate reads no environment: S3 settings (endpoint, credentials, region) are passed to
//! [`Store::open`] as options by the caller.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures_util::{StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path as KeyPath;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use thiserror::Error;

/// The folder of a directory store where [`Store::put_new`] writes an object before it links
/// it to its name; what a killed writer leaves there is no object and is never listed as one.
pub const STAGING_DIR: &str = ".staging";

/// Why a store operation failed.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The location names no store this build can open.
    #[error("store '{location}': {reason}")]
    Location {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An operation on a key failed.
    #[error("store '{location}': {op} '{key}': {reason}")]
    Operation {
        /// The store's location.
        location: String,
        /// What was done: `put`, `get`, `head`, `list`, `delete`.
        op: &'static str,
        /// The key (or prefix).
        key: String,
        /// The backend's reason (for a permanent failure, what is wrong first).
        reason: String,
        /// Whether a later try may succeed ([`StoreError::is_transient`]).
        transient: bool,
    },
    /// A stop was asked for while a transient failure was being waited out ([`Patience`]).
    #[error("store '{location}': stopped while waiting for {op} '{key}' to work again ({reason})")]
    Stopped {
        /// The store's location.
        location: String,
        /// The operation.
        op: &'static str,
        /// The key (or prefix).
        key: String,
        /// The last failure.
        reason: String,
    },
}

impl StoreError {
    /// Whether the failure may pass (a server that does not answer or is busy, a full or
    /// read-only disk, ...): worth trying again later. A bad location, refused credentials, a
    /// missing bucket or a stop are not.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Operation { transient: true, .. })
    }
}

/// How a store waits out transient failures ([`Store::set_patience`]): each failed try is
/// reported, and tried again after `first_wait`, then twice as long each time up to
/// `longest_wait`, until it works, fails for good, or `stop` is set.
#[derive(Clone)]
pub struct Patience {
    /// The wait after the first failure.
    pub first_wait: Duration,
    /// The longest wait between tries.
    pub longest_wait: Duration,
    /// Set by the caller to stop waiting: the operation then fails with
    /// [`StoreError::Stopped`].
    pub stop: Arc<AtomicBool>,
    /// Receives a line after each failed try (what failed, the key, since when, the next try)
    /// and one when the operation works again.
    pub report: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Patience {
    /// 1 s, then doubling up to 60 s, reporting to `report`, until `stop`.
    pub fn new(stop: Arc<AtomicBool>, report: Arc<dyn Fn(&str) + Send + Sync>) -> Patience {
        Patience {
            first_wait: Duration::from_secs(1),
            longest_wait: Duration::from_secs(60),
            stop,
            report,
        }
    }
}

impl fmt::Debug for Patience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Patience")
            .field("first_wait", &self.first_wait)
            .field("longest_wait", &self.longest_wait)
            .finish_non_exhaustive()
    }
}

/// What [`Store::put_new`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Created {
    /// The object was created.
    New,
    /// An object of that key existed already; it was left as it was.
    AlreadyExists,
}

/// What [`Store::get_if_changed`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// No object of that key.
    Missing,
    /// The object still has the entity tag the caller holds; no body was sent.
    NotModified,
    /// The object's body and its entity tag (if the backend gives one).
    Changed {
        /// The body.
        bytes: Vec<u8>,
        /// The entity tag, to pass to the next call.
        e_tag: Option<String>,
    },
}

/// An object in a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The key, relative to the store's root.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
}

/// An object a lossy listing passed over: the directory listed and the reason, which names
/// the object ([`Store::list_after_lossy`]).
pub type Unnamed = (String, String);

/// Something a lossy listing ([`Store::scan`]) passed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Its key relative to the store's root, as near as it can be written (bytes that are not
    /// UTF-8 as `%XX`).
    pub key: String,
    /// Why it was passed over.
    pub reason: String,
}

/// A store: an [`ObjectStore`] and the root every key is relative to, with a runtime of its
/// own that runs each operation to completion (the callers are synchronous).
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    /// The S3 store's paginated listing (the lossy listings page through it themselves).
    pager: Option<Arc<dyn object_store::list::PaginatedListStore>>,
    root: KeyPath,
    /// The directory of a directory store ([`Store::put_new`] and the lossy listings work
    /// there themselves).
    dir: Option<PathBuf>,
    location: String,
    runtime: tokio::runtime::Runtime,
    patience: Option<Patience>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("location", &self.location).finish_non_exhaustive()
    }
}

/// The kind of store a location names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A local directory (or a mount): the path.
    Directory(PathBuf),
    /// An S3-compatible bucket: bucket and prefix.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix inside it (may be empty).
        prefix: String,
    },
}

impl Kind {
    /// Parses a location: `s3://bucket[/prefix]`, `file:///abs/path`, or a directory path.
    ///
    /// # Errors
    /// [`StoreError::Location`] for a URL scheme that is not supported (with what to use
    /// instead) or a malformed `s3://` or `file://` URL.
    pub fn parse(location: &str) -> Result<Kind, StoreError> {
        let bad = |reason: String| StoreError::Location { location: location.into(), reason };
        if location.is_empty() {
            return Err(bad("empty: give a directory or s3://bucket/prefix".into()));
        }
        if let Some(rest) = location.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("no bucket: write s3://bucket/prefix".into()));
            }
            let prefix = prefix.trim_matches('/');
            if KeyPath::parse(prefix).is_err() {
                return Err(bad(format!(
                    "the prefix '{prefix}' has an empty, '.' or '..' segment or a control \
                     character"
                )));
            }
            return Ok(Kind::S3 { bucket: bucket.to_string(), prefix: prefix.to_string() });
        }
        if let Some(rest) = location.strip_prefix("file://") {
            if !rest.starts_with('/') {
                return Err(bad("a file:// URL needs an absolute path (file:///dir)".into()));
            }
            return Ok(Kind::Directory(PathBuf::from(rest)));
        }
        if let Some((scheme, _)) = location.split_once("://") {
            return Err(bad(format!(
                "{scheme}:// is not supported; use s3://bucket/prefix (AWS S3, MinIO, Ceph RGW, \
                 R2 and Google Cloud Storage's XML API are S3-compatible) or a directory on a \
                 shared mount"
            )));
        }
        Ok(Kind::Directory(PathBuf::from(location)))
    }
}

impl Store {
    /// Opens the store at `location` (see [`Kind::parse`]). A directory is created if missing.
    /// `options` configure an S3 store, as `(key, value)` pairs in object_store's names
    /// (`aws_endpoint`, `aws_access_key_id`, `aws_secret_access_key`, `aws_region`,
    /// `aws_allow_http`, `aws_virtual_hosted_style_request`, ...; unknown keys are ignored);
    /// they are not used for a directory. The store fails at once on any error until given
    /// [`Patience`] ([`Store::set_patience`]). Nothing is sent to an S3 server yet
    /// ([`Store::check`] does).
    ///
    /// # Errors
    /// [`StoreError::Location`]: an unsupported or malformed location, a directory that cannot
    /// be created, an S3 location in a build without the `s3` feature, bad S3 options.
    pub fn open(location: &str, options: &[(String, String)]) -> Result<Store, StoreError> {
        let bad = |reason: String| StoreError::Location { location: location.into(), reason };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| bad(format!("cannot start the I/O runtime: {e}")))?;
        let (inner, pager, root, dir): (Arc<dyn ObjectStore>, _, KeyPath, _) =
            match Kind::parse(location)? {
                Kind::Directory(dir) => {
                    std::fs::create_dir_all(&dir)
                        .map_err(|e| bad(format!("cannot create the directory: {e}")))?;
                    let fs = LocalFileSystem::new_with_prefix(&dir)
                        .map_err(|e| bad(e.to_string()))?
                        .with_fsync(true);
                    (Arc::new(fs), None, KeyPath::default(), Some(dir))
                }
                Kind::S3 { bucket, prefix } => {
                    let (store, pager) = open_s3(&bucket, options).map_err(bad)?;
                    (store, Some(pager), KeyPath::from(prefix.as_str()), None)
                }
            };
        Ok(Store {
            inner,
            pager,
            root,
            dir,
            location: location.to_string(),
            runtime,
            patience: None,
        })
    }

    /// From now on, transient failures are waited out as `patience` says instead of failing at
    /// once (`None`: fail at once, the default).
    pub fn set_patience(&mut self, patience: Option<Patience>) {
        self.patience = patience;
    }

    /// Asks the store whether it can be used: lists the root's first key. On S3 this is where
    /// a bucket that does not exist or credentials the server refuses show first.
    ///
    /// # Errors
    /// [`StoreError::Operation`] (a transient one only without [`Patience`]);
    /// [`StoreError::Stopped`].
    pub fn check(&self) -> Result<(), StoreError> {
        self.patiently(|| match &self.pager {
            Some(pager) => {
                let prefix = (!self.root.as_ref().is_empty()).then(|| format!("{}/", self.root));
                let opts = object_store::list::PaginatedListOptions {
                    max_keys: Some(1),
                    ..Default::default()
                };
                match self.runtime.block_on(pager.list_paginated(prefix.as_deref(), opts)) {
                    Ok(_) | Err(object_store::Error::InvalidPath { .. }) => Ok(()),
                    Err(e) => Err(self.err("list", "", &e)),
                }
            }
            None => {
                let dir = self.dir.as_ref().expect("a store is a directory or S3");
                std::fs::read_dir(dir).map(|_| ()).map_err(|e| self.io_err("list", "", &e))
            }
        })
    }

    /// The location this store was opened from.
    pub fn location(&self) -> &str {
        &self.location
    }

    fn path(&self, key: &str) -> KeyPath {
        let mut path = self.root.clone();
        for part in key.split('/').filter(|p| !p.is_empty()) {
            path = path.clone().join(part);
        }
        path
    }

    fn relative(&self, path: &KeyPath) -> String {
        match path.prefix_match(&self.root) {
            Some(parts) => parts.map(|p| p.as_ref().to_string()).collect::<Vec<_>>().join("/"),
            None => path.to_string(),
        }
    }

    /// The error of `op` on `key`, classified.
    fn err(&self, op: &'static str, key: &str, e: &object_store::Error) -> StoreError {
        let (transient, reason) = classify(e);
        StoreError::Operation {
            location: self.location.clone(),
            op,
            key: key.to_string(),
            reason,
            transient,
        }
    }

    /// The error of `op` on `key` in a directory store's own file operations, classified.
    fn io_err(&self, op: &'static str, key: &str, e: &std::io::Error) -> StoreError {
        let transient = io_transient(e);
        StoreError::Operation {
            location: self.location.clone(),
            op,
            key: key.to_string(),
            reason: io_reason(e),
            transient,
        }
    }

    /// Runs `attempt` until it works or fails for good, waiting out transient failures as the
    /// store's [`Patience`] says (none: the first failure is the answer).
    fn patiently<T>(
        &self,
        mut attempt: impl FnMut() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Some(p) = &self.patience else { return attempt() };
        let mut failing: Option<(Instant, SystemTime)> = None;
        let mut tries = 0u32;
        let mut wait = p.first_wait;
        loop {
            let e = match attempt() {
                Ok(v) => {
                    if let Some((since, _)) = failing {
                        (p.report)(&format!(
                            "store '{}': works again after {:.0} s ({tries} failed tr{})",
                            self.location,
                            since.elapsed().as_secs_f64(),
                            if tries == 1 { "y" } else { "ies" }
                        ));
                    }
                    return Ok(v);
                }
                Err(e) if e.is_transient() => e,
                Err(e) => return Err(e),
            };
            tries += 1;
            let (since, wall) = *failing.get_or_insert_with(|| (Instant::now(), SystemTime::now()));
            let stopped = |e: StoreError| match e {
                StoreError::Operation { location, op, key, reason, .. } => {
                    StoreError::Stopped { location, op, key, reason }
                }
                other => other,
            };
            if p.stop.load(Ordering::SeqCst) {
                return Err(stopped(e));
            }
            (p.report)(&format!(
                "{e}; failing since {} UTC ({:.0} s, {tries} tr{}); next try in {} s",
                clock(wall),
                since.elapsed().as_secs_f64(),
                if tries == 1 { "y" } else { "ies" },
                wait.as_secs()
            ));
            let end = Instant::now() + wait;
            while Instant::now() < end {
                if p.stop.load(Ordering::SeqCst) {
                    return Err(stopped(e));
                }
                std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
            }
            wait = (wait * 2).min(p.longest_wait);
        }
    }

    /// Creates the object `key` with `bytes` unless one exists: never overwrites. All or
    /// nothing: a writer killed mid-put leaves no object.
    ///
    /// # Errors
    /// [`StoreError::Operation`] for any failure other than an existing object.
    ///
    /// On a directory the object is written under [`STAGING_DIR`] first and then linked to its
    /// name (a hard link, which fails if the name exists), so a writer killed mid-put leaves at
    /// most a file in [`STAGING_DIR`], never one beside the object's name. (object_store's own
    /// create-only put stages beside the name, as `NAME#N`, and a `kill -9` left that for good.)
    pub fn put_new(&self, key: &str, bytes: Vec<u8>) -> Result<Created, StoreError> {
        if let Some(dir) = &self.dir {
            return self.patiently(|| self.put_new_in(dir, key, &bytes));
        }
        let payload = PutPayload::from(bytes);
        let path = self.path(key);
        self.patiently(|| {
            let opts = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
            match self.runtime.block_on(self.inner.put_opts(&path, payload.clone(), opts)) {
                Ok(_) => Ok(Created::New),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(Created::AlreadyExists),
                Err(e) => Err(self.err("put", key, &e)),
            }
        })
    }

    /// [`Store::put_new`] on the directory `dir`: staged in [`STAGING_DIR`], synced, then
    /// hard-linked to the key's path.
    fn put_new_in(
        &self,
        dir: &std::path::Path,
        key: &str,
        bytes: &[u8],
    ) -> Result<Created, StoreError> {
        use std::io::Write;
        use std::sync::atomic::AtomicU64;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let fail = |e: std::io::Error| self.io_err("put", key, &e);
        let parts: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() || parts.iter().any(|p| *p == "." || *p == ".." || p.contains('#')) {
            return Err(StoreError::Operation {
                location: self.location.clone(),
                op: "put",
                key: key.to_string(),
                reason: "not a key a directory store can hold".into(),
                transient: false,
            });
        }
        let target = parts.iter().fold(dir.to_path_buf(), |p, part| p.join(part));
        let staging = dir.join(STAGING_DIR);
        std::fs::create_dir_all(&staging).map_err(fail)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let tmp = staging.join(format!(
            "{}-{nanos}-{}.part",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut f = std::fs::File::create_new(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match std::fs::hard_link(&tmp, &target) {
                Ok(()) => Ok(Created::New),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    Ok(Created::AlreadyExists)
                }
                Err(e) => Err(e),
            }
        })();
        let _ = std::fs::remove_file(&tmp);
        result.map_err(fail)
    }

    /// Writes the object `key`, replacing any: readers see the old body or the new one.
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        let path = self.path(key);
        let payload = PutPayload::from(bytes);
        self.patiently(|| {
            self.runtime
                .block_on(self.inner.put(&path, payload.clone()))
                .map(|_| ())
                .map_err(|e| self.err("put", key, &e))
        })
    }

    /// The body of `key`, or `None` if there is no such object.
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.get_if_changed(key, None)? {
            Fetched::Changed { bytes, .. } => Ok(Some(bytes)),
            Fetched::Missing | Fetched::NotModified => Ok(None),
        }
    }

    /// Whether an object `key` exists.
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn exists(&self, key: &str) -> Result<bool, StoreError> {
        let path = self.path(key);
        self.patiently(|| match self.runtime.block_on(self.inner.head(&path)) {
            Ok(_) => Ok(true),
            Err(e @ object_store::Error::NotFound { .. }) => {
                self.missing_bucket("head", key, &e).map_or(Ok(false), Err)
            }
            Err(e) => Err(self.err("head", key, &e)),
        })
    }

    /// The error to give for an S3 "not found" that is about the bucket, not the key.
    fn missing_bucket(
        &self,
        op: &'static str,
        key: &str,
        e: &object_store::Error,
    ) -> Option<StoreError> {
        chain_text(e).contains("NoSuchBucket").then(|| self.err(op, key, e))
    }

    /// The bodies of `keys` (`None` for a missing object), fetched with up to `concurrency`
    /// requests in flight: a server's per-request latency (about 44 ms per small GET on Ceph
    /// RGW) is paid once per batch, not once per object.
    ///
    /// # Errors
    /// [`StoreError::Operation`] of the first request that fails.
    pub fn get_many(
        &self,
        keys: &[String],
        concurrency: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.get_each(keys, concurrency)?.into_iter().collect()
    }

    /// [`Store::get_many`] that fails only as a whole for a stop: each key's answer is its own,
    /// so one object that cannot be read (a permanent failure) does not hide the others.
    /// Transient failures are waited out as the store's [`Patience`] says (all keys tried
    /// again, those that worked kept).
    ///
    /// # Errors
    /// [`StoreError::Stopped`]; without [`Patience`], a transient failure of any key.
    #[allow(clippy::type_complexity)]
    pub fn get_each(
        &self,
        keys: &[String],
        concurrency: usize,
    ) -> Result<Vec<Result<Option<Vec<u8>>, StoreError>>, StoreError> {
        let mut answers: Vec<Option<Result<Option<Vec<u8>>, StoreError>>> =
            (0..keys.len()).map(|_| None).collect();
        self.patiently(|| {
            let todo: Vec<usize> = (0..keys.len())
                .filter(|&i| {
                    answers[i]
                        .as_ref()
                        .is_none_or(|a| a.as_ref().is_err_and(StoreError::is_transient))
                })
                .collect();
            let got: Vec<Result<Option<Vec<u8>>, StoreError>> = self.runtime.block_on(
                futures_util::stream::iter(todo.iter().map(|&i| self.fetch(&keys[i])))
                    .buffered(concurrency.max(1))
                    .collect::<Vec<_>>(),
            );
            let mut transient = None;
            for (i, answer) in todo.into_iter().zip(got) {
                if let Err(e) = &answer
                    && e.is_transient()
                    && transient.is_none()
                {
                    transient = Some(self.err_copy(e));
                }
                answers[i] = Some(answer);
            }
            transient.map_or(Ok(()), Err)
        })
        .or_else(|e| if e.is_transient() && self.patience.is_none() { Ok(()) } else { Err(e) })?;
        Ok(answers.into_iter().map(|a| a.expect("every key was fetched")).collect())
    }

    /// A copy of an operation error (the reason as text).
    fn err_copy(&self, e: &StoreError) -> StoreError {
        match e {
            StoreError::Operation { location, op, key, reason, transient } => {
                StoreError::Operation {
                    location: location.clone(),
                    op,
                    key: key.clone(),
                    reason: reason.clone(),
                    transient: *transient,
                }
            }
            other => {
                StoreError::Location { location: self.location.clone(), reason: other.to_string() }
            }
        }
    }

    async fn fetch(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.inner.get(&self.path(key)).await {
            Ok(result) => match result.bytes().await {
                Ok(b) => Ok(Some(b.to_vec())),
                Err(e) => Err(self.read_err(key, &e)),
            },
            Err(e @ object_store::Error::NotFound { .. }) => {
                self.missing_bucket("get", key, &e).map_or(Ok(None), Err)
            }
            Err(e) => Err(self.read_err(key, &e)),
        }
    }

    /// The error of reading `key`. Reading never fails for a store-wide reason of a directory
    /// store's own (a full or read-only disk stops writes, not reads), so a permission refused
    /// is this object's: not transient, so that one object nobody may read is named and passed
    /// over instead of stopping every read for good.
    fn read_err(&self, key: &str, e: &object_store::Error) -> StoreError {
        let mut err = self.err("get", key, e);
        if let StoreError::Operation { transient, .. } = &mut err
            && io_source(e).is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied)
        {
            *transient = false;
        }
        err
    }

    /// The body of `key` unless its entity tag is still `e_tag` (a conditional GET: an
    /// unchanged object sends no body).
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn get_if_changed(&self, key: &str, e_tag: Option<&str>) -> Result<Fetched, StoreError> {
        let path = self.path(key);
        self.patiently(|| {
            let opts =
                GetOptions { if_none_match: e_tag.map(str::to_string), ..GetOptions::default() };
            self.runtime.block_on(async {
                match self.inner.get_opts(&path, opts).await {
                    Ok(result) => {
                        let e_tag = result.meta.e_tag.clone();
                        let bytes = result.bytes().await.map_err(|e| self.err("get", key, &e))?;
                        Ok(Fetched::Changed { bytes: bytes.to_vec(), e_tag })
                    }
                    Err(e @ object_store::Error::NotFound { .. }) => {
                        self.missing_bucket("get", key, &e).map_or(Ok(Fetched::Missing), Err)
                    }
                    Err(object_store::Error::NotModified { .. }) => Ok(Fetched::NotModified),
                    Err(e) => Err(self.err("get", key, &e)),
                }
            })
        })
    }

    /// Every object under the directory `dir` (recursively), in key order.
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn list(&self, dir: &str) -> Result<Vec<Entry>, StoreError> {
        self.list_after(dir, None)
    }

    /// The objects under the directory `dir` whose keys sort after `after` (a key under
    /// `dir`), in key order: what is new since the last key seen.
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn list_after(&self, dir: &str, after: Option<&str>) -> Result<Vec<Entry>, StoreError> {
        let prefix = self.path(dir);
        self.patiently(|| {
            let stream = match after {
                Some(a) => self.inner.list_with_offset(Some(&prefix), &self.path(a)),
                None => self.inner.list(Some(&prefix)),
            };
            let metas: Vec<_> = self
                .runtime
                .block_on(stream.try_collect::<Vec<_>>())
                .map_err(|e| self.err("list", dir, &e))?;
            let mut out: Vec<Entry> = metas
                .iter()
                .map(|m| Entry { key: self.relative(&m.location), size: m.size })
                .filter(|e| after.is_none_or(|a| e.key.as_str() > a))
                .collect();
            out.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(out)
        })
    }

    /// The names of the sub-directories of `dir` (one level), sorted.
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn list_dirs(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        let prefix = self.path(dir);
        self.patiently(|| {
            let listed = self
                .runtime
                .block_on(self.inner.list_with_delimiter(Some(&prefix)))
                .map_err(|e| self.err("list", dir, &e))?;
            Ok(dir_names(&listed))
        })
    }

    /// Every object under the directory `dir` (recursively) whose key sorts after `after`, in
    /// key order, in one listing (on S3, one request per 1,000 keys), passing over what cannot
    /// be listed or named instead of failing: each such thing comes back as a [`Problem`] that
    /// names its key. In a directory: a symbolic link loop (a folder linked to one above it, a
    /// link to itself), a name that is not UTF-8, a folder that cannot be read, a file that
    /// vanished is passed over silently (deleted while listed); on S3: a key with an empty,
    /// `.` or `..` segment or a control character (the keys listed with it on its page are
    /// found again with smaller pages).
    ///
    /// # Errors
    /// [`StoreError::Operation`] when `dir` itself cannot be listed (transient failures waited
    /// out as the store's [`Patience`] says); [`StoreError::Stopped`].
    pub fn scan(
        &self,
        dir: &str,
        after: Option<&str>,
    ) -> Result<(Vec<Entry>, Vec<Problem>), StoreError> {
        let (mut out, problems) = self.patiently(|| match (&self.dir, &self.pager) {
            (Some(root), _) => self.scan_dir(root, dir, after),
            (None, Some(pager)) => self.runtime.block_on(self.scan_s3(pager.as_ref(), dir, after)),
            (None, None) => unreachable!("a store is a directory or S3"),
        })?;
        out.retain(|e| after.is_none_or(|a| e.key.as_str() > a));
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok((out, problems))
    }

    /// [`Store::scan`] in a directory store: its own walk (object_store's fails the whole
    /// listing on a link loop).
    fn scan_dir(
        &self,
        root: &std::path::Path,
        dir: &str,
        after: Option<&str>,
    ) -> Result<(Vec<Entry>, Vec<Problem>), StoreError> {
        let parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        let base = parts.iter().fold(root.to_path_buf(), |p, part| p.join(part));
        let key = parts.join("/");
        let mut out = Vec::new();
        let mut problems = Vec::new();
        let meta = match std::fs::metadata(&base) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((out, problems)),
            Err(e) => return Err(self.io_err("list", dir, &e)),
        };
        if !meta.is_dir() {
            return Ok((out, problems));
        }
        let mut above = vec![file_id(&meta)];
        let read = std::fs::read_dir(&base).map_err(|e| self.io_err("list", dir, &e))?;
        walk(read, &key, after, &mut above, &mut out, &mut problems);
        Ok((out, problems))
    }

    /// [`Store::scan`] on S3: page by page; a page that fails on a key that cannot be a path
    /// is listed again in smaller pages up to that key, and the listing goes on after it.
    async fn scan_s3(
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

    /// [`Store::list_after`] that passes over the objects it cannot list or name, as
    /// [`Store::scan`] does: each comes back, after the entries, as the directory listed and
    /// the reason, which names the object.
    ///
    /// # Errors
    /// [`StoreError::Operation`] for any other failure.
    pub fn list_after_lossy(
        &self,
        dir: &str,
        after: Option<&str>,
    ) -> Result<(Vec<Entry>, Vec<Unnamed>), StoreError> {
        let (out, problems) = self.scan(dir, after)?;
        let unnamed =
            problems.into_iter().map(|p| (dir.to_string(), format!("{}: {}", p.key, p.reason)));
        Ok((out, unnamed.collect()))
    }

    /// [`Store::list_dirs`] that passes over the objects the store cannot list or name (see
    /// [`Store::scan`], whose listing of everything under `dir` it falls back to when one is
    /// among `dir`'s entries, and uses in a directory store).
    ///
    /// # Errors
    /// [`StoreError::Operation`] for any other failure.
    pub fn list_dirs_lossy(&self, dir: &str) -> Result<(Vec<String>, Vec<Unnamed>), StoreError> {
        if self.dir.is_none() {
            let prefix = self.path(dir);
            let listed = self.patiently(|| {
                match self.runtime.block_on(self.inner.list_with_delimiter(Some(&prefix))) {
                    Ok(listed) => Ok(Some(dir_names(&listed))),
                    Err(object_store::Error::InvalidPath { .. }) => Ok(None),
                    Err(e) => Err(self.err("list", dir, &e)),
                }
            })?;
            if let Some(names) = listed {
                return Ok((names, Vec::new()));
            }
        }
        let (entries, unnamed) = self.list_after_lossy(dir, None)?;
        let base = format!("{}/", dir.trim_matches('/'));
        let mut out: Vec<String> = entries
            .iter()
            .filter_map(|e| e.key.strip_prefix(&base)?.split_once('/'))
            .map(|(d, _)| d.to_string())
            .collect();
        out.dedup();
        Ok((out, unnamed))
    }

    /// Deletes `key` (no error if it is already gone).
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path(key);
        self.patiently(|| match self.runtime.block_on(self.inner.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err("delete", key, &e)),
        })
    }

    /// Deletes `keys` (those already gone included) in as few requests as the backend allows:
    /// S3's multi-object delete takes 1,000 keys a request; a directory deletes one file after
    /// another. Returns how many were asked for.
    ///
    /// # Errors
    /// [`StoreError::Operation`] of the first key that could not be deleted (transient failures
    /// waited out as the store's [`Patience`] says, the whole batch tried again).
    pub fn delete_many(&self, keys: &[String]) -> Result<u64, StoreError> {
        if keys.is_empty() {
            return Ok(0);
        }
        self.patiently(|| {
            let paths: Vec<object_store::Result<KeyPath>> =
                keys.iter().map(|k| Ok(self.path(k))).collect();
            let results: Vec<object_store::Result<KeyPath>> = self.runtime.block_on(
                self.inner.delete_stream(futures_util::stream::iter(paths).boxed()).collect(),
            );
            for r in results {
                match r {
                    Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => {
                        let what = match keys.len() {
                            1 => keys[0].clone(),
                            n => format!("{} (one of {n} keys)", keys[0]),
                        };
                        return Err(self.err("delete", &what, &e));
                    }
                }
            }
            Ok(keys.len() as u64)
        })
    }
}

/// The wall clock as `HH:MM:SS` (UTC).
fn clock(t: SystemTime) -> String {
    let s = t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// A folder's identity (device and inode), to find a link back to a folder above it.
#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_id(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// A name as a key segment: UTF-8 as it is, any other byte as `%XX`.
fn lossy_name(name: &std::ffi::OsStr) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let mut out = String::new();
        for chunk in name.as_bytes().utf8_chunks() {
            out.push_str(chunk.valid());
            for b in chunk.invalid() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
    #[cfg(not(unix))]
    {
        name.to_string_lossy().into_owned()
    }
}

/// Walks a directory store's folder `read` (key `key`), following symbolic links but never
/// into a folder above (`above`: the folders from the listing's root down to here).
fn walk(
    read: std::fs::ReadDir,
    key: &str,
    after: Option<&str>,
    above: &mut Vec<(u64, u64)>,
    out: &mut Vec<Entry>,
    problems: &mut Vec<Problem>,
) {
    let join = |name: &str| if key.is_empty() { name.to_string() } else { format!("{key}/{name}") };
    for entry in read {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                problems.push(Problem { key: key.to_string(), reason: io_reason(&e) });
                continue;
            }
        };
        let name = entry.file_name();
        let Some(text) = name.to_str() else {
            problems.push(Problem {
                key: join(&lossy_name(&name)),
                reason: "a name that is not UTF-8, which no key can name".into(),
            });
            continue;
        };
        // What object_store's writer stages beside a name (`NAME#N`) and this crate's staging
        // folder are not objects.
        if (key.is_empty() && text == STAGING_DIR) || text.contains('#') {
            continue;
        }
        let child = join(text);
        let meta = match std::fs::metadata(entry.path()) {
            Ok(m) => m,
            // Deleted since the folder was read, or a link to nothing.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                problems.push(Problem { key: child, reason: io_reason(&e) });
                continue;
            }
        };
        if meta.is_dir() {
            let id = file_id(&meta);
            if above.contains(&id) {
                problems.push(Problem {
                    key: child,
                    reason: "a symbolic link to a folder above it (a loop)".into(),
                });
                continue;
            }
            // A folder whose keys all sort before `after` holds nothing new.
            // (They sort between `child/` and `child0`, '0' being the character after '/'.)
            if after.is_some_and(|a| a >= format!("{child}0").as_str()) {
                continue;
            }
            match std::fs::read_dir(entry.path()) {
                Ok(read) => {
                    above.push(id);
                    walk(read, &child, after, above, out, problems);
                    above.pop();
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => problems.push(Problem { key: child, reason: io_reason(&e) }),
            }
        } else if meta.is_file() {
            if after.is_none_or(|a| child.as_str() > a) {
                out.push(Entry { key: child, size: meta.len() });
            }
        } else {
            problems.push(Problem { key: child, reason: "not a regular file".into() });
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

/// The text of `e` and of every error below it.
fn chain_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// The first `std::io::Error` in `e`'s chain.
fn io_source<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

/// Whether a file system or network error may pass: a full disk or quota, a read-only file
/// system, a permission refused (an admin may fix either while the run waits), an I/O error, a
/// stale or disconnected network mount, a busy or interrupted call, a connection refused, reset
/// or cut short, a network down.
fn io_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::StorageFull
            | K::QuotaExceeded
            | K::ReadOnlyFilesystem
            | K::PermissionDenied
            | K::StaleNetworkFileHandle
            | K::TimedOut
            | K::WouldBlock
            | K::Interrupted
            | K::ResourceBusy
            | K::NotConnected
            | K::OutOfMemory
            | K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::UnexpectedEof
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown
            | K::AddrNotAvailable
    ) || e.raw_os_error() == Some(5)
}

/// A file system error, said plainly first.
fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let lead = match e.kind() {
        K::StorageFull => "the disk is full",
        K::QuotaExceeded => "the disk quota is spent",
        K::ReadOnlyFilesystem => "the file system is read-only",
        K::PermissionDenied => "permission denied",
        K::ConnectionRefused => "cannot connect to the server",
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
            "the connection to the server was cut"
        }
        // ELOOP (its ErrorKind is not stable yet).
        _ if e.raw_os_error() == Some(40) && cfg!(target_os = "linux") => "a symbolic link loop",
        _ => return e.to_string(),
    };
    format!("{lead} ({e})")
}

/// The S3 error code in an error's text (`<Code>NoSuchBucket</Code>`).
fn s3_code(text: &str) -> Option<&str> {
    let start = text.find("<Code>")? + "<Code>".len();
    let len = text[start..].find("</Code>")?;
    Some(&text[start..start + len])
}

/// The HTTP status in an error's text (`... status code: 503 ...`).
fn http_status(text: &str) -> Option<u16> {
    let at = text.find("status code: ")? + "status code: ".len();
    text.get(at..at + 3)?.parse().ok()
}

/// Whether `e` may pass, and the reason to give (what is wrong first, then the backend's
/// words).
fn classify(e: &object_store::Error) -> (bool, String) {
    use object_store::Error as E;
    let text = chain_text(e);
    if let Some(io) = io_source(e) {
        return (io_transient(io), format!("{} ({text})", io_reason(io)));
    }
    let code = s3_code(&text);
    let permanent = |lead: &str| (false, format!("{lead} ({text})"));
    match code {
        Some("NoSuchBucket") => return permanent("the bucket does not exist (NoSuchBucket)"),
        Some("InvalidAccessKeyId") => {
            return permanent(
                "the server does not know the access key (InvalidAccessKeyId): check \
                 AWS_ACCESS_KEY_ID",
            );
        }
        Some("SignatureDoesNotMatch") => {
            return permanent(
                "the server refuses the request's signature (SignatureDoesNotMatch): check \
                 AWS_SECRET_ACCESS_KEY",
            );
        }
        Some("AccessDenied") => {
            return permanent("access denied (AccessDenied): these credentials may not do this");
        }
        _ => {}
    }
    match e {
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => {
            return permanent("the server refuses these credentials");
        }
        E::InvalidPath { .. }
        | E::NotSupported { .. }
        | E::NotImplemented { .. }
        | E::UnknownConfigurationKey { .. } => return (false, text),
        _ => {}
    }
    match http_status(&text) {
        Some(401 | 403) => return permanent("the server refuses these credentials"),
        Some(408 | 429) => return (true, format!("the server is busy ({text})")),
        Some(s) if (400..500).contains(&s) => return permanent("the server refuses the request"),
        Some(s) if s >= 500 => return (true, format!("the server failed ({text})")),
        _ => {}
    }
    #[cfg(feature = "s3")]
    {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(s) = source {
            if let Some(h) = s.downcast_ref::<object_store::client::HttpError>() {
                use object_store::client::HttpErrorKind as H;
                let lead = match h.kind() {
                    H::Connect => "cannot connect to the server",
                    H::Timeout => "the server did not answer in time",
                    _ => "the connection to the server failed",
                };
                return (true, format!("{lead} ({text})"));
            }
            source = s.source();
        }
    }
    // Anything else from a server (a response cut short, garbled): worth another try.
    (true, text)
}

/// The S3 client's own retries of a failed request: a few, within seconds (a dropped
/// connection, a 5xx); longer failures are the [`Patience`] loop's.
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
fn open_s3(
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
fn open_s3(
    _bucket: &str,
    _options: &[(String, String)],
) -> Result<(Arc<dyn ObjectStore>, Arc<dyn object_store::list::PaginatedListStore>), String> {
    Err("this build has no S3 client: build xqz with the `s3` feature (on by default)".into())
}

/// The names of the folders a delimited listing found, in order.
fn dir_names(listed: &object_store::ListResult) -> Vec<String> {
    let mut out: Vec<String> =
        listed.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)).collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_to_their_kind() {
        assert_eq!(Kind::parse("runs/a").unwrap(), Kind::Directory("runs/a".into()));
        assert_eq!(Kind::parse("file:///mnt/x").unwrap(), Kind::Directory("/mnt/x".into()));
        assert_eq!(
            Kind::parse("s3://b/p/q/").unwrap(),
            Kind::S3 { bucket: "b".into(), prefix: "p/q".into() }
        );
        assert_eq!(
            Kind::parse("s3://b").unwrap(),
            Kind::S3 { bucket: "b".into(), prefix: "".into() }
        );
        for bad in ["", "s3://", "s3:///x", "file://rel", "gs://b/x", "az://c/x", "http://h/x"] {
            let e = Kind::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
        assert!(Kind::parse("gs://b").unwrap_err().to_string().contains("s3://"));
    }

    #[test]
    fn a_directory_put_stages_outside_the_objects_names_and_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("xqz-store-stage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        assert_eq!(store.put_new("shards/ab/000001.npz", b"first".to_vec()).unwrap(), Created::New);
        assert_eq!(
            store.put_new("shards/ab/000001.npz", b"second".to_vec()).unwrap(),
            Created::AlreadyExists
        );
        assert_eq!(std::fs::read(dir.join("shards/ab/000001.npz")).unwrap(), b"first");
        // Nothing but the object beside its name, nothing left in the staging folder.
        let names: Vec<_> = std::fs::read_dir(dir.join("shards/ab"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["000001.npz"]);
        assert_eq!(std::fs::read_dir(dir.join(STAGING_DIR)).unwrap().count(), 0);
        // What a killed writer leaves in the staging folder is not listed as an object.
        std::fs::write(dir.join(STAGING_DIR).join("1-2-3.part"), b"partial").unwrap();
        let listed = store.list_after("shards/ab", None).unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(store.get("shards/ab/000001.npz").unwrap().unwrap(), b"first");
        for bad in ["", "shards/../x", "a/#1"] {
            assert!(store.put_new(bad, b"x".to_vec()).is_err(), "{bad:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_name_the_store_cannot_turn_into_a_key_is_passed_over_and_named() {
        use std::os::unix::ffi::OsStrExt;
        let dir = std::env::temp_dir().join(format!("xqz-store-lossy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        store.put_new("shards/a/1.npz", vec![1]).unwrap();
        store.put_new("shards/b/2.npz", vec![2, 2]).unwrap();
        let bad = std::ffi::OsStr::from_bytes(b"\xff.npz");
        std::fs::write(dir.join("shards/a").join(bad), b"x").unwrap();
        std::fs::write(dir.join("shards").join(bad), b"x").unwrap();
        // The plain listings fail on it; the lossy ones name it and list the rest.
        assert!(store.list("shards/a").is_err() && store.list_dirs("shards").is_err());
        let (entries, unnamed) = store.list_after_lossy("shards/a", None).unwrap();
        assert_eq!(entries, [Entry { key: "shards/a/1.npz".into(), size: 1 }]);
        assert_eq!(unnamed.len(), 1, "{unnamed:?}");
        assert!(unnamed[0].0 == "shards/a" && unnamed[0].1.contains("%FF.npz"), "{unnamed:?}");
        let (dirs, unnamed) = store.list_dirs_lossy("shards").unwrap();
        assert_eq!(dirs, ["a", "b"]);
        assert_eq!(unnamed.len(), 2, "{unnamed:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

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

    #[test]
    fn failures_say_whether_they_may_pass() {
        use std::io::{Error, ErrorKind};
        for kind in [
            ErrorKind::StorageFull,
            ErrorKind::ReadOnlyFilesystem,
            ErrorKind::PermissionDenied,
            ErrorKind::QuotaExceeded,
        ] {
            assert!(io_transient(&Error::from(kind)), "{kind:?}");
        }
        assert!(io_transient(&Error::from_raw_os_error(5)), "EIO");
        assert!(io_transient(&Error::from(ErrorKind::ConnectionRefused)));
        for kind in [ErrorKind::InvalidInput, ErrorKind::NotADirectory] {
            assert!(!io_transient(&Error::from(kind)), "{kind:?}");
        }
        #[cfg(target_os = "linux")]
        assert!(!io_transient(&Error::from_raw_os_error(40)), "ELOOP");
        assert!(io_reason(&Error::from(ErrorKind::StorageFull)).starts_with("the disk is full"));
        // S3 answers, as object_store words them.
        let generic = |text: &str| object_store::Error::Generic {
            store: "S3",
            source: text.to_string().into(),
        };
        let (t, why) = classify(&generic(
            "Server returned non-2xx status code: 404 Not Found: <Error><Code>NoSuchBucket</Code></Error>",
        ));
        assert!(!t && why.starts_with("the bucket does not exist"), "{why}");
        let (t, why) = classify(&generic(
            "status code: 403 Forbidden: <Error><Code>SignatureDoesNotMatch</Code></Error>",
        ));
        assert!(!t && why.contains("AWS_SECRET_ACCESS_KEY"), "{why}");
        assert!(classify(&generic("status code: 503 Service Unavailable: slow down")).0);
        assert!(classify(&generic("status code: 429 Too Many Requests")).0);
        assert!(!classify(&generic("status code: 400 Bad Request")).0);
    }

    #[test]
    fn a_read_refused_is_the_objects_own_failure_and_a_write_refused_may_pass() {
        // Running as root, no file can be made unreadable here: the error a refused open gives
        // object_store's local store (an io::Error of kind PermissionDenied under Generic).
        let dir = std::env::temp_dir().join(format!("xqz-store-eacces-{}", std::process::id()));
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        let refused = object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(std::io::Error::from(std::io::ErrorKind::PermissionDenied)),
        };
        let read = store.read_err("shards/ab/000001.npz", &refused);
        assert!(!read.is_transient(), "{read}");
        assert!(read.to_string().contains("shards/ab/000001.npz"), "{read}");
        assert!(read.to_string().contains("permission denied"), "{read}");
        // The same refusal on a write is the store's (a folder made read-only): waited out.
        assert!(store.err("put", "shards/ab/000001.npz", &refused).is_transient());
        // Other read failures keep their class: a cut connection may pass.
        let cut = object_store::Error::Generic {
            store: "S3",
            source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
        };
        assert!(store.read_err("k", &cut).is_transient());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_loop_is_passed_over_and_named() {
        let dir = std::env::temp_dir().join(format!("xqz-store-loops-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        store.put_new("shards/a/1.npz", vec![1]).unwrap();
        store.put_new("shards/b/2.npz", vec![2, 2]).unwrap();
        let shards = dir.join("shards");
        // A link to itself, a folder linked to one above it, a file linked to itself.
        std::os::unix::fs::symlink("loop", shards.join("loop")).unwrap();
        std::os::unix::fs::symlink("..", shards.join("b/up")).unwrap();
        std::os::unix::fs::symlink("self.npz", shards.join("a/self.npz")).unwrap();
        // object_store's own listing fails on them.
        assert!(store.list("shards").is_err());
        let (entries, problems) = store.scan("shards", None).unwrap();
        let keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["shards/a/1.npz", "shards/b/2.npz"]);
        let mut named: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        named.sort();
        assert_eq!(named, ["shards/a/self.npz", "shards/b/up", "shards/loop"], "{problems:?}");
        assert!(problems.iter().any(|p| p.reason.contains("loop")), "{problems:?}");
        let (after, _) = store.scan("shards", Some("shards/a/1.npz")).unwrap();
        assert_eq!(after, [Entry { key: "shards/b/2.npz".into(), size: 2 }]);
        let (dirs, _) = store.list_dirs_lossy("shards").unwrap();
        assert_eq!(dirs, ["a", "b"]);
        assert_eq!(
            store.delete_many(&["shards/a/1.npz".into(), "shards/a/gone".into()]).unwrap(),
            2
        );
        assert_eq!(store.scan("shards", None).unwrap().0.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
