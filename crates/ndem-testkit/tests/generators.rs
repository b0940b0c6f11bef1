//! The generators refuse specs out of range, naming the field, and build
//! their defaults; the strategies refuse arguments out of range when built.

use ndem_math::SpookSettings;
use ndem_solve::{ContactRows, FrictionSet};
use ndem_testkit::generate::*;

/// The field a generator's error names, if it is a spec error.
fn field<T>(result: Result<T, GenerateError>) -> Option<&'static str> {
    match result {
        Err(GenerateError::Spec { field, .. }) => Some(field),
        _ => None,
    }
}

/// The field named by the error of `build` on the default spec changed by
/// `change`.
fn refused<S: Default, T>(
    build: fn(&S) -> Result<T, GenerateError>,
    change: fn(&mut S),
) -> Option<&'static str> {
    let mut spec = S::default();
    change(&mut spec);
    field(build(&spec))
}

/// Every spec field out of range or NaN is refused with its name, and
/// never panics; the defaults build.
#[test]
fn specs_out_of_range_are_refused_naming_the_field() {
    let packing = |change| refused(sphere_packing, change);
    assert!(sphere_packing(&PackingSpec::default()).is_ok());
    assert_eq!(packing(|s| s.radius = 0.0), Some("radius"));
    assert_eq!(packing(|s| s.radius = f64::NAN), Some("radius"));
    assert_eq!(packing(|s| s.polydispersity = -0.1), Some("polydispersity"));
    assert_eq!(packing(|s| s.jitter = f64::INFINITY), Some("jitter"));
    assert_eq!(packing(|s| s.speed = f64::NAN), Some("speed"));
    assert_eq!(packing(|s| s.dt = 0.0), Some("dt"));
    assert_eq!(packing(|s| s.compression = 1.0), Some("compression"));
    assert_eq!(packing(|s| s.compression = f64::NAN), Some("compression"));
    assert_eq!(
        packing(|s| s.cells = [usize::MAX, 2, 1]),
        Some("cells"),
        "a count that overflows"
    );
    assert_eq!(
        packing(|s| s.cells = [1 << 12, 1 << 12, 1 << 12]),
        Some("cells")
    );
    // a material the math crate refuses, named by its own error
    let mut spec = PackingSpec::default();
    spec.material.density = -1.0;
    assert!(matches!(sphere_packing(&spec), Err(GenerateError::Math(_))));

    let sparse = |bilateral_fraction, min_sigma| {
        field(random_sparse_problem(&SparseSpec {
            bodies: 4,
            rows: 6,
            bilateral_fraction,
            min_sigma,
            seed: 1,
        }))
    };
    assert_eq!(sparse(0.5, 0.0), None);
    assert_eq!(sparse(1.5, 0.0), Some("bilateral_fraction"));
    assert_eq!(sparse(f64::NAN, 0.0), Some("bilateral_fraction"));
    assert_eq!(sparse(0.5, -1.0), Some("min_sigma"));

    assert!(beam_problem(10.0).is_ok());
    assert_eq!(field(beam_problem(-1.0)), Some("weight"));
    assert_eq!(field(beam_problem(f64::NAN)), Some("weight"));

    let skewed = |skew, sliding| {
        field(skewed_contacts(&SkewedSpec {
            bodies: 3,
            contacts: 6,
            skew,
            sliding,
            rows: ContactRows::NormalFriction,
            seed: 1,
        }))
    };
    assert_eq!(skewed(0.5, 1.0), None);
    assert_eq!(skewed(1.0, 1.0), Some("skew"));
    assert_eq!(skewed(f64::NAN, 1.0), Some("skew"));
    assert_eq!(skewed(0.5, -1.0), Some("sliding"));

    let tree = |change| refused(joint_tree, change);
    assert!(joint_tree(&TreeSpec::default()).is_ok());
    assert_eq!(tree(|s| s.mass_ratio = 0.5), Some("mass_ratio"));
    assert_eq!(tree(|s| s.mass_ratio = f64::INFINITY), Some("mass_ratio"));
    assert_eq!(tree(|s| s.bounded_fraction = 2.0), Some("bounded_fraction"));
    assert_eq!(tree(|s| s.bound = f64::NAN), Some("bound"));
    assert_eq!(tree(|s| s.sigma = -1e-6), Some("sigma"));
    // an infinite bound is an unbounded row
    assert_eq!(tree(|s| s.bound = f64::INFINITY), None);

    let global = |max_friction, block| {
        field(random_global_problem(&GlobalSpec {
            block,
            bodies: 3,
            contacts: 2,
            coupled: true,
            max_friction,
            seed: 1,
        }))
    };
    assert_eq!(global(0.5, 6), None);
    assert_eq!(global(f64::NAN, 6), Some("max_friction"));
    assert_eq!(global(0.5, usize::MAX), Some("block"));
}

/// The strategies refuse their arguments out of the generators' ranges
/// when built, not in their draws.
#[test]
fn strategies_refuse_arguments_out_of_range() {
    use ndem_testkit::strategies::{arb_packing_with, arb_sparse_problem};
    assert!(arb_sparse_problem(0.05, 0.3).is_ok());
    assert_eq!(field(arb_sparse_problem(-1.0, 0.3)), Some("min_sigma"));
    assert_eq!(
        field(arb_sparse_problem(0.05, 2.0)),
        Some("bilateral_fraction")
    );
    let spook = SpookSettings {
        friction_compliance: f64::NAN,
        ..SpookSettings::default()
    };
    assert!(matches!(
        arb_packing_with(ContactRows::NormalFriction, FrictionSet::Box, spook),
        Err(GenerateError::Math(_))
    ));
}
