//! The scenes' random generator: [`ndem_math::rng::Rng`] (SplitMix64).

pub use ndem_math::rng::Rng;
