//! A game's encoding as plain data ([`Encoding`]).

use std::fmt;

use xiangqi::env::{InvalidPieceCode, PlaneInputs};
use xiangqi::{Color, Game, Move, janggi};

use super::{GameEnv, GameKind};

/// A game's encoding as plain data, for the code that handles planes and policies without
/// knowing the game's type (the trainer's batches and mirror augmentation, checkpoints, the
/// network's shapes): which game, the encoding version, the sizes, and the game's functions on
/// planes and policies.
#[derive(Clone, Copy)]
pub struct Encoding {
    /// The game.
    pub game: GameKind,
    /// The encoding version ([`NetView::ENCODING_VERSION`](super::NetView::ENCODING_VERSION)).
    pub version: u32,
    /// Input planes per position.
    pub planes: usize,
    /// Policy indices.
    pub policy_size: usize,
    /// [`NetView::planes_from_inputs`](super::NetView::planes_from_inputs).
    pub planes_from_inputs: fn(&PlaneInputs, &mut [f32]) -> Result<(), InvalidPieceCode>,
    /// [`NetView::mirror_planes`](super::NetView::mirror_planes).
    pub mirror_planes: fn(&mut [f32]),
    /// [`NetView::mirror_policy_in_place`](super::NetView::mirror_policy_in_place).
    pub mirror_policy: fn(&mut [f32]),
    /// [`NetView::move_to_index`](super::NetView::move_to_index).
    pub move_to_index: fn(Move, Color) -> Option<usize>,
}

impl Encoding {
    /// The encoding of game `G`.
    pub fn of<G: GameEnv>() -> Encoding {
        Encoding {
            game: G::KIND,
            version: G::ENCODING_VERSION,
            planes: G::PLANES,
            policy_size: G::POLICY_SIZE,
            planes_from_inputs: G::planes_from_inputs,
            mirror_planes: G::mirror_planes,
            mirror_policy: G::mirror_policy_in_place,
            move_to_index: G::move_to_index,
        }
    }

    /// The encoding of a game named by its kind.
    pub fn of_kind(game: GameKind) -> Encoding {
        match game {
            GameKind::Xiangqi => Encoding::of::<Game>(),
            GameKind::Janggi => Encoding::of::<janggi::Game>(),
        }
    }

    /// Floats of one encoded position: `planes · 90`.
    pub fn input_size(&self) -> usize {
        self.planes * 90
    }
}

impl fmt::Debug for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoding")
            .field("game", &self.game)
            .field("version", &self.version)
            .field("planes", &self.planes)
            .field("policy_size", &self.policy_size)
            .finish()
    }
}

impl PartialEq for Encoding {
    fn eq(&self, other: &Self) -> bool {
        (self.game, self.version, self.planes, self.policy_size)
            == (other.game, other.version, other.planes, other.policy_size)
    }
}
