//! The store's contract, on a directory and (when one is configured) on a real S3 server.
//!
//! The S3 half runs when `XQZ_S3_BUCKET` names a bucket and the standard `AWS_*` variables
//! reach the server (`.ci/rgw start` sets both up for a Ceph RADOS Gateway on loopback). With
//! `XQZ_REQUIRE_S3=1` a missing server is a failure instead of a skip.

use std::collections::BTreeSet;
use std::sync::Arc;

use xiangqi_store::{Created, Fetched, Store};

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Every operation the trainer and the workers rely on.
fn check_contract(store: &Store) {
    // Create-only: the first put wins, the second leaves the object alone.
    assert_eq!(store.put_new("a/one", b"first".to_vec()).unwrap(), Created::New);
    assert_eq!(store.put_new("a/one", b"second".to_vec()).unwrap(), Created::AlreadyExists);
    assert_eq!(store.get("a/one").unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(store.get("a/missing").unwrap(), None);
    assert!(store.exists("a/one").unwrap());
    assert!(!store.exists("a/missing").unwrap());
    assert!(!store.exists("a").unwrap(), "a directory is not an object");
    // Overwrite.
    store.put("latest", b"1".to_vec()).unwrap();
    store.put("latest", b"22".to_vec()).unwrap();
    assert_eq!(store.get("latest").unwrap().as_deref(), Some(&b"22"[..]));
    // Conditional GET: the tag of an unchanged object gives no body; a change gives the body.
    let Fetched::Changed { bytes, e_tag } = store.get_if_changed("latest", None).unwrap() else {
        panic!("latest should exist")
    };
    assert_eq!(bytes, b"22");
    let tag = e_tag.expect("an entity tag");
    assert_eq!(store.get_if_changed("latest", Some(&tag)).unwrap(), Fetched::NotModified);
    store.put("latest", b"333".to_vec()).unwrap();
    match store.get_if_changed("latest", Some(&tag)).unwrap() {
        Fetched::Changed { bytes, .. } => assert_eq!(bytes, b"333"),
        other => panic!("a changed object came back as {other:?}"),
    }
    assert_eq!(store.get_if_changed("nothing", None).unwrap(), Fetched::Missing);
    // Many at once, in the order asked, a missing one as None.
    let keys: Vec<String> = ["latest", "a/one", "a/missing"].map(String::from).to_vec();
    let many = store.get_many(&keys, 2).unwrap();
    assert_eq!(many, [Some(b"333".to_vec()), Some(b"first".to_vec()), None]);
    // Listings in key order, after a key, and one level of directories.
    for w in ["w2", "w1"] {
        for s in [3, 1, 2] {
            let key = format!("shards/{w}/{s:03}.npz");
            assert_eq!(store.put_new(&key, vec![s as u8; s]).unwrap(), Created::New);
        }
    }
    let all: Vec<String> = store.list("shards").unwrap().into_iter().map(|e| e.key).collect();
    assert_eq!(
        all,
        [
            "shards/w1/001.npz",
            "shards/w1/002.npz",
            "shards/w1/003.npz",
            "shards/w2/001.npz",
            "shards/w2/002.npz",
            "shards/w2/003.npz"
        ]
    );
    let after = store.list_after("shards/w1", Some("shards/w1/001.npz")).unwrap();
    assert_eq!(
        after.iter().map(|e| (e.key.as_str(), e.size)).collect::<Vec<_>>(),
        [("shards/w1/002.npz", 2), ("shards/w1/003.npz", 3)]
    );
    assert!(store.list_after("shards/w1", Some("shards/w1/003.npz")).unwrap().is_empty());
    assert_eq!(store.list_dirs("shards").unwrap(), ["w1", "w2"]);
    assert!(store.list("empty").unwrap().is_empty());
    // Delete, twice.
    store.delete("shards/w2/002.npz").unwrap();
    store.delete("shards/w2/002.npz").unwrap();
    assert_eq!(store.list("shards/w2").unwrap().len(), 2);
}

/// Writers racing to create the same keys: exactly one wins each key, and the body is the
/// winner's.
fn check_create_race(store: Arc<Store>, prefix: &str) {
    let keys = 25;
    let writers = 4;
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let store = Arc::clone(&store);
            let prefix = prefix.to_string();
            std::thread::spawn(move || {
                (0..keys)
                    .filter(|k| {
                        let key = format!("{prefix}/{k:03}");
                        store.put_new(&key, vec![w as u8; 64]).unwrap() == Created::New
                    })
                    .map(|k| (k, w))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let won: Vec<(usize, usize)> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let distinct: BTreeSet<usize> = won.iter().map(|&(k, _)| k).collect();
    assert_eq!(won.len(), keys, "each key must be created exactly once: {won:?}");
    assert_eq!(distinct.len(), keys);
    for (k, w) in won {
        let body = store.get(&format!("{prefix}/{k:03}")).unwrap().unwrap();
        assert_eq!(body, vec![w as u8; 64], "key {k}: the body is not its creator's");
    }
}

#[test]
fn a_directory_store_keeps_the_contract() {
    let dir = temp_dir("contract");
    let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
    check_contract(&store);
    check_create_race(Arc::new(store), "race");
    // file:// names the same directory.
    let again = Store::open(&format!("file://{}", dir.display()), &[]).unwrap();
    assert_eq!(again.get("a/one").unwrap().as_deref(), Some(&b"first"[..]));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_store_hides_what_an_interrupted_create_left() {
    // A writer killed while writing leaves only its staging file, which no listing shows and no
    // get returns (the object appears by link(2) only when complete).
    let dir = temp_dir("staging");
    let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
    std::fs::create_dir_all(dir.join("shards/w")).unwrap();
    std::fs::write(dir.join("shards/w/000001.npz#7"), b"half").unwrap();
    assert!(store.list("shards").unwrap().is_empty());
    assert_eq!(store.get("shards/w/000001.npz").unwrap(), None);
    assert_eq!(store.put_new("shards/w/000001.npz", b"whole".to_vec()).unwrap(), Created::New);
    assert_eq!(store.list("shards").unwrap().len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unsupported_locations_are_refused_with_what_to_use() {
    for location in ["gs://bucket/run", "az://container/run", "ftp://host/x"] {
        let e = Store::open(location, &[]).unwrap_err().to_string();
        assert!(e.contains("not supported") && e.contains("s3://"), "{location}: {e}");
    }
    let e = Store::open("s3://", &[]).unwrap_err().to_string();
    assert!(e.contains("no bucket"), "{e}");
}

/// The S3 options of the environment, as `xqz` passes them: every `AWS_*` variable.
fn s3_options() -> Vec<(String, String)> {
    std::env::vars().filter(|(k, _)| k.starts_with("AWS_")).collect()
}

#[test]
fn an_s3_store_keeps_the_contract() {
    let Ok(bucket) = std::env::var("XQZ_S3_BUCKET") else {
        assert!(
            std::env::var_os("XQZ_REQUIRE_S3").is_none(),
            "XQZ_REQUIRE_S3 is set but XQZ_S3_BUCKET is not: start the server (.ci/rgw start DIR)"
        );
        eprintln!("skipped: no S3 server (set XQZ_S3_BUCKET and AWS_*; see .ci/rgw)");
        return;
    };
    if !cfg!(feature = "s3") {
        panic!("XQZ_S3_BUCKET is set but this build has no `s3` feature");
    }
    let prefix = format!("store-test-{}-{}", std::process::id(), unique());
    let location = format!("s3://{bucket}/{prefix}");
    let store = Store::open(&location, &s3_options()).unwrap();
    check_contract(&store);
    check_create_race(Arc::new(store), "race");
}

fn unique() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}
