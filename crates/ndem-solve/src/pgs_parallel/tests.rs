use super::*;
use crate::{Contact, ContactRows, FrictionSet};
use ndem_math::{ContactFrame, ContactJacobian, InverseMass, Mat3, Vec3};
use proptest::prelude::*;

/// A problem over `bodies` bodies (those in `fixed` static) with the
/// given contacts, one normal row each: the colouring reads only the
/// graph.
fn graph_problem(bodies: usize, fixed: &[bool], pairs: &[[u32; 2]]) -> ContactProblem {
    let inverse_mass: Vec<InverseMass> = (0..bodies)
        .map(|b| InverseMass {
            inv_mass: if fixed[b] { 0.0 } else { 1.0 },
            inv_inertia: if fixed[b] {
                Mat3::zeros()
            } else {
                Mat3::identity()
            },
        })
        .collect();
    let mut problem = ContactProblem::new(
        inverse_mass,
        vec![Velocity6::ZERO; bodies],
        ContactRows::Normal,
        FrictionSet::Box,
        1e-3,
    )
    .unwrap();
    let frame = ContactFrame::from_unit_normal(Vec3::z());
    let jacobian = ContactJacobian::new(frame, &Vec3::zeros(), &Vec3::zeros(), 1.0);
    for &p in pairs {
        problem
            .push_contact(Contact::builder(p, jacobian).build().unwrap())
            .unwrap();
    }
    problem
}

/// What the parallel sweep relies on: `order` is the blocks'
/// contacts, colour after colour, every contact once, and no two
/// blocks of a colour share a moving body.
fn check(colouring: &Colouring, problem: &ContactProblem) -> Result<(), TestCaseError> {
    let n = problem.contacts().len();
    let from_blocks: Vec<u32> = colouring.blocks.iter().flat_map(|&(s, e)| s..e).collect();
    prop_assert_eq!(&from_blocks, &colouring.order);
    let mut seen = vec![false; n];
    for &c in &colouring.order {
        prop_assert!(!seen[c as usize], "contact {} twice", c);
        seen[c as usize] = true;
    }
    prop_assert_eq!(colouring.order.len(), n);
    prop_assert!(colouring.colours() <= MAX_COLOURS + 1);
    let inv = problem.inverse_mass();
    let mut owner = vec![usize::MAX; problem.body_count()];
    let colours = colouring.colours();
    for k in 0..colours {
        owner.fill(usize::MAX);
        let range = colouring.colour_starts[k]..colouring.colour_starts[k + 1];
        for (block, &(s, e)) in colouring.blocks[range].iter().enumerate() {
            for c in &problem.records()[s as usize..e as usize] {
                for b in c.bodies.map(|b| b as usize) {
                    if inv.at(b).inv_mass > 0.0 {
                        prop_assert!(
                            owner[b] == usize::MAX || owner[b] == block,
                            "colour {}: body {} in blocks {} and {}",
                            k,
                            b,
                            owner[b],
                            block
                        );
                        owner[b] = block;
                    }
                }
            }
        }
    }
    // what a block waits for: exactly the earlier blocks it shares a
    // moving body with (a pair, checked body set against body set)
    let moving = |(s, e): (u32, u32)| -> std::collections::BTreeSet<u32> {
        problem.records()[s as usize..e as usize]
            .iter()
            .flat_map(|c| c.bodies)
            .filter(|&b| inv.at(b as usize).inv_mass > 0.0)
            .collect()
    };
    let sets: Vec<_> = colouring.blocks.iter().map(|&b| moving(b)).collect();
    prop_assert_eq!(colouring.earlier_conflicts.len(), sets.len());
    for (p, mask) in colouring.earlier_conflicts.iter().enumerate() {
        for (q, earlier) in sets.iter().enumerate() {
            let shares = q < p && !earlier.is_disjoint(&sets[p]);
            prop_assert_eq!(
                mask.contains(q),
                shares,
                "block {} waits for {}: {} (shares a body: {})",
                p,
                q,
                mask.contains(q),
                shares
            );
        }
    }
    Ok(())
}

/// The blocks' colours as a body-by-body colouring forms them: each block's free colours are those that no moving
/// body of its contacts got from an earlier block (greedy, then
/// balanced over the greedy's colour count). The adjacency-based build
/// must give these colours, so that the sweep order did not change.
fn colours_body_by_body(problem: &ContactProblem, count: usize) -> Vec<u8> {
    let n = problem.contacts().len();
    let moving: Vec<bool> = problem.inverse_mass().movable().collect();
    let block_bodies = |k: usize| {
        problem.records()[n * k / count..n * (k + 1) / count]
            .iter()
            .flat_map(|c| c.bodies)
            .map(|b| b as usize)
            .filter(|&b| moving[b])
    };
    // per body the colours its earlier blocks took, as sorted sets (an
    // oracle independent of the sweep's bit sets)
    type Colours = std::collections::BTreeSet<usize>;
    let assign = |choose: &mut dyn FnMut(&Colours) -> usize| {
        let mut used = vec![Colours::new(); problem.body_count()];
        let mut colour = Vec::new();
        for k in 0..count {
            let taken: Colours = block_bodies(k).flat_map(|b| used[b].clone()).collect();
            let free: Colours = (0..MAX_COLOURS).filter(|c| !taken.contains(c)).collect();
            let c = choose(&free);
            for b in block_bodies(k) {
                used[b].insert(c);
            }
            colour.push(c as u8);
        }
        colour
    };
    let greedy = assign(&mut |free| *free.first().expect("a free colour"));
    let greedy_count = greedy.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    if greedy_count <= 1 {
        return greedy;
    }
    let mut sizes = [0u32; MAX_COLOURS];
    assign(&mut |free| {
        let least = (0..greedy_count)
            .filter(|k| free.contains(k))
            .min_by_key(|&k| sizes[k]);
        let k = least.unwrap_or(*free.first().expect("a free colour"));
        sizes[k] += 1;
        k
    })
}

/// Contact graphs of every kind: bodies joined to index neighbours
/// (`reach` small, few colours) or to bodies anywhere (`reach` large,
/// up to one colour per block), static bodies among them.
fn arb_graph() -> impl Strategy<Value = (usize, Vec<bool>, Vec<[u32; 2]>)> {
    (200usize..3000, 1u32..3000, 2100usize..40_000, any::<u64>())
        .prop_flat_map(|(bodies, reach, contacts, seed)| {
            let fixed = proptest::collection::vec(proptest::bool::weighted(0.05), bodies);
            (Just(bodies), fixed, Just((reach, contacts, seed)))
        })
        .prop_map(|(bodies, fixed, (reach, contacts, seed))| {
            let mut rng = ndem_math::rng::Rng::new(seed);
            let mut pairs: Vec<[u32; 2]> = (0..contacts)
                .filter_map(|_| {
                    let a = (rng.next_u64() % bodies as u64) as u32;
                    let d = 1 + (rng.next_u64() % u64::from(reach)) as u32;
                    let b = (a + d) % bodies as u32;
                    (a != b).then_some([a.max(b), a.min(b)])
                })
                .collect();
            // the stepper's problems come in key order
            pairs.sort_unstable();
            (bodies, fixed, pairs)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn blocks_of_a_colour_share_no_moving_body((bodies, fixed, pairs) in arb_graph()) {
        let problem = graph_problem(bodies, &fixed, &pairs);
        let mut colouring = Colouring::default();
        colouring.build(&problem, DEFAULT_BLOCKS, 1);
        check(&colouring, &problem)?;
        let count = colouring.blocks.len();
        prop_assert_eq!(&colouring.colour, &colours_body_by_body(&problem, count));
        // rebuilt in the same scratch: the same colouring
        let (order, blocks) = (colouring.order.clone(), colouring.blocks.clone());
        colouring.build(&problem, DEFAULT_BLOCKS, 2);
        prop_assert_eq!(&order, &colouring.order);
        prop_assert_eq!(&blocks, &colouring.blocks);
    }

    /// A colouring built where another was (the scratch a solver hands
    /// on, which keeps a colouring built from the same input) is the
    /// colouring built fresh: after a problem whose contacts differ in
    /// one body, in whether one body moves, in the block count, or in
    /// all their bodies. The input gathered on 1-3 threads (the pairs
    /// in up to 5 parts of 8192 contacts): the change is seen in any
    /// part.
    #[test]
    fn a_reused_colouring_is_a_fresh_one(
        (bodies, fixed, pairs) in arb_graph(),
        change in 0usize..4,
        at in any::<proptest::sample::Index>(),
        threads in 1usize..4,
    ) {
        let problem = graph_problem(bodies, &fixed, &pairs);
        let (mut other_fixed, mut other_pairs) = (fixed.clone(), pairs.clone());
        let mut other_blocks = DEFAULT_BLOCKS;
        match change {
            0 => {
                let pair = &mut other_pairs[at.index(pairs.len())];
                pair[1] = (pair[1] + 1) % pair[0].max(1);
            }
            1 => {
                let b = pairs[at.index(pairs.len())][0] as usize;
                other_fixed[b] = !other_fixed[b];
            }
            2 => other_blocks = DEFAULT_BLOCKS / 2,
            // as many contacts, each joining index neighbours: another
            // graph, mostly another colouring
            _ => {
                let n = bodies as u32;
                for pair in &mut other_pairs {
                    *pair = [pair[0], (pair[0] + 1) % n];
                }
            }
        }
        let other = graph_problem(bodies, &other_fixed, &other_pairs);
        let parts = |c: &Colouring| {
            (
                c.order.clone(),
                c.blocks.clone(),
                c.colour_starts.clone(),
                c.earlier_conflicts.clone(),
                c.block_numbers.clone(),
            )
        };
        let mut fresh = Colouring::default();
        fresh.build(&problem, DEFAULT_BLOCKS, 1);
        let mut reused = Colouring::default();
        reused.build(&other, other_blocks, threads);
        reused.build(&problem, DEFAULT_BLOCKS, threads);
        prop_assert!(parts(&reused) == parts(&fresh));
        check(&reused, &problem)?;
    }

    /// The gathered input tells a problem whose contacts differ in one
    /// pair of moving bodies from the last one, wherever that contact
    /// falls among the threads' parts (1-3 threads, parts of at least
    /// 8192 contacts), and the same problem from itself.
    #[test]
    fn the_gather_sees_a_change_in_any_part(
        (bodies, fixed, pairs) in arb_graph(),
        at in any::<proptest::sample::Index>(),
        threads in 1usize..4,
    ) {
        let problem = graph_problem(bodies, &fixed, &pairs);
        let k = at.index(pairs.len());
        let mut other_pairs = pairs.clone();
        other_pairs[k][1] = (pairs[k][1] + 1) % pairs[k][0].max(1);
        let other = graph_problem(bodies, &fixed, &other_pairs);
        let moving = |pair: [u32; 2]| pair.map(|b| if fixed[b as usize] { NOT_MOVING } else { b });
        let mut input = ColouringInput::default();
        prop_assert!(!input.gather(&problem, DEFAULT_BLOCKS, threads), "a first gather");
        prop_assert!(input.gather(&problem, DEFAULT_BLOCKS, threads), "the same problem");
        let same = input.gather(&other, DEFAULT_BLOCKS, threads);
        prop_assert_eq!(same, moving(pairs[k]) == moving(other_pairs[k]), "contact {} of {}", k, pairs.len());
        let expected: Vec<[u32; 2]> = other_pairs.iter().map(|&p| moving(p)).collect();
        prop_assert!(input.pairs == expected);
    }

    /// Any block count a caller may set (`PgsSettings::colour_blocks`),
    /// on graphs large enough for 64 blocks: the same invariant, and
    /// as many blocks as asked for where the contacts allow.
    #[test]
    fn every_block_count_colours_soundly(
        (bodies, fixed, pairs) in arb_graph(),
        max_blocks in 1usize..=MAX_BLOCKS,
        copies in 1usize..4,
    ) {
        // the graph repeated on disjoint copies of its bodies: up to
        // 1.2·10⁵ contacts in key order
        let mut all = Vec::with_capacity(pairs.len() * copies);
        let mut all_fixed = Vec::with_capacity(bodies * copies);
        for k in 0..copies {
            let shift = (k * bodies) as u32;
            all.extend(pairs.iter().map(|[a, b]| [a + shift, b + shift]));
            all_fixed.extend_from_slice(&fixed);
        }
        let problem = graph_problem(bodies * copies, &all_fixed, &all);
        let mut colouring = Colouring::default();
        colouring.build(&problem, max_blocks, copies);
        check(&colouring, &problem)?;
        let count = colouring.blocks.len();
        prop_assert_eq!(&colouring.colour, &colours_body_by_body(&problem, count));
        let expected = (all.len() / BLOCK_MIN_CONTACTS).clamp(1, max_blocks);
        prop_assert_eq!(colouring.blocks.len(), expected);
    }
}

/// Runs `wait` on one thread while another, holding `guard`'s poison,
/// panics before it finishes the block `wait` waits for: `wait` must
/// give up (return `None`) and the scope resume the panic. The run is
/// owned by a detached thread, so that a wait that never ends fails
/// the test after a minute instead of hanging it.
fn a_panic_ends_the_wait<R: Sync + Send + 'static>(
    run: R,
    guard: impl Fn(&R) -> PoisonOnUnwind<'_> + Sync + Send + 'static,
    wait: impl Fn(&R) -> Option<usize> + Sync + Send + 'static,
) -> (Option<usize>, bool) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let waited = Mutex::new(None);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    let _unwinding = guard(&run);
                    panic!("a thread of the run fails before its block");
                });
                *lock(&waited) = Some(wait(&run));
            })
        }))
        .is_err();
        let waited = lock(&waited).take().expect("the wait returned");
        tx.send((waited, unwound)).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the waiting thread gave up within a minute")
}

#[test]
fn a_thread_that_unwinds_frees_the_waits_of_a_barrier_run() {
    // block 1 waits for block 0, which the panicking thread owns
    let (waited, unwound) = a_panic_ends_the_wait(
        BlockProgress::default(),
        |progress| progress.poison_on_unwind(),
        |progress| progress.next_ready(set(&[1]), &[set(&[]), set(&[0])]),
    );
    assert_eq!(waited, None);
    assert!(unwound, "the scope resumes the panic");
}

#[test]
fn a_thread_that_unwinds_frees_the_waits_of_a_run_without_barriers() {
    // block 1 waits for block 0's first sweep; block 0 for nothing
    let (waited, unwound) = a_panic_ends_the_wait(
        RunProgress::new(),
        |progress| progress.poison_on_unwind(),
        |progress| {
            let conflicts = ([set(&[]), set(&[0])], [set(&[1]), set(&[])]);
            progress.next_ready(set(&[1]), (&conflicts.0, &conflicts.1), 0)
        },
    );
    assert_eq!(waited, None);
    assert!(unwound, "the scope resumes the panic");
}

/// The set of block positions `members`.
fn set(members: &[usize]) -> BlockSet {
    members.iter().copied().collect()
}
