//! The local-directory backend (also a shared mount such as NFS): object_store's local file
//! system for most operations, and this crate's own create-only put (staged in
//! [`STAGING_DIR`], then hard-linked) and lossy walk of a folder.

use std::path::Path;
use std::sync::atomic::Ordering;

use object_store::local::LocalFileSystem;

use crate::error::io_reason;
use crate::{Created, Entry, Problem, Store, StoreError};

/// The folder of a directory store where [`Store::put_new`] writes an object before it links
/// it to its name; what a killed writer leaves there is no object and is never listed as one.
pub const STAGING_DIR: &str = ".staging";

/// The object store of the directory `dir`, which is created if missing; every file it writes
/// is synced before the write returns.
///
/// # Errors
/// What is wrong, as text: the directory cannot be created, or object_store refuses it.
pub(crate) fn open_directory(dir: &Path) -> Result<LocalFileSystem, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?;
    Ok(LocalFileSystem::new_with_prefix(dir).map_err(|e| e.to_string())?.with_fsync(true))
}

impl Store {
    /// [`Store::put_new`] on the directory `dir`: staged in [`STAGING_DIR`], synced, then
    /// hard-linked to the key's path.
    pub(crate) fn put_new_in(
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

    /// [`Store::scan`] in a directory store: its own walk (object_store's fails the whole
    /// listing on a link loop).
    pub(crate) fn scan_dir(
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

#[cfg(test)]
mod tests {
    use super::*;

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
