//! `--device auto`: the rule that picks the CPU or the GPU for a job, from rates
//! measured on the job itself, and the backend that follows it ([`AutoBackend`]).
//!
//! The rule is a pure function, [`next_step`]: given the job's size and what has been
//! measured so far, it says what to do next (time the CPU on the next slice of the job,
//! open the GPU, warm it up, time it) or which backend runs the rest and why.
//! [`AutoBackend`] is the state machine that takes those steps, doing real work in
//! every one: the measured slices are part of the job. It times them by a clock it is
//! given: the wall clock in use, in the tests one that their stand-in backends move on,
//! so that what the rule is fed, and so what it picks, does not depend on the machine.
//!
//! The steps:
//! 1. A job under `AutoRule::min_job_bytes` runs on the CPU, unmeasured: too small
//!    for a GPU to pay for its start.
//! 2. The CPU is timed on the first `AutoRule::measure_bytes` of the job.
//! 3. If the CPU would finish the rest of the job in less time than a GPU takes to
//!    start (`AutoRule::gpu_start_s`), it does, and the GPU is never opened. This is
//!    the common case for host-resident data: a GPU must first move every byte over
//!    PCIe, which a multi-core CPU scanning at memory speed outruns.
//! 4. Otherwise the GPU is opened (no usable GPU: the CPU runs the rest), warmed up on
//!    `AutoRule::warmup_bytes` (buffers, the first launches), then timed on the next
//!    `AutoRule::measure_bytes`.
//! 5. The GPU runs the rest if its rate beats the CPU's by `AutoRule::gpu_margin`;
//!    else the CPU does.

use crate::backend::conversion::SampleConversion;
use crate::backend::count::Counts;
use crate::backend::{Backend, BackendError, CountJob};
use crate::source::Source;
use bitexact_gpu::GpuError;
use bitexact_support::output::count_of;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Bytes of a job run in a measured time: a rate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rate {
    /// Bytes of input.
    pub bytes: u64,
    /// Seconds they took.
    pub seconds: f64,
}

impl Rate {
    /// Bytes per second (infinite for bytes in no measurable time).
    pub(crate) fn bytes_per_s(self) -> f64 {
        if self.seconds > 0.0 { self.bytes as f64 / self.seconds } else { f64::INFINITY }
    }

    /// This rate with `bytes` more run in `seconds` more.
    pub(crate) fn plus(self, bytes: u64, seconds: f64) -> Rate {
        Rate { bytes: self.bytes + bytes, seconds: self.seconds + seconds }
    }
}

/// The thresholds of the rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoRule {
    /// Jobs smaller than this run on the CPU without measuring.
    pub min_job_bytes: u64,
    /// Bytes each backend is timed on.
    pub measure_bytes: u64,
    /// Bytes the GPU runs once, untimed, before it is timed.
    pub warmup_bytes: u64,
    /// Seconds a GPU takes to start (driver, context, the JIT of the embedded PTX): a
    /// CPU that finishes the rest sooner runs it without opening one.
    pub gpu_start_s: f64,
    /// How much faster than the CPU the GPU must be measured to be picked.
    pub gpu_margin: f64,
}

impl AutoRule {
    /// The rule `--device auto` uses. `gpu_start_s` errs low (about what opening the
    /// GPU takes on a warm driver with the PTX in the JIT cache), so that when in doubt
    /// the GPU is measured rather than skipped.
    pub(crate) const DEFAULT: AutoRule = AutoRule {
        min_job_bytes: 64 << 20,
        measure_bytes: 16 << 20,
        warmup_bytes: 4 << 20,
        gpu_start_s: 0.2,
        gpu_margin: 1.1,
    };
}

/// Where the GPU stands while the rule measures.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuProbe {
    /// Not opened yet.
    NotOpened,
    /// There is no usable GPU: why.
    Unavailable(String),
    /// Opened, not warmed up yet.
    Opened,
    /// Warmed up and timed on this much.
    Timed(Rate),
}

/// What has been measured of a job so far.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Bytes of the job done so far, measured or not.
    pub done_bytes: u64,
    /// The CPU's timed slices.
    pub cpu: Rate,
    /// The GPU's state.
    pub gpu: GpuProbe,
}

impl Measured {
    /// Nothing done yet.
    pub(crate) const START: Measured =
        Measured { done_bytes: 0, cpu: Rate { bytes: 0, seconds: 0.0 }, gpu: GpuProbe::NotOpened };
}

/// Which backend runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The CPU backend.
    Cpu,
    /// The GPU backend.
    Gpu,
}

/// Why the rule picked what it did.
#[derive(Clone, Debug, PartialEq)]
pub enum AutoReason {
    /// The job is too small to be worth measuring.
    SmallJob {
        /// Its bytes.
        bytes: u64,
        /// The threshold.
        min: u64,
    },
    /// The CPU finishes the rest before a GPU would have started.
    CpuFinishesFirst {
        /// The CPU's measured rate.
        cpu: Rate,
        /// Bytes left when it was decided.
        rest: u64,
        /// The GPU's start, as the rule estimates it.
        gpu_start_s: f64,
    },
    /// There is no usable GPU.
    NoGpu(String),
    /// Both were timed on slices of the job.
    Measured {
        /// The CPU's rate.
        cpu: Rate,
        /// The GPU's rate.
        gpu: Rate,
    },
    /// The job ended before the measurements did; the CPU ran all but what was measured.
    EndedWhileMeasuring,
}

/// A pick and its reason.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoChoice {
    /// Which backend runs the rest of the job.
    pub pick: Pick,
    /// Why.
    pub reason: AutoReason,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum NextStep {
    /// Run the rest on this backend.
    Decided(AutoChoice),
    /// Run (at most) this many more bytes on the CPU, timed.
    TimeCpu(u64),
    /// Open the GPU.
    OpenGpu,
    /// Run (at most) this many bytes on the GPU, untimed.
    WarmGpu(u64),
    /// Run (at most) this many more bytes on the GPU, timed.
    TimeGpu(u64),
}

/// The rule (see the module doc): what to do next for a job of `job_bytes`, given what
/// has been measured.
pub fn next_step(rule: &AutoRule, job_bytes: u64, measured: &Measured) -> NextStep {
    let decided = |pick, reason| NextStep::Decided(AutoChoice { pick, reason });
    if job_bytes < rule.min_job_bytes {
        return decided(Pick::Cpu, AutoReason::SmallJob { bytes: job_bytes, min: rule.min_job_bytes });
    }
    let cpu = measured.cpu;
    if cpu.bytes < rule.measure_bytes {
        return NextStep::TimeCpu(rule.measure_bytes - cpu.bytes);
    }
    let rest = job_bytes.saturating_sub(measured.done_bytes);
    match &measured.gpu {
        GpuProbe::NotOpened if rest as f64 / cpu.bytes_per_s() < rule.gpu_start_s => {
            decided(Pick::Cpu, AutoReason::CpuFinishesFirst { cpu, rest, gpu_start_s: rule.gpu_start_s })
        }
        GpuProbe::NotOpened => NextStep::OpenGpu,
        GpuProbe::Unavailable(why) => decided(Pick::Cpu, AutoReason::NoGpu(why.clone())),
        GpuProbe::Opened => NextStep::WarmGpu(rule.warmup_bytes.max(1)),
        GpuProbe::Timed(gpu) if gpu.bytes < rule.measure_bytes => NextStep::TimeGpu(rule.measure_bytes - gpu.bytes),
        &GpuProbe::Timed(gpu) => {
            let pick = if gpu.bytes_per_s() > cpu.bytes_per_s() * rule.gpu_margin { Pick::Gpu } else { Pick::Cpu };
            decided(pick, AutoReason::Measured { cpu, gpu })
        }
    }
}

/// `12.3 GB/s`.
fn gbps(rate: Rate) -> String {
    format!("{:.1} GB/s", rate.bytes_per_s() / 1e9)
}

/// `16 MiB`, `1.5 GiB`.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1u32 << 10)),
        b => count_of(b, "byte"),
    }
}

impl std::fmt::Display for AutoReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AutoReason::SmallJob { bytes, min } => {
                write!(f, "a job of {}, under {}: cpu without measuring", size(*bytes), size(*min))
            }
            AutoReason::CpuFinishesFirst { cpu, rest, gpu_start_s } => write!(
                f,
                "cpu {} on the first {}, the other {} in {:.0} ms, before a gpu would have started (~{:.0} ms)",
                gbps(*cpu),
                size(cpu.bytes),
                size(*rest),
                *rest as f64 / cpu.bytes_per_s() * 1e3,
                gpu_start_s * 1e3
            ),
            AutoReason::NoGpu(why) => write!(f, "no usable gpu ({why})"),
            AutoReason::Measured { cpu, gpu } => {
                write!(f, "cpu {} vs gpu {}, each timed on {} of this job", gbps(*cpu), gbps(*gpu), size(cpu.bytes))
            }
            AutoReason::EndedWhileMeasuring => f.write_str("the job ended while it was being measured"),
        }
    }
}

impl std::fmt::Display for AutoChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "auto: {}", self.reason)
    }
}

/// Opens the GPU backend when the auto rule asks for it (a test passes a stand-in).
pub(crate) type GpuOpener = Box<dyn FnOnce() -> Result<Box<dyn Backend>, BackendError> + Send>;

/// A monotonic clock, read as the time since a fixed point of its own: what
/// [`AutoBackend`] times its measured slices by (a test passes one its stand-in backends
/// move on).
type Clock = Box<dyn Fn() -> Duration + Send + Sync>;

/// The wall clock, counted from when it is made.
fn wall_clock() -> Clock {
    let base = Instant::now();
    Box::new(move || base.elapsed())
}

/// `--device auto`: runs a job on the CPU or the GPU as this module's rule ([`next_step`])
/// says, measuring both on the job's first slices when the job is big enough (every
/// measured slice is real work, on the CPU or the GPU), and says in [`Backend::name`]
/// which it picked and why. A GPU that fails while it is measured is dropped and its
/// slice redone on the CPU.
///
/// The job is everything run through this backend, in call order: the rule sees the
/// bytes of all calls together, whatever their number.
pub struct AutoBackend {
    rule: AutoRule,
    job_bytes: u64,
    cpu: Box<dyn Backend>,
    clock: Clock,
    state: Mutex<AutoState>,
}

/// What [`AutoBackend`] knows so far.
struct AutoState {
    measured: Measured,
    opener: Option<GpuOpener>,
    gpu: Option<Box<dyn Backend>>,
    choice: Option<AutoChoice>,
}

impl AutoBackend {
    /// A backend for a job of `job_bytes` bytes of input (what `scan` reads, the samples
    /// `normalize` converts) that follows `rule` between `cpu` and the GPU `open_gpu`
    /// gives, if the rule asks for it.
    pub(crate) fn new(rule: AutoRule, job_bytes: u64, cpu: Box<dyn Backend>, open_gpu: GpuOpener) -> AutoBackend {
        AutoBackend::timed_by(wall_clock(), rule, job_bytes, cpu, open_gpu)
    }

    /// [`AutoBackend::new`], timing the measured slices by `clock`.
    fn timed_by(
        clock: Clock,
        rule: AutoRule,
        job_bytes: u64,
        cpu: Box<dyn Backend>,
        open_gpu: GpuOpener,
    ) -> AutoBackend {
        let state = AutoState { measured: Measured::START, opener: Some(open_gpu), gpu: None, choice: None };
        AutoBackend { rule, job_bytes, cpu, clock, state: Mutex::new(state) }
    }

    /// Seconds on this backend's clock since it read `start`.
    fn seconds_since(&self, start: Duration) -> f64 {
        (self.clock)().saturating_sub(start).as_secs_f64()
    }

    /// Runs `len` bytes of input through `run(backend, bytes)`, in the pieces the rule
    /// asks for (each piece starts at a multiple of `unit`, the element size).
    fn drive(
        &self,
        len: usize,
        unit: usize,
        mut run: impl FnMut(&dyn Backend, Range<usize>) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *state;
        let piece = |at: usize, bytes: u64| {
            at..(at + usize::try_from(bytes).unwrap_or(usize::MAX).next_multiple_of(unit).max(unit)).min(len)
        };
        let mut at = 0;
        while at < len {
            let step = match &state.choice {
                Some(choice) => NextStep::Decided(choice.clone()),
                None => next_step(&self.rule, self.job_bytes, &state.measured),
            };
            match step {
                NextStep::Decided(choice) => {
                    let backend = match (choice.pick, &state.gpu) {
                        (Pick::Gpu, Some(gpu)) => gpu.as_ref(),
                        _ => self.cpu.as_ref(),
                    };
                    state.choice = Some(choice);
                    return run(backend, at..len);
                }
                NextStep::TimeCpu(bytes) => {
                    let range = piece(at, bytes);
                    let start = (self.clock)();
                    run(self.cpu.as_ref(), range.clone())?;
                    let m = &mut state.measured;
                    m.cpu = m.cpu.plus(range.len() as u64, self.seconds_since(start));
                    m.done_bytes += range.len() as u64;
                    at = range.end;
                }
                NextStep::OpenGpu => {
                    let opened = state.opener.take().map(|open| open());
                    state.measured.gpu = match opened {
                        Some(Ok(gpu)) => {
                            state.gpu = Some(gpu);
                            GpuProbe::Opened
                        }
                        Some(Err(BackendError::Gpu(GpuError::NoDriver))) => {
                            GpuProbe::Unavailable("no CUDA driver".into())
                        }
                        Some(Err(error)) => GpuProbe::Unavailable(error.to_string()),
                        None => GpuProbe::Unavailable("it could not be opened".into()),
                    };
                }
                NextStep::WarmGpu(bytes) | NextStep::TimeGpu(bytes) => {
                    let Some(gpu) = state.gpu.as_deref() else {
                        state.measured.gpu = GpuProbe::Unavailable("it could not be opened".into());
                        continue;
                    };
                    let range = piece(at, bytes);
                    let start = (self.clock)();
                    match run(gpu, range.clone()) {
                        // The GPU failed: the CPU redoes the piece and the rest.
                        Err(BackendError::Gpu(error)) => {
                            state.gpu = None;
                            state.measured.gpu = GpuProbe::Unavailable(format!("it failed: {error}"));
                            continue;
                        }
                        result => result?,
                    }
                    let m = &mut state.measured;
                    m.gpu = match (&m.gpu, matches!(step, NextStep::TimeGpu(_))) {
                        (GpuProbe::Timed(rate), true) => {
                            GpuProbe::Timed(rate.plus(range.len() as u64, self.seconds_since(start)))
                        }
                        _ => GpuProbe::Timed(Default::default()),
                    };
                    m.done_bytes += range.len() as u64;
                    at = range.end;
                }
            }
        }
        Ok(())
    }
}

impl Backend for AutoBackend {
    fn name(&self) -> String {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let choice = match &state.choice {
            Some(choice) => choice.clone(),
            None => match next_step(&self.rule, self.job_bytes, &state.measured) {
                NextStep::Decided(choice) => choice,
                _ => AutoChoice { pick: Pick::Cpu, reason: AutoReason::EndedWhileMeasuring },
            },
        };
        let picked = match (choice.pick, &state.gpu) {
            (Pick::Gpu, Some(gpu)) => gpu.name(),
            _ => self.cpu.name(),
        };
        format!("{picked} ({choice})")
    }

    fn count(&self, job: CountJob<'_>) -> Result<Counts, BackendError> {
        let size = job.format.bytes();
        let mut total = Counts::default();
        self.drive(job.data.len(), size, |backend, range| {
            let first_index = (range.start / size) as u64;
            let counts = match job.data {
                Source::Bytes(bytes) => backend.count(job.over(Source::Bytes(&bytes[range]))),
                Source::Read { read, .. } => {
                    let offset = range.start as u64;
                    let read_piece = |at: u64, buf: &mut [u8]| read(offset + at, buf);
                    backend.count(job.over(Source::Read { len: range.len(), read: &read_piece }))
                }
            }?;
            total = total.merged(counts.shifted(first_index));
            Ok(())
        })?;
        Ok(total)
    }

    /// Measured in bytes of `src`: each piece a backend gets is whole elements of both.
    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        conversion.elements(src, dst)?;
        let (width, out) = (conversion.in_bytes(), conversion.out_bytes());
        self.drive(src.len(), width, |backend, bytes| {
            let outputs = bytes.start / width * out..bytes.end / width * out;
            backend.convert(conversion, &src[bytes], &mut dst[outputs])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::conversion::convert_slices;
    use crate::backend::cpu::CpuBackend;
    use bitexact_support::element::Endian;
    use shared::Format;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    const RULE: AutoRule = AutoRule::DEFAULT;
    const GIB: u64 = 1 << 30;

    fn rate(gb_per_s: f64, bytes: u64) -> Rate {
        Rate { bytes, seconds: bytes as f64 / (gb_per_s * 1e9) }
    }

    fn measured(done_bytes: u64, cpu: Rate, gpu: GpuProbe) -> Measured {
        Measured { done_bytes, cpu, gpu }
    }

    fn picked(step: NextStep) -> Pick {
        match step {
            NextStep::Decided(choice) => choice.pick,
            other => panic!("not decided: {other:?}"),
        }
    }

    #[test]
    fn a_tiny_job_runs_on_the_cpu_without_measuring() {
        let step = next_step(&RULE, 3 << 20, &Measured::START);
        let NextStep::Decided(choice) = step else { panic!("{step:?}") };
        assert_eq!(choice.pick, Pick::Cpu);
        assert_eq!(choice.to_string(), "auto: a job of 3.0 MiB, under 64.0 MiB: cpu without measuring");
        assert_eq!(picked(next_step(&RULE, RULE.min_job_bytes - 1, &Measured::START)), Pick::Cpu);
        // At the threshold the CPU is measured first.
        assert_eq!(next_step(&RULE, RULE.min_job_bytes, &Measured::START), NextStep::TimeCpu(RULE.measure_bytes));
    }

    #[test]
    fn the_cpu_is_timed_first_until_it_has_run_the_measured_bytes() {
        let half = rate(5.0, RULE.measure_bytes / 2);
        let step = next_step(&RULE, GIB, &measured(half.bytes, half, GpuProbe::NotOpened));
        assert_eq!(step, NextStep::TimeCpu(RULE.measure_bytes - half.bytes));
    }

    #[test]
    fn a_cpu_that_finishes_before_a_gpu_starts_runs_the_rest_unopened() {
        // 1 GiB at 43 GB/s (an H200 host's 16 cores on a file in the page cache): 25 ms.
        let cpu = rate(43.0, RULE.measure_bytes);
        let step = next_step(&RULE, GIB, &measured(cpu.bytes, cpu, GpuProbe::NotOpened));
        let NextStep::Decided(choice) = step else { panic!("{step:?}") };
        assert_eq!(choice.pick, Pick::Cpu);
        assert!(choice.to_string().contains("cpu 43.0 GB/s"), "{choice}");
        // A slow CPU on a big job: the GPU is worth opening.
        let slow = rate(1.0, RULE.measure_bytes);
        assert_eq!(next_step(&RULE, GIB, &measured(slow.bytes, slow, GpuProbe::NotOpened)), NextStep::OpenGpu);
    }

    #[test]
    fn no_gpu_means_the_cpu() {
        let cpu = rate(1.0, RULE.measure_bytes);
        let step = next_step(&RULE, 8 * GIB, &measured(cpu.bytes, cpu, GpuProbe::Unavailable("no CUDA driver".into())));
        let NextStep::Decided(choice) = step else { panic!("{step:?}") };
        assert_eq!(choice.pick, Pick::Cpu);
        assert_eq!(choice.to_string(), "auto: no usable gpu (no CUDA driver)");
    }

    #[test]
    fn an_opened_gpu_is_warmed_up_then_timed() {
        let cpu = rate(1.0, RULE.measure_bytes);
        let done = cpu.bytes;
        assert_eq!(next_step(&RULE, GIB, &measured(done, cpu, GpuProbe::Opened)), NextStep::WarmGpu(RULE.warmup_bytes));
        let part = rate(2.0, 1 << 20);
        let step = next_step(&RULE, GIB, &measured(done + RULE.warmup_bytes + part.bytes, cpu, GpuProbe::Timed(part)));
        assert_eq!(step, NextStep::TimeGpu(RULE.measure_bytes - part.bytes));
    }

    #[test]
    fn the_faster_backend_runs_the_rest() {
        let cpu = rate(2.0, RULE.measure_bytes);
        let done = 2 * RULE.measure_bytes + RULE.warmup_bytes;
        let with_gpu = |gb_per_s| {
            picked(next_step(&RULE, GIB, &measured(done, cpu, GpuProbe::Timed(rate(gb_per_s, RULE.measure_bytes)))))
        };
        assert_eq!(with_gpu(0.5), Pick::Cpu, "gpu slower");
        assert_eq!(with_gpu(2.1), Pick::Cpu, "gpu faster, but within the margin");
        assert_eq!(with_gpu(20.0), Pick::Gpu, "gpu faster");
        let step = next_step(&RULE, GIB, &measured(done, cpu, GpuProbe::Timed(rate(20.0, RULE.measure_bytes))));
        let NextStep::Decided(choice) = step else { panic!("{step:?}") };
        assert_eq!(choice.to_string(), "auto: cpu 2.0 GB/s vs gpu 20.0 GB/s, each timed on 16.0 MiB of this job");
    }

    /// A stand-in device: the CPU's work, after which the test's clock moves on by
    /// `bytes / bytes_per_s` (or a GPU error, when `fails`); counts the bytes it ran.
    /// Neither sleeps nor reads the wall clock: the auto backend measures exactly these
    /// rates, however busy the machine is.
    struct Paced {
        name: &'static str,
        bytes_per_s: f64,
        fails: bool,
        ran: Arc<AtomicU64>,
        clock: Arc<Mutex<Duration>>,
    }

    impl Paced {
        fn run<R>(&self, bytes: usize, work: impl FnOnce() -> Result<R, BackendError>) -> Result<R, BackendError> {
            if self.fails {
                return Err(GpuError::OutOfMemory { bytes }.into());
            }
            let result = work()?;
            let took = Duration::from_secs_f64(bytes as f64 / self.bytes_per_s);
            *self.clock.lock().unwrap_or_else(PoisonError::into_inner) += took;
            self.ran.fetch_add(bytes as u64, Ordering::Relaxed);
            Ok(result)
        }
    }

    impl Backend for Paced {
        fn name(&self) -> String {
            self.name.into()
        }

        fn count(&self, job: CountJob<'_>) -> Result<Counts, BackendError> {
            self.run(job.data.len(), || CpuBackend.count(job))
        }

        fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
            self.run(src.len(), || CpuBackend.convert(conversion, src, dst))
        }
    }

    /// A small rule, so that the tests run on small jobs.
    const SMALL: AutoRule = AutoRule {
        min_job_bytes: 1 << 20,
        measure_bytes: 256 << 10,
        warmup_bytes: 64 << 10,
        gpu_start_s: 0.0,
        gpu_margin: 1.1,
    };

    /// Rates on the test's clock: 256 KiB take 65.536 µs fast, 1.31072 ms slow.
    const FAST: f64 = 4e9;
    const SLOW: f64 = 2e8;

    struct Setup {
        auto: AutoBackend,
        cpu_ran: Arc<AtomicU64>,
        gpu_ran: Arc<AtomicU64>,
        opened: Arc<AtomicBool>,
    }

    /// An auto backend for a job of `job_bytes` between a CPU stand-in of `cpu` bytes/s
    /// and a GPU stand-in of `gpu` bytes/s (`None`: no GPU; `Some(0.0)`: one that fails),
    /// timed by a clock only the stand-ins move.
    fn setup(rule: AutoRule, job_bytes: u64, cpu: f64, gpu: Option<f64>) -> Setup {
        let (cpu_ran, gpu_ran, opened) = (Arc::default(), Arc::<AtomicU64>::default(), Arc::<AtomicBool>::default());
        let now = Arc::new(Mutex::new(Duration::ZERO));
        let clock = Arc::clone(&now);
        let cpu = Box::new(Paced { name: "cpu", bytes_per_s: cpu, fails: false, ran: Arc::clone(&cpu_ran), clock });
        let (ran, was_opened, clock) = (Arc::clone(&gpu_ran), Arc::clone(&opened), Arc::clone(&now));
        let opener: GpuOpener = Box::new(move || {
            was_opened.store(true, Ordering::Relaxed);
            match gpu {
                None => Err(GpuError::NoDriver.into()),
                Some(rate) => {
                    let gpu = Paced { name: "gpu", bytes_per_s: rate, fails: rate == 0.0, ran, clock };
                    Ok(Box::new(gpu) as Box<dyn Backend>)
                }
            }
        });
        let read: Clock = Box::new(move || *now.lock().unwrap_or_else(PoisonError::into_inner));
        Setup { auto: AutoBackend::timed_by(read, rule, job_bytes, cpu, opener), cpu_ran, gpu_ran, opened }
    }

    /// Binary16 data of `len` bytes (a trailing partial element when odd), finite but
    /// for a NaN, +inf and -inf at the given element indices.
    fn halves(len: usize, specials: &[usize]) -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..len).map(|i| (i as u8) & 0x3B).collect();
        for (&at, bits) in specials.iter().zip([0x7E01u16, 0x7C00, 0xFC00]) {
            bytes[2 * at..2 * at + 2].copy_from_slice(&bits.to_le_bytes());
        }
        bytes
    }

    /// Counts of `bytes` by the auto backend, read on demand from an odd offset as
    /// files are, and by the CPU backend.
    fn both_counts(auto: &AutoBackend, bytes: &[u8]) -> (Counts, Counts) {
        let read = |offset: u64, buf: &mut [u8]| {
            buf.copy_from_slice(&bytes[offset as usize..offset as usize + buf.len()]);
            Ok(())
        };
        let source = Source::Read { len: bytes.len(), read: &read };
        let job = CountJob { format: Format::Binary16, endian: Endian::Little, data: source, progress: &|_| {} };
        let on_auto = auto.count(job).expect("auto");
        (on_auto, CpuBackend.count(job.over(Source::Bytes(bytes))).expect("cpu"))
    }

    #[test]
    fn auto_on_a_tiny_job_is_the_cpu_without_measuring() {
        let bytes = halves(1001, &[3, 400]);
        let job = setup(SMALL, bytes.len() as u64, FAST, Some(FAST));
        let (auto, cpu) = both_counts(&job.auto, &bytes);
        assert_eq!(auto, cpu);
        assert!(!job.opened.load(Ordering::Relaxed), "the GPU was opened for a tiny job");
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), bytes.len() as u64);
        assert_eq!(job.auto.name(), "cpu (auto: a job of 1001 bytes, under 1.0 MiB: cpu without measuring)");
    }

    #[test]
    fn auto_without_a_gpu_is_the_cpu() {
        let bytes = halves(3 << 20, &[5, 200_000, 1_500_000]);
        let job = setup(SMALL, bytes.len() as u64, FAST, None);
        let (auto, cpu) = both_counts(&job.auto, &bytes);
        assert_eq!(auto, cpu);
        assert!(job.opened.load(Ordering::Relaxed));
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), bytes.len() as u64);
        assert_eq!(job.auto.name(), "cpu (auto: no usable gpu (no CUDA driver))");
    }

    #[test]
    fn auto_keeps_the_cpu_when_the_gpu_is_slower() {
        let bytes = halves((3 << 20) + 1, &[1, 140_000, 1_400_000]);
        let job = setup(SMALL, bytes.len() as u64, FAST, Some(SLOW));
        let (auto, cpu) = both_counts(&job.auto, &bytes);
        assert_eq!(auto, cpu);
        // The GPU ran its warm-up and measured slices, nothing more.
        assert_eq!(job.gpu_ran.load(Ordering::Relaxed), SMALL.warmup_bytes + SMALL.measure_bytes);
        assert_eq!(job.auto.name(), "cpu (auto: cpu 4.0 GB/s vs gpu 0.2 GB/s, each timed on 256.0 KiB of this job)");
    }

    #[test]
    fn auto_moves_to_the_gpu_when_it_is_faster() {
        // Conversions this time: the job spans several calls, as `normalize` makes them.
        let samples: Vec<u8> = (0..(4 << 20) + 7).map(|i: u32| (i * 7) as u8).collect();
        let job = setup(SMALL, samples.len() as u64, SLOW, Some(FAST));
        let mut on_auto = vec![0f32; samples.len()];
        for (src, dst) in samples.chunks(1 << 20).zip(on_auto.chunks_mut(1 << 20)) {
            convert_slices(&job.auto, SampleConversion::of::<shared::variants::unorm8_times3_int>(), src, dst)
                .expect("auto");
        }
        let mut on_cpu = vec![0f32; samples.len()];
        convert_slices(
            &CpuBackend,
            SampleConversion::of::<shared::variants::unorm8_times3_int>(),
            &samples,
            &mut on_cpu,
        )
        .expect("cpu");
        assert!(on_auto.iter().zip(&on_cpu).all(|(a, c)| a.to_bits() == c.to_bits()));
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), SMALL.measure_bytes, "the CPU ran its measured slice only");
        assert_eq!(job.gpu_ran.load(Ordering::Relaxed), samples.len() as u64 - SMALL.measure_bytes);
        assert_eq!(job.auto.name(), "gpu (auto: cpu 0.2 GB/s vs gpu 4.0 GB/s, each timed on 256.0 KiB of this job)");
    }

    #[test]
    fn auto_drops_a_gpu_that_fails_and_redoes_its_slice_on_the_cpu() {
        let words: Vec<u16> = (0..(1 << 20) + 3).map(|i: u32| (i * 31) as u16).collect();
        let job = setup(SMALL, words.len() as u64 * 2, FAST, Some(0.0));
        let mut on_auto = vec![0f32; words.len()];
        let unorm16 = SampleConversion::of::<shared::variants::unorm16_to_f32>();
        convert_slices(&job.auto, unorm16, &words, &mut on_auto).expect("auto");
        let mut on_cpu = vec![0f32; words.len()];
        convert_slices(&CpuBackend, unorm16, &words, &mut on_cpu).expect("cpu");
        assert!(on_auto.iter().zip(&on_cpu).all(|(a, c)| a.to_bits() == c.to_bits()));
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), words.len() as u64 * 2);
        let name = job.auto.name();
        assert!(name.starts_with("cpu (auto: no usable gpu (it failed: out of device memory"), "{name}");
    }
}
