//! The verification cases as tests (short versions where a case is long).

use ndem_solve::{ColdStart, HistoryWarmStart};
use ndem_step::verification::*;

#[test]
fn drop_rebound_matches_restitution() {
    for e in [0.18, 0.8] {
        let r = drop_rebound(e).unwrap();
        assert!(r.pass, "{r:?}");
    }
}

#[test]
fn block_on_incline_sticks_and_slides() {
    for angle in [15.0, 35.0] {
        let r = block_on_incline(angle).unwrap();
        assert!(r.pass, "{r:?}");
    }
}

#[test]
fn rolling_resistance_decelerates_and_stops() {
    let (decel, stop) = rolling_resistance().unwrap();
    assert!(decel.pass, "{decel:?}");
    assert!(stop.pass, "{stop:?}");
}

#[test]
fn two_sphere_collision_conserves_momentum() {
    let (p, l) = momentum_conservation().unwrap();
    assert!(p.pass, "{p:?}");
    assert!(l.pass, "{l:?}");
}

#[test]
fn column_of_ten_settles_to_hertz_height() {
    let converged = column_error(10, 500, Box::new(HistoryWarmStart::default()), 2.0).unwrap();
    println!("eps_l(500 sweeps, 2 s) = {converged:e}");
    // 10x the measured 2.4e-14; the whole Hertz effect is 6.8e-3
    assert!(converged.abs() <= 2.4e-13, "eps_l = {converged}");
    let few = column_error(10, 5, Box::new(ColdStart), 2.0).unwrap();
    assert!(
        few.abs() > converged.abs(),
        "eps_l(5) = {few}, eps_l(500) = {converged}"
    );
}
