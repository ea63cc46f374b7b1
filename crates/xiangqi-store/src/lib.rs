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
//! This crate reads no environment: S3 settings (endpoint, credentials, region) are passed to
//! [`Store::open`] as options by the caller.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::TryStreamExt;
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
        /// What was done: `put`, `get`, `list`, `delete`.
        op: &'static str,
        /// The key (or prefix).
        key: String,
        /// The backend's reason.
        reason: String,
    },
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

/// A store: an [`ObjectStore`] and the root every key is relative to, with a runtime of its
/// own that runs each operation to completion (the callers are synchronous).
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    root: KeyPath,
    /// The directory of a directory store ([`Store::put_new`] writes there itself).
    dir: Option<PathBuf>,
    location: String,
    runtime: tokio::runtime::Runtime,
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
            return Ok(Kind::S3 {
                bucket: bucket.to_string(),
                prefix: prefix.trim_matches('/').to_string(),
            });
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
    /// they are not used for a directory.
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
        let (inner, root, dir): (Arc<dyn ObjectStore>, KeyPath, _) = match Kind::parse(location)? {
            Kind::Directory(dir) => {
                std::fs::create_dir_all(&dir)
                    .map_err(|e| bad(format!("cannot create the directory: {e}")))?;
                let fs = LocalFileSystem::new_with_prefix(&dir)
                    .map_err(|e| bad(e.to_string()))?
                    .with_fsync(true);
                (Arc::new(fs), KeyPath::default(), Some(dir))
            }
            Kind::S3 { bucket, prefix } => {
                let store = open_s3(&bucket, options).map_err(bad)?;
                (store, KeyPath::from(prefix.as_str()), None)
            }
        };
        Ok(Store { inner, root, dir, location: location.to_string(), runtime })
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

    fn err(&self, op: &'static str, key: &str, e: impl fmt::Display) -> StoreError {
        StoreError::Operation {
            location: self.location.clone(),
            op,
            key: key.to_string(),
            reason: e.to_string(),
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
            return self.put_new_in(dir, key, &bytes);
        }
        let opts = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
        let path = self.path(key);
        match self.runtime.block_on(self.inner.put_opts(&path, PutPayload::from(bytes), opts)) {
            Ok(_) => Ok(Created::New),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(Created::AlreadyExists),
            Err(e) => Err(self.err("put", key, e)),
        }
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
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let fail = |e: std::io::Error| self.err("put", key, e);
        let parts: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() || parts.iter().any(|p| *p == "." || *p == ".." || p.contains('#')) {
            return Err(self.err("put", key, "not a key a directory store can hold"));
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
        self.runtime
            .block_on(self.inner.put(&path, PutPayload::from(bytes)))
            .map(|_| ())
            .map_err(|e| self.err("put", key, e))
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
        match self.runtime.block_on(self.inner.head(&path)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.err("head", key, e)),
        }
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
        use futures_util::StreamExt;
        self.runtime.block_on(
            futures_util::stream::iter(keys.iter().map(|k| self.fetch(k)))
                .buffered(concurrency.max(1))
                .try_collect::<Vec<_>>(),
        )
    }

    async fn fetch(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.inner.get(&self.path(key)).await {
            Ok(result) => match result.bytes().await {
                Ok(b) => Ok(Some(b.to_vec())),
                Err(e) => Err(self.err("get", key, e)),
            },
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err("get", key, e)),
        }
    }

    /// The body of `key` unless its entity tag is still `e_tag` (a conditional GET: an
    /// unchanged object sends no body).
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn get_if_changed(&self, key: &str, e_tag: Option<&str>) -> Result<Fetched, StoreError> {
        let path = self.path(key);
        let opts = GetOptions { if_none_match: e_tag.map(str::to_string), ..GetOptions::default() };
        self.runtime.block_on(async {
            match self.inner.get_opts(&path, opts).await {
                Ok(result) => {
                    let e_tag = result.meta.e_tag.clone();
                    let bytes = result.bytes().await.map_err(|e| self.err("get", key, e))?;
                    Ok(Fetched::Changed { bytes: bytes.to_vec(), e_tag })
                }
                Err(object_store::Error::NotFound { .. }) => Ok(Fetched::Missing),
                Err(object_store::Error::NotModified { .. }) => Ok(Fetched::NotModified),
                Err(e) => Err(self.err("get", key, e)),
            }
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
        let stream = match after {
            Some(a) => self.inner.list_with_offset(Some(&prefix), &self.path(a)),
            None => self.inner.list(Some(&prefix)),
        };
        let metas: Vec<_> = self
            .runtime
            .block_on(stream.try_collect::<Vec<_>>())
            .map_err(|e| self.err("list", dir, e))?;
        let mut out: Vec<Entry> = metas
            .iter()
            .map(|m| Entry { key: self.relative(&m.location), size: m.size })
            .filter(|e| after.is_none_or(|a| e.key.as_str() > a))
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// The names of the sub-directories of `dir` (one level), sorted.
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn list_dirs(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        let prefix = self.path(dir);
        let listed = self
            .runtime
            .block_on(self.inner.list_with_delimiter(Some(&prefix)))
            .map_err(|e| self.err("list", dir, e))?;
        Ok(dir_names(&listed))
    }

    /// [`Store::list_after`] that passes over the objects whose names the store cannot turn
    /// into keys (a name that is not UTF-8 in a directory; a `..` or empty segment) instead of
    /// failing the whole listing: each comes back, after the entries, as the directory listed
    /// and the reason, which names the object. On S3 such a key fails the whole page of the
    /// listing it is on, so the keys after it on that page are missing from the entries.
    ///
    /// # Errors
    /// [`StoreError::Operation`] for any other failure.
    pub fn list_after_lossy(
        &self,
        dir: &str,
        after: Option<&str>,
    ) -> Result<(Vec<Entry>, Vec<Unnamed>), StoreError> {
        use futures_util::StreamExt;
        let prefix = self.path(dir);
        let mut stream = match after {
            Some(a) => self.inner.list_with_offset(Some(&prefix), &self.path(a)),
            None => self.inner.list(Some(&prefix)),
        };
        let mut out = Vec::new();
        let mut unnamed = Vec::new();
        self.runtime.block_on(async {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(m) => out.push(Entry { key: self.relative(&m.location), size: m.size }),
                    Err(e @ object_store::Error::InvalidPath { .. }) => {
                        unnamed.push((dir.to_string(), e.to_string()));
                    }
                    Err(e) => return Err(self.err("list", dir, e)),
                }
            }
            Ok(())
        })?;
        out.retain(|e| after.is_none_or(|a| e.key.as_str() > a));
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok((out, unnamed))
    }

    /// [`Store::list_dirs`] that passes over the objects the store cannot name (see
    /// [`Store::list_after_lossy`], whose listing of everything under `dir` it falls back to
    /// when one is among `dir`'s entries).
    ///
    /// # Errors
    /// [`StoreError::Operation`] for any other failure.
    pub fn list_dirs_lossy(&self, dir: &str) -> Result<(Vec<String>, Vec<Unnamed>), StoreError> {
        let prefix = self.path(dir);
        match self.runtime.block_on(self.inner.list_with_delimiter(Some(&prefix))) {
            Ok(listed) => Ok((dir_names(&listed), Vec::new())),
            Err(object_store::Error::InvalidPath { .. }) => {
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
            Err(e) => Err(self.err("list", dir, e)),
        }
    }

    /// Deletes `key` (no error if it is already gone).
    ///
    /// # Errors
    /// [`StoreError::Operation`].
    pub fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path(key);
        match self.runtime.block_on(self.inner.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err("delete", key, e)),
        }
    }
}

#[cfg(feature = "s3")]
fn open_s3(bucket: &str, options: &[(String, String)]) -> Result<Arc<dyn ObjectStore>, String> {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
    let mut builder = AmazonS3Builder::new().with_bucket_name(bucket);
    for (key, value) in options {
        if let Ok(k) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(k, value.clone());
        }
    }
    builder.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>).map_err(|e| e.to_string())
}

#[cfg(not(feature = "s3"))]
fn open_s3(_bucket: &str, _options: &[(String, String)]) -> Result<Arc<dyn ObjectStore>, String> {
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
}
