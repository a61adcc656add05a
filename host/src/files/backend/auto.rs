//! `--device auto`: the rule that picks the CPU or the GPU for a job, from rates
//! measured on the job itself.
//!
//! The rule is a pure function, [`next_step`]: given the job's size and what has been
//! measured so far, it says what to do next (time the CPU on the next slice of the job,
//! open the GPU, warm it up, time it) or which backend runs the rest and why. The
//! backend that follows it ([`crate::files::backend`]'s auto backend) does real work in
//! every step: the measured slices are part of the job.
//!
//! The steps:
//! 1. A job under [`AutoRule::min_job_bytes`] runs on the CPU, unmeasured: too small
//!    for a GPU to pay for its start.
//! 2. The CPU is timed on the first [`AutoRule::measure_bytes`] of the job.
//! 3. If the CPU would finish the rest of the job in less time than a GPU takes to
//!    start ([`AutoRule::gpu_start_s`]), it does, and the GPU is never opened. This is
//!    the common case for host-resident data: a GPU must first move every byte over
//!    PCIe, which a multi-core CPU scanning at memory speed outruns.
//! 4. Otherwise the GPU is opened (no usable GPU: the CPU runs the rest), warmed up on
//!    [`AutoRule::warmup_bytes`] (buffers, the first launches), then timed on the next
//!    [`AutoRule::measure_bytes`].
//! 5. The GPU runs the rest if its rate beats the CPU's by [`AutoRule::gpu_margin`];
//!    else the CPU does.

use crate::support::output::count_of;

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
    pub fn bytes_per_s(self) -> f64 {
        if self.seconds > 0.0 { self.bytes as f64 / self.seconds } else { f64::INFINITY }
    }

    /// This rate with `bytes` more run in `seconds` more.
    pub fn plus(self, bytes: u64, seconds: f64) -> Rate {
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
    pub const DEFAULT: AutoRule = AutoRule {
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
    pub const START: Measured =
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
