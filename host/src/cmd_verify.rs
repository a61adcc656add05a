//! `bitexact verify`: the main job.

use host::cpu::{self, Verification};
use host::report::{self, Format, Table};
use host::table::{VARIANTS, Variant};
use std::fmt::Write as _;
use std::process::ExitCode;

/// Options of `bitexact verify`.
#[derive(clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Elements per CPU timing pass (0 skips timing).
    #[arg(long, default_value_t = 1 << 24)]
    pub cpu_elements: usize,
    /// Timing passes per variant; the best is reported.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Only variants whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}

/// One row of the report.
#[derive(serde::Serialize)]
struct Row {
    family: &'static str,
    claim: &'static str,
    description: &'static str,
    #[serde(flatten)]
    verification: Verification,
    claim_holds: bool,
    /// CPU (this machine, one thread) nanoseconds per element; not a GPU figure.
    cpu_ns_per_element: Option<f64>,
}

pub fn run(args: &Args) -> Result<ExitCode, String> {
    let selected: Vec<&Variant> =
        VARIANTS.iter().filter(|v| args.only.as_deref().is_none_or(|s| v.name.contains(s))).collect();
    if selected.is_empty() {
        return Err(format!("no variant matches {:?}", args.only.as_deref().unwrap_or("")));
    }
    let rows: Vec<Row> = selected
        .iter()
        .map(|v| {
            let verification = cpu::verify(v);
            Row {
                family: v.family.name(),
                claim: v.claim.name(),
                description: v.description,
                claim_holds: verification.claim_holds(v.claim),
                verification,
                cpu_ns_per_element: (args.cpu_elements > 0)
                    .then(|| v.ops.cpu_ns_per_element(args.cpu_elements, args.reps)),
            }
        })
        .collect();
    let failed: Vec<&str> = rows.iter().filter(|r| !r.claim_holds).map(|r| r.verification.variant).collect();

    let mut out = String::new();
    if args.format == Format::Json {
        let _ = write!(out, "{}", report::json(&rows));
    } else {
        let mut table =
            Table::new(["variant", "family", "inputs", "mismatches", "max ulp", "exact", "claim", "cpu ns/elem"]);
        for (row, v) in rows.iter().zip(&selected) {
            let ver = &row.verification;
            table.row([
                ver.variant.to_string(),
                row.family.to_string(),
                ver.inputs_checked.to_string(),
                ver.mismatches.to_string(),
                ver.max_ulp.map_or("-".into(), |u| u.to_string()),
                if ver.mismatches == 0 { "yes" } else { "no" }.to_string(),
                format!("{}{}", v.claim.name(), if row.claim_holds { "" } else { " (BROKEN)" }),
                row.cpu_ns_per_element.map_or("-".into(), |ns| format!("{ns:.3}")),
            ]);
        }
        let _ = write!(out, "{}", table.render(args.format == Format::Markdown));
        let _ = writeln!(out);
        for (row, v) in rows.iter().zip(&selected) {
            let ver = &row.verification;
            if ver.mismatches > 0 {
                let inputs: Vec<String> = ver.first_mismatches.iter().map(|m| m.input.to_string()).collect();
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
        if args.cpu_elements > 0 {
            let _ = writeln!(
                out,
                "cpu ns/elem: this machine's CPU, one thread, best of {} passes over {} elements.",
                args.reps, args.cpu_elements
            );
        }
    }
    report::write_stdout(&out)?;
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("bitexact: claim broken by: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}
