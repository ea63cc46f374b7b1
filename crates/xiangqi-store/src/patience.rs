//! Waiting out transient failures: [`Patience`], and the loop that retries an operation as it
//! says.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::{Store, StoreError};

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

impl Store {
    /// Runs `attempt` until it works or fails for good, waiting out transient failures as the
    /// store's [`Patience`] says (none: the first failure is the answer).
    pub(crate) fn patiently<T>(
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
}

/// The wall clock as `HH:MM:SS` (UTC).
fn clock(t: SystemTime) -> String {
    let s = t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
