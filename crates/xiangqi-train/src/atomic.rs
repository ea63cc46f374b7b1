//! Small files written atomically: the run directory's resolved config, records and CSV
//! rewrites, the resignation state. A reader sees the old file or the new one, never part of
//! one, whatever moment the writer is killed at.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// The temporary name `write_atomically` writes through: `NAME.tmp` beside `path`.
pub fn temporary_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes `bytes` to `path` atomically: to [`temporary_of`]`(path)`, synced to the disk, then
/// renamed over `path`, and the directory synced (best effort: not every platform syncs
/// directories). On failure the temporary is removed and `path` is as it was.
///
/// # Errors
/// The I/O error of creating, writing, syncing or renaming.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temporary_of(path);
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
        return result;
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(d) = fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_is_left() {
        let dir = std::env::temp_dir().join(format!("xqz-atomic-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.txt");
        fs::write(&path, "old").unwrap();
        write_atomically(&path, b"new contents").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new contents");
        assert!(!temporary_of(&path).exists());
        // A directory in the way of the rename fails, and the old file stays as it was.
        let blocked = dir.join("blocked");
        fs::create_dir_all(blocked.join("child")).unwrap();
        assert!(write_atomically(&blocked, b"x").is_err());
        assert!(blocked.join("child").is_dir());
        assert!(!temporary_of(&blocked).exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
