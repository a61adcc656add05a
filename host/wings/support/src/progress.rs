//! A progress bar on stderr that appears only for work lasting over a second, and only
//! when stderr is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Work shorter than this shows no bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Byte progress of a long job; safe to advance from many threads.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    may_show: bool,
    shown: AtomicBool,
}

impl Progress {
    /// A hidden bar over `total_bytes`; it is drawn once the job has run `SHOW_AFTER`
    /// and only if stderr is a terminal.
    pub fn new(total_bytes: u64, message: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{bar:40}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(message.to_string());
        Progress {
            bar,
            start: Instant::now(),
            may_show: std::io::stderr().is_terminal(),
            shown: AtomicBool::new(false),
        }
    }

    /// A bar over `total_bytes` that is never drawn.
    pub fn hidden(total_bytes: u64) -> Progress {
        Progress { may_show: false, ..Progress::new(total_bytes, "") }
    }

    /// Records `bytes` more done.
    pub fn advance(&self, bytes: u64) {
        self.bar.inc(bytes);
        if self.may_show && self.start.elapsed() >= SHOW_AFTER && !self.shown.swap(true, Ordering::Relaxed) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Removes the bar, if it was drawn.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
