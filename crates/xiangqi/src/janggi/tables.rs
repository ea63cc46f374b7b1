//! Janggi's own lookup tables, computed at compile time (`const fn`) and indexed by square index
//! `rank * 9 + file`: the palace-diagonal lines, one step along a palace's lines (general and
//! guard), and the janggi elephant's (2, 3) jump with its two eyes. The orthogonal rays and the
//! horse tables are xiangqi's ([`crate::tables`]): the geometry is the same.

const fn on_board(f: i32, r: i32) -> bool {
    f >= 0 && f < 9 && r >= 0 && r < 10
}

const fn sq(f: i32, r: i32) -> u8 {
    (r * 9 + f) as u8
}

/// The lowest rank of the palace holding (f, r): 0 (Cho's), 7 (Han's), or -1 outside both.
pub(crate) const fn palace_base(f: i32, r: i32) -> i32 {
    if f < 3 || f > 5 {
        -1
    } else if r >= 0 && r <= 2 {
        0
    } else if r >= 7 && r <= 9 {
        7
    } else {
        -1
    }
}

/// Whether (f, r) is a corner or the centre of a palace: a point on the palace diagonals.
pub(crate) const fn on_palace_diagonal(f: i32, r: i32) -> bool {
    let base = palace_base(f, r);
    base >= 0 && (f == 4) == (r == base + 1)
}

/// The palace-diagonal rays from a point, nearest point first: from a corner one ray of two
/// points (the centre, then the opposite corner); from a centre four rays of one point (the
/// corners); none elsewhere.
#[derive(Clone, Copy)]
pub(crate) struct DiagRays {
    pub(crate) len: u8,
    pub(crate) ray_len: [u8; 4],
    pub(crate) sq: [[u8; 2]; 4],
}

impl DiagRays {
    /// Ray `k` (< `len`) as a slice, nearest point first.
    #[inline]
    pub(crate) fn ray(&self, k: usize) -> &[u8] {
        &self.sq[k][..self.ray_len[k] as usize]
    }
}

const fn build_diag_rays() -> [DiagRays; 90] {
    let mut out = [DiagRays { len: 0, ray_len: [0; 4], sq: [[0; 2]; 4] }; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        let base = palace_base(f, r);
        if base >= 0 {
            let e = &mut out[s];
            if f == 4 && r == base + 1 {
                let corners = [(3, base), (5, base), (3, base + 2), (5, base + 2)];
                let mut k = 0;
                while k < 4 {
                    e.sq[k][0] = sq(corners[k].0, corners[k].1);
                    e.ray_len[k] = 1;
                    k += 1;
                }
                e.len = 4;
            } else if f != 4 && r != base + 1 {
                e.sq[0] = [sq(4, base + 1), sq(8 - f, 2 * base + 2 - r)];
                e.ray_len[0] = 2;
                e.len = 1;
            }
        }
        s += 1;
    }
    out
}

/// Up to eight one-step destinations.
#[derive(Clone, Copy)]
pub(crate) struct Steps8 {
    pub(crate) len: u8,
    pub(crate) to: [u8; 8],
}

impl Steps8 {
    #[inline]
    pub(crate) fn squares(&self) -> &[u8] {
        &self.to[..self.len as usize]
    }
}

/// `[color][square]`: one step along the lines of `color`'s palace (orthogonally, or along a
/// diagonal between a corner and the centre); empty outside that palace.
const fn build_palace_steps() -> [[Steps8; 90]; 2] {
    let mut out = [[Steps8 { len: 0, to: [0; 8] }; 90]; 2];
    let diag = build_diag_rays();
    let mut c = 0;
    while c < 2 {
        let base = if c == 0 { 0 } else { 7 };
        let mut s = 0;
        while s < 90 {
            let (f, r) = ((s % 9) as i32, (s / 9) as i32);
            if palace_base(f, r) == base {
                let e = &mut out[c][s];
                let dirs = [(0, 1), (0, -1), (1, 0), (-1, 0)];
                let mut d = 0;
                while d < 4 {
                    let (x, y) = (f + dirs[d].0, r + dirs[d].1);
                    if palace_base(x, y) == base {
                        e.to[e.len as usize] = sq(x, y);
                        e.len += 1;
                    }
                    d += 1;
                }
                let mut k = 0;
                while k < diag[s].len as usize {
                    e.to[e.len as usize] = diag[s].sq[k][0];
                    e.len += 1;
                    k += 1;
                }
            }
            s += 1;
        }
        c += 1;
    }
    out
}

/// Elephant jumps: one point straight, then two diagonally outward. `to[i]` is reached when
/// both eyes, `eye1[i]` (the straight step) and `eye2[i]` (the first diagonal step), are empty.
#[derive(Clone, Copy)]
pub(crate) struct ElephantSteps {
    pub(crate) len: u8,
    pub(crate) eye1: [u8; 8],
    pub(crate) eye2: [u8; 8],
    pub(crate) to: [u8; 8],
}

/// `reverse == false`: the jumps from each point. `reverse == true`: the elephants that reach
/// each point (`to[i]` is then the elephant's point, with the eyes of that jump).
const fn build_elephant(reverse: bool) -> [ElephantSteps; 90] {
    let mut out = [ElephantSteps { len: 0, eye1: [0; 8], eye2: [0; 8], to: [0; 8] }; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        let dirs = [(0, 1), (0, -1), (1, 0), (-1, 0)];
        let mut d = 0;
        while d < 4 {
            let (df, dr) = dirs[d];
            let mut side = -1;
            while side <= 1 {
                // The perpendicular of the straight step, to one side or the other.
                let (pf, pr) = (dr * side, df * side);
                let (ef, er) =
                    if reverse { (f - 3 * df - 2 * pf, r - 3 * dr - 2 * pr) } else { (f, r) };
                let (tf, tr) = (ef + 3 * df + 2 * pf, er + 3 * dr + 2 * pr);
                if on_board(ef, er) && on_board(tf, tr) {
                    let e = &mut out[s];
                    e.eye1[e.len as usize] = sq(ef + df, er + dr);
                    e.eye2[e.len as usize] = sq(ef + 2 * df + pf, er + 2 * dr + pr);
                    e.to[e.len as usize] = if reverse { sq(ef, er) } else { sq(tf, tr) };
                    e.len += 1;
                }
                side += 2;
            }
            d += 1;
        }
        s += 1;
    }
    out
}

/// Palace-diagonal rays from every point.
pub(crate) static DIAG_RAYS: [DiagRays; 90] = build_diag_rays();
/// General and guard steps, `[color][square]`.
pub(crate) static PALACE_STEPS: [[Steps8; 90]; 2] = build_palace_steps();
/// Elephant jumps from every point.
pub(crate) static ELEPHANT_MOVES: [ElephantSteps; 90] = build_elephant(false);
/// Elephant points that attack every point.
pub(crate) static ELEPHANT_ATTACKS: [ElephantSteps; 90] = build_elephant(true);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palace_lines_have_the_expected_sizes() {
        // Centre: 4 orthogonal + 4 diagonal steps; corner: 2 + 1; side middle: 3 + 0.
        assert_eq!(PALACE_STEPS[0][13].len, 8);
        assert_eq!(PALACE_STEPS[0][3].len, 3);
        assert_eq!(PALACE_STEPS[0][4].len, 3);
        assert_eq!(PALACE_STEPS[1][76].len, 8);
        assert_eq!(PALACE_STEPS[0][76].len, 0);
        let diag_points = (0..90).filter(|&s| DIAG_RAYS[s].len > 0).count();
        assert_eq!(diag_points, 10);
    }

    #[test]
    fn elephant_attack_table_is_the_inverse_of_elephant_moves() {
        let mut n = 0;
        for (from, m) in ELEPHANT_MOVES.iter().enumerate() {
            for k in 0..m.len as usize {
                let a = &ELEPHANT_ATTACKS[m.to[k] as usize];
                assert!((0..a.len as usize).any(|j| a.to[j] as usize == from
                    && a.eye1[j] == m.eye1[k]
                    && a.eye2[j] == m.eye2[k]));
                n += 1;
            }
        }
        assert_eq!(n, 388);
        assert_eq!(ELEPHANT_ATTACKS.iter().map(|a| a.len as usize).sum::<usize>(), 388);
    }
}
