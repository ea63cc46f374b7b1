//! Why a store operation failed ([`StoreError`]), and whether it may pass: the classification
//! of object_store's and the file system's errors (see the crate's "Failures").

use thiserror::Error;

use crate::Store;

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
    /// A stop was asked for while a transient failure was being waited out
    /// ([`Patience`](crate::Patience)).
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

impl Store {
    /// The error of `op` on `key`, classified.
    pub(crate) fn err(&self, op: &'static str, key: &str, e: &object_store::Error) -> StoreError {
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
    pub(crate) fn io_err(&self, op: &'static str, key: &str, e: &std::io::Error) -> StoreError {
        let transient = io_transient(e);
        StoreError::Operation {
            location: self.location.clone(),
            op,
            key: key.to_string(),
            reason: io_reason(e),
            transient,
        }
    }

    /// The error to give for an S3 "not found" that is about the bucket, not the key.
    pub(crate) fn missing_bucket(
        &self,
        op: &'static str,
        key: &str,
        e: &object_store::Error,
    ) -> Option<StoreError> {
        chain_text(e).contains("NoSuchBucket").then(|| self.err(op, key, e))
    }

    /// A copy of an operation error (the reason as text).
    pub(crate) fn err_copy(&self, e: &StoreError) -> StoreError {
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

    /// The error of reading `key`. Reading never fails for a store-wide reason of a directory
    /// store's own (a full or read-only disk stops writes, not reads), so a permission refused
    /// is this object's: not transient, so that one object nobody may read is named and passed
    /// over instead of stopping every read for good.
    pub(crate) fn read_err(&self, key: &str, e: &object_store::Error) -> StoreError {
        let mut err = self.err("get", key, e);
        if let StoreError::Operation { transient, .. } = &mut err
            && io_source(e).is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied)
        {
            *transient = false;
        }
        err
    }
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
pub(crate) fn io_reason(e: &std::io::Error) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
