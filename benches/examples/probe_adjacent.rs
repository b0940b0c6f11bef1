#[path = "common/settled.rs"]
mod settled;
use settled::{bed_arguments, settled_packing};
fn main() {
    let (n, steps) = bed_arguments();
    let (_, problem) = settled_packing(n, steps, 25);
    let c: Vec<[u32; 2]> = problem.contacts().iter().map(|c| c.bodies).collect();
    let nc = c.len();
    let disjoint = |i: usize, j: usize| {
        let (a, b) = (c[i], c[j]);
        a[0] != b[0] && a[0] != b[1] && a[1] != b[0] && a[1] != b[1]
    };
    let adj = (0..nc - 1).filter(|&i| disjoint(i, i + 1)).count();
    // greedy: pair i,i+1 when disjoint
    let (mut i, mut paired) = (0, 0);
    while i + 1 < nc {
        if disjoint(i, i + 1) {
            paired += 2;
            i += 2
        } else {
            i += 1
        }
    }
    // lookahead window W: j disjoint from all of [i, j)
    for w in [2usize, 4, 8, 16] {
        let mut done = vec![false; nc];
        let (mut i, mut p) = (0, 0);
        while i < nc {
            if done[i] {
                i += 1;
                continue;
            }
            done[i] = true;
            let mut j = i + 1;
            let mut found = None;
            while j < nc && j <= i + w {
                if !done[j]
                    && (i..j)
                        .filter(|&k| !done[k] || k == i)
                        .all(|k| disjoint(k, j))
                {
                    found = Some(j);
                    break;
                }
                j += 1;
            }
            if let Some(j) = found {
                done[j] = true;
                p += 2;
            }
            i += 1;
        }
        println!("window {w}: {:.3} of contacts paired", p as f64 / nc as f64);
    }
    let same_a = (0..nc - 1).filter(|&i| c[i][0] == c[i + 1][0]).count();
    println!(
        "{nc} contacts: adjacent disjoint {:.3}, greedy paired {:.3}, same a {:.3}",
        adj as f64 / (nc - 1) as f64,
        paired as f64 / nc as f64,
        same_a as f64 / (nc - 1) as f64
    );
}
