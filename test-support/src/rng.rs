//! A deterministic xorshift stream, for reports and inputs drawn from known distributions: a
//! failure names a seed that replays.

/// A deterministic xorshift stream.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// `n` call times, nanoseconds, log-normal around `median` with log spread `sigma` (0.2:
    /// about two thirds of the calls within 20% of the median).
    pub fn calls(&mut self, n: usize, median: f64, sigma: f64) -> Vec<u64> {
        (0..n)
            .map(|_| (median * (sigma * self.normal()).exp()).round() as u64)
            .collect()
    }
}
