//! Distributed self-play: the layout of a run's store and the hand-off between the trainer and
//! any number of self-play workers ([`xiangqi_store`]: a directory, a shared mount or an
//! S3-compatible bucket).
//!
//! ```text
//! <store>/
//!   trainer                         the owning run's id (written once, create-only)
//!   run.toml                        the run's resolved config (the trainer writes it)
//!   models/<generation:012>.net     a weights-only checkpoint (its manifest.toml and
//!                                   model.bpk in one object, [`pack_net`]), written once,
//!                                   create-only; generation = the trainer's completed
//!                                   iterations (0 = the initial net); the newest
//!                                   `loop.store_keep_nets` are kept ([`prune_nets`])
//!   models/latest                   "<generation>\n": the newest net (only the trainer writes it)
//!   shards/<worker:016x>/<seq:012>.npz   replay shards (format 3), create-only, never rewritten
//! ```
//!
//! # The hand-off, and what it guarantees
//! * A worker takes a random 64-bit id when it starts, so shard keys are unique by
//!   construction; each shard is one create-only put, so a worker killed mid-upload leaves
//!   nothing visible, and no shard is ever overwritten.
//! * The trainer keeps, per worker, the next sequence number it has not consumed
//!   ([`ShardCursor`]). The cursor is saved in the counters of the same atomic checkpoint as the
//!   network and optimizer, so a trainer killed at any moment resumes at its last checkpoint and
//!   reads exactly the shards after it: each shard is trained on in exactly one iteration.
//! * A net is published after the checkpoint that holds it: one create-only put of one object
//!   (a trainer killed mid-publish leaves no half of a net), then `models/latest` with a plain
//!   overwrite (atomic on every backend). Workers poll
//!   `latest` with a conditional GET and switch nets between shards.
//!
//! The notes behind this design (what each backend guarantees, measured) are in the README's
//! "Scaling out" section.

use std::collections::BTreeMap;
use std::path::Path;

use xiangqi_nn::checkpoint::{self, CheckpointError};
use xiangqi_nn::model::Net;
use xiangqi_store::{Created, Entry, Fetched, Store, StoreError};

/// The key of the owning run's id.
pub const TRAINER_KEY: &str = "trainer";
/// The key of the run's resolved config.
pub const RUN_CONFIG_KEY: &str = "run.toml";
/// The key of the newest generation's number.
pub const LATEST_KEY: &str = "models/latest";
/// The directory of the shards.
pub const SHARDS_DIR: &str = "shards";

/// The worker id of the trainer's own self-play in a distributed run (workers never take it).
pub const LOCAL_SELFPLAY_WORKER: u64 = xiangqi_search::LOCAL_WORKER;

/// Shards the trainer downloads at once (requests in flight).
pub const FETCH_CONCURRENCY: usize = 16;

/// The key of a generation's net.
pub fn model_key(generation: u64) -> String {
    format!("models/{generation:012}.net")
}

/// The first bytes of a packed net.
const NET_MAGIC: &[u8; 8] = b"xqz-net\n";

/// Packs the files of a weights-only checkpoint into one object: `xqz-net\n`, the manifest's
/// length (u64, little-endian), the manifest, then the weights. The manifest records the
/// weights' size and checksum, so a damaged object is refused when loaded.
pub fn pack_net(manifest: &[u8], model: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + manifest.len() + model.len());
    out.extend_from_slice(NET_MAGIC);
    out.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
    out.extend_from_slice(manifest);
    out.extend_from_slice(model);
    out
}

/// The manifest and the weights of a packed net; `None` if it is not one.
pub fn unpack_net(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = bytes.strip_prefix(NET_MAGIC.as_slice())?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// The directory of a worker's shards.
pub fn worker_dir_key(worker: u64) -> String {
    format!("{SHARDS_DIR}/{worker:016x}")
}

/// The key of a worker's shard `seq`.
pub fn shard_key(worker: u64, seq: u64) -> String {
    format!("{SHARDS_DIR}/{worker:016x}/{seq:012}.npz")
}

/// The worker and sequence number of a shard key ([`shard_key`]'s inverse).
pub fn parse_shard_key(key: &str) -> Option<(u64, u64)> {
    let rest = key.strip_prefix(SHARDS_DIR)?.strip_prefix('/')?;
    let (worker, file) = rest.split_once('/')?;
    let seq = file.strip_suffix(".npz")?;
    if worker.len() != 16 || seq.len() != 12 {
        return None;
    }
    Some((u64::from_str_radix(worker, 16).ok()?, seq.parse().ok()?))
}

/// Why a store operation of the run failed.
#[derive(Debug, thiserror::Error)]
pub enum DistributedError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A net could not be written or read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The store's contents break the layout or belong to another run.
    #[error("store '{location}': {reason}")]
    Layout {
        /// The store.
        location: String,
        /// What is wrong.
        reason: String,
    },
}

fn layout(store: &Store, reason: impl Into<String>) -> DistributedError {
    DistributedError::Layout { location: store.location().to_string(), reason: reason.into() }
}

/// Per worker, the first shard sequence number the trainer has not consumed, and the iteration
/// that last consumed one of its shards. Saved in the checkpoint's counters as
/// `store_next_<worker:016x>` and `store_seen_<worker:016x>`.
///
/// # Forgetting idle workers
/// Every worker ever started would keep an entry (a restarted worker takes a new id), so
/// [`ShardCursor::forget_idle`] drops a worker none of whose shards was consumed in the last
/// `loop.store_forget_workers_after` iterations and whose folder in the store holds no object
/// (every shard consumed and deleted, none uploaded since). A forgotten worker that comes back
/// (a paused or cut-off process keeps its id and its sequence) uploads above its old cursor,
/// never below it: [`ShardCursor::first_expected`] starts a worker the cursor does not know at
/// its lowest shard once the shard after that one is there too, so its new shards are neither
/// passed over nor read twice (its old ones are gone from the store).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardCursor {
    next: BTreeMap<u64, u64>,
    /// The iteration that last consumed a shard of the worker (absent: not known, as in a
    /// checkpoint of an earlier version; [`ShardCursor::forget_idle`] starts counting then).
    seen: BTreeMap<u64, u64>,
}

const CURSOR_PREFIX: &str = "store_next_";
const SEEN_PREFIX: &str = "store_seen_";

impl ShardCursor {
    /// The cursor saved in checkpoint counters (absent entries: nothing consumed).
    pub fn from_counters(counters: &BTreeMap<String, u64>) -> ShardCursor {
        let of = |prefix: &str| -> BTreeMap<u64, u64> {
            counters
                .iter()
                .filter_map(|(k, &v)| {
                    let w = k.strip_prefix(prefix)?;
                    Some((u64::from_str_radix(w, 16).ok()?, v))
                })
                .collect()
        };
        let next = of(CURSOR_PREFIX);
        let seen = of(SEEN_PREFIX).into_iter().filter(|(w, _)| next.contains_key(w)).collect();
        ShardCursor { next, seen }
    }

    /// Adds the cursor to checkpoint counters.
    pub fn to_counters(&self, counters: &mut BTreeMap<String, u64>) {
        for (w, n) in &self.next {
            counters.insert(format!("{CURSOR_PREFIX}{w:016x}"), *n);
        }
        for (w, i) in &self.seen {
            counters.insert(format!("{SEEN_PREFIX}{w:016x}"), *i);
        }
    }

    /// The first unconsumed sequence number of `worker`.
    pub fn next(&self, worker: u64) -> u64 {
        self.next.get(&worker).copied().unwrap_or(0)
    }

    /// Whether the cursor has an entry for `worker` (a shard of it consumed, and the worker not
    /// forgotten since).
    pub fn knows(&self, worker: u64) -> bool {
        self.next.contains_key(&worker)
    }

    /// The number `worker`'s next shard should have, given the sequence numbers of its shards
    /// in the store from [`ShardCursor::next`] on, in order: [`ShardCursor::next`] for a worker
    /// the cursor knows. For one it does not know (new, or forgotten) 0, unless its lowest
    /// shard is above 0 and is followed by its successor: then that shard's number. A new worker
    /// uploads its shard 0 before any other (one shard at a time), so only a forgotten worker
    /// that came back (above its old cursor) starts higher, and it has gone on once two
    /// shards are there; a lone stray object of an unknown id waits.
    pub fn first_expected(&self, worker: u64, listed: &[u64]) -> u64 {
        if self.knows(worker) {
            return self.next(worker);
        }
        match listed {
            [first, second, ..] if *first > 0 && *second == first + 1 => *first,
            _ => 0,
        }
    }

    /// Marks `worker`'s shards up to `seq` consumed.
    pub fn consume(&mut self, worker: u64, seq: u64) {
        let n = self.next.entry(worker).or_default();
        *n = (*n).max(seq + 1);
    }

    /// Records that iteration `iteration` consumed a shard of `worker` (for
    /// [`ShardCursor::forget_idle`]).
    pub fn seen_in(&mut self, worker: u64, iteration: u64) {
        let i = self.seen.entry(worker).or_default();
        *i = (*i).max(iteration);
    }

    /// The iteration that last consumed a shard of `worker`, if known.
    pub fn last_seen(&self, worker: u64) -> Option<u64> {
        self.seen.get(&worker).copied()
    }

    /// Forgets the workers (other than the trainer's own, [`LOCAL_SELFPLAY_WORKER`]) none of
    /// whose shards was consumed in the `after` iterations up to `iteration` (a worker with no
    /// such record, from a checkpoint of an earlier version, counts from `iteration`) and for
    /// which `holds_objects` says that its folder in the store is empty. `after` = 0 forgets
    /// none. Returns the workers forgotten.
    ///
    /// # Errors
    /// The first error of `holds_objects` (the cursor is left as it was for that worker and
    /// those after it).
    pub fn forget_idle<E>(
        &mut self,
        iteration: u64,
        after: u64,
        mut holds_objects: impl FnMut(u64) -> Result<bool, E>,
    ) -> Result<Vec<u64>, E> {
        if after == 0 {
            return Ok(Vec::new());
        }
        let workers: Vec<u64> = self.next.keys().copied().collect();
        let mut forgotten = Vec::new();
        for w in workers {
            if w == LOCAL_SELFPLAY_WORKER {
                continue;
            }
            let seen = *self.seen.entry(w).or_insert(iteration);
            if iteration.saturating_sub(seen) < after || holds_objects(w)? {
                continue;
            }
            self.next.remove(&w);
            self.seen.remove(&w);
            forgotten.push(w);
        }
        Ok(forgotten)
    }

    /// Moves `worker`'s cursor to at least `seq`, passing over the numbers before it: only for
    /// the trainer's own shards ([`LOCAL_SELFPLAY_WORKER`]), numbered by iteration, which it
    /// knows it never wrote for an iteration that played no games of its own.
    pub fn skip_to(&mut self, worker: u64, seq: u64) {
        let n = self.next.entry(worker).or_default();
        *n = (*n).max(seq);
    }

    /// Workers with at least one consumed shard (and not forgotten).
    pub fn workers(&self) -> usize {
        self.next.len()
    }

    /// The cursor as text, one `<worker:016x> <next>[ <last seen iteration>]` line per worker.
    pub fn to_text(&self) -> String {
        self.next
            .iter()
            .map(|(w, n)| match self.seen.get(w) {
                Some(i) => format!("{w:016x} {n} {i}\n"),
                None => format!("{w:016x} {n}\n"),
            })
            .collect()
    }

    /// Parses [`ShardCursor::to_text`] (lines of two fields, as earlier versions wrote, have
    /// no last-seen iteration); `None` if a line is malformed.
    pub fn from_text(text: &str) -> Option<ShardCursor> {
        let mut cursor = ShardCursor::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut fields = line.split_whitespace();
            let w = u64::from_str_radix(fields.next()?, 16).ok()?;
            cursor.next.insert(w, fields.next()?.parse().ok()?);
            if let Some(i) = fields.next() {
                cursor.seen.insert(w, i.parse().ok()?);
            }
            if fields.next().is_some() {
                return None;
            }
        }
        Some(cursor)
    }
}

/// A shard in the store not consumed yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingShard {
    /// Its key.
    pub key: String,
    /// The worker that wrote it.
    pub worker: u64,
    /// Its sequence number.
    pub seq: u64,
    /// Its size in bytes.
    pub size: u64,
    /// The numbers missing just before it in its worker's sequence (0: none), passed over when
    /// it is consumed ([`pending_shards`] says when a gap is passed).
    pub gap: u64,
}

/// The largest gap in a worker's sequence that [`pending_shards`] ever passes: a shard more
/// than this many numbers after the last one before it is refused (named, never read, never
/// consumed, left in the store).
pub const MAX_SHARD_GAP: u64 = 1024;

/// What [`pending_shards`] found after the cursor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    /// The shards to read, in order.
    pub shards: Vec<PendingShard>,
    /// Keys passed over, each with the reason (keys that break the layout or that the store
    /// cannot name, shards held back behind a gap or refused far ahead of their sequence).
    pub skipped: Vec<(String, String)>,
}

/// The shards after `cursor`, in rounds: the oldest unconsumed shard of every worker (in worker
/// order), then the second oldest of every worker, and so on. Each worker's shards come in
/// sequence order, so a trainer that reads a prefix of the list and stops (its window full)
/// moves each worker's cursor past only shards it has read, and takes as many shards of every
/// worker that has them, give or take one: a fast worker cannot starve a slow one. Keys that do
/// not follow the layout, or that the store cannot name, are passed over (in `skipped`).
///
/// # Gaps
/// A worker uploads its shards one after another, numbered from 0 with no number left out
/// (only a number already taken is skipped, and that one exists), and the trainer deletes only
/// consumed shards: the next shard of a worker is the cursor's number. One that is missing,
/// while later ones are there, is a gap, and consuming the shard after it would move the
/// cursor past the gap for good. The rule:
/// * a gap is passed (the shard after it listed, with its `gap`) only when the shard after it
///   is followed by its successor: a worker that has uploaded two shards after a gap has gone
///   on, so the missing ones will not come (a lost upload, or shards pruned after a newer
///   checkpoint than the one resumed from). Until then the worker's shards from the gap on
///   wait, named in `skipped`: one stray object far ahead in a worker's sequence never moves
///   the cursor past shards the worker has yet to write; the worker's real shards fill the
///   gap below it and are read as they come;
/// * a gap of more than [`MAX_SHARD_GAP`] numbers is never passed: the shard after it (and
///   those after that) is refused, named in `skipped`, and left in the store for a person to
///   look at (no worker leaves such a gap).
///
/// # Errors
/// [`StoreError`] of the listings.
pub fn pending_shards(store: &Store, cursor: &ShardCursor) -> Result<Pending, StoreError> {
    let mut by_worker: Vec<std::vec::IntoIter<PendingShard>> = Vec::new();
    let mut skipped = Vec::new();
    // One listing of everything under `shards/` (on S3 one request per 1,000 keys, not one per
    // worker folder), passing over what cannot be listed or named (a link loop, a name that is
    // not UTF-8, a key with `..`), each named.
    let (entries, problems) = store.scan(SHARDS_DIR, None)?;
    // A shard the listing could not read stops its worker's sequence before it: no gap is
    // passed over it (it may be a real shard of the worker's).
    let mut blocked: BTreeMap<u64, u64> = BTreeMap::new();
    for p in problems {
        if let Some((w, seq)) = parse_shard_key(&p.key)
            && seq >= cursor.next(w)
        {
            let b = blocked.entry(w).or_insert(seq);
            *b = (*b).min(seq);
        }
        skipped.push((p.key, format!("{}; passed over", p.reason)));
    }
    let mut folders: BTreeMap<u64, Vec<(u64, Entry)>> = BTreeMap::new();
    for e in entries {
        // Keys that do not follow the layout (an upper-case or short worker id too) are not
        // shards: named (nothing else belongs under `shards/`; the trainer names each once) and
        // left alone, since they may be a user's.
        match parse_shard_key(&e.key) {
            Some((worker, seq)) if e.key == shard_key(worker, seq) => {
                if seq >= cursor.next(worker) {
                    folders.entry(worker).or_default().push((seq, e));
                }
            }
            _ => skipped.push((
                e.key,
                format!(
                    "not a shard's name ({SHARDS_DIR}/<16 lower-case hex digits>/<12 \
                     digits>.npz): left alone"
                ),
            )),
        }
    }
    for (worker, mut listed) in folders {
        listed.sort_by_key(|(seq, _)| *seq);
        if let Some(&b) = blocked.get(&worker)
            && let Some(at) = listed.iter().position(|(seq, _)| *seq > b)
        {
            skipped.push((
                listed[at].1.key.clone(),
                format!(
                    "worker {worker:016x}'s shards after {} wait: that shard could not be \
                     listed",
                    shard_key(worker, b)
                ),
            ));
            listed.truncate(at);
        }
        let mut shards = Vec::new();
        // A worker the cursor does not know (new, or forgotten) may start above 0.
        let seqs: Vec<u64> = listed.iter().take(2).map(|(seq, _)| *seq).collect();
        let mut expected = cursor.first_expected(worker, &seqs);
        for (i, (seq, e)) in listed.iter().enumerate() {
            let gap = seq - expected;
            let missing = || {
                if gap == 1 {
                    format!("shard {expected}")
                } else {
                    format!("shards {expected} to {}", seq - 1)
                }
            };
            if gap > MAX_SHARD_GAP {
                skipped.push((
                    e.key.clone(),
                    format!(
                        "{gap} numbers after worker {worker:016x}'s next shard {expected}, more \
                         than any worker leaves out ({MAX_SHARD_GAP}): refused, with any shard \
                         after it (not read, not consumed; delete it if no worker wrote it)"
                    ),
                ));
                break;
            }
            if gap > 0 && listed.get(i + 1).is_none_or(|(n, _)| *n != seq + 1) {
                skipped.push((
                    e.key.clone(),
                    format!(
                        "worker {worker:016x}'s {} missing before it: it waits until they come, \
                         or until the worker's next shard after it shows that they will not",
                        missing()
                    ),
                ));
                break;
            }
            shards.push(PendingShard { key: e.key.clone(), worker, seq: *seq, size: e.size, gap });
            expected = seq + 1;
        }
        by_worker.push(shards.into_iter());
    }
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(by_worker.iter_mut().filter_map(Iterator::next));
        if out.len() == before {
            return Ok(Pending { shards: out, skipped });
        }
    }
}

/// Deletes the shards `cursor` has consumed (what a trainer no longer needs after its
/// checkpoint). Shards after the cursor are never touched.
///
/// # Errors
/// [`StoreError`] of the listings and deletions.
pub fn delete_consumed(store: &Store, cursor: &ShardCursor) -> Result<u64, StoreError> {
    // One listing (what cannot be listed or named is passed over, as in `pending_shards`),
    // then deletions in batches (S3's multi-object delete: 1,000 keys a request).
    let keys: Vec<String> = store
        .scan(SHARDS_DIR, None)?
        .0
        .into_iter()
        .filter_map(|e| {
            let (w, seq) = parse_shard_key(&e.key)?;
            (e.key == shard_key(w, seq) && seq < cursor.next(w)).then_some(e.key)
        })
        .collect();
    store.delete_many(&keys)
}

/// Claims the store for the run `run_id`: writes [`TRAINER_KEY`] if the store has no owner.
/// A new run (`fresh`) needs a store without published nets.
///
/// # Errors
/// [`DistributedError::Layout`] if another run owns the store, or a new run finds nets of an
/// earlier one; store errors.
pub fn claim(store: &Store, run_id: u64, fresh: bool) -> Result<(), DistributedError> {
    if fresh && store.get(LATEST_KEY)?.is_some() {
        return Err(layout(
            store,
            "it already holds the nets of a run: resume that run (--resume with its run \
             directory), or give a new run an empty store",
        ));
    }
    store.put_new(TRAINER_KEY, format!("{run_id}\n").into_bytes())?;
    let owner = store.get(TRAINER_KEY)?.unwrap_or_default();
    let owner = String::from_utf8_lossy(&owner).trim().to_string();
    if owner != run_id.to_string() {
        return Err(layout(
            store,
            format!(
                "it belongs to another run (run id {owner}, this run's is {run_id}); one trainer \
                 per store: give this run another store, or resume the run that owns it"
            ),
        ));
    }
    Ok(())
}

/// The newest published generation, if any.
///
/// # Errors
/// Store errors; [`DistributedError::Layout`] for a malformed `latest`.
pub fn latest_generation(store: &Store) -> Result<Option<u64>, DistributedError> {
    match store.get(LATEST_KEY)? {
        None => Ok(None),
        Some(body) => parse_latest(&body).map(Some).ok_or_else(|| {
            layout(store, format!("{LATEST_KEY} does not hold a generation number"))
        }),
    }
}

fn parse_latest(body: &[u8]) -> Option<u64> {
    std::str::from_utf8(body).ok()?.trim().parse().ok()
}

/// What [`publish_net`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Published {
    /// The net was written and `latest` names it.
    New,
    /// The generation was there already (a trainer resumed after publishing it, or from an
    /// older checkpoint than its newest): that net was kept, whole, and `latest` names it.
    Existing,
}

/// Publishes `net` as `generation`: one create-only put of the packed net, then `latest`.
///
/// # Errors
/// Store and serialisation errors.
pub fn publish_net(
    store: &Store,
    generation: u64,
    net: &Net,
) -> Result<Published, DistributedError> {
    let files = checkpoint::weights_only_files(net)?;
    let file = |name: &str| files.iter().find(|(n, _)| *n == name).map(|(_, b)| b.as_slice());
    let (Some(manifest), Some(model)) = (file(checkpoint::MANIFEST), file(checkpoint::MODEL_FILE))
    else {
        unreachable!("a weights-only checkpoint has a manifest and weights")
    };
    let created = store.put_new(&model_key(generation), pack_net(manifest, model))?;
    store.put(LATEST_KEY, format!("{generation}\n").into_bytes())?;
    Ok(if created == Created::New { Published::New } else { Published::Existing })
}

/// The folder of the nets.
pub const MODELS_DIR: &str = "models";

/// The generation of a net's key ([`model_key`]'s inverse).
pub fn parse_model_key(key: &str) -> Option<u64> {
    let g = key.strip_prefix(MODELS_DIR)?.strip_prefix('/')?.strip_suffix(".net")?;
    if g.len() != 12 || !g.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    g.parse().ok()
}

/// Deletes the nets of generations `keep` or more before `latest` (the one `models/latest`
/// names): the newest `keep` generations up to `latest`, and any after it, stay. Returns the
/// generations deleted, in order.
///
/// Race-free for the workers: the trainer calls it after `latest` names the new net, so the
/// net `latest` names is never deleted, and a worker whose download of a generation finds it
/// gone (it read `latest` before `keep` newer nets were published) reads `latest` again and
/// takes the newest (`xqz selfplay` does).
///
/// # Errors
/// [`StoreError`] of the listing and the deletions.
pub fn prune_nets(store: &Store, latest: u64, keep: u64) -> Result<Vec<u64>, StoreError> {
    let mut deleted = Vec::new();
    for e in store.list_after_lossy(MODELS_DIR, None)?.0 {
        if let Some(g) = parse_model_key(&e.key)
            && g.saturating_add(keep.max(1)) <= latest
        {
            store.delete(&e.key)?;
            deleted.push(g);
        }
    }
    Ok(deleted)
}

/// How old a file in a directory store's staging folder ([`xiangqi_store::STAGING_DIR`]) must
/// be to count as the leftover of a killed writer: a writer's file is written, synced and
/// linked in one go (it stays there for seconds), and its modification time keeps moving
/// while it is written.
pub const STAGING_LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes what killed writers left in a directory store (an S3 store has nothing of the
/// kind: a PUT is whole or absent): the files in [`xiangqi_store::STAGING_DIR`] older than
/// [`STAGING_LEFTOVER_AGE`] (workers may be writing newer ones), and object_store's own
/// staging files (`NAME#N`) in `models/` and at the store's root, where only the trainer writes
/// (`models/latest`, `run.toml`; earlier versions also staged nets there, as
/// `models/<generation>.net#N`). For the trainer at its start, before it writes anything.
/// Returns the paths removed, and those that could not be removed with the reason.
pub fn clean_staging(
    store: &Store,
) -> (Vec<std::path::PathBuf>, Vec<(std::path::PathBuf, String)>) {
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    let Ok(xiangqi_store::Kind::Directory(root)) = xiangqi_store::Kind::parse(store.location())
    else {
        return (removed, failed);
    };
    let mut remove = |path: std::path::PathBuf| match std::fs::remove_file(&path) {
        Ok(()) => removed.push(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => failed.push((path, e.to_string())),
    };
    let files = |dir: std::path::PathBuf| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .collect::<Vec<_>>()
    };
    let now = std::time::SystemTime::now();
    for e in files(root.join(xiangqi_store::STAGING_DIR)) {
        let age =
            e.metadata().and_then(|m| m.modified()).ok().and_then(|t| now.duration_since(t).ok());
        if age.is_some_and(|a| a >= STAGING_LEFTOVER_AGE) {
            remove(e.path());
        }
    }
    for dir in [root.join(MODELS_DIR), root.clone()] {
        for e in files(dir) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if let Some((_, n)) = name.rsplit_once('#')
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
            {
                remove(e.path());
            }
        }
    }
    (removed, failed)
}

/// Downloads the net of `generation` into the directory `into` as a weights-only checkpoint
/// (checked as every checkpoint is when it is loaded).
///
/// # Errors
/// Store errors; [`DistributedError::Layout`] if the generation is missing or not a packed net.
pub fn download_net(store: &Store, generation: u64, into: &Path) -> Result<(), DistributedError> {
    let key = model_key(generation);
    let bytes = store.get(&key)?.ok_or_else(|| layout(store, format!("{key} is missing")))?;
    let (manifest, model) =
        unpack_net(&bytes).ok_or_else(|| layout(store, format!("{key} is not a packed net")))?;
    std::fs::create_dir_all(into)
        .map_err(|source| CheckpointError::Io { path: into.to_path_buf(), source })?;
    for (name, bytes) in [(checkpoint::MODEL_FILE, model), (checkpoint::MANIFEST, manifest)] {
        let path = into.join(name);
        std::fs::write(&path, bytes).map_err(|source| CheckpointError::Io { path, source })?;
    }
    Ok(())
}

/// Watches `models/latest` with conditional GETs.
#[derive(Clone, Debug, Default)]
pub struct LatestWatch {
    e_tag: Option<String>,
    generation: Option<u64>,
}

impl LatestWatch {
    /// The newest generation if it changed since the last call (the first call reports any).
    ///
    /// # Errors
    /// Store errors; [`DistributedError::Layout`] for a malformed `latest`.
    pub fn poll(&mut self, store: &Store) -> Result<Option<u64>, DistributedError> {
        match store.get_if_changed(LATEST_KEY, self.e_tag.as_deref())? {
            Fetched::Missing | Fetched::NotModified => Ok(None),
            Fetched::Changed { bytes, e_tag } => {
                let generation = parse_latest(&bytes).ok_or_else(|| {
                    layout(store, format!("{LATEST_KEY} does not hold a generation number"))
                })?;
                self.e_tag = e_tag;
                if self.generation == Some(generation) {
                    return Ok(None);
                }
                self.generation = Some(generation);
                Ok(Some(generation))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_keys_round_trip_and_sort_by_sequence() {
        let k = shard_key(0xdead_beef, 42);
        assert_eq!(k, "shards/00000000deadbeef/000000000042.npz");
        assert_eq!(parse_shard_key(&k), Some((0xdead_beef, 42)));
        assert!(shard_key(1, 9) < shard_key(1, 10));
        for bad in ["shards/x/000000000001.npz", "shards/00000000deadbeef/1.npz", "models/latest"] {
            assert_eq!(parse_shard_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_packed_net_unpacks_and_a_damaged_one_is_refused() {
        let packed = pack_net(b"manifest", b"weights!");
        assert_eq!(unpack_net(&packed), Some((&b"manifest"[..], &b"weights!"[..])));
        assert_eq!(unpack_net(&packed[..12]), None);
        assert_eq!(unpack_net(&packed[..20]), None, "shorter than its manifest");
        assert_eq!(unpack_net(b"not a net at all"), None);
    }

    #[test]
    fn the_cursor_survives_counters_and_text() {
        let mut c = ShardCursor::default();
        c.consume(7, 0);
        c.consume(7, 3);
        c.consume(7, 1);
        c.consume(u64::MAX, 5);
        assert_eq!((c.next(7), c.next(u64::MAX), c.next(1)), (4, 6, 0));
        let mut counters = BTreeMap::new();
        counters.insert("iteration".to_string(), 3);
        c.to_counters(&mut counters);
        assert_eq!(ShardCursor::from_counters(&counters), c);
        assert_eq!(ShardCursor::from_text(&c.to_text()), Some(c));
        assert_eq!(ShardCursor::from_text("zz 1\n"), None);
    }

    #[test]
    fn pending_shards_are_those_after_the_cursor() {
        let dir = std::env::temp_dir().join(format!("xqz-pending-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        for (w, seq) in [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)] {
            store.put_new(&shard_key(w, seq), vec![0; 3]).unwrap();
        }
        store.put_new("shards/not-a-worker/000000000001.npz", vec![]).unwrap();
        store.put_new(&format!("{}/stray.txt", worker_dir_key(1)), vec![]).unwrap();
        let mut cursor = ShardCursor::default();
        let all = pending_shards(&store, &cursor).unwrap();
        let keys: Vec<(u64, u64)> = all.shards.iter().map(|p| (p.worker, p.seq)).collect();
        // In rounds, one shard of each worker at a time, each worker's in sequence order.
        assert_eq!(keys, [(1, 0), (2, 0), (1, 1), (2, 1), (1, 2)]);
        cursor.consume(1, 0);
        let rest: Vec<(u64, u64)> = pending_shards(&store, &cursor)
            .unwrap()
            .shards
            .iter()
            .map(|p| (p.worker, p.seq))
            .collect();
        assert_eq!(rest, [(1, 1), (2, 0), (1, 2), (2, 1)]);
        cursor.consume(1, 1);
        cursor.consume(2, 1);
        let rest: Vec<(u64, u64)> = pending_shards(&store, &cursor)
            .unwrap()
            .shards
            .iter()
            .map(|p| (p.worker, p.seq))
            .collect();
        assert_eq!(rest, [(1, 2)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn objects_that_are_not_shards_are_named_and_left_alone() {
        let base = std::env::temp_dir().join(format!("xqz-stray-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("store");
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        store.put_new(&shard_key(1, 0), vec![0; 3]).unwrap();
        let stray = [
            "shards/DEADBEEF00000028/000000000000.npz",
            "shards/deadbeef00000029/0.npz",
            "shards/0000000000000001/000000000000.npz.extra",
            "shards/0000000000000001/000000000001.npz.extra",
            "shards/000000000000001/000000000000.npz",
            "shards/0000000000000001/00000000001.npz",
        ];
        for key in stray {
            store.put_new(key, vec![1]).unwrap();
        }
        // A link at the top of `shards/` to a file outside the store.
        let outside = base.join("outside.txt");
        std::fs::write(&outside, b"secret").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("shards/x.npz")).unwrap();
        let mut cursor = ShardCursor::default();
        let listed = pending_shards(&store, &cursor).unwrap();
        let keys: Vec<&str> = listed.shards.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, [shard_key(1, 0)]);
        let mut named: Vec<&str> = listed.skipped.iter().map(|(k, _)| k.as_str()).collect();
        named.sort();
        let mut want: Vec<&str> = stray.iter().copied().chain(["shards/x.npz"]).collect();
        want.sort();
        assert_eq!(named, want, "{:?}", listed.skipped);
        for (key, reason) in &listed.skipped {
            assert_eq!(
                reason,
                "not a shard's name (shards/<16 lower-case hex digits>/<12 digits>.npz): \
                         left alone",
                "{key}"
            );
        }
        // Named again, word for word (the trainer tells each once), after the cursor moved
        // too; nothing deleted, even with the shards consumed.
        cursor.consume(1, 0);
        delete_consumed(&store, &cursor).unwrap();
        let again = pending_shards(&store, &cursor).unwrap();
        assert!(again.shards.is_empty(), "{:?}", again.shards);
        let mut again_sorted = again.skipped.clone();
        again_sorted.sort();
        let mut first = listed.skipped.clone();
        first.sort();
        assert_eq!(again_sorted, first);
        for key in stray {
            assert_eq!(store.get(key).unwrap().unwrap(), [1], "{key}");
        }
        assert!(!dir.join(shard_key(1, 0)).exists());
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_gap_holds_a_worker_back_until_two_shards_follow_it_and_a_far_one_never_passes() {
        let dir = std::env::temp_dir().join(format!("xqz-gaps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        let far = 999_999_999_999;
        for (w, seq) in [(3, 0), (3, 1), (3, far), (4, 0), (4, 2), (5, 0), (5, 2), (5, 3)]
            .into_iter()
            .chain([(6, 0), (6, 2 + MAX_SHARD_GAP), (6, 3 + MAX_SHARD_GAP)])
        {
            store.put_new(&shard_key(w, seq), vec![0; 3]).unwrap();
        }
        let listed = |cursor: &ShardCursor| {
            let p = pending_shards(&store, cursor).unwrap();
            let mut shards: Vec<(u64, u64, u64)> =
                p.shards.iter().map(|p| (p.worker, p.seq, p.gap)).collect();
            shards.sort();
            (shards, p.skipped)
        };
        let mut cursor = ShardCursor::default();
        let (shards, skipped) = listed(&cursor);
        // Worker 3's stray shard far ahead is refused; worker 4's shard after its gap waits (no
        // shard after it yet); worker 5 went on after its gap (2 and 3): passed; worker 6's gap
        // is too wide to pass even so.
        assert_eq!(
            shards,
            [(3, 0, 0), (3, 1, 0), (4, 0, 0), (5, 0, 0), (5, 2, 1), (5, 3, 0), (6, 0, 0)]
        );
        let names: Vec<&str> = skipped.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [shard_key(3, far), shard_key(4, 2), shard_key(6, 2 + MAX_SHARD_GAP)],
            "{skipped:?}"
        );
        assert!(skipped[0].1.contains("refused") && skipped[1].1.contains("shard 1 missing"));
        for (w, seq, _) in &shards {
            cursor.consume(*w, *seq);
        }
        assert_eq!((cursor.next(3), cursor.next(4), cursor.next(5), cursor.next(6)), (2, 1, 4, 1));
        // Worker 3's real shards after its cursor and worker 4's missing one come: read in
        // order; the stray shard is still refused.
        store.put_new(&shard_key(3, 2), vec![0; 3]).unwrap();
        store.put_new(&shard_key(4, 1), vec![0; 3]).unwrap();
        let (shards, skipped) = listed(&cursor);
        assert_eq!(shards, [(3, 2, 0), (4, 1, 0), (4, 2, 0)]);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_generation_is_published_once_and_whole() {
        let dir = std::env::temp_dir().join(format!("xqz-publish-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.join("store").to_str().unwrap(), &[]).unwrap();
        let config =
            xiangqi_nn::NetConfig { blocks: 1, filters: 8, ..xiangqi_nn::NetConfig::default() };
        let device = xiangqi_nn::cpu_device();
        let first = Net::new::<xiangqi::Game>(&config, &device);
        let second = Net::new::<xiangqi::Game>(&config, &device);
        assert_eq!(publish_net(&store, 3, &first).unwrap(), Published::New);
        assert_eq!(latest_generation(&store).unwrap(), Some(3));
        // Published again (a resumed trainer): the first net stays, whole and loadable.
        assert_eq!(publish_net(&store, 3, &second).unwrap(), Published::Existing);
        let into = dir.join("net");
        download_net(&store, 3, &into).unwrap();
        checkpoint::load_net(&into, Some(&config), &device).unwrap();
        let published = std::fs::read(into.join(checkpoint::MODEL_FILE)).unwrap();
        let files = checkpoint::weights_only_files(&first).unwrap();
        let (_, first_model) = files.iter().find(|(n, _)| *n == checkpoint::MODEL_FILE).unwrap();
        assert_eq!(published.len(), first_model.len());
        // A damaged object is refused by the checksum of its manifest.
        let mut bytes = store.get(&model_key(3)).unwrap().unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        store.put(&model_key(4), bytes).unwrap();
        download_net(&store, 4, &dir.join("bad")).unwrap();
        let e = checkpoint::load_net(&dir.join("bad"), None, &device).unwrap_err().to_string();
        assert!(e.contains("corrupted"), "{e}");
        assert!(
            download_net(&store, 5, &dir.join("none")).unwrap_err().to_string().contains("missing")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_store_has_one_owner() {
        let dir = std::env::temp_dir().join(format!("xqz-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        claim(&store, 11, true).unwrap();
        claim(&store, 11, false).unwrap();
        let e = claim(&store, 12, false).unwrap_err().to_string();
        assert!(e.contains("another run") && e.contains("11"), "{e}");
        store.put(LATEST_KEY, b"0\n".to_vec()).unwrap();
        let e = claim(&store, 11, true).unwrap_err().to_string();
        assert!(e.contains("already holds the nets"), "{e}");
        assert_eq!(latest_generation(&store).unwrap(), Some(0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn idle_workers_with_empty_folders_are_forgotten_and_start_again_above_their_old_cursor() {
        let mut c = ShardCursor::default();
        for (w, seq, it) in [(1, 4, 2), (2, 0, 5), (3, 9, 1), (LOCAL_SELFPLAY_WORKER, 1, 1)] {
            c.consume(w, seq);
            c.seen_in(w, it);
        }
        // Its text and counters keep the last iteration that read each worker.
        assert_eq!(ShardCursor::from_text(&c.to_text()), Some(c.clone()));
        let mut counters = BTreeMap::new();
        c.to_counters(&mut counters);
        assert_eq!(ShardCursor::from_counters(&counters), c);
        // An earlier version's line (no iteration) still reads; three numbers do not.
        assert_eq!(ShardCursor::from_text("0000000000000001 5\n").unwrap().last_seen(1), None);
        assert_eq!(ShardCursor::from_text("0000000000000001 5 2 7\n"), None);
        // At iteration 5 with 3 iterations of grace: workers 1 (read in 2) and 3 (in 1) are
        // idle, but worker 3's folder still holds an object; worker 2 was read in 5, and the
        // trainer's own shards are never forgotten.
        let mut asked = Vec::new();
        let forgotten = c
            .forget_idle(5, 3, |w| {
                asked.push(w);
                Ok::<bool, ()>(w == 3)
            })
            .unwrap();
        assert_eq!((forgotten, asked), (vec![1], vec![1, 3]));
        assert!(!c.knows(1) && c.knows(2) && c.knows(3) && c.knows(LOCAL_SELFPLAY_WORKER));
        assert_eq!(c.forget_idle(9, 0, |_| Ok::<bool, ()>(false)).unwrap(), Vec::<u64>::new());
        // A worker the cursor does not know starts at 0, or at its lowest shard once the one
        // after it is there too; a known worker at its cursor.
        assert_eq!(c.first_expected(1, &[]), 0);
        assert_eq!(c.first_expected(1, &[0, 1]), 0);
        assert_eq!(c.first_expected(1, &[5000]), 0);
        assert_eq!(c.first_expected(1, &[5000, 5002]), 0);
        assert_eq!(c.first_expected(1, &[5000, 5001]), 5000);
        assert_eq!(c.first_expected(3, &[5000, 5001]), 10);
        // A checkpoint of an earlier version: no last-seen iteration, counted from now.
        let mut old = ShardCursor::from_text("0000000000000007 3\n").unwrap();
        assert!(old.forget_idle(10, 2, |_| Ok::<bool, ()>(false)).unwrap().is_empty());
        assert_eq!(old.last_seen(7), Some(10));
        assert_eq!(old.forget_idle(12, 2, |_| Ok::<bool, ()>(false)).unwrap(), vec![7]);
    }

    #[test]
    fn a_forgotten_worker_that_comes_back_far_ahead_is_read_from_its_next_shard() {
        let dir = std::env::temp_dir().join(format!("xqz-forgotten-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        let mut cursor = ShardCursor::default();
        cursor.consume(8, 4999);
        cursor.seen_in(8, 1);
        // Its shards were consumed and deleted; it is forgotten after 3 idle iterations.
        assert_eq!(cursor.forget_idle(4, 3, |_| Ok::<bool, ()>(false)).unwrap(), [8]);
        store.put_new(&shard_key(8, 5000), vec![0; 3]).unwrap();
        let p = pending_shards(&store, &cursor).unwrap();
        assert!(p.shards.is_empty(), "one shard alone waits: {p:?}");
        store.put_new(&shard_key(8, 5001), vec![0; 3]).unwrap();
        let p = pending_shards(&store, &cursor).unwrap();
        let got: Vec<(u64, u64, u64)> = p.shards.iter().map(|s| (s.worker, s.seq, s.gap)).collect();
        assert_eq!(got, [(8, 5000, 0), (8, 5001, 0)], "{:?}", p.skipped);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_newest_nets_are_kept_and_staging_leftovers_removed() {
        let dir = std::env::temp_dir().join(format!("xqz-prune-nets-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
        for g in [0, 1, 2, 3, 5, 9] {
            store.put_new(&model_key(g), vec![1]).unwrap();
        }
        store.put_new("models/notes.txt", vec![1]).unwrap();
        // latest = 5 (a resume from an older checkpoint): 9 stays, and with 3 kept 3 and 5.
        assert_eq!(prune_nets(&store, 5, 3).unwrap(), [0, 1, 2]);
        let left: Vec<String> = store.list("models").unwrap().into_iter().map(|e| e.key).collect();
        assert_eq!(left, [model_key(3), model_key(5), model_key(9), "models/notes.txt".into()]);
        assert_eq!(prune_nets(&store, 9, 1).unwrap(), [3, 5]);
        assert_eq!(parse_model_key("models/000000000009.net"), Some(9));
        for bad in
            ["models/9.net", "models/latest", "models/00000000000x.net", "x/000000000009.net"]
        {
            assert_eq!(parse_model_key(bad), None, "{bad}");
        }
        // Leftovers: an old staged file and object_store's NAME#N beside the trainer's keys go;
        // a fresh staged file (a worker mid-put) and other names stay.
        let staging = dir.join(xiangqi_store::STAGING_DIR);
        std::fs::create_dir_all(&staging).unwrap();
        let old = staging.join("1-2-3.part");
        std::fs::write(&old, b"x").unwrap();
        let hours_ago = std::time::SystemTime::now() - 2 * STAGING_LEFTOVER_AGE;
        std::fs::File::options().write(true).open(&old).unwrap().set_modified(hours_ago).unwrap();
        let fresh = staging.join("4-5-6.part");
        std::fs::write(&fresh, b"x").unwrap();
        let stray = [
            dir.join("models/000000000004.net#1"),
            dir.join("models/latest#12"),
            dir.join("run.toml#3"),
        ];
        for p in &stray {
            std::fs::write(p, b"x").unwrap();
        }
        std::fs::write(dir.join("models/a#b"), b"x").unwrap();
        let (mut removed, failed) = clean_staging(&store);
        removed.sort();
        let mut expected = vec![old.clone()];
        expected.extend(stray.iter().cloned());
        expected.sort();
        assert_eq!((removed, failed), (expected, vec![]));
        assert!(fresh.exists() && dir.join("models/a#b").exists() && !old.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
