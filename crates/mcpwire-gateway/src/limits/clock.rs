//! A `governor` clock that reads tokio's clock, so limits follow `tokio::time::pause` /
//! `advance` in tests and real time otherwise.

use governor::clock::Clock;
use governor::nanos::Nanos;

/// Time since this clock was made, by `tokio::time::Instant`.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock starting now.
    pub fn new() -> TokioClock {
        TokioClock {
            start: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(self.start.elapsed())
    }
}
