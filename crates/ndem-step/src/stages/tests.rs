use super::*;
use crate::BodyDesc;
use crate::BodyId;
use crate::MaterialId;
use ndem_collide::{CollisionSettings, CollisionWorld};

/// The verification column of `n` resting spheres on a floor
/// ([`crate::verification::column_world`]), one more sphere `gap`
/// above it falling at `speed`, and their detected contacts.
fn column(n: usize, gap: f64, speed: f64) -> (World, ContactSet, StepSettings) {
    let settings = StepSettings {
        margin: 0.001,
        ..StepSettings::default()
    };
    let mut w = crate::verification::column_world(n).unwrap();
    let r = 0.0065;
    let top = Vec3::new(0.0, 0.0, r + 2.0 * r * n as f64 + gap);
    let falling = Velocity6::new(Vec3::new(0.0, 0.0, -speed), Vec3::zeros());
    let ball = BodyDesc::sphere(r, MaterialId::from_index(0), top).unwrap();
    w.add_body(ball.with_velocity(falling)).unwrap();
    let mut sweep = Vec::new();
    w.sweep_distances(settings.dt, &mut sweep);
    let collision = CollisionSettings {
        margin: settings.margin,
        ..CollisionSettings::default()
    };
    let mut contacts = ContactSet::new();
    CollisionWorld::new(collision)
        .unwrap()
        .detect(&w.body_view(&sweep), &mut contacts)
        .unwrap();
    (w, contacts, settings)
}

/// The contact data on 1-4 threads with parts of one or more contacts
/// are those of one pass: the same solver contacts, overlap figure and
/// error, with contacts leaving the solve (two members of one host) in
/// any part, and with an overlap beyond its radius at any contact
/// (the lowest such contact's error, as one pass stops there).
#[test]
fn contact_data_in_parts_is_one_pass() {
    let (mut w, contacts, _) = column(12, 1e-4, 0.01);
    let n = contacts.len();
    assert!(n >= 12, "{n}");
    let run = |w: &World, contacts: &ContactSet, parts| {
        let mut out = vec![LEFT_OUT; 3];
        let r = contact_data_in_parts(w, contacts, Resolution::Reduced, (1, 0.0), &mut out, parts);
        let set = contacts.as_slice();
        let out: Vec<_> = (out.iter())
            .map(|&k| SolverContact::at(w, Resolution::Reduced, set, k))
            .map(|c| (c.set_index, c.bodies))
            .collect();
        (format!("{r:?}"), out)
    };
    let compare = |w: &World, contacts: &ContactSet| {
        let one = run(w, contacts, (1, 1));
        for threads in 1..5 {
            for min_part in [1, 2, 5] {
                assert_eq!(
                    run(w, contacts, (threads, min_part)),
                    one,
                    "{threads} {min_part}"
                );
            }
        }
        one
    };
    let all = compare(&w, &contacts);
    assert_eq!(all.1.len(), n);
    // the last spheres of the column in one host: their contacts leave
    let bodies = w.len();
    for m in [bodies - 3, bodies - 2] {
        w.attach(BodyId::from_index(m), BodyId::from_index(bodies - 4))
            .unwrap();
    }
    let reduced = compare(&w, &contacts);
    assert_eq!(reduced.1.len(), n - 2);
    assert!(reduced.1.iter().all(|c| c.0 != u32::MAX));
    // an overlap beyond its radius at contact k (and at k + 3)
    for k in [0, n / 2, n - 1] {
        let mut points = contacts.clone().into_vec();
        for j in [k, k + 3] {
            if let Some(p) = points.get_mut(j) {
                p.gap = -0.01;
            }
        }
        let broken = ContactSet::from_sorted(points);
        let failed = compare(&w, &broken);
        assert!(failed.0.contains("OverlapBeyondRadius"), "{}", failed.0);
    }
}

/// The table of combined materials gives the parameters of
/// `World::pair_properties` under `ContactParameters::new` bit for bit,
/// or the same error: three materials (one with a linear stiffness),
/// one pair overridden, the four contact laws (the per-material
/// linear law with pairs that cannot serve it), spheres and flat
/// surfaces, radii that do not combine, and a material a user made
/// invalid (its pairs are not tabled, so the field is named).
#[test]
fn the_material_table_gives_the_worlds_contact_parameters() {
    let soft = ndem_math::Material {
        youngs_modulus: 1e7,
        poisson_ratio: 0.3,
        friction: 0.2,
        linear_stiffness: Some(2e4),
        ..Default::default()
    };
    let rough = ndem_math::Material {
        friction: 0.9,
        restitution: 0.1,
        rolling_resistance: 0.05,
        damping: 1e-4,
        ..Default::default()
    };
    let mut w = World::new(
        vec![ndem_math::Material::default(), soft, rough],
        Vec3::new(0.0, 0.0, -9.81),
    )
    .unwrap();
    let override_ = ndem_math::PairOverride {
        friction: Some(0.45),
        effective_modulus: Some(3e8),
        ..Default::default()
    };
    w.set_pair(
        MaterialId::from_index(2),
        MaterialId::from_index(0),
        override_,
    )
    .unwrap();
    let radii = [0.0065, 0.002, 1.0, f64::INFINITY, 0.0, -1.0, f64::NAN];
    let laws = [
        ndem_math::ContactLaw::Hertz,
        ndem_math::ContactLaw::Linear { stiffness: 5e5 },
        ndem_math::ContactLaw::LinearPerMaterial,
        ndem_math::ContactLaw::Rigid,
    ];
    let check = |w: &World, settings: &StepSettings| {
        let table = MaterialPairs::of(w, settings);
        let mut compared = 0;
        for (a, b) in (0..3).flat_map(|a| (0..3).map(move |b| (a, b))) {
            for (&ra, &rb) in radii.iter().flat_map(|r| radii.iter().map(move |q| (r, q))) {
                let tabled = table.parameters((w, settings), (a, ra), (b, rb));
                let formed = w.pair_properties(a, ra, b, rb).and_then(|pair| {
                    let (law, dt) = (settings.contact_law, settings.dt);
                    Ok(ContactParameters::new(law, &pair, dt, &settings.spook)?)
                });
                // the same numbers bit for bit, or the same error
                // (`Debug` prints every field; a NaN radius equals
                // itself there)
                assert_eq!(
                    format!("{tabled:?}"),
                    format!("{formed:?}"),
                    "{a} {b} {ra} {rb}"
                );
                if let (Ok(x), Ok(y)) = (tabled, formed) {
                    let bits = |p: &ContactParameters| {
                        [
                            p.stiffness,
                            p.epsilon_n,
                            p.tau_n,
                            p.sigma_n,
                            p.upsilon_n,
                            p.sigma_t,
                            p.sigma_r,
                            p.friction,
                            p.rolling_arm,
                            p.restitution,
                        ]
                        .map(f64::to_bits)
                    };
                    assert_eq!(bits(&x), bits(&y), "{a} {b} {ra} {rb}");
                    compared += 1;
                }
            }
        }
        (table, compared)
    };
    for law in laws {
        let settings = StepSettings {
            contact_law: law,
            ..StepSettings::default()
        };
        let (table, compared) = check(&w, &settings);
        assert_eq!(table.materials, 3);
        if law == ndem_math::ContactLaw::LinearPerMaterial {
            // only the soft material's own pair has a linear stiffness
            assert_eq!(table.pairs.iter().filter(|p| p.is_some()).count(), 1);
        } else {
            assert!(table.pairs.iter().all(Option::is_some));
            assert!(compared > 0);
        }
    }
    let settings = StepSettings::default();
    let table = MaterialPairs::of(&w, &settings);
    let friction = |a, b| {
        let at = (&w, &settings);
        table.parameters(at, (a, 0.01), (b, 0.01)).unwrap().friction
    };
    assert_eq!(friction(0, 2), 0.45);
    assert_eq!(friction(2, 0), 0.45);
    assert_eq!(friction(0, 1), 0.2);
    // a material made invalid: not tabled, its contacts name the field
    w.materials[1].poisson_ratio = 0.7;
    let (table, _) = check(&w, &settings);
    assert_eq!(table.pairs.iter().filter(|p| p.is_none()).count(), 5);
    assert!(matches!(
        table.parameters((&w, &settings), (1, 1.0), (0, 1.0)),
        Err(StepError::Math(ndem_math::MathError::OutOfRange {
            field: "poisson_ratio",
            ..
        }))
    ));
}

/// The impact count, the impact problem's contacts (if it is built)
/// and the impact flags for the hint `expect_impacts`.
fn impact_with(
    (w, contacts, settings): &(World, ContactSet, StepSettings),
    expect_impacts: bool,
) -> (usize, Option<Vec<Contact>>, Vec<bool>) {
    let mut solver_contacts = Vec::new();
    contact_data(
        w,
        contacts,
        Resolution::Reduced,
        (1, 0.0),
        &mut solver_contacts,
        1,
    )
    .unwrap();
    let mut storage = ProblemStorage::new();
    let mut flags = Vec::new();
    let (impacts, problem) = impact_problem(
        w,
        (settings, &MaterialPairs::of(w, settings)),
        contacts,
        &solver_contacts,
        w.velocities(),
        &mut storage,
        (&mut flags, expect_impacts),
        |local| local,
    )
    .unwrap();
    let contacts = problem.map(|p| p.contacts().iter().collect());
    (impacts, contacts, flags)
}

/// The hint that the last step had impacts changes how the impact
/// problem is found, not what is found: the same count and equal
/// contacts with and without it, with one impact among
/// resting contacts and with none (the top sphere approaching slower
/// than `v_imp`).
#[test]
fn the_impact_hint_changes_nothing_found() {
    for (gap, speed, impacts) in [(1e-4, 1.0, 1), (1e-4, 0.01, 0)] {
        let scene = column(4, gap, speed);
        let counted_first = impact_with(&scene, false);
        let built_first = impact_with(&scene, true);
        assert_eq!(counted_first.0, impacts, "gap {gap}");
        assert_eq!(built_first.0, impacts, "gap {gap}");
        assert_eq!(counted_first.1.is_some(), impacts > 0);
        assert_eq!(counted_first.1, built_first.1, "gap {gap}");
        if impacts > 0 {
            let flagged = built_first.2.iter().filter(|&&x| x).count();
            assert_eq!(flagged, impacts);
        }
    }
}
