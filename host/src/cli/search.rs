//! `bitexact search`: find, per denominator `2^k - 1`, the cheapest division-free f32
//! scheme that is correctly rounded on every code of UNORMk and SNORM(k+1).

use super::choices::OutputFormat;
use super::error::CliError;
use bitexact::search::{self, Found, Kind, SchemeFamily};
use bitexact::support::output::{self, Table};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::ops::RangeInclusive;
use std::process::ExitCode;
use std::time::Instant;

/// Options of `bitexact search`.
#[derive(clap::Args)]
pub struct SearchArgs {
    /// Search the denominators of these UNORM code widths (UNORMn divides by 2^n - 1,
    /// as SNORM(n+1) does): N, A..B (inclusive), A..=B, or a comma list of those.
    /// Default, with neither --unorm nor --snorm: every denominator.
    #[arg(long, value_name = "WIDTHS")]
    pub unorm: Option<String>,
    /// Search the denominators of these SNORM code widths (2..16; SNORMn divides by
    /// 2^(n-1) - 1, as UNORM(n-1) does), same syntax.
    #[arg(long, value_name = "WIDTHS")]
    pub snorm: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Print shared/src/schemes.rs (needs every denominator: the default) instead of
    /// a report.
    #[arg(long)]
    pub emit_rust: bool,
}

/// Parses `N`, `A..B`, `A..=B` (both inclusive) and comma lists of those, each width in
/// `allowed`.
fn parse_widths(text: &str, kind: Kind) -> Result<Vec<u32>, CliError> {
    let allowed = kind.widths();
    let number = |s: &str| -> Result<u32, CliError> {
        s.trim()
            .parse::<u32>()
            .map_err(|_| CliError::Usage(format!("--{}: {s:?} is not a width", kind.label().to_lowercase())))
    };
    let mut widths = Vec::new();
    for part in text.split(',') {
        let range: RangeInclusive<u32> = match part.split_once("..") {
            Some((a, b)) => number(a)?..=number(b.strip_prefix('=').unwrap_or(b))?,
            None => number(part)?..=number(part)?,
        };
        if range.is_empty() || !allowed.contains(range.start()) || !allowed.contains(range.end()) {
            return Err(CliError::Usage(format!(
                "--{} {part}: {} widths go from {} to {}",
                kind.label().to_lowercase(),
                kind.label(),
                allowed.start(),
                allowed.end()
            )));
        }
        for width in range {
            if !widths.contains(&width) {
                widths.push(width);
            }
        }
    }
    Ok(widths)
}

pub fn run(args: &SearchArgs) -> Result<ExitCode, CliError> {
    let denominator_bits: Vec<u32> = match (&args.unorm, &args.snorm) {
        (None, None) => search::DENOMINATOR_BITS.collect(),
        (unorm, snorm) => {
            let mut bits = BTreeSet::new();
            for (kind, widths) in [(Kind::Unorm, unorm), (Kind::Snorm, snorm)] {
                for width in widths.as_deref().map_or(Ok(vec![]), |text| parse_widths(text, kind))? {
                    bits.insert(kind.denominator_bits(width));
                }
            }
            bits.into_iter().collect()
        }
    };
    let start = Instant::now();
    let found = search::search_all(&denominator_bits);
    let elapsed = start.elapsed();
    if args.emit_rust {
        output::write_stdout(&search::emit_rust(&found)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    match args.format {
        OutputFormat::Json => out.push_str(&output::json(&found)),
        OutputFormat::Table | OutputFormat::Markdown => {
            out.push_str(&render(&found).render(args.format == OutputFormat::Markdown));
            let _ = writeln!(
                out,
                "\nOne scheme per denominator, each candidate checked on every code of every conversion listed against the exact rational reference; {} denominators in {:.2?} on {}.",
                found.len(),
                elapsed,
                bitexact::support::parallel::describe_threads()
            );
            out.push_str(
                "ops: FP operations + integer multiplies (the int → f32 conversion and the SNORM sign extension and clamp are not counted).\n",
            );
            for f in found.iter().filter(|f| f.best.is_none()) {
                let _ = writeln!(
                    out,
                    "d = {} ({}): none of the tried families is exact.",
                    f.denominator,
                    search::conversions(f.bits)
                );
            }
        }
    }
    output::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The report: one row per denominator.
fn render(found: &[Found]) -> Table {
    let mut table = Table::new([
        "d",
        "conversions",
        "cheapest exact scheme",
        "formula (hex-float constants)",
        "fp ops",
        "int ops",
        "naive wrong",
        "smallest m",
        "series",
        "series fma",
        "split fma",
    ]);
    for f in found {
        let exact = |family: SchemeFamily| {
            let result = f.families.iter().find(|r| r.family == family);
            if result.is_some_and(|r| r.exact.is_some()) { "exact" } else { "no" }.to_string()
        };
        let (name, formula, fp, int) = match f.best {
            Some(best) => (
                best.family.name().to_string(),
                search::formula(best.scheme),
                best.cost.fp_ops.to_string(),
                best.cost.int_ops.to_string(),
            ),
            None => ("none exact".into(), "-".into(), "-".into(), "-".into()),
        };
        let naive_wrong: Vec<String> = f.naive_wrong.iter().map(|u| format!("{}/{}", u.wrong, u.codes)).collect();
        table.row([
            f.denominator.to_string(),
            search::conversions(f.bits),
            name,
            formula,
            fp,
            int,
            naive_wrong.join(", "),
            f.smallest_m.map_or("-".into(), |m| m.to_string()),
            exact(SchemeFamily::Series),
            exact(SchemeFamily::SeriesFma),
            exact(SchemeFamily::SplitFma),
        ]);
    }
    table
}
