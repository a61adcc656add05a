//! Per-variant latency and throughput figures, and when they are physically possible.

use std::fmt;

/// Latency and throughput of one variant's per-element function, as measured.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Figures {
    /// Cycles per step of a dependent chain (one application plus the few instructions
    /// that feed its result back, see `kernels-gpu`'s `chain_step`), from the SM's cycle
    /// counter, fixed overhead removed.
    pub latency_cycles: f64,
    /// Independent applications per second over the whole device, in 10^9.
    pub throughput_gops: f64,
    /// The same per SM per cycle at the device's rated clock.
    pub ops_per_sm_per_cycle: f64,
}

/// Instructions (per lane) that one SM can issue per cycle on sm_75 ... sm_120: four
/// warp schedulers, each issuing at most one warp instruction (32 lanes) per cycle.
/// An application costs at least one instruction, so no variant can exceed this.
pub const MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE: f64 = 4.0 * 32.0;

/// Why figures cannot be right ([`check_figures`]). `Display` is the reason the
/// report prints after `invalid: `.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ImpossibleFigures {
    /// A figure is NaN or infinite.
    NotFinite {
        /// Which figure: `latency`, `throughput` or `ops/SM/cycle`.
        figure: &'static str,
        /// Its value.
        value: f64,
    },
    /// Under one cycle per step of a dependent chain.
    LatencyUnderOneCycle {
        /// Cycles per step.
        cycles: f64,
    },
    /// The throughput (or the applications per SM per cycle) is zero or negative.
    ThroughputNotPositive {
        /// Applications per second, in 10^9.
        gops: f64,
    },
    /// More applications per SM per cycle than [`MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE`].
    OverIssueRate {
        /// Applications per SM per cycle.
        ops_per_sm_per_cycle: f64,
    },
}

impl fmt::Display for ImpossibleFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ImpossibleFigures::NotFinite { figure, value } => write!(f, "{figure} is {value}, not a finite number"),
            ImpossibleFigures::LatencyUnderOneCycle { cycles } => {
                write!(f, "latency {cycles:.2} cycles per step is under 1 cycle")
            }
            ImpossibleFigures::ThroughputNotPositive { gops } => {
                write!(f, "throughput {gops:.1} Gop/s is not positive")
            }
            ImpossibleFigures::OverIssueRate { ops_per_sm_per_cycle } => write!(
                f,
                "{ops_per_sm_per_cycle:.1} applications per SM per cycle exceed the \
                 {MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE} instructions an SM can issue"
            ),
        }
    }
}

/// Why `figures` cannot be right, if they cannot: a figure that is not a finite positive
/// number, a latency under one cycle per step (a dependent instruction takes at least
/// one), or more applications per SM per cycle than
/// [`MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE`]. Such figures come from a chain the
/// compiler folded away, not from a fast function. The first reason found, in that order.
pub fn check_figures(figures: &Figures) -> Result<(), ImpossibleFigures> {
    let Figures { latency_cycles, throughput_gops, ops_per_sm_per_cycle } = *figures;
    for (figure, value) in
        [("latency", latency_cycles), ("throughput", throughput_gops), ("ops/SM/cycle", ops_per_sm_per_cycle)]
    {
        if !value.is_finite() {
            return Err(ImpossibleFigures::NotFinite { figure, value });
        }
    }
    if latency_cycles < 1.0 {
        return Err(ImpossibleFigures::LatencyUnderOneCycle { cycles: latency_cycles });
    }
    if throughput_gops <= 0.0 || ops_per_sm_per_cycle <= 0.0 {
        return Err(ImpossibleFigures::ThroughputNotPositive { gops: throughput_gops });
    }
    if ops_per_sm_per_cycle > MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE {
        return Err(ImpossibleFigures::OverIssueRate { ops_per_sm_per_cycle });
    }
    Ok(())
}

/// What became of a variant's timing.
#[derive(Clone, Debug, PartialEq)]
pub enum TimingStatus {
    /// Measured, and possible.
    Valid,
    /// Measured, and impossible: why ([`check_figures`]).
    Invalid(ImpossibleFigures),
    /// Not measured: the function is constant (`Variant::is_constant`).
    Constant,
}

impl fmt::Display for TimingStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimingStatus::Valid => f.write_str("ok"),
            TimingStatus::Invalid(why) => write!(f, "invalid: {why}"),
            TimingStatus::Constant => f.write_str("n/a: constant function"),
        }
    }
}

impl serde::Serialize for TimingStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One variant's per-element timing: the figures only if they are valid.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TimingRow {
    /// Variant name.
    pub variant: &'static str,
    /// `ok`, `invalid: <reason>` or `n/a: constant function`.
    pub status: TimingStatus,
    /// The figures, when `status` is `ok`.
    #[serde(flatten)]
    pub figures: Option<Figures>,
}

impl TimingRow {
    /// The row of measured `figures`: valid, or invalid with the reason and no figures.
    #[doc(hidden)]
    pub fn measured(variant: &'static str, figures: Figures) -> TimingRow {
        match check_figures(&figures) {
            Ok(()) => TimingRow { variant, status: TimingStatus::Valid, figures: Some(figures) },
            Err(why) => TimingRow { variant, status: TimingStatus::Invalid(why), figures: None },
        }
    }

    /// The row of a constant variant, not measured.
    #[doc(hidden)]
    pub fn constant(variant: &'static str) -> TimingRow {
        TimingRow { variant, status: TimingStatus::Constant, figures: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitexact_verify::table::VARIANTS;

    fn figures(latency_cycles: f64, throughput_gops: f64, ops_per_sm_per_cycle: f64) -> Figures {
        Figures { latency_cycles, throughput_gops, ops_per_sm_per_cycle }
    }

    #[test]
    fn possible_figures_pass() {
        // f16_finite_ordered_lt_inf and f16_is_nan on an H200 (commit 846e06b).
        assert_eq!(check_figures(&figures(20.1, 3404.0, 13.1)), Ok(()));
        assert_eq!(check_figures(&figures(18.1, 2534.0, 9.7)), Ok(()));
        // The bounds themselves are possible.
        assert_eq!(check_figures(&figures(1.0, 1.0, MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE)), Ok(()));
    }

    /// The reason `check_figures` gives, as the report prints it.
    fn why(latency_cycles: f64, throughput_gops: f64, ops_per_sm_per_cycle: f64) -> Option<String> {
        check_figures(&figures(latency_cycles, throughput_gops, ops_per_sm_per_cycle)).err().map(|e| e.to_string())
    }

    #[test]
    fn impossible_figures_say_why() {
        // The folded chains of commit 846e06b on an H200: -0.0 cycles, and 2,312
        // applications per SM per cycle (about 600,000 Gop/s).
        assert_eq!(
            check_figures(&figures(-0.0, 3000.0, 10.0)),
            Err(ImpossibleFigures::LatencyUnderOneCycle { cycles: -0.0 })
        );
        assert_eq!(why(-0.0, 3000.0, 10.0).as_deref(), Some("latency -0.00 cycles per step is under 1 cycle"));
        assert_eq!(why(0.0, 3000.0, 10.0).as_deref(), Some("latency 0.00 cycles per step is under 1 cycle"));
        assert_eq!(why(0.99, 3000.0, 10.0).as_deref(), Some("latency 0.99 cycles per step is under 1 cycle"));
        assert_eq!(
            check_figures(&figures(20.0, 600_000.0, 2312.4)),
            Err(ImpossibleFigures::OverIssueRate { ops_per_sm_per_cycle: 2312.4 })
        );
        assert_eq!(
            why(20.0, 600_000.0, 2312.4).as_deref(),
            Some("2312.4 applications per SM per cycle exceed the 128 instructions an SM can issue")
        );
        assert!(check_figures(&figures(20.0, 3000.0, 128.01)).is_err());
        assert_eq!(
            check_figures(&figures(20.0, f64::INFINITY, 10.0)),
            Err(ImpossibleFigures::NotFinite { figure: "throughput", value: f64::INFINITY })
        );
        assert_eq!(why(20.0, f64::INFINITY, 10.0).as_deref(), Some("throughput is inf, not a finite number"));
        assert_eq!(why(f64::NAN, 3000.0, 10.0).as_deref(), Some("latency is NaN, not a finite number"));
        assert!(matches!(
            check_figures(&figures(20.0, 3000.0, f64::NEG_INFINITY)),
            Err(ImpossibleFigures::NotFinite { figure: "ops/SM/cycle", .. })
        ));
        assert_eq!(why(20.0, -5.0, -0.1).as_deref(), Some("throughput -5.0 Gop/s is not positive"));
        assert_eq!(
            check_figures(&figures(20.0, 0.0, 0.0)),
            Err(ImpossibleFigures::ThroughputNotPositive { gops: 0.0 })
        );
    }

    #[test]
    fn rows_carry_figures_only_when_valid() {
        let valid = TimingRow::measured("f16_is_nan", figures(18.1, 2534.0, 9.7));
        assert_eq!((valid.status.to_string(), valid.figures), ("ok".to_string(), Some(figures(18.1, 2534.0, 9.7))));
        let invalid = TimingRow::measured("f32_is_finite", figures(-0.0, 600_000.0, 2312.0));
        assert_eq!(invalid.status.to_string(), "invalid: latency -0.00 cycles per step is under 1 cycle");
        assert_eq!(invalid.figures, None);
        assert_eq!(TimingRow::constant("e4m3_is_infinite").status.to_string(), "n/a: constant function");

        let json = |row: &TimingRow| serde_json::to_value(row).expect("JSON");
        assert_eq!(
            json(&valid),
            serde_json::json!({"variant": "f16_is_nan", "status": "ok", "latency_cycles": 18.1,
                               "throughput_gops": 2534.0, "ops_per_sm_per_cycle": 9.7})
        );
        assert_eq!(
            json(&invalid),
            serde_json::json!({"variant": "f32_is_finite",
                               "status": "invalid: latency -0.00 cycles per step is under 1 cycle"})
        );
        assert_eq!(
            json(&TimingRow::constant("e4m3_is_infinite")),
            serde_json::json!({"variant": "e4m3_is_infinite", "status": "n/a: constant function"})
        );
    }

    #[test]
    fn only_is_infinite_of_formats_without_infinities_is_proven_constant() {
        use shared::{Family::IsInfinite, Format};
        let constant: Vec<&str> = VARIANTS.iter().filter(|v| v.is_constant()).map(|v| v.name).collect();
        // OCP E4M3 and both FNUZ formats have no infinity encoding; every other function
        // of the table depends on its input.
        let no_infinities = [Format::Fp8E4m3, Format::Fp8E4m3Fnuz, Format::Fp8E5m2Fnuz];
        let expected: Vec<&str> = VARIANTS
            .iter()
            .filter(|v| matches!(v.family, IsInfinite(f) if no_infinities.contains(&f)))
            .map(|v| v.name)
            .collect();
        assert_eq!(expected.len(), 3);
        assert_eq!(constant, expected);
    }
}
