//! `bitexact search`: find, per UNORMn / SNORMn, the cheapest division-free f32 scheme
//! that is correctly rounded on every code.

use host::report::{self, Format, Table};
use host::search::{self, Found, Kind, SchemeFamily};
use std::fmt::Write as _;
use std::ops::RangeInclusive;
use std::process::ExitCode;
use std::time::Instant;

/// Options of `bitexact search`.
#[derive(clap::Args)]
pub struct Args {
    /// UNORM code widths to search: `N`, `A..B` (inclusive), `A..=B`, or a comma list of
    /// those. Default: 1..16 (with --snorm's default) unless only --snorm is given.
    #[arg(long, value_name = "WIDTHS")]
    pub unorm: Option<String>,
    /// SNORM code widths to search (2..16), same syntax. Default: 2..16 unless only
    /// --unorm is given.
    #[arg(long, value_name = "WIDTHS")]
    pub snorm: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Print `shared/src/schemes.rs` (needs every width: the default) instead of a
    /// report.
    #[arg(long)]
    pub emit_rust: bool,
}

/// Parses `N`, `A..B`, `A..=B` (both inclusive) and comma lists of those, each width in
/// `allowed`.
fn parse_widths(text: &str, kind: Kind) -> Result<Vec<u32>, String> {
    let allowed = kind.widths();
    let number = |s: &str| -> Result<u32, String> {
        s.trim().parse::<u32>().map_err(|_| format!("--{}: {s:?} is not a width", kind.label().to_lowercase()))
    };
    let mut widths = Vec::new();
    for part in text.split(',') {
        let range: RangeInclusive<u32> = match part.split_once("..") {
            Some((a, b)) => number(a)?..=number(b.strip_prefix('=').unwrap_or(b))?,
            None => number(part)?..=number(part)?,
        };
        if range.is_empty() || !allowed.contains(range.start()) || !allowed.contains(range.end()) {
            return Err(format!(
                "--{} {part}: {} widths go from {} to {}",
                kind.label().to_lowercase(),
                kind.label(),
                allowed.start(),
                allowed.end()
            ));
        }
        for width in range {
            if !widths.contains(&width) {
                widths.push(width);
            }
        }
    }
    Ok(widths)
}

pub fn run(args: &Args) -> Result<ExitCode, String> {
    let (unorm, snorm) = match (&args.unorm, &args.snorm) {
        (None, None) => (Kind::Unorm.widths().collect(), Kind::Snorm.widths().collect()),
        (u, s) => (
            u.as_deref().map_or(Ok(vec![]), |t| parse_widths(t, Kind::Unorm))?,
            s.as_deref().map_or(Ok(vec![]), |t| parse_widths(t, Kind::Snorm))?,
        ),
    };
    let jobs: Vec<(Kind, u32)> =
        unorm.iter().map(|&b| (Kind::Unorm, b)).chain(snorm.iter().map(|&b| (Kind::Snorm, b))).collect();
    let start = Instant::now();
    let found = search::search_all(&jobs);
    let elapsed = start.elapsed();
    if args.emit_rust {
        report::write_stdout(&search::emit_rust(&found)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    match args.format {
        Format::Json => out.push_str(&report::json(&found)),
        Format::Table | Format::Markdown => {
            out.push_str(&render(&found).render(args.format == Format::Markdown));
            let _ = writeln!(
                out,
                "\nEach candidate checked on every code against the exact rational reference; {} conversions in {:.2?}.",
                found.len(),
                elapsed
            );
            out.push_str(
                "ops: FP operations + integer multiplies (the int → f32 conversion and the SNORM sign extension and clamp are not counted).\n",
            );
            for f in found.iter().filter(|f| f.best.is_none()) {
                let _ = writeln!(out, "{}{}: none of the tried families is exact.", f.kind.label(), f.bits);
            }
        }
    }
    report::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The report: one row per conversion.
fn render(found: &[Found]) -> Table {
    let mut table = Table::new([
        "conversion",
        "d",
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
        table.row([
            format!("{}{}", f.kind.label(), f.bits),
            f.denominator.to_string(),
            name,
            formula,
            fp,
            int,
            format!("{}/{}", f.naive_wrong, f.codes),
            f.smallest_m.map_or("-".into(), |m| m.to_string()),
            exact(SchemeFamily::Series),
            exact(SchemeFamily::SeriesFma),
            exact(SchemeFamily::SplitFma),
        ]);
    }
    table
}
