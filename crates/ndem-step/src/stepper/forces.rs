//! The contact forces of the last step: those of the continuous solve, and
//! those held inside rigid aggregates.

use super::{ContactForce, Stepper};

impl Stepper {
    /// Contact forces of the last continuous solve.
    pub fn contact_forces(&self) -> Vec<ContactForce> {
        self.contact_forces_iter().collect()
    }

    /// [`Self::contact_forces`] formed on the fly, one per contact of the
    /// last continuous solve in its order (empty after a failed step), for
    /// a consumer that does not need them all at once (frame output).
    pub fn contact_forces_iter(&self) -> impl Iterator<Item = ContactForce> + Clone + '_ {
        let problem = self.problem.as_ref();
        let m = problem.map_or(1, |p| p.contact_rows().count());
        let dt = self.settings.dt;
        problem
            .into_iter()
            .flat_map(|p| p.contacts())
            .zip(self.lambda.chunks_exact(m))
            .zip(
                self.contact_index
                    .iter()
                    .map(|&k| &self.contacts.as_slice()[k as usize]),
            )
            .map(move |((c, lam), cp)| {
                let (imp, _) = c.jacobian.world_impulses(lam);
                ContactForce {
                    key: c.key,
                    point: cp.point,
                    normal: cp.normal,
                    normal_force: c.jacobian.normal_scale * lam[0] / dt,
                    force_on_a: imp / dt,
                    overlap: (-cp.gap).max(0.0),
                    held: false,
                }
            })
    }

    /// The contacts of the last step that are inside rigid aggregates
    /// (model reduction: both bodies carried by one host, or by two
    /// immovable ones) and hold an impulse, in the order of the detected
    /// contacts (empty after a failed step or without an impulse history).
    /// Such a contact is not solved while its aggregate lasts; the
    /// warm-starting history keeps the impulse it had when last solved
    /// (the adaptive-model-reduction paper computes no internal forces of
    /// an aggregate), and that impulse over `Δt` is its force here: the
    /// normal part `s_n λ_n / Δt` along the contact's current normal, the
    /// friction part as recorded (world frame) less its component along
    /// that normal. The forces are not balanced against the loads the
    /// aggregate carries since: they are the last solved state of its
    /// contact network, marked [`ContactForce::held`].
    pub fn held_contact_forces_iter(&self) -> impl Iterator<Item = ContactForce> + Clone + '_ {
        let history = self.problem.as_ref().and(self.warm_start.history());
        let dt = self.settings.dt;
        let count = if history.is_some() {
            self.contacts.len()
        } else {
            0
        };
        // `contact_index` lists the solved contacts' places in the set in
        // increasing order: one walk beside the set passes over them
        let solved = self.contact_index.iter().copied().peekable();
        let unsolved = (0..count)
            .scan(solved, |solved, k| {
                Some((k, solved.next_if_eq(&(k as u32)).is_some()))
            })
            .filter_map(|(k, solved)| (!solved).then_some(k));
        unsolved.filter_map(move |k| {
            let cp = &self.contacts.as_slice()[k];
            let held = history?.get(&cp.key)?;
            let n = cp.normal;
            let friction = held.friction - n * n.dot(&held.friction);
            Some(ContactForce {
                key: cp.key,
                point: cp.point,
                normal: n,
                normal_force: held.normal / dt,
                force_on_a: (n * held.normal + friction) / dt,
                overlap: (-cp.gap).max(0.0),
                held: true,
            })
        })
    }
}
