//! Lookup tables computed at compile time (`const fn`), indexed by square index `rank * 9 + file`.
//!
//! Nothing here allocates or initialises lazily: every table is a `static` built by the compiler.

/// Up to eight destination points, each with the point that must be empty (a horse's leg or an
/// elephant's eye) for the step to be possible.
#[derive(Clone, Copy)]
pub(crate) struct BlockedSteps {
    pub(crate) len: u8,
    pub(crate) block: [u8; 8],
    pub(crate) to: [u8; 8],
}

/// Up to four plain one-step destinations.
#[derive(Clone, Copy)]
pub(crate) struct Steps {
    pub(crate) len: u8,
    pub(crate) to: [u8; 4],
}

/// The points along one orthogonal direction, nearest first.
#[derive(Clone, Copy)]
pub(crate) struct Ray {
    pub(crate) len: u8,
    pub(crate) sq: [u8; 9],
}

impl Ray {
    #[inline]
    pub(crate) fn squares(&self) -> &[u8] {
        &self.sq[..self.len as usize]
    }
}

impl Steps {
    #[inline]
    pub(crate) fn squares(&self) -> &[u8] {
        &self.to[..self.len as usize]
    }
}

/// Directions of rays: towards rank 9, towards rank 0, towards file i, towards file a.
pub(crate) const NORTH: usize = 0;
pub(crate) const SOUTH: usize = 1;

const fn on_board(file: i32, rank: i32) -> bool {
    file >= 0 && file < 9 && rank >= 0 && rank < 10
}

const fn sq(file: i32, rank: i32) -> u8 {
    (rank * 9 + file) as u8
}

const fn in_palace(file: i32, rank: i32, color: usize) -> bool {
    file >= 3 && file <= 5 && if color == 0 { rank <= 2 } else { rank >= 7 }
}

const fn own_side(rank: i32, color: usize) -> bool {
    if color == 0 { rank <= 4 } else { rank >= 5 }
}

const DIRS: [(i32, i32); 4] = [(0, 1), (0, -1), (1, 0), (-1, 0)];
const DIAGONALS: [(i32, i32); 4] = [(1, 1), (-1, 1), (1, -1), (-1, -1)];

const fn build_rays() -> [[Ray; 4]; 90] {
    let mut out = [[Ray { len: 0, sq: [0; 9] }; 4]; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        let mut d = 0;
        while d < 4 {
            let (df, dr) = DIRS[d];
            let (mut x, mut y) = (f + df, r + dr);
            let mut ray = Ray { len: 0, sq: [0; 9] };
            while on_board(x, y) {
                ray.sq[ray.len as usize] = sq(x, y);
                ray.len += 1;
                x += df;
                y += dr;
            }
            out[s][d] = ray;
            d += 1;
        }
        s += 1;
    }
    out
}

/// Horse moves from a square: eight targets, each guarded by the orthogonally adjacent leg.
const fn build_horse_moves() -> [BlockedSteps; 90] {
    let mut out = [BlockedSteps { len: 0, block: [0; 8], to: [0; 8] }; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        let mut d = 0;
        while d < 4 {
            let (df, dr) = DIRS[d];
            let (lf, lr) = (f + df, r + dr);
            if on_board(lf, lr) {
                // Two outward diagonal continuations of the orthogonal step.
                let mut side = -1;
                while side <= 1 {
                    let (tf, tr) =
                        if df == 0 { (lf + side, lr + dr) } else { (lf + df, lr + side) };
                    if on_board(tf, tr) {
                        let e = &mut out[s];
                        e.block[e.len as usize] = sq(lf, lr);
                        e.to[e.len as usize] = sq(tf, tr);
                        e.len += 1;
                    }
                    side += 2;
                }
            }
            d += 1;
        }
        s += 1;
    }
    out
}

/// Squares from which a horse attacks a square, each with the leg that must be empty.
/// The leg is always diagonally adjacent to the attacked square.
const fn build_horse_attacks() -> [BlockedSteps; 90] {
    let mut out = [BlockedSteps { len: 0, block: [0; 8], to: [0; 8] }; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        let mut d = 0;
        while d < 4 {
            let (df, dr) = DIAGONALS[d];
            let (lf, lr) = (f + df, r + dr);
            if on_board(lf, lr) {
                // The horse sits one step further out from the leg, orthogonally.
                let cands = [(lf + df, lr), (lf, lr + dr)];
                let mut k = 0;
                while k < 2 {
                    let (hf, hr) = cands[k];
                    if on_board(hf, hr) {
                        let e = &mut out[s];
                        e.block[e.len as usize] = sq(lf, lr);
                        e.to[e.len as usize] = sq(hf, hr);
                        e.len += 1;
                    }
                    k += 1;
                }
            }
            d += 1;
        }
        s += 1;
    }
    out
}

/// Elephant moves per colour: two points diagonally, guarded by the eye, never across the river.
const fn build_elephant_moves() -> [[BlockedSteps; 90]; 2] {
    let mut out = [[BlockedSteps { len: 0, block: [0; 8], to: [0; 8] }; 90]; 2];
    let mut c = 0;
    while c < 2 {
        let mut s = 0;
        while s < 90 {
            let (f, r) = ((s % 9) as i32, (s / 9) as i32);
            let mut d = 0;
            while d < 4 {
                let (df, dr) = DIAGONALS[d];
                let (tf, tr) = (f + 2 * df, r + 2 * dr);
                if on_board(tf, tr) && own_side(tr, c) {
                    let e = &mut out[c][s];
                    e.block[e.len as usize] = sq(f + df, r + dr);
                    e.to[e.len as usize] = sq(tf, tr);
                    e.len += 1;
                }
                d += 1;
            }
            s += 1;
        }
        c += 1;
    }
    out
}

/// One-step moves per colour that must end inside the palace: orthogonal (general) or diagonal
/// (advisor).
const fn build_palace_steps(diagonal: bool) -> [[Steps; 90]; 2] {
    let mut out = [[Steps { len: 0, to: [0; 4] }; 90]; 2];
    let mut c = 0;
    while c < 2 {
        let mut s = 0;
        while s < 90 {
            let (f, r) = ((s % 9) as i32, (s / 9) as i32);
            let mut d = 0;
            while d < 4 {
                let (df, dr) = if diagonal { DIAGONALS[d] } else { DIRS[d] };
                let (tf, tr) = (f + df, r + dr);
                if on_board(tf, tr) && in_palace(tf, tr, c) {
                    let e = &mut out[c][s];
                    e.to[e.len as usize] = sq(tf, tr);
                    e.len += 1;
                }
                d += 1;
            }
            s += 1;
        }
        c += 1;
    }
    out
}

/// Soldier moves per colour: forward, and sideways once across the river.
const fn build_soldier_moves() -> [[Steps; 90]; 2] {
    let mut out = [[Steps { len: 0, to: [0; 4] }; 90]; 2];
    let mut c = 0;
    while c < 2 {
        let fwd = if c == 0 { 1 } else { -1 };
        let mut s = 0;
        while s < 90 {
            let (f, r) = ((s % 9) as i32, (s / 9) as i32);
            let e = &mut out[c][s];
            if on_board(f, r + fwd) {
                e.to[e.len as usize] = sq(f, r + fwd);
                e.len += 1;
            }
            if !own_side(r, c) {
                if on_board(f - 1, r) {
                    e.to[e.len as usize] = sq(f - 1, r);
                    e.len += 1;
                }
                if on_board(f + 1, r) {
                    e.to[e.len as usize] = sq(f + 1, r);
                    e.len += 1;
                }
            }
            s += 1;
        }
        c += 1;
    }
    out
}

/// Orthogonal rays from every square, indexed `[square][direction]`.
pub(crate) static RAYS: [[Ray; 4]; 90] = build_rays();
/// Horse moves from every square.
pub(crate) static HORSE_MOVES: [BlockedSteps; 90] = build_horse_moves();
/// Horse positions that attack every square.
pub(crate) static HORSE_ATTACKS: [BlockedSteps; 90] = build_horse_attacks();
/// Elephant moves, `[color][square]`.
pub(crate) static ELEPHANT_MOVES: [[BlockedSteps; 90]; 2] = build_elephant_moves();
/// Advisor moves, `[color][square]`.
pub(crate) static ADVISOR_MOVES: [[Steps; 90]; 2] = build_palace_steps(true);
/// General moves, `[color][square]`.
pub(crate) static GENERAL_MOVES: [[Steps; 90]; 2] = build_palace_steps(false);
/// Soldier moves, `[color][square]`.
pub(crate) static SOLDIER_MOVES: [[Steps; 90]; 2] = build_soldier_moves();

const fn splitmix64(state: u64) -> (u64, u64) {
    let s = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (s, z ^ (z >> 31))
}

const fn build_zobrist() -> ([[u64; 90]; 14], u64) {
    let mut keys = [[0u64; 90]; 14];
    let mut state = 0x5851_F42D_4C95_7F2D_u64;
    let mut p = 0;
    while p < 14 {
        let mut s = 0;
        while s < 90 {
            let (next, v) = splitmix64(state);
            state = next;
            keys[p][s] = v;
            s += 1;
        }
        p += 1;
    }
    let (_, side) = splitmix64(state);
    (keys, side)
}

const ZOBRIST: ([[u64; 90]; 14], u64) = build_zobrist();
/// Zobrist keys `[piece index][square]`.
pub(crate) static ZOBRIST_PIECES: [[u64; 90]; 14] = ZOBRIST.0;
/// Zobrist key XOR-ed in when Black is to move.
pub(crate) const ZOBRIST_BLACK: u64 = ZOBRIST.1;

/// Whether `s` is a point an elephant of `color` can ever stand on.
pub(crate) const fn elephant_point(s: u8, color: usize) -> bool {
    let (f, r) = ((s % 9) as i32, (s / 9) as i32);
    let rr = if color == 0 { r } else { 9 - r };
    (rr == 0 || rr == 4) && (f == 2 || f == 6) || rr == 2 && (f == 0 || f == 4 || f == 8)
}

/// Whether `s` is a point an advisor of `color` can ever stand on.
pub(crate) const fn advisor_point(s: u8, color: usize) -> bool {
    let (f, r) = ((s % 9) as i32, (s / 9) as i32);
    let rr = if color == 0 { r } else { 9 - r };
    (rr == 0 || rr == 2) && (f == 3 || f == 5) || rr == 1 && f == 4
}

/// Whether `s` is a point a soldier of `color` can ever stand on.
pub(crate) const fn soldier_point(s: u8, color: usize) -> bool {
    let (f, r) = ((s % 9) as i32, (s / 9) as i32);
    let rr = if color == 0 { r } else { 9 - r };
    rr >= 5 || (rr == 3 || rr == 4) && f % 2 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corner_horse_has_two_moves_and_centre_horse_eight() {
        assert_eq!(HORSE_MOVES[0].len, 2);
        assert_eq!(HORSE_MOVES[4 * 9 + 4].len, 8);
    }

    #[test]
    fn horse_attack_table_is_the_inverse_of_horse_moves() {
        for (from, m) in HORSE_MOVES.iter().enumerate() {
            for k in 0..m.len as usize {
                let (leg, to) = (m.block[k], m.to[k] as usize);
                let a = &HORSE_ATTACKS[to];
                let found =
                    (0..a.len as usize).any(|j| a.to[j] as usize == from && a.block[j] == leg);
                assert!(found, "horse {from} -> {to} via {leg} missing from the attack table");
            }
        }
        let total_moves: usize = HORSE_MOVES.iter().map(|m| m.len as usize).sum();
        let total_attacks: usize = HORSE_ATTACKS.iter().map(|m| m.len as usize).sum();
        assert_eq!(total_moves, total_attacks);
    }

    #[test]
    fn elephant_and_advisor_points_have_seven_and_five_per_side() {
        for c in 0..2 {
            assert_eq!((0..90u8).filter(|&s| elephant_point(s, c)).count(), 7);
            assert_eq!((0..90u8).filter(|&s| advisor_point(s, c)).count(), 5);
            // 5 files x 2 ranks before the river, 45 points beyond it.
            assert_eq!((0..90u8).filter(|&s| soldier_point(s, c)).count(), 55);
        }
    }

    #[test]
    fn zobrist_keys_are_distinct() {
        let mut all: Vec<u64> = ZOBRIST_PIECES.iter().flatten().copied().collect();
        all.push(ZOBRIST_BLACK);
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
