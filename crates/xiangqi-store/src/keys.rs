//! What a store's operations take and give: the location's [`Kind`], what a put or a get did,
//! and the entries and problems of a listing.

use std::path::PathBuf;

use object_store::path::Path as KeyPath;

use crate::StoreError;

/// What [`Store::put_new`](crate::Store::put_new) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Created {
    /// The object was created.
    New,
    /// An object of that key existed already; it was left as it was.
    AlreadyExists,
}

/// What [`Store::get_if_changed`](crate::Store::get_if_changed) found.
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
/// the object ([`Store::list_after_lossy`](crate::Store::list_after_lossy)).
pub type Unnamed = (String, String);

/// Something a lossy listing ([`Store::scan`](crate::Store::scan)) passed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Its key relative to the store's root, as near as it can be written (bytes that are not
    /// UTF-8 as `%XX`).
    pub key: String,
    /// Why it was passed over.
    pub reason: String,
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
}
