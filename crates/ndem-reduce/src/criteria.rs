//! The per-contact and per-body tests of merge and split
//! (adaptive-model-reduction paper, eqs. 26-36), on plain data so that the
//! serial [`crate::Reducer`] and a distributed reducer (each rank testing
//! the contacts it owns) decide alike.

use crate::settings::{ContactSplit, MergeThresholds, TrialSplit};
use ndem_collide::{ContactPoint, Shape};
use ndem_math::{Vec3, Velocity6};

/// Relative motion at a contact: normal speed (positive separating),
/// sliding speed, relative angular speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelativeMotion {
    /// `u_n` \[m/s\], positive separating.
    pub normal: f64,
    /// `|u_t|` \[m/s\].
    pub tangential: f64,
    /// `|ω_a − ω_b|` \[rad/s\].
    pub angular: f64,
}

impl std::ops::Sub for RelativeMotion {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self {
            normal: self.normal - o.normal,
            tangential: (self.tangential - o.tangential).abs(),
            angular: (self.angular - o.angular).abs(),
        }
    }
}

impl std::ops::Div<f64> for RelativeMotion {
    type Output = Self;
    fn div(self, d: f64) -> Self {
        Self {
            normal: self.normal / d,
            tangential: self.tangential / d,
            angular: self.angular / d,
        }
    }
}

/// Relative motion at contact `c` of its bodies with velocities `v`; the
/// lever arms from `positions` (those the contact was detected at).
pub fn relative_motion(c: &ContactPoint, positions: &[Vec3], v: &[Velocity6]) -> RelativeMotion {
    let (a, b) = (c.body_a(), c.body_b());
    let (va, vb) = (v[a], v[b]);
    let (arm_a, arm_b) = (c.arm(&positions[a]), c.arm(&positions[b]));
    let u: Vec3 = va.linear + va.angular.cross(&arm_a) - vb.linear - vb.angular.cross(&arm_b);
    let un = c.normal.dot(&u);
    RelativeMotion {
        normal: un,
        tangential: (u - c.normal * un).norm(),
        angular: (va.angular - vb.angular).norm(),
    }
}

/// Whether contact `c` joins its carriers in the merge graph (eqs. 26-28):
/// closer than `ξ_nv^{i-mrg} Δt` (bodies that touch, not a speculative
/// contact of bodies falling side by side), with relative velocity `now`
/// (`v_{i+1}`) and acceleration `(now − before)/Δt` inside the thresholds.
pub fn merge_passes(
    th: &MergeThresholds,
    c: &ContactPoint,
    positions: &[Vec3],
    (now, before): (&[Velocity6], &[Velocity6]),
    dt: f64,
) -> bool {
    if c.gap > th.normal_incident * dt {
        return false;
    }
    let now = relative_motion(c, positions, now);
    let acc = (now - relative_motion(c, positions, before)) / dt;
    now.normal >= -th.normal_incident
        && now.normal <= th.normal_separating
        && now.tangential <= th.tangential
        && now.angular <= th.rolling
        && acc.normal >= -th.normal_incident_acceleration
        && acc.normal <= th.normal_separating_acceleration
        && acc.tangential <= th.tangential_acceleration
        && acc.angular <= th.rolling_acceleration
}

/// Whether contact `c` is a split event (eqs. 29-31): impact, separation,
/// sliding or rolling beyond the thresholds, or an overlap beyond
/// `overlap` times the smaller curvature radius.
pub fn contact_split_event(
    cs: &ContactSplit,
    c: &ContactPoint,
    shapes: &[Shape],
    positions: &[Vec3],
    v: &[Velocity6],
) -> bool {
    let u = relative_motion(c, positions, v);
    let radius = shapes[c.body_a()]
        .curvature_radius()
        .min(shapes[c.body_b()].curvature_radius());
    u.normal < -cs.impact
        || u.normal > cs.separation
        || u.tangential > cs.tangential
        || u.angular > cs.rolling
        || -c.gap > cs.overlap * radius
}

/// Whether the trial solve's velocities `v` at contact `c` say to split
/// (eqs. 32-33).
pub fn trial_velocity_event(
    ts: &TrialSplit,
    c: &ContactPoint,
    positions: &[Vec3],
    v: &[Velocity6],
) -> bool {
    let u = relative_motion(c, positions, v);
    u.normal < -ts.normal_incident
        || u.normal > ts.normal_separating
        || u.tangential > ts.tangential
        || u.angular > ts.rolling
}

/// Whether a loaded member is out of balance in the trial solve (eqs.
/// 34-36): `|f_e + f_c| / (|f_e| + |f_c|)` for the forces or the torques
/// at or above its threshold. `external` is gravity plus the user force
/// and the user torque; `contact` the trial solve's contact force and
/// torque.
pub fn out_of_balance(ts: &TrialSplit, external: (Vec3, Vec3), contact: (Vec3, Vec3)) -> bool {
    let balance = |e: Vec3, c: Vec3| {
        let den = e.norm() + c.norm();
        if den > 0.0 { (e + c).norm() / den } else { 0.0 }
    };
    balance(external.0, contact.0) >= ts.force_balance
        || balance(external.1, contact.1) >= ts.torque_balance
}
