//! A game's encoding as plain data ([`Encoding`]).

use std::fmt;

use xiangqi::env::{InvalidPieceCode, PlaneInputs};
use xiangqi::{Color, Game, Move, janggi};

use super::{GameEnv, GameKind, NetView};

/// A game's encoding as plain data, for the code that handles planes and policies without
/// knowing the game's type (the trainer's batches and mirror augmentation, checkpoints, the
/// network's shapes): which game, the encoding version, the sizes, and the game's functions on
/// planes and policies.
///
/// A net takes either the game's base planes (encoding version 1) or the base planes followed
/// by the game's tactical feature planes ([`NetView::FEATURE_PLANES`](super::NetView), version
/// 2; [`Encoding::with_features`]).
#[derive(Clone, Copy)]
pub struct Encoding {
    /// The game.
    pub game: GameKind,
    /// The encoding version ([`NetView::ENCODING_VERSION`](super::NetView::ENCODING_VERSION)).
    pub version: u32,
    /// Input planes per position: the base planes, then the feature planes if `features`.
    pub planes: usize,
    /// The game's base planes ([`NetView::PLANES`](super::NetView::PLANES)).
    pub base_planes: usize,
    /// Whether the net takes the tactical feature planes after the base planes.
    pub features: bool,
    /// Policy indices.
    pub policy_size: usize,
    /// [`NetView::planes_from_inputs`](super::NetView::planes_from_inputs).
    pub planes_from_inputs: fn(&PlaneInputs, &mut [f32]) -> Result<(), InvalidPieceCode>,
    /// [`NetView::features_from_inputs`](super::NetView::features_from_inputs).
    pub features_from_inputs: fn(&PlaneInputs, &mut [f32]) -> Result<(), InvalidPieceCode>,
    /// The game's feature planes and the version of an encoding with them.
    feature_planes: usize,
    features_version: u32,
    base_version: u32,
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
            base_planes: G::PLANES,
            features: false,
            policy_size: G::POLICY_SIZE,
            planes_from_inputs: G::planes_from_inputs,
            features_from_inputs: G::features_from_inputs,
            feature_planes: G::FEATURE_PLANES,
            features_version: G::FEATURES_ENCODING_VERSION,
            base_version: G::ENCODING_VERSION,
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

    /// The encoding of a net of `game` that takes the feature planes if `features`.
    ///
    /// # Errors
    /// `features` for a game without feature planes (both games have them now; a game added
    /// later may not).
    pub fn for_net(game: GameKind, features: bool) -> Result<Encoding, String> {
        Encoding::of_kind(game).with_features(features)
    }

    /// This encoding with the feature planes taken (`features`) or left out.
    ///
    /// # Errors
    /// `features` for a game without feature planes.
    pub fn with_features(self, features: bool) -> Result<Encoding, String> {
        if features && self.feature_planes == 0 {
            return Err(format!("{} has no tactical input features (input_features)", self.game));
        }
        let (planes, version) = if features {
            (self.base_planes + self.feature_planes, self.features_version)
        } else {
            (self.base_planes, self.base_version)
        };
        Ok(Encoding { planes, version, features, ..self })
    }

    /// The encoding a checkpoint of `game` with encoding `version` was written in, or `None` if
    /// this build has no such version for the game.
    pub fn of_version(game: GameKind, version: u32) -> Option<Encoding> {
        let base = Encoding::of_kind(game);
        if version == base.base_version {
            Some(base)
        } else if base.feature_planes > 0 && version == base.features_version {
            base.with_features(true).ok()
        } else {
            None
        }
    }

    /// Floats of one encoded position: `planes · 90`.
    pub fn input_size(&self) -> usize {
        self.planes * 90
    }

    /// Writes the input planes of `game`'s current position into `out` (`input_size` floats,
    /// every one of them written, so `out` need not be zeroed first): the base planes, then
    /// the feature planes if the encoding takes them. `G` must be the
    /// encoding's game (the evaluator checks that before it encodes).
    ///
    /// # Panics
    /// If `out.len() != self.input_size()`.
    pub fn encode<G: NetView>(&self, game: &G, out: &mut [f32]) {
        assert_eq!(
            out.len(),
            self.input_size(),
            "Encoding::encode: out must hold input_size floats"
        );
        let (base, features) = out.split_at_mut(self.base_planes * 90);
        game.encode_planes(base);
        if self.features {
            game.encode_features(features);
        }
    }

    /// Rebuilds the input planes of a shard sample into `out` (`input_size` floats), as
    /// [`Encoding::encode`] writes them for a live game.
    ///
    /// # Errors
    /// A board code that is no piece.
    ///
    /// # Panics
    /// If `out.len() != self.input_size()`.
    pub fn encode_inputs(
        &self,
        inputs: &PlaneInputs,
        out: &mut [f32],
    ) -> Result<(), InvalidPieceCode> {
        assert_eq!(
            out.len(),
            self.input_size(),
            "Encoding::encode_inputs: out must hold input_size floats"
        );
        let (base, features) = out.split_at_mut(self.base_planes * 90);
        (self.planes_from_inputs)(inputs, base)?;
        if self.features {
            (self.features_from_inputs)(inputs, features)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoding")
            .field("game", &self.game)
            .field("version", &self.version)
            .field("planes", &self.planes)
            .field("features", &self.features)
            .field("policy_size", &self.policy_size)
            .finish()
    }
}

impl PartialEq for Encoding {
    fn eq(&self, other: &Self) -> bool {
        (self.game, self.version, self.planes, self.features, self.policy_size)
            == (other.game, other.version, other.planes, other.features, other.policy_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_encodings_name_their_version_and_size() {
        let base = Encoding::of_kind(GameKind::Xiangqi);
        assert_eq!((base.version, base.planes, base.features), (1, 16, false));
        let with = Encoding::for_net(GameKind::Xiangqi, true).unwrap();
        assert_eq!((with.version, with.planes, with.features), (2, 16 + 7, true));
        assert_ne!(base, with);
        assert_eq!(with.with_features(false).unwrap(), base);
        assert_eq!(Encoding::of_version(GameKind::Xiangqi, 2), Some(with));
        assert_eq!(Encoding::of_version(GameKind::Xiangqi, 1), Some(base));
        assert_eq!(Encoding::of_version(GameKind::Xiangqi, 3), None);
        // Janggi's feature planes: the same seven after its 16 base planes, version 2.
        let janggi = Encoding::for_net(GameKind::Janggi, true).unwrap();
        assert_eq!((janggi.version, janggi.planes, janggi.features), (2, 16 + 7, true));
        assert_eq!(Encoding::of_version(GameKind::Janggi, 2), Some(janggi));
        assert_eq!(Encoding::of_version(GameKind::Janggi, 3), None);
    }

    #[test]
    fn a_live_janggi_game_and_its_shard_inputs_encode_alike() {
        let enc = Encoding::for_net(GameKind::Janggi, true).unwrap();
        let mut game = janggi::Game::new(janggi::Position::start(janggi::Rules::Site));
        for ply in 0..60 {
            let mut live = vec![f32::NAN; enc.input_size()];
            enc.encode(&game, &mut live);
            let mut rebuilt = vec![f32::NAN; enc.input_size()];
            enc.encode_inputs(&janggi::env::plane_inputs(&game), &mut rebuilt).unwrap();
            assert_eq!(live, rebuilt, "ply {ply}");
            // The first feature plane (the mover's attacks) is not empty in a real game.
            assert!(live[16 * 90..17 * 90].contains(&1.0), "ply {ply}");
            let moves = game.legal_moves();
            if game.is_over() || moves.is_empty() {
                break;
            }
            game.play(moves[(ply * 7 + 3) % moves.len()]).unwrap();
        }
    }

    #[test]
    fn a_live_game_and_its_shard_inputs_encode_alike() {
        let enc = Encoding::for_net(GameKind::Xiangqi, true).unwrap();
        let mut game = Game::new(xiangqi::Position::start(), xiangqi::RuleSet::Asian);
        for ply in 0..60 {
            let mut live = vec![f32::NAN; enc.input_size()];
            enc.encode(&game, &mut live);
            let mut rebuilt = vec![f32::NAN; enc.input_size()];
            enc.encode_inputs(&game.plane_inputs(), &mut rebuilt).unwrap();
            assert_eq!(live, rebuilt, "ply {ply}");
            // The base planes are those of the version-1 encoding.
            let mut base = vec![0.0; 16 * 90];
            game.encode_planes(&mut base);
            assert_eq!(live[..16 * 90], base[..]);
            let moves = game.position().legal_moves();
            if moves.is_empty() {
                break;
            }
            let m = moves[(ply * 7) % moves.len()];
            game.play(m).unwrap();
        }
    }
}
