//! Training batches: samples laid out as the network wants them, with their targets
//! ([`TrainBatch`]), and the targets of the auxiliary heads ([`AuxiliaryTargets`]). The loss
//! they feed is described in [`crate::train`].

use xiangqi::env::{InvalidPieceCode, PlaneInputs};
use xiangqi_search::{Encoding, GameEnv};

use crate::error::NnError;
use crate::model::{MOVES_LEFT_SCALE, WDL};

/// The targets of the auxiliary heads for one sample (see the [loss](crate::train));
/// `None` where the sample has none (the loss then ignores that head for it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AuxiliaryTargets<'a> {
    /// The opponent's reply: the next position's search policy as `(policy index, probability)`
    /// pairs, indexed in the opponent's frame (the next position's side to move).
    pub opponent_policy: Option<&'a [(u16, f32)]>,
    /// The short-term value: win, draw, loss probabilities for the side to move (summing to 1).
    pub short_term_value: Option<[f32; 3]>,
    /// Plies left until the game's end (≥ 0).
    pub moves_left: Option<f32>,
}

/// A batch of training samples laid out as the network wants them.
///
/// Per sample: its input planes (the encoding's planes · 90 floats), its policy target (a distribution over
/// the `POLICY_SIZE` actions, all zero for a sample without a full search), its WDL target
/// (win, draw, loss for the side to move; one-hot for a game result) and whether its search was
/// a full one.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainBatch {
    pub(crate) encoding: Encoding,
    pub(crate) planes: Vec<f32>,
    pub(crate) policy: Vec<f32>,
    pub(crate) wdl: Vec<f32>,
    pub(crate) full: Vec<f32>,
    /// 1 for the sample's legal actions, 0 for the others, `[B, POLICY_SIZE]`.
    pub(crate) legal: Vec<f32>,
    /// Each sample's weight in the value loss, `[B]`.
    pub(crate) value_weight: Vec<f32>,
    /// The opponent-reply targets, `[B, POLICY_SIZE]`; empty until a sample has one (the rows
    /// of the samples before it are then zeros).
    pub(crate) opponent: Vec<f32>,
    /// 1 for a sample with an opponent-reply target, `[B]`.
    pub(crate) opponent_weight: Vec<f32>,
    /// The short-term WDL targets, `[B, 3]` (zeros where there is none).
    pub(crate) short_term: Vec<f32>,
    /// 1 for a sample with a short-term value target, `[B]`.
    pub(crate) short_term_weight: Vec<f32>,
    /// Plies left / [`MOVES_LEFT_SCALE`], `[B]` (0 where there is no target).
    pub(crate) moves_left: Vec<f32>,
    /// 1 for a sample with a moves-left target, `[B]`.
    pub(crate) moves_left_weight: Vec<f32>,
}

impl TrainBatch {
    /// An empty batch of samples of the game `G` (`TrainBatch::new::<xiangqi::Game>()`).
    pub fn new<G: GameEnv>() -> TrainBatch {
        TrainBatch::for_encoding(Encoding::of::<G>(), 0)
    }

    /// An empty batch of samples of the game `G` with room for `n` samples.
    pub fn with_capacity<G: GameEnv>(n: usize) -> TrainBatch {
        TrainBatch::for_encoding(Encoding::of::<G>(), n)
    }

    /// An empty batch of samples of a game's `encoding`, given as a value, with room for `n`
    /// samples.
    pub fn for_encoding(encoding: Encoding, n: usize) -> TrainBatch {
        TrainBatch {
            encoding,
            planes: Vec::with_capacity(n * encoding.input_size()),
            policy: Vec::with_capacity(n * encoding.policy_size),
            wdl: Vec::with_capacity(n * WDL),
            full: Vec::with_capacity(n),
            legal: Vec::with_capacity(n * encoding.policy_size),
            value_weight: Vec::with_capacity(n),
            opponent: Vec::new(),
            opponent_weight: Vec::with_capacity(n),
            short_term: Vec::with_capacity(n * WDL),
            short_term_weight: Vec::with_capacity(n),
            moves_left: Vec::with_capacity(n),
            moves_left_weight: Vec::with_capacity(n),
        }
    }

    /// The game encoding of the samples.
    pub fn encoding(&self) -> &Encoding {
        &self.encoding
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.full.len()
    }

    /// Whether the batch holds no sample.
    pub fn is_empty(&self) -> bool {
        self.full.is_empty()
    }

    /// Removes every sample, keeping the allocations.
    pub fn clear(&mut self) {
        self.planes.clear();
        self.policy.clear();
        self.wdl.clear();
        self.full.clear();
        self.legal.clear();
        self.value_weight.clear();
        self.opponent.clear();
        self.opponent_weight.clear();
        self.short_term.clear();
        self.short_term_weight.clear();
        self.moves_left.clear();
        self.moves_left_weight.clear();
    }

    /// Adds a sample from encoded planes and a dense policy target.
    ///
    /// # Panics
    /// If `planes.len()` is not the encoding's input size or `policy.len() != POLICY_SIZE`.
    pub fn push(&mut self, planes: &[f32], policy: &[f32], wdl: [f32; 3], full_search: bool) {
        let (input_size, policy_size) = (self.encoding.input_size(), self.encoding.policy_size);
        assert_eq!(
            planes.len(),
            input_size,
            "TrainBatch::push: planes must hold the encoding's input size"
        );
        assert_eq!(policy.len(), policy_size, "TrainBatch::push: policy must hold POLICY_SIZE");
        self.planes.extend_from_slice(planes);
        self.policy.extend_from_slice(policy);
        self.wdl.extend_from_slice(&wdl);
        self.full.push(if full_search { 1.0 } else { 0.0 });
        self.legal.resize(self.legal.len() + policy_size, 1.0);
        self.value_weight.push(1.0);
        self.push_auxiliary(&AuxiliaryTargets::default());
    }

    /// Adds a sample as a replay shard stores it: the compact plane inputs and a sparse policy
    /// target of `(policy index, probability)` pairs.
    ///
    /// # Errors
    /// [`InvalidPieceCode`] if the board holds a code above 14 (nothing is added).
    ///
    /// # Panics
    /// If a policy index is `>= POLICY_SIZE`.
    pub fn push_compact(
        &mut self,
        inputs: &PlaneInputs,
        policy: &[(u16, f32)],
        wdl: [f32; 3],
        full_search: bool,
    ) -> Result<(), InvalidPieceCode> {
        self.push_weighted(inputs, policy, wdl, full_search, 1.0)
    }

    /// [`TrainBatch::push_compact`] with the sample's weight in the value loss (0 leaves its
    /// value head untaught, as for a game cut off at its length cap). `policy` must list every
    /// legal move of the position (with probability 0 where the search gave none): those are
    /// the actions the masked policy softmax runs over.
    ///
    /// # Errors
    /// [`InvalidPieceCode`] if the board holds a code above 14 (nothing is added).
    ///
    /// # Panics
    /// If a policy index is `>= POLICY_SIZE`.
    pub fn push_weighted(
        &mut self,
        inputs: &PlaneInputs,
        policy: &[(u16, f32)],
        wdl: [f32; 3],
        full_search: bool,
        value_weight: f32,
    ) -> Result<(), InvalidPieceCode> {
        let aux = AuxiliaryTargets::default();
        self.push_with_auxiliary(inputs, policy, wdl, full_search, value_weight, &aux)
    }

    /// [`TrainBatch::push_weighted`] with the sample's targets of the auxiliary heads (those
    /// `None` teach that head nothing for this sample).
    ///
    /// # Errors
    /// [`InvalidPieceCode`] if the board holds a code above 14 (nothing is added).
    ///
    /// # Panics
    /// If a policy index (of `policy` or of the opponent's) is `>= POLICY_SIZE`.
    pub fn push_with_auxiliary(
        &mut self,
        inputs: &PlaneInputs,
        policy: &[(u16, f32)],
        wdl: [f32; 3],
        full_search: bool,
        value_weight: f32,
        aux: &AuxiliaryTargets<'_>,
    ) -> Result<(), InvalidPieceCode> {
        let start = self.planes.len();
        self.planes.resize(start + self.encoding.input_size(), 0.0);
        if let Err(e) = self.encoding.encode_inputs(inputs, &mut self.planes[start..]) {
            self.planes.truncate(start);
            return Err(e);
        }
        let start = self.policy.len();
        self.policy.resize(start + self.encoding.policy_size, 0.0);
        self.legal.resize(start + self.encoding.policy_size, 0.0);
        for &(i, p) in policy {
            self.policy[start + usize::from(i)] = p;
            self.legal[start + usize::from(i)] = 1.0;
        }
        self.wdl.extend_from_slice(&wdl);
        self.full.push(if full_search { 1.0 } else { 0.0 });
        self.value_weight.push(value_weight);
        self.push_auxiliary(aux);
        Ok(())
    }

    /// Appends `other`'s samples after this batch's own, in order: the batch is then what
    /// pushing them here one by one would have made.
    ///
    /// # Errors
    /// [`NnError::Batch`] if `other`'s samples are of another game or encoding (nothing is
    /// added).
    pub fn append(&mut self, other: &TrainBatch) -> Result<(), NnError> {
        if other.encoding != self.encoding {
            return Err(NnError::Batch(format!(
                "appending samples of {} (encoding {}) to a batch of {} (encoding {})",
                other.encoding.game,
                other.encoding.version,
                self.encoding.game,
                self.encoding.version
            )));
        }
        let (n, size) = (self.len(), self.encoding.policy_size);
        if !other.opponent.is_empty() || !self.opponent.is_empty() {
            // Zero rows for the samples of either part before its first target.
            self.opponent.resize(n * size, 0.0);
            self.opponent.extend_from_slice(&other.opponent);
            self.opponent.resize((n + other.len()) * size, 0.0);
        }
        self.planes.extend_from_slice(&other.planes);
        self.policy.extend_from_slice(&other.policy);
        self.wdl.extend_from_slice(&other.wdl);
        self.full.extend_from_slice(&other.full);
        self.legal.extend_from_slice(&other.legal);
        self.value_weight.extend_from_slice(&other.value_weight);
        self.opponent_weight.extend_from_slice(&other.opponent_weight);
        self.short_term.extend_from_slice(&other.short_term);
        self.short_term_weight.extend_from_slice(&other.short_term_weight);
        self.moves_left.extend_from_slice(&other.moves_left);
        self.moves_left_weight.extend_from_slice(&other.moves_left_weight);
        Ok(())
    }

    /// Records the auxiliary targets of the sample just added (its other parts are in already).
    fn push_auxiliary(&mut self, aux: &AuxiliaryTargets<'_>) {
        let n = self.full.len();
        let size = self.encoding.policy_size;
        if aux.opponent_policy.is_some() || !self.opponent.is_empty() {
            // Zero rows for the samples before the first one with a target, and for this one.
            self.opponent.resize(n * size, 0.0);
        }
        if let Some(reply) = aux.opponent_policy {
            let row = &mut self.opponent[(n - 1) * size..];
            for &(i, p) in reply {
                row[usize::from(i)] = p;
            }
        }
        self.opponent_weight.push(if aux.opponent_policy.is_some() { 1.0 } else { 0.0 });
        self.short_term.extend_from_slice(&aux.short_term_value.unwrap_or([0.0; 3]));
        self.short_term_weight.push(if aux.short_term_value.is_some() { 1.0 } else { 0.0 });
        let plies = aux.moves_left.filter(|m| m.is_finite());
        self.moves_left.push(plies.map_or(0.0, |m| m.max(0.0) / MOVES_LEFT_SCALE));
        self.moves_left_weight.push(if plies.is_some() { 1.0 } else { 0.0 });
    }

    /// The planes of all samples, `[B, planes, 10, 9]` flattened.
    pub fn planes(&self) -> &[f32] {
        &self.planes
    }

    /// The policy targets, `[B, POLICY_SIZE]` flattened.
    pub fn policy(&self) -> &[f32] {
        &self.policy
    }

    /// The WDL targets, `[B, 3]` flattened.
    pub fn wdl(&self) -> &[f32] {
        &self.wdl
    }

    /// 1 for each sample's legal actions (those listed in its policy target), 0 for the
    /// others, `[B, POLICY_SIZE]` flattened; all 1 for a sample added by [`TrainBatch::push`].
    pub fn legal(&self) -> &[f32] {
        &self.legal
    }

    /// Each sample's weight in the value loss, `[B]`.
    pub fn value_weights(&self) -> &[f32] {
        &self.value_weight
    }

    /// The opponent-reply targets, `[B, POLICY_SIZE]` flattened (all zero for a sample without
    /// one; empty when no sample has one), and 1 or 0 per sample for whether it has one.
    pub fn opponent_policy(&self) -> (&[f32], &[f32]) {
        (&self.opponent, &self.opponent_weight)
    }

    /// The short-term WDL targets, `[B, 3]` flattened (zeros where there is none), and 1 or 0
    /// per sample for whether it has one.
    pub fn short_term_value(&self) -> (&[f32], &[f32]) {
        (&self.short_term, &self.short_term_weight)
    }

    /// The moves-left targets in the head's units (plies left / [`MOVES_LEFT_SCALE`]), `[B]`,
    /// and 1 or 0 per sample for whether it has one.
    pub fn moves_left(&self) -> (&[f32], &[f32]) {
        (&self.moves_left, &self.moves_left_weight)
    }

    /// Whether sample `i` comes from a full search (carries a policy target).
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn is_full_search(&self, i: usize) -> bool {
        self.full[i] > 0.0
    }

    /// Number of samples whose search was a full one.
    pub fn full_searches(&self) -> usize {
        self.full.iter().filter(|&&f| f > 0.0).count()
    }
}
