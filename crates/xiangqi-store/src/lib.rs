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

// Every public item is at the crate's root; the private modules split the crate by concern.
// `store`: the blocking facade (each operation of a `Store`); `keys`: the location and listing
// types; `error`: failures and whether they may pass; `patience`: waiting out transient ones;
// `local` and `s3`: the two backends (the S3 client only in a build with the `s3` feature).
mod error;
mod keys;
mod local;
mod patience;
mod s3;
mod store;

pub use error::StoreError;
pub use keys::{Created, Entry, Fetched, Kind, Problem, Unnamed};
pub use local::STAGING_DIR;
pub use patience::Patience;
pub use store::Store;
