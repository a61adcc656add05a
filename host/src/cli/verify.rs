//! `bitexact verify`: the main job.

use super::choices::OutputFormat;
use super::error::CliError;
use bitexact::support::output::{self, Table};
use bitexact::verify::cpu::{self, Verification, VerifyProgress};
use bitexact::verify::table::Variant;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

/// Options of `bitexact verify`.
#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Elements per CPU timing pass (0 skips timing).
    #[arg(long, default_value_t = 1 << 24)]
    pub cpu_elements: usize,
    /// Timing passes per variant; the best is reported.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    #[arg(long, help = bitexact::verify::table::ONLY_HELP)]
    pub only: Option<String>,
}

/// One row of the report.
#[derive(serde::Serialize)]
struct Row {
    family: String,
    domain: String,
    claim: &'static str,
    description: &'static str,
    #[serde(flatten)]
    verification: Verification,
    claim_holds: bool,
    /// CPU (this machine, one thread) nanoseconds per element; not a GPU figure.
    cpu_ns_per_element: Option<f64>,
}

/// VerifyProgress on stderr for a family whose check takes over a second: a line rewritten in
/// place on a terminal, a line every 10 s otherwise, and in both cases a final line
/// with the time it took.
fn progress_reporter() -> impl Fn(VerifyProgress) + Sync {
    let terminal = std::io::stderr().is_terminal();
    let every = Duration::from_millis(if terminal { 100 } else { 10_000 });
    let last_line = Mutex::new(Duration::ZERO);
    move |p: VerifyProgress| {
        let finished = p.done == p.total;
        let Ok(mut last) = last_line.lock() else { return };
        if p.elapsed < Duration::from_secs(1) || (!finished && p.elapsed < *last + every) {
            return;
        }
        *last = if finished { Duration::ZERO } else { p.elapsed };
        let percent = 100.0 * p.done as f64 / p.total.max(1) as f64;
        let line = format!("verify {}: {percent:5.1}% of {} inputs, {:.1?}", p.family, p.total, p.elapsed);
        let end = if finished || !terminal { "\n" } else { "" };
        let start = if terminal { "\r\x1b[K" } else { "" };
        let _ = write!(std::io::stderr().lock(), "{start}{line}{end}");
    }
}

/// How `verify` was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invocation {
    /// `bitexact verify`.
    Named,
    /// `bitexact` alone: the first line says so, and where the other commands are.
    Default,
}

/// The line on stderr that says, before the first result (seconds away), what is being
/// done.
fn starting_line(variants: usize, invocation: Invocation) -> String {
    let hint = match invocation {
        Invocation::Named => "",
        Invocation::Default => " (bitexact --help lists the other commands)",
    };
    format!(
        "bitexact: verifying {} against the exact reference, each on every input of its domain{hint}…",
        output::count_of(variants as u64, "variant")
    )
}

/// Runs the verification of the variants `args` selects and prints the report; exit 1
/// if a claim is broken.
pub fn run(args: &VerifyArgs, invocation: Invocation) -> Result<ExitCode, CliError> {
    let selected: Vec<&Variant> = bitexact::verify::table::selected(args.only.as_deref())?;
    crate::cli::say!("{}", starting_line(selected.len(), invocation));
    let verifications = cpu::verify_all(&selected, &progress_reporter());
    let rows: Vec<Row> = selected
        .iter()
        .zip(verifications)
        .map(|(v, verification)| Row {
            family: v.family.to_string(),
            domain: bitexact::verify::domain::describe(v.family),
            claim: v.claim.name(),
            description: v.description,
            claim_holds: verification.claim_holds(v.claim),
            verification,
            cpu_ns_per_element: (args.cpu_elements > 0).then(|| v.ops.cpu_ns_per_element(args.cpu_elements, args.reps)),
        })
        .collect();
    let failed: Vec<&str> = rows.iter().filter(|r| !r.claim_holds).map(|r| r.verification.variant).collect();

    let mut out = String::new();
    if args.format == OutputFormat::Json {
        let _ = write!(out, "{}", output::json(&rows));
    } else {
        let mut table =
            Table::new(["variant", "family", "inputs", "mismatches", "max ulp", "exact", "claim", "cpu ns/elem"]);
        for (row, v) in rows.iter().zip(&selected) {
            let ver = &row.verification;
            table.row([
                ver.variant.to_string(),
                row.family.clone(),
                ver.inputs_checked.to_string(),
                ver.mismatches.to_string(),
                ver.max_ulp.map_or("-".into(), |u| u.to_string()),
                if ver.mismatches == 0 { "yes" } else { "no" }.to_string(),
                format!("{}{}", v.claim.name(), if row.claim_holds { "" } else { " (BROKEN)" }),
                row.cpu_ns_per_element.map_or("-".into(), |ns| format!("{ns:.3}")),
            ]);
        }
        let _ = write!(out, "{}", table.render(args.format == OutputFormat::Markdown));
        let _ = writeln!(out);
        for (row, v) in rows.iter().zip(&selected) {
            let ver = &row.verification;
            if ver.mismatches > 0 {
                // Small codes read best in decimal, float encodings in hex.
                let hex = v.family.domain().input_mask() > 0xFFFF;
                let show = |x: u64| if hex { format!("{x:#x}") } else { x.to_string() };
                let inputs: Vec<String> = ver.first_mismatches.iter().map(|m| show(m.input)).collect();
                let more = if ver.mismatches as usize > inputs.len() { ", ..." } else { "" };
                let _ = writeln!(
                    out,
                    "{}: wrong on {} of {} inputs ({}; claim: {}): {}{more}",
                    ver.variant,
                    ver.mismatches,
                    ver.inputs_checked,
                    v.description,
                    v.claim.name(),
                    inputs.join(", ")
                );
            }
        }
        let _ = writeln!(
            out,
            "checked on {} (--threads or RAYON_NUM_THREADS).",
            bitexact::support::parallel::describe_threads()
        );
        if args.cpu_elements > 0 {
            let _ = writeln!(
                out,
                "cpu ns/elem: this machine's CPU, one thread, best of {} passes over {} elements.",
                args.reps, args.cpu_elements
            );
        }
    }
    output::write_stdout(&out)?;
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        crate::cli::say!("bitexact: claim broken by: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}
