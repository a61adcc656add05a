//! Scanning whole files and reporting: per tensor and in total, as a table or JSON.

use crate::backend::{Backend, BackendError, CountJob};
use crate::containers::npz;
use crate::containers::{TensorElement, TensorEntry};
use crate::message::one_line;
use crate::read::{TensorFile, TensorFileError, TensorReader};
use bitexact_support::element::Endian;
use bitexact_support::output::{Cell, MAX_CELL_CHARS, Table, count_of, excerpt, path_text, shortened};
use bitexact_support::progress::Progress;
use shared::Format;

/// What a report names: the counts, the container a file was, and a deflated entry's
/// error.
pub use crate::backend::count::Counts;
pub use crate::containers::Container;
pub use crate::containers::npz::InflateError;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Why a scan stopped: a file could not be read again, or a tensor could not be
/// scanned. Displayed on one line, naming the file (and the tensor).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// The file could not be opened again (or was replaced) after its header was read.
    #[error(transparent)]
    File(#[from] TensorFileError),
    /// A tensor could not be scanned.
    #[error("{}: tensor '{}': {error}", path_text(.path), excerpt(.tensor))]
    Tensor {
        /// The file, as given.
        path: PathBuf,
        /// The tensor's name.
        tensor: String,
        /// Why.
        error: TensorScanError,
    },
}

/// Why one tensor could not be scanned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TensorScanError {
    /// The backend failed, or a read of the file it was counting did (the file shrank).
    #[error(transparent)]
    Backend(BackendError),
    /// A deflated `.npz` member does not inflate to what the archive says, or a read of
    /// it failed.
    #[error(transparent)]
    Inflate(#[from] InflateError),
}

/// The result of scanning one tensor (borrowing names and shapes from the file's
/// tensor list, so that a report costs little more than that list; owned once
/// [`Report::into_owned`]).
#[derive(Clone, Debug)]
pub struct TensorReport<'a> {
    /// Tensor name (`array` for a `.npy` file).
    pub name: Cow<'a, str>,
    /// The dtype as the container spells it.
    pub dtype: Cow<'a, str>,
    /// The format it was checked as; `None` when not scanned.
    pub format: Option<Format>,
    /// Stored shape.
    pub shape: Cow<'a, [u64]>,
    /// Number of elements.
    pub elements: u64,
    /// Why the tensor was not scanned, if it was not: its dtype has no NaN or infinity,
    /// or (with `unsupported`) it is not supported.
    pub skipped: Option<&'static str>,
    /// `true` for a tensor that may hold NaN or infinities but could not be scanned:
    /// the run is then not `all_finite`.
    pub unsupported: bool,
    /// `true` for complex numbers: counts are of real and imaginary parts, and
    /// `first_non_finite` is an index of parts (element `i`'s are `2i` and `2i + 1`).
    pub complex: bool,
    /// `true` for a Fortran-ordered `.npy` array: `first_non_finite` is then an index in
    /// storage (column-major) order.
    pub fortran_order: bool,
    /// What was found (all zero when not scanned).
    pub counts: Counts,
}

/// As JSON: the fields by name, `skipped` only when set, the flags only when `true`;
/// `nan`, `pos_inf`, `neg_inf` and `first_non_finite` are `null` for a tensor not scanned
/// (zeros would say "no NaN" where nothing was looked at).
impl serde::Serialize for TensorReport<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("dtype", &self.dtype)?;
        map.serialize_entry("format", &self.format.map(Format::name))?;
        map.serialize_entry("shape", &self.shape)?;
        map.serialize_entry("elements", &self.elements)?;
        if let Some(why) = self.skipped {
            map.serialize_entry("skipped", why)?;
        }
        for (key, set) in
            [("unsupported", self.unsupported), ("complex", self.complex), ("fortran_order", self.fortran_order)]
        {
            if set {
                map.serialize_entry(key, &true)?;
            }
        }
        let scanned = self.skipped.is_none();
        let count = |n: u64| scanned.then_some(n);
        map.serialize_entry("nan", &count(self.counts.nan))?;
        map.serialize_entry("pos_inf", &count(self.counts.pos_inf))?;
        map.serialize_entry("neg_inf", &count(self.counts.neg_inf))?;
        map.serialize_entry("first_non_finite", &self.counts.first_non_finite)?;
        map.end()
    }
}

/// The result of scanning one file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileReport<'a> {
    /// The path as given; for one that is not UTF-8, its [`path_text`] (each byte that
    /// is not UTF-8 as `\xNN`, `\` doubled), and `file_not_utf8` set.
    pub file: String,
    /// `true` when the path is not UTF-8: `file` is then escaped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub file_not_utf8: bool,
    /// The path as the table and messages show it: its [`path_text`].
    #[serde(skip)]
    pub file_shown: String,
    /// Its container format.
    pub container: Container,
    /// One entry per tensor, in file order.
    pub tensors: Vec<TensorReport<'a>>,
}

impl<'a> FileReport<'a> {
    /// The report of the file at `path`.
    pub(crate) fn new(path: &Path, container: Container, tensors: Vec<TensorReport<'a>>) -> FileReport<'a> {
        let (file, file_not_utf8, file_shown) = path_fields(path);
        FileReport { file, file_not_utf8, file_shown, container, tensors }
    }
}

/// A path as JSON gives it (as it is if UTF-8, else its [`path_text`]), whether it is
/// not UTF-8, and as the table shows it (its [`path_text`]).
fn path_fields(path: &Path) -> (String, bool, String) {
    let shown = path_text(path);
    match path.to_str() {
        Some(file) => (file.to_string(), false, shown),
        None => (shown.clone(), true, shown),
    }
}

/// Scans every tensor of `file` on `backend`, advancing `progress` by the bytes scanned.
///
/// Errors (from reading: the file was replaced or shrank since its header was read, or
/// a compressed `.npz` member does not inflate to what the archive says; or from the
/// backend) name the file, and the tensor if there is one.
pub(crate) fn scan_file<'a>(
    file: &'a TensorFile,
    backend: &dyn Backend,
    progress: &Progress,
) -> Result<FileReport<'a>, ScanError> {
    // Opened at the first tensor to read: a file of integer tensors is not reopened.
    let reader = std::cell::OnceCell::new();
    let tensors = file
        .tensors
        .iter()
        .map(|tensor| {
            let (format, skipped, counts) = match tensor.element {
                TensorElement::Float(format, endian) | TensorElement::Complex(format, endian) => {
                    let reader = match reader.get() {
                        Some(reader) => reader,
                        None => {
                            let opened = file.reader()?;
                            reader.get_or_init(|| opened)
                        }
                    };
                    let counts = scan_tensor(reader, tensor, format, endian, backend, progress).map_err(|error| {
                        ScanError::Tensor { path: file.path.clone(), tensor: tensor.name.clone(), error }
                    })?;
                    (Some(format), None, counts)
                }
                TensorElement::AlwaysFinite(why) | TensorElement::Unsupported(why) => {
                    (None, Some(why), Counts::default())
                }
            };
            Ok(TensorReport {
                name: Cow::Borrowed(&tensor.name),
                dtype: Cow::Borrowed(&tensor.dtype),
                format,
                shape: Cow::Borrowed(&tensor.shape),
                elements: tensor.elements,
                skipped,
                unsupported: matches!(tensor.element, TensorElement::Unsupported(_)),
                complex: matches!(tensor.element, TensorElement::Complex(..)),
                fortran_order: tensor.fortran_order,
                counts,
            })
        })
        .collect::<Result<_, ScanError>>()?;
    Ok(FileReport::new(&file.path, file.container, tensors))
}

/// Counts the non-finite values of `tensor` as `format`: read in blocks on all cores
/// when its data lies in the file, inflated a chunk at a time when it comes from a
/// deflated `.npz` member.
fn scan_tensor(
    reader: &TensorReader,
    tensor: &TensorEntry,
    format: Format,
    endian: Endian,
    backend: &dyn Backend,
    progress: &Progress,
) -> Result<Counts, TensorScanError> {
    let mut counts = Counts::default();
    reader.for_each_chunk(tensor, npz::INFLATE_CHUNK_BYTES, |first_byte, source| {
        let job = CountJob { format, endian, data: source, progress: &|done| progress.advance(done) };
        let found = backend.count(job).map_err(TensorScanError::Backend)?;
        counts = counts.merged(found.shifted(first_byte / format.bytes() as u64));
        Ok::<(), TensorScanError>(())
    })?;
    Ok(counts)
}

/// Bytes that `scan_file` will scan in `file` (the data of its floating-point tensors).
#[doc(hidden)]
pub fn bytes_to_scan(file: &TensorFile) -> u64 {
    file.tensors.iter().filter(|t| t.element.scanned_as().is_some()).map(|t| t.data.len() as u64).sum()
}

/// How an index of a scanned tensor reads in a report: the index, with the complex
/// element and part it falls on, or a note that it counts in column-major order.
fn index_text(tensor: &TensorReport<'_>, index: u64) -> String {
    let part = if index.is_multiple_of(2) { "real" } else { "imag" };
    match (tensor.complex, tensor.fortran_order) {
        (true, false) => format!("{index} (element {}, {part})", index / 2),
        (true, true) => format!("{index} (element {}, {part}, column-major)", index / 2),
        (false, true) => format!("{index} (column-major)"),
        (false, false) => index.to_string(),
    }
}

/// Where the first non-finite value of the whole run is.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Location {
    /// The file as given (as [`FileReport::file`] gives it).
    pub file: String,
    /// The file as the table shows it (as [`FileReport::file_shown`]).
    #[serde(skip)]
    pub file_shown: String,
    /// The tensor.
    pub tensor: String,
    /// Flat index within the tensor, in storage order (of parts, for complex tensors).
    pub index: u64,
    /// The index as the table prints it (with its complex element and part).
    #[serde(skip)]
    pub index_text: String,
}

/// Totals over every file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Total {
    /// Files scanned.
    pub files: usize,
    /// Tensors listed (scanned or not).
    pub tensors: usize,
    /// Elements of every tensor listed.
    pub elements: u64,
    /// NaNs.
    pub nan: u64,
    /// +infinities.
    pub pos_inf: u64,
    /// -infinities.
    pub neg_inf: u64,
    /// The first non-finite value, in the order files and tensors are listed.
    pub first_non_finite: Option<Location>,
    /// Tensors that may hold NaN or infinities but could not be scanned.
    pub not_scanned: usize,
}

/// The report of one `scan` run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report<'a> {
    /// Where the scan ran.
    pub device: String,
    /// One entry per file, in the order given.
    pub files: Vec<FileReport<'a>>,
    /// Files (or indexes) that could not be read, with `keep_going`: not scanned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
    /// Totals.
    pub total: Total,
    /// `true` iff at least one tensor was listed, every tensor was scanned or cannot
    /// hold NaN or infinities, every file could be read, and no NaN or infinity was
    /// found.
    pub all_finite: bool,
}

/// A file (or an index) that could not be read, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Unreadable {
    /// The path, as [`FileReport::file`] gives it.
    pub file: String,
    /// `true` when the path is not UTF-8 (as [`FileReport::file_not_utf8`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub file_not_utf8: bool,
    /// The path as the table shows it.
    #[serde(skip)]
    pub file_shown: String,
    /// Why, on one line.
    pub error: String,
}

impl Unreadable {
    /// `path` could not be read, because of `error`.
    pub(crate) fn new(path: &Path, error: &dyn std::fmt::Display) -> Unreadable {
        let (file, file_not_utf8, file_shown) = path_fields(path);
        Unreadable { file, file_not_utf8, file_shown, error: one_line(error) }
    }
}

impl<'a> Report<'a> {
    /// Scans every tensor of every file on `backend`. Errors name the file and tensor.
    #[doc(hidden)]
    pub fn scan(files: &'a [TensorFile], backend: &dyn Backend, progress: &Progress) -> Result<Report<'a>, ScanError> {
        let files: Vec<FileReport<'a>> =
            files.iter().map(|file| scan_file(file, backend, progress)).collect::<Result<_, _>>()?;
        let total = total(&files);
        let all_finite = total.first_non_finite.is_none() && total.not_scanned == 0 && total.tensors > 0;
        Ok(Report { device: backend.name(), files, unreadable: Vec::new(), total, all_finite })
    }

    /// The report with `unreadable` files added: it is then not `all_finite`.
    pub(crate) fn with_unreadable(mut self, unreadable: Vec<Unreadable>) -> Report<'a> {
        self.all_finite &= unreadable.is_empty();
        self.unreadable.extend(unreadable);
        self
    }

    /// The report with its names and shapes copied, so that it outlives the files.
    #[doc(hidden)]
    pub fn into_owned(self) -> Report<'static> {
        let files = self
            .files
            .into_iter()
            .map(|file| FileReport {
                file: file.file,
                file_not_utf8: file.file_not_utf8,
                file_shown: file.file_shown,
                container: file.container,
                tensors: file
                    .tensors
                    .into_iter()
                    .map(|t| TensorReport {
                        name: Cow::Owned(t.name.into_owned()),
                        dtype: Cow::Owned(t.dtype.into_owned()),
                        format: t.format,
                        shape: Cow::Owned(t.shape.into_owned()),
                        elements: t.elements,
                        skipped: t.skipped,
                        unsupported: t.unsupported,
                        complex: t.complex,
                        fortran_order: t.fortran_order,
                        counts: t.counts,
                    })
                    .collect(),
            })
            .collect();
        Report {
            device: self.device,
            files,
            unreadable: self.unreadable,
            total: self.total,
            all_finite: self.all_finite,
        }
    }

    /// Writes the report as pretty JSON, streamed (a report may list tens of thousands
    /// of tensors), newline-terminated.
    #[doc(hidden)]
    pub fn write_json(&self, out: impl std::io::Write) -> std::io::Result<()> {
        bitexact_support::output::write_json(out, self)
    }

    /// The report as an aligned table (or Markdown) followed by a one-line verdict.
    #[doc(hidden)]
    pub fn render(&self, markdown: bool) -> String {
        render(self, markdown)
    }
}

fn total(reports: &[FileReport<'_>]) -> Total {
    let tensors = || reports.iter().flat_map(|f| f.tensors.iter().map(move |t| (f, t)));
    let counts =
        tensors().fold(Counts::default(), |sum, (_, t)| Counts { first_non_finite: None, ..sum.merged(t.counts) });
    let first_non_finite = tensors().find_map(|(f, t)| {
        t.counts.first_non_finite.map(|index| Location {
            file: f.file.clone(),
            file_shown: f.file_shown.clone(),
            tensor: t.name.to_string(),
            index,
            index_text: index_text(t, index),
        })
    });
    Total {
        files: reports.len(),
        tensors: tensors().count(),
        elements: tensors().map(|(_, t)| t.elements).sum(),
        nan: counts.nan,
        pos_inf: counts.pos_inf,
        neg_inf: counts.neg_inf,
        first_non_finite,
        not_scanned: tensors().filter(|(_, t)| t.unsupported).count(),
    }
}

fn render(report: &Report<'_>, markdown: bool) -> String {
    let mut table = Table::new(["file", "tensor", "dtype", "shape", "elements", "nan", "+inf", "-inf", "first"]);
    for file in &report.files {
        for t in &file.tensors {
            let count = |n: u64| if t.skipped.is_some() { "-".to_string() } else { n.to_string() };
            let first = match (t.skipped, t.counts.first_non_finite) {
                (Some(why), _) => format!("not scanned: {why}"),
                (None, Some(index)) => index_text(t, index),
                (None, None) => "-".into(),
            };
            table.row([
                Cell::Escaped(file.file_shown.clone()),
                t.name.to_string().into(),
                t.dtype.to_string().into(),
                format!("{:?}", t.shape).into(),
                t.elements.to_string().into(),
                count(t.counts.nan).into(),
                count(t.counts.pos_inf).into(),
                count(t.counts.neg_inf).into(),
                first.into(),
            ]);
        }
    }
    let unreadable: String =
        // `error` is an error's message, which escapes and shortens what it quotes.
        report.unreadable.iter().map(|u| format!("unreadable: {}: {}\n", u.file_shown, u.error)).collect();
    let total = &report.total;
    let not_scanned = format!("{} not scanned (unsupported)", count_of(total.not_scanned as u64, "tensor"));
    let not_scanned = match report.unreadable.len() {
        0 => not_scanned,
        n => format!("{not_scanned}, {} unreadable", count_of(n as u64, "file")),
    };
    let verdict = match (&total.first_non_finite, total.not_scanned + report.unreadable.len()) {
        (None, 0) if total.tensors == 0 => "no tensors: nothing scanned".to_string(),
        (None, 0) => "all finite".to_string(),
        (None, _) => format!("no NaN or infinity in what was scanned, but {not_scanned}"),
        (Some(at), n) => format!(
            "{} NaN, {} +inf, {} -inf; first at {} tensor '{}' index {}{}",
            total.nan,
            total.pos_inf,
            total.neg_inf,
            at.file_shown,
            shortened(&at.tensor, MAX_CELL_CHARS),
            at.index_text,
            if n == 0 { String::new() } else { format!("; {not_scanned}") }
        ),
    };
    format!(
        "{}{unreadable}\n{}, {}, {}, on {}: {verdict}\n",
        table.render(markdown),
        count_of(total.files as u64, "file"),
        count_of(total.tensors as u64, "tensor"),
        count_of(total.elements, "element"),
        report.device
    )
}
