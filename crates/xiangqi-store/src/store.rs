//! The blocking facade: [`Store`], its runtime, and each operation, run to completion on
//! whichever backend the location names (see the crate's documentation).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as KeyPath;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::local::open_directory;
use crate::s3::open_s3;
use crate::{Created, Entry, Fetched, Kind, Patience, Problem, StoreError, Unnamed};

/// A store: an [`ObjectStore`] and the root every key is relative to, with a runtime of its
/// own that runs each operation to completion (the callers are synchronous).
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    /// The S3 store's paginated listing (the lossy listings page through it themselves).
    pager: Option<Arc<dyn object_store::list::PaginatedListStore>>,
    pub(crate) root: KeyPath,
    /// The directory of a directory store ([`Store::put_new`] and the lossy listings work
    /// there themselves).
    dir: Option<PathBuf>,
    pub(crate) location: String,
    runtime: tokio::runtime::Runtime,
    pub(crate) patience: Option<Patience>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("location", &self.location).finish_non_exhaustive()
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
                    let fs = open_directory(&dir).map_err(bad)?;
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

    pub(crate) fn path(&self, key: &str) -> KeyPath {
        let mut path = self.root.clone();
        for part in key.split('/').filter(|p| !p.is_empty()) {
            path = path.clone().join(part);
        }
        path
    }

    pub(crate) fn relative(&self, path: &KeyPath) -> String {
        match path.prefix_match(&self.root) {
            Some(parts) => parts.map(|p| p.as_ref().to_string()).collect::<Vec<_>>().join("/"),
            None => path.to_string(),
        }
    }

    /// Creates the object `key` with `bytes` unless one exists: never overwrites. All or
    /// nothing: a writer killed mid-put leaves no object.
    ///
    /// # Errors
    /// [`StoreError::Operation`] for any failure other than an existing object.
    ///
    /// On a directory the object is written under [`STAGING_DIR`](crate::STAGING_DIR) first
    /// and then linked to its name (a hard link, which fails if the name exists), so a writer
    /// killed mid-put leaves at most a file in [`STAGING_DIR`](crate::STAGING_DIR), never one
    /// beside the object's name. (object_store's own create-only put stages beside the name, as
    /// `NAME#N`, and a `kill -9` left that for good.)
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

/// The names of the folders a delimited listing found, in order.
fn dir_names(listed: &object_store::ListResult) -> Vec<String> {
    let mut out: Vec<String> =
        listed.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)).collect();
    out.sort();
    out
}
