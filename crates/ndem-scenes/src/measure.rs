//! Reusable measurements on worlds and contact forces.

use ndem_math::Vec3;
use ndem_step::{ContactForce, Motion, World};

/// Column height error `ε_l = (l − l_Nit)/l` (warm-starting paper, eq. 12)
/// of the column built by [`crate::builders::column`] with `n` spheres.
pub fn column_height_error(world: &World, n: usize) -> f64 {
    let r = world.shapes()[n].sphere_radius().unwrap_or(0.0);
    let top = world.positions()[n].z + r;
    let mat = world.materials[world.body_materials()[n] as usize];
    match ndem_step::verification::column_height(n, r, &mat, -world.gravity.z) {
        Ok(l) => (l - top) / l,
        Err(_) => f64::NAN,
    }
}

/// Pile height: the highest sphere top `z + r` among dynamic spheres within
/// horizontal distance `radius` of the axis through `centre`.
pub fn pile_height(world: &World, centre: Vec3, radius: f64) -> f64 {
    (0..world.len())
        .filter(|&i| world.motions()[i] == Motion::Dynamic)
        .filter_map(|i| {
            let r = world.shapes()[i].sphere_radius()?;
            let p = world.positions()[i];
            let dx = p.x - centre.x;
            let dy = p.y - centre.y;
            (dx * dx + dy * dy <= radius * radius).then_some(p.z + r)
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

/// Smoothed pile height: the mean of the `k` highest sphere tops among
/// dynamic spheres within horizontal distance `radius` of the axis through
/// `centre` (less sensitive to a single particle than [`pile_height`]).
pub fn pile_height_top(world: &World, centre: Vec3, radius: f64, k: usize) -> f64 {
    let mut tops: Vec<f64> = (0..world.len())
        .filter(|&i| world.motions()[i] == Motion::Dynamic)
        .filter_map(|i| {
            let r = world.shapes()[i].sphere_radius()?;
            let p = world.positions()[i];
            let (dx, dy) = (p.x - centre.x, p.y - centre.y);
            (dx * dx + dy * dy <= radius * radius).then_some(p.z + r)
        })
        .collect();
    if tops.is_empty() {
        return f64::NAN;
    }
    tops.sort_by(|a, b| b.total_cmp(a));
    let k = k.clamp(1, tops.len());
    tops[..k].iter().sum::<f64>() / k as f64
}

/// Angle of repose of a heap on a horizontal floor \[degrees\]. The
/// dynamic spheres are binned by horizontal distance `ρ` from the
/// vertical through `centre` in rings of width `bin`; the highest sphere
/// top in a ring is the heap's surface there, its height `h` measured from
/// the floor (the lowest sphere bottom). The angle is the inclination of
/// the least-squares line through the surface points of the flank: the
/// rings, out from the summit, whose height lies between `0.2 H` and
/// `0.8 H` of the heap's height `H` (the highest ring), so that neither
/// the rounded summit nor the toe and the few spheres rolled off enter
/// ([`fitted_inclination`]). `NaN` when the flank has fewer than three
/// rings.
pub fn pile_angle(world: &World, centre: Vec3, bin: f64) -> f64 {
    let spheres: Vec<(f64, f64, f64)> = (0..world.len())
        .filter(|&i| world.motions()[i] == Motion::Dynamic)
        .filter_map(|i| {
            let r = world.shapes()[i].sphere_radius()?;
            let p = world.positions()[i];
            Some(((p.x - centre.x).hypot(p.y - centre.y), p.z + r, p.z - r))
        })
        .collect();
    if spheres.is_empty() || bin.is_nan() || bin <= 0.0 {
        return f64::NAN;
    }
    let floor = spheres.iter().fold(f64::INFINITY, |m, s| m.min(s.2));
    let outer = spheres.iter().fold(0.0f64, |m, s| m.max(s.0));
    let rings = (outer / bin) as usize + 1;
    let mut top = vec![f64::NEG_INFINITY; rings];
    for &(rho, z, _) in &spheres {
        let k = ((rho / bin) as usize).min(rings - 1);
        top[k] = top[k].max(z - floor);
    }
    let (summit, height) = top
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (k, &h)| {
            if h > best.1 { (k, h) } else { best }
        });
    let flank: Vec<(f64, f64)> = top
        .iter()
        .enumerate()
        .skip(summit)
        .filter(|&(_, &h)| h >= 0.2 * height && h <= 0.8 * height)
        .map(|(k, &h)| ((k as f64 + 0.5) * bin, h))
        .collect();
    fitted_inclination(&flank)
}

/// Mean number of contacts per dynamic body (contacts with static or
/// kinematic bodies count once, between dynamic bodies twice).
pub fn coordination_number(world: &World, forces: &[ContactForce]) -> f64 {
    let dynamic = world
        .motions()
        .iter()
        .filter(|m| **m == Motion::Dynamic)
        .count();
    if dynamic == 0 {
        return 0.0;
    }
    let ends: usize = forces
        .iter()
        .filter(|f| f.normal_force > 0.0)
        .map(|f| {
            usize::from(world.motions()[f.key.body_a as usize] == Motion::Dynamic)
                + usize::from(world.motions()[f.key.body_b as usize] == Motion::Dynamic)
        })
        .sum();
    ends as f64 / dynamic as f64
}

/// Total force exerted on body `body` by all contacts \[N\].
pub fn force_on_body(forces: &[ContactForce], body: usize) -> Vec3 {
    forces
        .iter()
        .map(|f| {
            if f.key.body_a as usize == body {
                f.force_on_a
            } else if f.key.body_b as usize == body {
                -f.force_on_a
            } else {
                Vec3::zeros()
            }
        })
        .sum()
}

/// Per-contact reaction on `body` (e.g. a floor): `(other body, force)`.
pub fn reactions(forces: &[ContactForce], body: usize) -> Vec<(usize, Vec3)> {
    forces
        .iter()
        .filter_map(|f| {
            if f.key.body_a as usize == body {
                Some((f.key.body_b as usize, f.force_on_a))
            } else if f.key.body_b as usize == body {
                Some((f.key.body_a as usize, -f.force_on_a))
            } else {
                None
            }
        })
        .collect()
}

/// Normalised velocity relative to rigid co-rotation with a drum rotating
/// at `omega` about the axis through `centre` with direction `axis`:
/// `v_r = |v − Ω × r| / (R Ω)` (warm-starting paper, section 4.3), per
/// dynamic body.
pub fn corotation_speed(
    world: &World,
    centre: Vec3,
    axis: Vec3,
    omega: f64,
    radius: f64,
) -> Vec<f64> {
    let w = axis.normalize() * omega;
    (0..world.len())
        .filter(|&i| world.motions()[i] == Motion::Dynamic)
        .map(|i| {
            let r = world.positions()[i] - centre;
            (world.velocities()[i].linear - w.cross(&r)).norm() / (radius * omega.abs())
        })
        .collect()
}

/// Fraction of dynamic bodies in the plug zone, `v_r ≤ threshold`
/// (paper: 0.15).
pub fn plug_fraction(
    world: &World,
    centre: Vec3,
    axis: Vec3,
    omega: f64,
    radius: f64,
    threshold: f64,
) -> f64 {
    let v = corotation_speed(world, centre, axis, omega, radius);
    if v.is_empty() {
        return 0.0;
    }
    v.iter().filter(|&&x| x <= threshold).count() as f64 / v.len() as f64
}

/// Dynamic angle of repose in a drum rotating about a horizontal `axis`
/// through `centre`, from the displacement of the material's centre of mass
/// from the vertical through the axis: the angle of the centre-of-mass
/// vector from the downward vertical, in degrees (for a flat free surface
/// this equals the surface inclination at any fill level).
pub fn dynamic_angle_of_repose(world: &World, centre: Vec3) -> f64 {
    let mut m = 0.0;
    let mut c = Vec3::zeros();
    for i in 0..world.len() {
        if let Some(mp) = &world.mass_properties()[i] {
            m += mp.mass;
            c += world.positions()[i] * mp.mass;
        }
    }
    let c = c / m - centre;
    c.x.abs().atan2(-c.z).to_degrees()
}

/// Inclination \[degrees\] of the least-squares line through `points`
/// `(x, z)`: `atan |slope|`. `NaN` for fewer than three points or when all
/// share one `x`.
pub fn fitted_inclination(points: &[(f64, f64)]) -> f64 {
    if points.len() < 3 {
        return f64::NAN;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mz = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxz: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - mz)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return f64::NAN;
    }
    (sxz / sxx).abs().atan().to_degrees()
}

/// The surface inclination of the material in a drum rotating about the
/// world y axis through `centre` \[degrees\] (model-reduction paper, section
/// 4: the mean inclination of the surface over a section of width D/2
/// through the drum's centre). The spheres that move (free particles and
/// aggregate members) are binned along x in bins of width `bin` over
/// `|x − x_c| ≤ D/4`; the highest sphere top in a bin is the surface there,
/// and the angle is the inclination of the least-squares line through
/// those points ([`fitted_inclination`]).
pub fn drum_surface_angle(world: &World, centre: Vec3, diameter: f64, bin: f64) -> f64 {
    let quarter = 0.25 * diameter;
    let bins = (2.0 * quarter / bin).round().max(1.0) as usize;
    let mut top = vec![f64::NEG_INFINITY; bins];
    for i in 0..world.len() {
        let moving = world.motions()[i] == Motion::Dynamic || world.is_member(i);
        let Some(r) = world.shapes()[i].sphere_radius().filter(|_| moving) else {
            continue;
        };
        let p = world.positions()[i] - centre;
        if p.x.abs() > quarter {
            continue;
        }
        let k = (((p.x + quarter) / bin) as usize).min(bins - 1);
        top[k] = top[k].max(p.z + r);
    }
    let points: Vec<(f64, f64)> = top
        .iter()
        .enumerate()
        .filter(|(_, z)| z.is_finite())
        .map(|(k, &z)| ((k as f64 + 0.5) * bin - quarter, z))
        .collect();
    fitted_inclination(&points)
}

/// Inclination \[degrees\] of the least-squares plane `z = a + b x + c y`
/// through `points` `(x, y, z)`: `atan √(b² + c²)`, the steepest slope of
/// the plane. `NaN` for fewer than three points or when the points do not
/// span the plane (collinear in x-y).
pub fn fitted_plane_inclination(points: &[(f64, f64, f64)]) -> f64 {
    if points.len() < 3 {
        return f64::NAN;
    }
    let n = points.len() as f64;
    let mean = |f: fn(&(f64, f64, f64)) -> f64| points.iter().map(f).sum::<f64>() / n;
    let (mx, my, mz) = (mean(|p| p.0), mean(|p| p.1), mean(|p| p.2));
    let (mut sxx, mut sxy, mut syy, mut sxz, mut syz) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        let (x, y, z) = (p.0 - mx, p.1 - my, p.2 - mz);
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
        sxz += x * z;
        syz += y * z;
    }
    let det = sxx * syy - sxy * sxy;
    if det <= 1e-12 * (sxx * syy).max(f64::MIN_POSITIVE) {
        return f64::NAN;
    }
    let b = (sxz * syy - syz * sxy) / det;
    let c = (syz * sxx - sxz * sxy) / det;
    b.hypot(c).atan().to_degrees()
}

/// Solid fraction of the spheres of `world` in a box of side `lengths`
/// \[m\] (the triaxial cell's sample, warm-starting paper section 4.4):
/// total sphere volume over box volume.
pub fn solid_fraction(world: &World, lengths: [f64; 3]) -> f64 {
    let solid: f64 = world
        .shapes()
        .iter()
        .filter_map(|sh| sh.sphere_radius())
        .map(|r| 4.0 / 3.0 * std::f64::consts::PI * r.powi(3))
        .sum();
    solid / (lengths[0] * lengths[1] * lengths[2])
}

/// Height of the centre of mass of the dynamic bodies \[m\] (0 without
/// any).
pub fn centre_of_mass_height(world: &World) -> f64 {
    let (mut m, mut z) = (0.0, 0.0);
    for i in 0..world.len() {
        if world.motions()[i] == Motion::Dynamic {
            let mi = world.mass_properties()[i].map_or(0.0, |p| p.mass);
            m += mi;
            z += mi * world.positions()[i].z;
        }
    }
    if m > 0.0 { z / m } else { 0.0 }
}

/// Top of sphere `body`: its centre height plus its radius \[m\].
pub fn sphere_top(world: &World, body: usize) -> f64 {
    world.positions()[body].z + world.shapes()[body].sphere_radius().unwrap_or(0.0)
}

/// Vertical force on every body from per-contact normal forces
/// `(body a, body b, normal, f_n)` (normal from b to a; the force on a is
/// `f_n n`, on b `−f_n n`).
pub fn vertical_force_per_body(
    bodies: usize,
    contacts: impl Iterator<Item = (usize, usize, Vec3, f64)>,
) -> Vec<f64> {
    let mut per_body = vec![0.0; bodies];
    for (a, b, n, f) in contacts {
        per_body[a] += f * n.z;
        per_body[b] -= f * n.z;
    }
    per_body
}

/// Vertical reaction (positive up) of each non-dynamic body of `world`, in
/// body order, from the vertical contact force `force_on(i)` on body `i`:
/// the floor pressure of the compatible-CD paper's cannonball (section 7).
pub fn support_reactions(world: &World, force_on: impl Fn(usize) -> f64) -> Vec<f64> {
    (0..world.len())
        .filter(|&i| world.motions()[i] != Motion::Dynamic)
        .map(|i| -force_on(i))
        .collect()
}

/// Relative L2 error `‖a − reference‖ / ‖reference‖` (the
/// compatible-CD paper's floor-pressure error).
pub fn relative_l2_error(a: &[f64], reference: &[f64]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(reference)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    let den: f64 = reference.iter().map(|y| y * y).sum::<f64>().sqrt();
    num / den
}
