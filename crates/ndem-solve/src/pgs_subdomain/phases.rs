//! The phased coupling of the subdomains' sweeps
//! ([`SubdomainSweep::Phased`](super::SubdomainSweep::Phased)): the
//! subdomains are coloured so that no two of a colour move a common body,
//! and each subdomain's owned contacts are cut into one part per colour.
//! In phase `p` the subdomains of colour `p` sweep the contacts on bodies
//! they share with others, every subdomain sweeps a share of its other
//! contacts, and the shared bodies' velocities are made one again before
//! the next phase. Within a phase no two subdomains move the same body, so
//! a sweep is one Gauss-Seidel pass over all subdomains' contacts in one
//! order: the phases in turn, and in each the subdomains' parts side by
//! side.

use crate::problem::ContactProblem;

/// Per body of `problem`, `count` columns: 1 in column `index` (this
/// subdomain's) where one of its owned contacts moves the body, to be
/// summed over the subdomains that hold the body.
pub(super) fn touches(
    problem: &ContactProblem,
    (owned, movable): (&[bool], &[bool]),
    (index, count): (usize, usize),
) -> Vec<f64> {
    let mut touch = vec![0.0; problem.body_count() * count];
    for (record, _) in problem.records().iter().zip(owned).filter(|(_, o)| **o) {
        for b in record.bodies.map(|b| b as usize) {
            if movable[b] {
                touch[b * count + index] = 1.0;
            }
        }
    }
    touch
}

/// This subdomain's row and column of the `count × count` graph whose
/// edges join subdomains moving a common body, from the summed
/// [`touches`] of the `shared` bodies; summed over the subdomains it is
/// the whole graph.
pub(super) fn edges(touch: &[f64], shared: &[u32], (index, count): (usize, usize)) -> Vec<f64> {
    let mut adjacent = vec![0.0; count * count];
    for &b in shared {
        let row = &touch[b as usize * count..][..count];
        if row[index] > 0.0 {
            for (j, _) in row
                .iter()
                .enumerate()
                .filter(|(j, t)| *j != index && **t > 0.0)
            {
                adjacent[index * count + j] = 1.0;
                adjacent[j * count + index] = 1.0;
            }
        }
    }
    adjacent
}

/// Subdomain `index`'s colour and the number of colours: a greedy
/// colouring of the graph `adjacent` (nonzero entries are edges) in
/// subdomain order, the same in every subdomain.
pub(super) fn colour(adjacent: &[f64], (index, count): (usize, usize)) -> (usize, usize) {
    let mut colours = vec![0usize; count];
    for i in 0..count {
        let taken = |c: usize| (0..i).any(|j| adjacent[i * count + j] > 0.0 && colours[j] == c);
        colours[i] = (0..).find(|&c| !taken(c)).unwrap_or(0);
    }
    let used = colours.iter().max().map_or(1, |&c| c + 1);
    (colours[index], used)
}

/// Rearranges `order` (this subdomain's owned contacts, in sweep order)
/// into `colours` parts and sets `bounds` to their `colours + 1` bounds:
/// part `colour` holds the contacts for which `on_shared` holds, first,
/// and every part a share of the others (in their order) so that the
/// parts hold about as many contacts each.
pub(super) fn cut(
    order: &mut Vec<u32>,
    on_shared: impl Fn(usize) -> bool,
    (colour, colours): (usize, usize),
    bounds: &mut Vec<usize>,
    scratch: &mut Vec<u32>,
) {
    scratch.clear();
    scratch.extend(order.iter().filter(|&&c| on_shared(c as usize)));
    let edge = scratch.len();
    scratch.extend(order.iter().filter(|&&c| !on_shared(c as usize)));
    let (edge, inner) = scratch.split_at(edge);
    let share = order.len().div_ceil(colours.max(1));
    let mut rest = inner.iter();
    order.clear();
    bounds.clear();
    bounds.push(0);
    for p in 0..colours {
        let mut room = share;
        if p == colour {
            order.extend_from_slice(edge);
            room = room.saturating_sub(edge.len());
        }
        if p + 1 == colours {
            order.extend(rest.by_ref());
        } else {
            order.extend(rest.by_ref().take(room));
        }
        bounds.push(order.len());
    }
}

#[cfg(test)]
mod tests {
    use super::{colour, cut};

    #[test]
    fn neighbouring_subdomains_get_different_colours() {
        // a chain 0 - 1 - 2 and a lone 3: two colours
        let mut adjacent = vec![0.0; 16];
        for (i, j) in [(0, 1), (1, 2)] {
            adjacent[i * 4 + j] = 1.0;
            adjacent[j * 4 + i] = 1.0;
        }
        let colours: Vec<_> = (0..4).map(|i| colour(&adjacent, (i, 4))).collect();
        assert_eq!(colours, [(0, 2), (1, 2), (0, 2), (0, 2)]);
        // four boxes meeting at a corner: four colours
        let all: Vec<f64> = (0..16)
            .map(|k| if k % 5 == 0 { 0.0 } else { 1.0 })
            .collect();
        assert_eq!(colour(&all, (3, 4)), (3, 4));
    }

    #[test]
    fn the_shared_contacts_go_to_the_own_colour_and_the_rest_fills_the_parts() {
        let mut order: Vec<u32> = (0..10).collect();
        let (mut bounds, mut scratch) = (Vec::new(), Vec::new());
        cut(
            &mut order,
            |c| c == 3 || c == 7,
            (1, 2),
            &mut bounds,
            &mut scratch,
        );
        assert_eq!(bounds, [0, 5, 10]);
        assert_eq!(order, [0, 1, 2, 4, 5, 3, 7, 6, 8, 9]);
        // one colour: the order as it was, shared contacts first
        let mut order: Vec<u32> = (0..4).collect();
        cut(&mut order, |c| c == 2, (0, 1), &mut bounds, &mut scratch);
        assert_eq!((order, bounds), (vec![2, 0, 1, 3], vec![0, 4]));
    }
}
