//! Frames of a distributed run as one parallel VTK dataset: each rank
//! writes the spheres it owns as a piece (`frames/particles_<step>_<rank>.vtp`,
//! `body_id` the index in the whole scene), rank 0 writes the `.pvtp` that
//! joins the pieces and the `particles.pvd` collection over time, which
//! ParaView opens as one dataset.

use crate::comm::Communicator;
use crate::domain::{Domain, Role};
use crate::error::MpiError;
use ndem::output::{particles_pvtp, particles_vtp_labelled, pvd_collection, write_atomic};
use std::path::{Path, PathBuf};

/// The frames written so far (rank 0 keeps the list).
#[derive(Debug, Clone, Default)]
pub struct ParallelFrames {
    frames: Vec<(f64, PathBuf)>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> MpiError + '_ {
    move |e| MpiError::Output {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

impl ParallelFrames {
    /// No frames yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes this rank's piece of the frame at `step` into `dir/frames`,
    /// and on rank 0 the `.pvtp` joining all pieces. Collective (an error
    /// on one rank is returned by all).
    pub fn write<C: Communicator>(
        &mut self,
        domain: &Domain<C>,
        dir: &Path,
        time: f64,
        step: u64,
    ) -> Result<(), MpiError> {
        let (rank, size) = (domain.comm().rank(), domain.comm().size());
        let piece = |r: usize| PathBuf::from(format!("particles_{step:08}_{r}.vtp"));
        let frames = dir.join("frames");
        let written = (|| {
            std::fs::create_dir_all(&frames).map_err(io(&frames))?;
            let owned = domain.owned_world()?;
            let labels: Vec<u64> = domain
                .roles()
                .iter()
                .zip(domain.global_indices())
                .filter(|(r, _)| **r == Role::Owned)
                .map(|(_, g)| *g)
                .collect();
            let path = frames.join(piece(rank));
            write_atomic(
                &path,
                particles_vtp_labelled(&owned, Some(&labels)).as_bytes(),
            )
            .map_err(io(&path))?;
            if rank == 0 {
                let pieces: Vec<PathBuf> = (0..size).map(piece).collect();
                let name = PathBuf::from(format!("frames/particles_{step:08}.pvtp"));
                let path = dir.join(&name);
                write_atomic(&path, particles_pvtp(&pieces).as_bytes()).map_err(io(&path))?;
                self.frames.push((time, name));
            }
            Ok(())
        })();
        domain.agree(written.map_err(|e: MpiError| e.to_string()))
    }

    /// Writes `particles.pvd` (rank 0; the others do nothing).
    pub fn write_collection(&self, dir: &Path, rank: usize) -> Result<(), MpiError> {
        if rank != 0 {
            return Ok(());
        }
        let path = dir.join("particles.pvd");
        let text = pvd_collection(self.frames.iter().map(|(t, f)| (*t, f)));
        write_atomic(&path, text.as_bytes()).map_err(io(&path))
    }
}
