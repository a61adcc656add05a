//! Text, Markdown and JSON rendering of reports.

use serde::Serialize;

/// A rectangular table of strings with a header row.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Appends a row (one cell per column).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Renders as an aligned plain-text table or as Markdown.
    pub fn render(&self, markdown: bool) -> String {
        let columns = self.header.len();
        let width = |c: usize| {
            self.rows
                .iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .chain([self.header[c].chars().count()])
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = (0..columns)
                .map(|c| format!("{:<w$}", cells.get(c).map_or("", String::as_str), w = widths[c]))
                .collect();
            if markdown { format!("| {} |", padded.join(" | ")) } else { padded.join("  ").trim_end().to_string() }
        };
        let mut out = vec![line(&self.header)];
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w.max(3))).collect();
        out.push(if markdown { format!("|-{}-|", rule.join("-|-")) } else { rule.join("  ") });
        out.extend(self.rows.iter().map(|r| line(r)));
        out.join("\n") + "\n"
    }
}

/// `n` and `noun`, plural unless `n` is 1: `1 file`, `2 files`, `0 files`.
pub fn count_of(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Pretty JSON of `value`, newline-terminated.
pub fn json<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// Stdout could not be written. `Display` is the one line the CLI prints.
#[derive(Debug)]
#[non_exhaustive]
pub enum OutputError {
    /// Writing or flushing stdout failed, other than by a reader that closed the pipe.
    Stdout(std::io::Error),
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputError::Stdout(e) => write!(f, "cannot write to stdout: {e}"),
        }
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OutputError::Stdout(e) => Some(e),
        }
    }
}

/// The one-line message, for command code that still builds its errors as text.
impl From<OutputError> for String {
    fn from(e: OutputError) -> String {
        e.to_string()
    }
}

/// Writes `text` to stdout. A reader that closed the pipe early (`bitexact ptx | head`)
/// is not an error, since it read all it wanted; any other write error is returned.
pub fn write_stdout(text: &str) -> Result<(), OutputError> {
    write_stdout_with(|out| out.write_all(text.as_bytes()))
}

/// Streams what `write` produces to stdout through one buffer (a long report costs a
/// few large writes, not one per line); write errors as in [`write_stdout`].
pub fn write_stdout_with(
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    use std::io::Write;
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match write(&mut stdout).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(OutputError::Stdout(e)),
        _ => Ok(()),
    }
}
