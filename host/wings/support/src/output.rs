//! Text, Markdown and JSON rendering of reports.

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};
use unicode_width::UnicodeWidthStr;

/// A rectangular table of strings with a header row.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

/// A table cell: text from anywhere, which [`Table::render`] escapes, or text already
/// escaped (a [`path_text`]), shown as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Text to escape.
    Text(String),
    /// Text already escaped.
    Escaped(String),
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::Text(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::Text(text.to_string())
    }
}

impl Table {
    /// A table with these column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Appends a row (one cell per column).
    pub fn row<S: Into<Cell>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Renders as an aligned plain-text table or as Markdown, columns padded to the same
    /// width in terminal columns (a CJK character or an emoji is two). Every cell goes through
    /// [`escape`] (but a [`Cell::Escaped`], already escaped), and in Markdown `|`
    /// becomes `\|`, so that no name from a file can move the cursor, retitle the terminal or add a row or a column; a cell over
    /// [`MAX_CELL_CHARS`] is [`shortened`], so that one long name does not widen every
    /// row of its column (JSON keeps the whole of it).
    pub fn render(&self, markdown: bool) -> String {
        let markdown_safe = |shown: String| if markdown { shown.replace('|', "\\|") } else { shown };
        let cell = |cell: &Cell| match cell {
            Cell::Text(text) => markdown_safe(shortened(text, MAX_CELL_CHARS)),
            Cell::Escaped(text) => markdown_safe(text.clone()),
        };
        let header: Vec<String> = self.header.iter().map(|c| markdown_safe(shortened(c, MAX_CELL_CHARS))).collect();
        let rows: Vec<Vec<String>> = self.rows.iter().map(|r| r.iter().map(cell).collect()).collect();
        let columns = header.len();
        // Terminal columns, not chars: a CJK character or an emoji takes two (UAX #11).
        let width = |c: usize| rows.iter().map(|r| r.get(c).map_or(0, |s| s.width())).chain([header[c].width()]).max();
        let widths: Vec<usize> = (0..columns).map(|c| width(c).unwrap_or(0)).collect();
        // Padded by hand: `format!("{:<w$}")` panics on a width over u16::MAX.
        let line = |cells: &[String]| {
            let padded: Vec<String> = (0..columns)
                .map(|c| {
                    let text = cells.get(c).map_or("", String::as_str);
                    format!("{text}{}", " ".repeat(widths[c].saturating_sub(text.width())))
                })
                .collect();
            if markdown { format!("| {} |", padded.join(" | ")) } else { padded.join("  ").trim_end().to_string() }
        };
        let mut out = vec![line(&header)];
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w.max(3))).collect();
        out.push(if markdown { format!("|-{}-|", rule.join("-|-")) } else { rule.join("  ") });
        out.extend(rows.iter().map(|r| line(r)));
        out.join("\n") + "\n"
    }
}

/// Longest table cell shown whole, in characters; a longer one is [`shortened`].
pub const MAX_CELL_CHARS: usize = 256;
/// Longest piece of input an error or warning line echoes whole, in characters; a
/// longer one is [`shortened`] (a 16 KB dtype string or a 64 KB tensor name would
/// otherwise fill the terminal).
pub const MAX_ECHO_CHARS: usize = 96;

/// `text` with what a terminal would act on made visible: `\n`, `\r`, `\t`, other
/// control characters (C0, DEL, C1) and the Unicode line separators and bidirectional
/// overrides as `\u{1b}`, and `\` as `\\`, so that an escaped newline cannot be faked.
/// The one escaping of names and paths from files: table and Markdown cells, error and
/// warning lines (JSON is escaped by serde).
pub fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    let acted_on = |c: char| c == '\\' || acted_on(c);
    if !text.contains(acted_on) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if acted_on(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.into()
}

/// `true` for the characters [`escape`] writes as escapes (besides `\\`): those a
/// terminal acts on or that reorder or break what is displayed.
fn acted_on(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` [`escape`]d, and if it is over `max_chars` characters, its first and last
/// `max_chars / 2` with the cut marked between them: `abc…[70000 chars cut]…xyz`.
/// Both ends are kept: a tensor name's end (`.weight`) and a path's (the file name) tell
/// as much as their starts.
pub fn shortened(text: &str, max_chars: usize) -> String {
    let chars = text.chars().count();
    if chars <= max_chars {
        return escape(text).into_owned();
    }
    let keep = max_chars / 2;
    let head_end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(chars - keep).map_or(text.len(), |(i, _)| i);
    format!("{}…[{} chars cut]…{}", escape(&text[..head_end]), chars - 2 * keep, escape(&text[tail_start..]))
}

/// Input echoed in an error or warning line: [`shortened`] to [`MAX_ECHO_CHARS`].
pub fn excerpt(text: &str) -> String {
    shortened(text, MAX_ECHO_CHARS)
}

/// A path as a message, a table or (for a name that is not UTF-8) JSON shows it:
/// [`escape`]d, and each byte that is not UTF-8 as `\xNN` (`bad\xff.npy`), which cannot
/// be confused with a name holding those four characters, whose `\` is doubled. Not
/// shortened: it is the reader's own, and needed whole to find the file.
pub fn path_text(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// `n` and `noun`, plural unless `n` is 1: `1 file`, `2 files`, `0 files`.
pub fn count_of(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Pretty JSON of `value`, newline-terminated, as [`write_json`] writes it.
pub fn json<T: Serialize>(value: &T) -> String {
    let mut bytes = Vec::new();
    match write_json(&mut bytes, value) {
        Ok(()) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("{{\"error\": {}}}\n", serde_json::Value::from(e.to_string())),
    }
}

/// Writes `value` as pretty JSON, newline-terminated, streamed. Strings are escaped as
/// serde escapes them (`"`, `\\`, C0 controls) and, beyond that, every other character
/// that [`escape`] escapes (DEL, the C1 controls such as U+009B, a terminal's CSI;
/// line separators, bidirectional overrides) as `\uXXXX`: the same text to a JSON
/// parser, inert in a terminal.
pub fn write_json<T: Serialize + ?Sized>(mut out: impl std::io::Write, value: &T) -> std::io::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, InertJson(PrettyFormatter::new()));
    value.serialize(&mut serializer)?;
    writeln!(out)
}

/// serde's pretty formatter, with the strings' extra escapes of [`write_json`].
struct InertJson<'a>(PrettyFormatter<'a>);

/// Forwards each layout method to the pretty formatter.
macro_rules! pretty {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(fn $method<W: ?Sized + std::io::Write>(&mut self, writer: &mut W $(, $arg: $ty)*) -> std::io::Result<()> {
            self.0.$method(writer $(, $arg)*)
        })*
    };
}

impl Formatter for InertJson<'_> {
    pretty! {
        begin_array(), end_array(), begin_array_value(first: bool), end_array_value(),
        begin_object(), end_object(), begin_object_key(first: bool), begin_object_value(), end_object_value(),
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.find(acted_on) {
            let c = rest[at..].chars().next().unwrap_or_default();
            writer.write_all(&rest.as_bytes()[..at])?;
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

/// Stdout could not be written. `Display` is the one line the CLI prints; the I/O
/// error is in it, not behind `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Writing or flushing stdout failed, other than by a reader that closed the pipe.
    #[error("cannot write to stdout: {0}")]
    Stdout(std::io::Error),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_makes_what_a_terminal_acts_on_visible() {
        let text = "a\\b\n\r\t\u{1b}[2J\u{7}\u{7f}\u{9b}\u{202e}\u{2028}é|";
        assert_eq!(escape(text), r"a\\b\n\r\t\u{1b}[2J\u{7}\u{7f}\u{9b}\u{202e}\u{2028}é|");
        assert!(matches!(escape("model.layers.0.weight"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn a_path_that_is_not_utf8_shows_its_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(b"d\\x/bad\xff\xfe\n.npy"));
        assert_eq!(path_text(path), r"d\\x/bad\xff\xfe\n.npy");
        assert_eq!(path_text(std::path::Path::new("ok é.npy")), "ok é.npy");
    }

    #[test]
    fn shortened_keeps_both_ends_whole_characters_and_counts_the_cut() {
        let text = "é".repeat(300) + "\u{1b}";
        assert_eq!(shortened(&text, 10), format!("{}…[291 chars cut]…{}\\u{{1b}}", "é".repeat(5), "é".repeat(4)));
        assert_eq!(shortened("short", 10), "short");
    }

    #[test]
    fn a_table_renders_cells_wider_than_a_format_width() {
        let mut table = Table::new(["name", "n"]);
        table.row(["x".repeat(70_000), "1".to_string()]);
        table.row(["a|b", "2"]);
        for markdown in [false, true] {
            let text = table.render(markdown);
            assert!(text.lines().all(|l| l.chars().count() < 2 * MAX_CELL_CHARS), "{markdown}");
            assert_eq!(text.contains(r"a\|b"), markdown);
        }
    }

    #[test]
    fn wide_names_line_up_by_display_columns() {
        // East Asian Wide characters and emoji take two terminal columns each (Unicode
        // UAX #11): "重みの名前" is 5 characters in 10 columns, "🔥🔥" 2 in 4.
        let mut table = Table::new(["tensor", "nan"]);
        for (name, nan) in [("重みの名前", "1"), ("🔥🔥", "2"), ("weights", "3")] {
            table.row([name, nan]);
        }
        let expected = "tensor      nan\n----------  ---\n重みの名前  1\n🔥🔥        2\nweights     3\n";
        assert_eq!(table.render(false), expected);
        let markdown = "| tensor     | nan |\n|------------|-----|\n| 重みの名前 | 1   |\n| 🔥🔥       | 2   |\n| weights    | 3   |\n";
        assert_eq!(table.render(true), markdown);
    }

    #[test]
    fn json_escapes_c1_controls_and_reads_back_the_same() {
        let name = "t\u{1b}]0;x\u{7}\u{9b}31m\u{7f}\u{202e}";
        let text = json(&serde_json::json!({ "name": name }));
        assert!(!text.chars().any(|c| c != '\n' && acted_on(c)), "{text:?}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["name"], name);
    }
}
