//! Scanning whole files and reporting: per tensor and in total, as a table or JSON.

use crate::backend::Backend;
use crate::progress::Progress;
use crate::report::{Table, count_of};
use crate::scan::{Counts, FloatFormat, Source};
use crate::tensor_io::{Container, Element, TensorFile};

/// The result of scanning one tensor (borrowing names and shapes from the file's
/// tensor list, so that a report costs little more than that list).
#[derive(Clone, Debug, serde::Serialize)]
pub struct TensorReport<'a> {
    /// Tensor name (`array` for a `.npy` file).
    pub name: &'a str,
    /// The dtype as the container spells it.
    pub dtype: &'a str,
    /// The format it was checked as; `None` when not scanned.
    pub format: Option<FloatFormat>,
    /// Stored shape.
    pub shape: &'a [u64],
    /// Number of elements.
    pub elements: u64,
    /// Why the tensor was not scanned (its dtype has no NaN or infinity), if it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<&'static str>,
    /// `true` for a Fortran-ordered `.npy` array: `first_non_finite` is then an index in
    /// storage (column-major) order.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fortran_order: bool,
    /// What was found.
    #[serde(flatten)]
    pub counts: Counts,
}

/// The result of scanning one file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileReport<'a> {
    /// The path as given.
    pub file: String,
    /// Its container format.
    pub container: Container,
    /// One entry per tensor, in file order.
    pub tensors: Vec<TensorReport<'a>>,
}

/// Scans every tensor of `file` on `backend`, advancing `progress` by the bytes scanned.
///
/// Errors (from reading: the file was replaced or shrank since its header was read; or
/// from the backend) name the file, and the tensor if there is one.
pub fn scan_file<'a>(
    file: &'a TensorFile,
    backend: &dyn Backend,
    progress: &Progress,
) -> Result<FileReport<'a>, String> {
    // Opened at the first tensor to read: a file of integer tensors is not reopened.
    let reader = std::cell::OnceCell::new();
    let tensors = file
        .tensors
        .iter()
        .map(|tensor| {
            let (format, skipped, counts) = match tensor.element {
                Element::Float(format, endian) => {
                    let reader = match reader.get() {
                        Some(reader) => reader,
                        None => {
                            let opened = file.reader()?;
                            reader.get_or_init(|| opened)
                        }
                    };
                    let read = |offset: u64, buf: &mut [u8]| reader.read(tensor, offset, buf);
                    let source = Source::Read { len: tensor.data.len(), read: &read };
                    let counts = backend
                        .count_non_finite(format, endian, source, &|bytes| progress.advance(bytes))
                        .map_err(|e| format!("{}: tensor '{}': {e}", file.path.display(), tensor.name))?;
                    (Some(format), None, counts)
                }
                Element::AlwaysFinite(why) => (None, Some(why), Counts::default()),
            };
            Ok(TensorReport {
                name: &tensor.name,
                dtype: &tensor.dtype,
                format,
                shape: &tensor.shape,
                elements: tensor.elements,
                skipped,
                fortran_order: tensor.fortran_order,
                counts,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(FileReport { file: file.path.display().to_string(), container: file.container, tensors })
}

/// Bytes that [`scan_file`] will scan in `file` (the data of its floating-point tensors).
pub fn bytes_to_scan(file: &TensorFile) -> u64 {
    file.tensors.iter().filter(|t| matches!(t.element, Element::Float(..))).map(|t| t.data.len() as u64).sum()
}

/// Where the first non-finite value of the whole run is.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Location {
    /// The file as given.
    pub file: String,
    /// The tensor.
    pub tensor: String,
    /// Flat index within the tensor, in storage order.
    pub index: u64,
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
}

/// The report of one `scan` run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report<'a> {
    /// Where the scan ran.
    pub device: String,
    /// One entry per file, in the order given.
    pub files: Vec<FileReport<'a>>,
    /// Totals.
    pub total: Total,
    /// `true` iff no NaN or infinity was found.
    pub all_finite: bool,
}

impl<'a> Report<'a> {
    /// Scans every tensor of every file on `backend`. Errors name the file and tensor.
    pub fn scan(files: &'a [TensorFile], backend: &dyn Backend, progress: &Progress) -> Result<Report<'a>, String> {
        let files: Vec<FileReport<'a>> =
            files.iter().map(|file| scan_file(file, backend, progress)).collect::<Result<_, _>>()?;
        let total = total(&files);
        let all_finite = total.first_non_finite.is_none();
        Ok(Report { device: backend.name(), files, total, all_finite })
    }

    /// Writes the report as pretty JSON, streamed (a report may list tens of thousands
    /// of tensors), newline-terminated.
    pub fn write_json(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut out, self)?;
        writeln!(out)
    }

    /// The report as an aligned table (or Markdown) followed by a one-line verdict.
    pub fn render(&self, markdown: bool) -> String {
        render(self, markdown)
    }
}

fn total(reports: &[FileReport<'_>]) -> Total {
    let tensors = || reports.iter().flat_map(|f| f.tensors.iter().map(move |t| (f, t)));
    let counts =
        tensors().fold(Counts::default(), |sum, (_, t)| Counts { first_non_finite: None, ..sum.merged(t.counts) });
    let first_non_finite = tensors().find_map(|(f, t)| {
        t.counts.first_non_finite.map(|index| Location { file: f.file.clone(), tensor: t.name.to_string(), index })
    });
    Total {
        files: reports.len(),
        tensors: tensors().count(),
        elements: tensors().map(|(_, t)| t.elements).sum(),
        nan: counts.nan,
        pos_inf: counts.pos_inf,
        neg_inf: counts.neg_inf,
        first_non_finite,
    }
}

fn render(report: &Report<'_>, markdown: bool) -> String {
    let mut table = Table::new(["file", "tensor", "dtype", "shape", "elements", "nan", "+inf", "-inf", "first"]);
    for file in &report.files {
        for t in &file.tensors {
            let count = |n: u64| if t.skipped.is_some() { "-".to_string() } else { n.to_string() };
            let first = match (t.skipped, t.counts.first_non_finite) {
                (Some(why), _) => format!("not scanned: {why}"),
                (None, Some(index)) => format!("{index}{}", if t.fortran_order { " (column-major)" } else { "" }),
                (None, None) => "-".into(),
            };
            table.row([
                file.file.clone(),
                t.name.to_string(),
                t.dtype.to_string(),
                format!("{:?}", t.shape),
                t.elements.to_string(),
                count(t.counts.nan),
                count(t.counts.pos_inf),
                count(t.counts.neg_inf),
                first,
            ]);
        }
    }
    let total = &report.total;
    let verdict = match &total.first_non_finite {
        None => "all finite".to_string(),
        Some(at) => format!(
            "{} NaN, {} +inf, {} -inf; first at {} tensor '{}' index {}",
            total.nan, total.pos_inf, total.neg_inf, at.file, at.tensor, at.index
        ),
    };
    format!(
        "{}\n{}, {}, {}, on {}: {verdict}\n",
        table.render(markdown),
        count_of(total.files as u64, "file"),
        count_of(total.tensors as u64, "tensor"),
        count_of(total.elements, "element"),
        report.device
    )
}
