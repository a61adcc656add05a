//! Tensor containers: `.npy`, `.npz` and `.safetensors` headers parsed from a read-only
//! memory map, and f32 tensors written atomically, streamed a chunk at a time.
//!
//! Parsing is done by the format's own crate (`npyz`, `safetensors`; `.npz` archives by
//! [`crate::npz`]); this module only bounds what those crates are handed (header sizes,
//! so that a hostile length field cannot make them allocate gigabytes) and checks that
//! every tensor's bytes lie inside the file. Every function returns a one-line message
//! instead of panicking, whatever the bytes.

use crate::npz::{self, Deflated};
use crate::scan::{Endian, FloatFormat};
use memmap2::Mmap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Largest `.safetensors` JSON header accepted, in bytes. The format allows 100 MB; 2 MiB
/// is about 20,000 tensors, far more than real checkpoint files hold (a few hundred to
/// a few thousand), and keeps the parsed header and the report well under `scan`'s
/// 64 MiB heap budget (`tests/heap_bound.rs` measures the peak at this limit).
pub const MAX_SAFETENSORS_HEADER: u64 = 2 << 20;
/// Largest `.npy` header text accepted, in bytes. NumPy itself refuses headers over
/// 10,000 bytes by default; `np.save` writes about 128 for a plain array.
pub const MAX_NPY_HEADER: u64 = 16 << 10;
/// Deepest bracket nesting accepted in an `.npy` header. npyz's Python-literal parser
/// backtracks exponentially in the depth of unclosed brackets (measured: 1.8 s at depth
/// 16, 28 s at 20, so a 100-byte file could hang `scan` for ever); a plain array's header
/// nests 2 deep, a structured dtype's (refused anyway) a few more.
pub const MAX_NPY_NESTING: usize = 8;

const NPY_MAGIC: &[u8] = b"\x93NUMPY";
/// `.safetensors` files start with the header length as a little-endian u64.
const SAFETENSORS_LEN_BYTES: usize = 8;
/// The `.safetensors` header key that holds string metadata, not a tensor.
const SAFETENSORS_METADATA_KEY: &str = "__metadata__";

/// The container formats `scan` reads (all three) and `normalize` writes (`.npy` and
/// `.safetensors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Container {
    /// NumPy's `.npy`: one array.
    Npy,
    /// NumPy's `.npz`: a zip archive of `.npy` members, stored or deflated.
    Npz,
    /// Hugging Face's `.safetensors`: named tensors after a JSON header.
    Safetensors,
}

impl Container {
    /// The container named by `path`'s extension (`.npy`, `.npz`, `.safetensors`), if any.
    pub fn from_extension(path: &Path) -> Option<Container> {
        match path.extension()?.to_str()? {
            "npy" => Some(Container::Npy),
            "npz" => Some(Container::Npz),
            "safetensors" => Some(Container::Safetensors),
            _ => None,
        }
    }

    /// The container an output path names: `.npy` or `.safetensors` (`.npz` is read only).
    pub fn of_output(path: &Path) -> Option<Container> {
        Container::from_extension(path).filter(|&container| container != Container::Npz)
    }

    /// The container of an input file: by extension, else by content: NumPy's magic, a
    /// zip archive's, or a safetensors header (see [`looks_like_safetensors`]).
    pub fn detect(path: &Path, bytes: &[u8]) -> Result<Container, String> {
        match Container::from_extension(path) {
            Some(container) => Ok(container),
            None if bytes.starts_with(NPY_MAGIC) => Ok(Container::Npy),
            None if npz::MAGIC.iter().any(|magic| bytes.starts_with(magic)) => Ok(Container::Npz),
            None if looks_like_safetensors(bytes) => Ok(Container::Safetensors),
            None => Err("unknown file type (expected a .npy, .npz or .safetensors file)".into()),
        }
    }
}

/// `true` if `bytes` start like a `.safetensors` file: a little-endian header length
/// that fits the file and [`MAX_SAFETENSORS_HEADER`], then a JSON object's `{` (the
/// `safetensors` crate refuses a header that starts with anything else). Neither NumPy's
/// magic nor a zip archive's can pass: both would claim a header of terabytes.
pub fn looks_like_safetensors(bytes: &[u8]) -> bool {
    let Some((length_field, rest)) = bytes.split_first_chunk::<SAFETENSORS_LEN_BYTES>() else {
        return false;
    };
    let header_len = u64::from_le_bytes(*length_field);
    header_len >= 2 && header_len <= MAX_SAFETENSORS_HEADER.min(rest.len() as u64) && rest.first() == Some(&b'{')
}

/// How the elements of a tensor are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// A floating-point format with NaN and/or infinities: scanned.
    Float(FloatFormat, Endian),
    /// Complex numbers of two parts of a floating-point format, real then imaginary:
    /// scanned as `2 × elements` parts, so counts are of parts and indices are of parts
    /// in storage order (element `i`'s real part is `2i`, its imaginary part `2i + 1`),
    /// as in NumPy's `a.view(np.float32)`.
    Complex(FloatFormat, Endian),
    /// A type with no NaN or infinity encodings (integers, booleans, FP4/FP6): finite by
    /// construction, not scanned. The string says why.
    AlwaysFinite(&'static str),
    /// A type or storage that may hold NaN or infinities but that `scan` cannot read
    /// (E8M0, long double, structured, an `.npz` member compressed with another method):
    /// listed as not scanned, and the run cannot report "all finite". The string says why.
    Unsupported(&'static str),
}

impl Element {
    /// The format and byte order the tensor's bytes are scanned as, if they are.
    pub fn scanned_as(self) -> Option<(FloatFormat, Endian)> {
        match self {
            Element::Float(format, endian) | Element::Complex(format, endian) => Some((format, endian)),
            Element::AlwaysFinite(_) | Element::Unsupported(_) => None,
        }
    }

    /// Values per element: 2 for complex, else 1.
    pub fn parts(self) -> u64 {
        if matches!(self, Element::Complex(..)) { 2 } else { 1 }
    }
}

/// One tensor of a container: where its bytes are and how to read them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorEntry {
    /// Name in the container (`.npy` files hold one unnamed array, called `array`).
    pub name: String,
    /// The dtype as the container spells it (`F16`, `<f4`, ...).
    pub dtype: String,
    /// How elements are checked.
    pub element: Element,
    /// Shape as stored.
    pub shape: Vec<u64>,
    /// Number of elements (the product of `shape`; 0 for an empty tensor).
    pub elements: u64,
    /// Byte range of the data within the file (within the inflated member when
    /// `deflated` is set); its length is `elements` times the element size (in bits,
    /// over 8, for sub-byte dtypes), and it lies inside the file (the member). Empty, and
    /// not read, for an [`Element::Unsupported`] tensor whose element size is unknown.
    pub data: Range<usize>,
    /// For a deflated `.npz` member: where its compressed bytes are; the data is then
    /// inflated as it is scanned, a chunk at a time (see [`MappedFile::for_each_chunk`]).
    pub deflated: Option<Deflated>,
    /// `true` for a Fortran-ordered `.npy` array: element indices are then in storage
    /// (column-major) order.
    pub fortran_order: bool,
}

/// A file mapped read-only, with its parsed tensor list.
pub struct MappedFile {
    /// The path as given.
    pub path: PathBuf,
    /// The container format.
    pub container: Container,
    /// The tensors, in file order.
    pub tensors: Vec<TensorEntry>,
    map: Mmap,
}

impl MappedFile {
    /// Opens, maps and parses `path`. Errors are one line, prefixed with the path.
    ///
    /// Guarantees on success: every tensor's `data` range lies inside the mapping (or
    /// its inflated member), and its length matches shape × element size. Nothing of the
    /// data is read or copied (but the first bytes of each deflated `.npz` member, which
    /// hold its header).
    pub fn open(path: &Path) -> Result<MappedFile, String> {
        let fail = |message: String| format!("{}: {}", path.display(), one_line(message));
        check_regular_file(path).map_err(fail)?;
        let file = File::open(path).map_err(|e| fail(io_message(&e)))?;
        let map = map_read_only(&file).map_err(|e| fail(format!("cannot map: {}", io_message(&e))))?;
        // Sequential read-ahead helps a one-pass scan; failure to advise changes nothing else.
        let _ = map.advise(memmap2::Advice::Sequential);
        if map.is_empty() {
            return Err(fail("empty file".into()));
        }
        let container = Container::detect(path, &map).map_err(fail)?;
        let tensors = parse(container, &map).map_err(fail)?;
        Ok(MappedFile { path: path.to_path_buf(), container, tensors, map })
    }

    /// The bytes of `tensor` (one of `self.tensors`) as they lie in the file: empty for a
    /// deflated `.npz` member, whose bytes only [`MappedFile::for_each_chunk`] gives.
    pub fn data(&self, tensor: &TensorEntry) -> &[u8] {
        match tensor.deflated {
            None => self.map.get(tensor.data.clone()).unwrap_or_default(),
            Some(_) => &[],
        }
    }

    /// Calls `use_chunk(first_byte, bytes)` on the bytes of `tensor` in order, `first_byte`
    /// counted from the start of its data: once with all of them for data in the file,
    /// and `chunk_bytes` at a time (the last chunk shorter) for a deflated `.npz` member,
    /// which is inflated as it goes and whose length and CRC-32 are checked at its end.
    /// `chunk_bytes` should be a multiple of the element size, so that every chunk holds
    /// whole elements.
    pub fn for_each_chunk(
        &self,
        tensor: &TensorEntry,
        chunk_bytes: usize,
        use_chunk: impl FnMut(u64, &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut use_chunk = use_chunk;
        match &tensor.deflated {
            None => use_chunk(0, self.data(tensor)),
            Some(deflated) => npz::inflate(&self.map, deflated, tensor.data.clone(), chunk_bytes, use_chunk),
        }
    }
}

/// Maps `file` read-only.
///
/// The only `unsafe` of the crate's I/O.
#[allow(unsafe_code)]
fn map_read_only(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: `Mmap::map` is unsafe because the returned slice aliases a file that another
    // process may change while it is mapped, which Rust's `&[u8]` promises cannot happen.
    // What can go wrong, and why it is accepted:
    // * bytes rewritten concurrently: `scan` reads every byte as a plain integer (any bit
    //   pattern is a valid u8/u16/u32/u64), so the worst outcome is counts of a mixture of
    //   old and new contents, as with any reader racing a writer; headers are parsed once,
    //   and the data ranges are re-checked against the mapping length by `data`.
    // * the file truncated concurrently: touching pages past the new end raises SIGBUS and
    //   the process dies by signal. That is a non-zero exit, never the "all finite" 0 that
    //   scripts rely on, and no output file is ever written through a mapping.
    // The mapping is read-only and private to this process; nothing writes through it.
    unsafe { Mmap::map(file) }
}

/// Parses the header of `bytes` as `container` and returns its tensors.
///
/// Never panics, whatever `bytes` holds; on success the guarantees of
/// [`MappedFile::open`] hold for `bytes`.
pub fn parse(container: Container, bytes: &[u8]) -> Result<Vec<TensorEntry>, String> {
    match container {
        Container::Npy => parse_npy(bytes).map(|t| vec![t]),
        Container::Npz => npz::parse(bytes),
        Container::Safetensors => parse_safetensors(bytes),
    }
}

/// Parses a `.safetensors` file: the `safetensors` crate is fed only the JSON header
/// bytes, after its length has been checked against [`MAX_SAFETENSORS_HEADER`] and the
/// file size; the data it describes must then cover the rest of the file exactly.
pub fn parse_safetensors(bytes: &[u8]) -> Result<Vec<TensorEntry>, String> {
    let Some((length_field, rest)) = bytes.split_first_chunk::<SAFETENSORS_LEN_BYTES>() else {
        return Err(format!("truncated: {} bytes, shorter than the 8-byte header length", bytes.len()));
    };
    let header_len = u64::from_le_bytes(*length_field);
    if header_len > MAX_SAFETENSORS_HEADER {
        return Err(format!("oversized header: {header_len} bytes (limit {MAX_SAFETENSORS_HEADER})"));
    }
    if header_len > rest.len() as u64 {
        return Err(format!("truncated header: claims {header_len} bytes, file holds {} after the length", rest.len()));
    }
    let (header, data) = rest.split_at(header_len as usize);
    let metadata: safetensors::tensor::Metadata = serde_json::from_slice(header).map_err(safetensors_header_error)?;
    let data_start = SAFETENSORS_LEN_BYTES + header.len();
    let data_len = metadata.data_len();
    if data_len > data.len() {
        return Err(format!(
            "header claims {data_len} data bytes, the file holds only {} after the header",
            data.len()
        ));
    }
    if data_len < data.len() {
        return Err(format!("{} bytes after the last tensor belong to no tensor", data.len() - data_len));
    }
    metadata
        .offset_keys()
        .into_iter()
        .map(|name| {
            let info = metadata.info(&name).ok_or_else(|| format!("tensor '{name}' vanished from the header"))?;
            let (element, bits) = (safetensors_element(info.dtype), info.dtype.bitsize() as u64);
            let shape: Vec<u64> = info.shape.iter().map(|&d| d as u64).collect();
            let (start, end) = info.data_offsets;
            let elements = element_count(&name, &shape)?;
            // The crate has checked this too; it is what makes `data` safe to scan.
            let size_matches = matches!(
                (end.checked_sub(start), elements.checked_mul(bits)),
                (Some(bytes), Some(bits)) if bytes as u128 * 8 == u128::from(bits)
            );
            if !size_matches || end > data.len() {
                return Err(format!("tensor '{name}': data_offsets do not match its shape and dtype"));
            }
            Ok(TensorEntry {
                dtype: format!("{:?}", info.dtype),
                element,
                shape,
                elements,
                data: data_start + start..data_start + end,
                deflated: None,
                fortran_order: false,
                name,
            })
        })
        .collect()
}

/// A header the crate rejects, as one line; an unknown dtype is named as such.
fn safetensors_header_error(error: serde_json::Error) -> String {
    let message = error.to_string();
    match message.strip_prefix("unknown variant ") {
        // "unknown variant `F7`, expected one of `BOOL`, ... at line 1 column 40"
        Some(rest) => format!("unknown dtype {} in header", rest.split(',').next().unwrap_or(rest)),
        None => format!("invalid header: {message}"),
    }
}

/// How a safetensors dtype is checked. E8M0 (whose 0xFF is NaN, but which has no sign
/// bit for `shared`'s classification to work on) and dtypes newer than the crate are
/// [`Element::Unsupported`].
fn safetensors_element(dtype: safetensors::Dtype) -> Element {
    use safetensors::Dtype as D;
    let float = |format: FloatFormat| Element::Float(format, Endian::Little);
    match dtype {
        D::F16 => float(FloatFormat::Binary16),
        D::BF16 => float(FloatFormat::Bfloat16),
        D::F32 => float(FloatFormat::Binary32),
        D::F64 => float(FloatFormat::Binary64),
        D::F8_E4M3 => float(FloatFormat::Fp8E4m3),
        D::F8_E5M2 => float(FloatFormat::Fp8E5m2),
        D::F8_E4M3FNUZ => float(FloatFormat::Fp8E4m3Fnuz),
        D::F8_E5M2FNUZ => float(FloatFormat::Fp8E5m2Fnuz),
        D::C64 => Element::Complex(FloatFormat::Binary32, Endian::Little),
        D::BOOL | D::U8 | D::I8 | D::U16 | D::I16 | D::U32 | D::I32 | D::U64 | D::I64 => {
            Element::AlwaysFinite("integer dtype")
        }
        D::F4 | D::F6_E2M3 | D::F6_E3M2 => Element::AlwaysFinite("MX format without NaN or infinity"),
        D::F8_E8M0 => Element::Unsupported("E8M0 is not supported"),
        _ => Element::Unsupported("dtype not supported"),
    }
}

/// Parses a `.npy` file with `npyz`, after checking the header length field against
/// [`MAX_NPY_HEADER`] and the file size (npyz allocates whatever the field says).
pub fn parse_npy(bytes: &[u8]) -> Result<TensorEntry, String> {
    parse_npy_prefix(bytes, bytes.len() as u64)
}

/// Bytes of an `.npy` file that hold the longest header accepted: [`parse_npy_prefix`]
/// needs no more.
pub const NPY_HEADER_PREFIX: u64 = 12 + MAX_NPY_HEADER;

/// [`parse_npy`] of a file of `len` bytes of which only the first, `bytes`, are at hand
/// (all of them, or at least [`NPY_HEADER_PREFIX`]): a deflated `.npz` member, whose data
/// is inflated only when it is scanned.
pub fn parse_npy_prefix(bytes: &[u8], len: u64) -> Result<TensorEntry, String> {
    if !bytes.starts_with(NPY_MAGIC) {
        return Err("not an NPY file (wrong magic)".into());
    }
    // Versions 1.0 (u16 length at offset 8) and 2.0/3.0 (u32); npyz reports any other.
    let length_field = match bytes.get(6..8) {
        Some([1, 0]) => bytes.get(8..10).map(|b| (10, u64::from(u16::from_le_bytes([b[0], b[1]])))),
        Some([2 | 3, 0]) => bytes.get(8..12).map(|b| (12, u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))),
        _ => Some((0, 0)),
    };
    let Some((text_start, text_len)) = length_field else {
        return Err(format!("truncated header: {} bytes", bytes.len()));
    };
    if text_len > MAX_NPY_HEADER {
        return Err(format!("oversized header: {text_len} bytes (limit {MAX_NPY_HEADER})"));
    }
    if text_start + text_len > bytes.len() as u64 {
        return Err(format!("truncated header: claims {text_len} bytes, file holds {}", bytes.len()));
    }
    let text = bytes.get(text_start as usize..(text_start + text_len) as usize).unwrap_or_default();
    if nesting_depth(text) > MAX_NPY_NESTING {
        return Err(format!("invalid header: brackets nested deeper than {MAX_NPY_NESTING}"));
    }
    let mut rest = bytes;
    let header = npyz::NpyHeader::from_reader(&mut rest).map_err(npy_header_error)?;
    let data_start = bytes.len() - rest.len();
    let after_header = len.saturating_sub(data_start as u64);
    let (descr, element) = match header.dtype() {
        npyz::DType::Plain(type_str) => (type_str.to_string(), npy_element(&type_str)),
        other => (other.descr(), Element::Unsupported("structured dtype")),
    };
    let shape = header.shape().to_vec();
    let elements = element_count("array", &shape)?;
    // `None` for pickled objects, whose size only unpickling tells: nothing is read then.
    let item_size = header.dtype().num_bytes().map_or(0, |n| n as u64);
    let data_len = elements.checked_mul(item_size).filter(|&n| n <= after_header).ok_or_else(|| {
        format!(
            "header claims {elements} × {item_size} data bytes, the file holds only {after_header} after the header"
        )
    })?;
    Ok(TensorEntry {
        name: "array".into(),
        dtype: descr,
        element,
        shape,
        elements,
        data: data_start..data_start + data_len as usize,
        deflated: None,
        fortran_order: header.order() == npyz::Order::Fortran,
    })
}

/// The deepest nesting of `[`, `(` and `{` in `text` (quotes not considered: a header
/// that needs brackets inside strings is a structured dtype, refused anyway).
fn nesting_depth(text: &[u8]) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0;
    for &b in text {
        match b {
            b'[' | b'(' | b'{' => depth += 1,
            b']' | b')' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        deepest = deepest.max(depth);
    }
    deepest
}

/// A header npyz rejects, as one line. Its parser's syntax errors span several lines
/// (position, an echo of the header, the reason): keep the first and the reason.
fn npy_header_error(error: std::io::Error) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default().trim_end();
    match text.lines().filter_map(|l| l.trim().strip_prefix("= ")).next_back() {
        Some(reason) => format!("invalid header: {first} {reason}"),
        None => format!("invalid header: {}", one_line(text)),
    }
}

/// How a plain npy dtype is checked: floats of 2, 4 or 8 bytes and complex numbers of
/// two 4- or 8-byte parts are scanned; integers, booleans, strings and dates have no NaN;
/// long double, raw bytes and pickled objects are [`Element::Unsupported`].
fn npy_element(type_str: &npyz::TypeStr) -> Element {
    use npyz::{Endianness, TypeChar};
    let endian = match type_str.endianness() {
        Endianness::Big => Endian::Big,
        Endianness::Little | Endianness::Irrelevant => Endian::Little,
    };
    let float_of = |bytes: u64| match bytes {
        2 => Some(FloatFormat::Binary16),
        4 => Some(FloatFormat::Binary32),
        8 => Some(FloatFormat::Binary64),
        _ => None,
    };
    match type_str.type_char() {
        TypeChar::Bool | TypeChar::Int | TypeChar::Uint => Element::AlwaysFinite("integer dtype"),
        TypeChar::Float => match float_of(type_str.size_field()) {
            Some(format) => Element::Float(format, endian),
            None => Element::Unsupported("extended-precision float is not supported"),
        },
        TypeChar::Complex => match float_of(type_str.size_field() / 2) {
            Some(format) if format != FloatFormat::Binary16 => Element::Complex(format, endian),
            _ => Element::Unsupported("extended-precision complex is not supported"),
        },
        TypeChar::ByteStr | TypeChar::UnicodeStr | TypeChar::DateTime | TypeChar::TimeDelta => {
            Element::AlwaysFinite("not a floating-point dtype")
        }
        TypeChar::Object => Element::Unsupported("pickled objects are not read"),
        TypeChar::RawData => Element::Unsupported("raw bytes of unknown type"),
        _ => Element::Unsupported("dtype not supported"),
    }
}

/// The product of `shape` (0 for an empty tensor), refusing overflow.
fn element_count(name: &str, shape: &[u64]) -> Result<u64, String> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("tensor '{name}': shape {shape:?} overflows"))
}

/// `Ok` if `path` names an existing regular file (or a link to one); else why not, as a
/// short phrase ("no such file or directory", "is a directory").
pub fn check_regular_file(path: &Path) -> Result<(), String> {
    let metadata = std::fs::metadata(path).map_err(|e| io_message(&e))?;
    if metadata.is_dir() {
        Err("is a directory".into())
    } else if !metadata.is_file() {
        Err("not a regular file".into())
    } else {
        Ok(())
    }
}

/// `message` on one line: line breaks (which some decoders' messages contain) become
/// "; ".
pub fn one_line(message: impl std::fmt::Display) -> String {
    message.to_string().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// `error` as a short lowercase phrase ("no such file or directory").
pub fn io_message(error: &std::io::Error) -> String {
    let text = error.to_string();
    // "No such file or directory (os error 2)" → "no such file or directory"
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

/// Checks, before any work, that `output` may be written: its extension names a
/// container, it is not `input` (same file after resolving links), and it does not exist
/// unless `force`. Returns the container; errors are one line naming the file.
pub fn check_output(output: &Path, input: &Path, force: bool) -> Result<Container, String> {
    let fail = |message: &str| Err(format!("{}: {message}", output.display()));
    let same = matches!((output.canonicalize(), input.canonicalize()), (Ok(a), Ok(b)) if a == b);
    if same {
        return fail("is the input file; choose another output path");
    }
    let Some(container) = Container::of_output(output) else {
        return fail("unknown output extension (expected .npy or .safetensors)");
    };
    if output.exists() {
        if output.is_dir() {
            return fail("is a directory");
        }
        if !force {
            return fail("already exists (use --force to replace it)");
        }
    }
    Ok(container)
}

/// Values per chunk when a tensor is written: 4 MiB of f32, so that writing holds a few
/// MiB however large the tensor is.
pub const WRITE_CHUNK_ELEMENTS: usize = 1 << 20;

/// A tensor's values in flat order, produced a chunk at a time, so that writing one
/// never needs them all in memory.
pub trait F32Source {
    /// How many values there are.
    fn elements(&self) -> u64;
    /// Writes values `start .. start + out.len()` into `out` (a range within
    /// [`F32Source::elements`]).
    fn fill(&self, start: u64, out: &mut [f32]) -> Result<(), String>;
}

impl F32Source for [f32] {
    fn elements(&self) -> u64 {
        self.len() as u64
    }

    fn fill(&self, start: u64, out: &mut [f32]) -> Result<(), String> {
        let values = usize::try_from(start).ok().and_then(|start| self.get(start..start + out.len()));
        out.copy_from_slice(values.ok_or_else(|| format!("values {start}.. are out of range"))?);
        Ok(())
    }
}

/// Writes the f32 tensor `data` of `shape` to `out`: [`write_f32_from`] of a slice.
pub fn write_f32(out: &Path, name: &str, shape: &[u64], data: &[f32], force: bool) -> Result<(), String> {
    write_f32_from(out, name, shape, data, force)
}

/// Writes an f32 tensor of `shape` to `out` as the container its extension names, under
/// the tensor name `name` for `.safetensors` (any name but the format's reserved
/// `__metadata__`), its values taken from `data` [`WRITE_CHUNK_ELEMENTS`] at a time.
///
/// Guarantees: the bytes go to a temporary file in `out`'s directory, which is synced and
/// then renamed onto `out`; on any error the temporary file is removed and `out` is left
/// as it was. Without `force`, an existing `out` is never replaced (the rename itself
/// refuses, so a file created meanwhile is not clobbered either).
pub fn write_f32_from(
    out: &Path,
    name: &str,
    shape: &[u64],
    data: &(impl F32Source + ?Sized),
    force: bool,
) -> Result<(), String> {
    let fail = |message: String| format!("{}: {}", out.display(), one_line(message));
    let container = Container::of_output(out)
        .ok_or_else(|| fail("unknown output extension (expected .npy or .safetensors)".into()))?;
    if shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) != Some(data.elements()) {
        return Err(fail(format!("shape {shape:?} does not hold {} values", data.elements())));
    }
    if container == Container::Safetensors && name == SAFETENSORS_METADATA_KEY {
        // The crate would write it, but every reader takes that key for the metadata map.
        return Err(fail(format!("tensor name '{name}' is reserved by the format")));
    }
    let directory = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary =
        tempfile::Builder::new().prefix(".bitexact-").suffix(".tmp").tempfile_in(directory).map_err(|e| {
            fail(format!("cannot create a temporary file in {}: {}", directory.display(), io_message(&e)))
        })?;
    let mut writer = BufWriter::with_capacity(1 << 20, temporary.as_file_mut());
    match container {
        Container::Npy => write_npy(&mut writer, shape, data),
        Container::Safetensors => write_safetensors(&mut writer, name, shape, data),
        Container::Npz => Err("cannot write .npz".into()),
    }
    .and_then(|()| writer.into_inner().map(drop).map_err(|e| io_message(e.error())))
    .and_then(|()| temporary.as_file().sync_all().map_err(|e| io_message(&e)))
    .map_err(|e| fail(format!("write failed: {e}")))?;
    let persisted = if force { temporary.persist(out) } else { temporary.persist_noclobber(out) };
    persisted.map(drop).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            fail("already exists (use --force to replace it)".into())
        } else {
            fail(format!("cannot rename the temporary file into place: {}", io_message(&e.error)))
        }
    })
}

/// The values of `data`, [`WRITE_CHUNK_ELEMENTS`] at a time, handed to `write` in order.
fn for_each_chunk(
    data: &(impl F32Source + ?Sized),
    mut write: impl FnMut(&[f32]) -> Result<(), String>,
) -> Result<(), String> {
    let mut chunk = vec![0.0f32; WRITE_CHUNK_ELEMENTS.min(data.elements() as usize)];
    let mut start = 0;
    while start < data.elements() {
        let len = chunk.len().min((data.elements() - start) as usize);
        data.fill(start, &mut chunk[..len])?;
        write(&chunk[..len])?;
        start += len as u64;
    }
    Ok(())
}

fn write_npy(out: &mut impl Write, shape: &[u64], data: &(impl F32Source + ?Sized)) -> Result<(), String> {
    use npyz::WriterBuilder;
    let mut writer =
        npyz::WriteOptions::new().default_dtype().shape(shape).writer(out).begin_nd().map_err(|e| io_message(&e))?;
    for_each_chunk(data, |chunk| writer.extend(chunk.iter().copied()).map_err(|e| io_message(&e)))?;
    writer.finish().map_err(|e| io_message(&e))
}

/// Writes what `safetensors::serialize` writes for one F32 tensor (a test compares the
/// bytes), without building the whole file in memory as it does: the length, the JSON
/// header padded with spaces to a multiple of 8 bytes, then the little-endian values.
fn write_safetensors(
    out: &mut impl Write,
    name: &str,
    shape: &[u64],
    data: &(impl F32Source + ?Sized),
) -> Result<(), String> {
    const _: () = assert!(cfg!(target_endian = "little"), "safetensors stores little-endian f32");
    /// One tensor's header entry, its fields in the crate's order.
    #[derive(serde::Serialize)]
    struct Info<'a> {
        dtype: &'static str,
        shape: &'a [u64],
        data_offsets: [u64; 2],
    }
    let info = Info { dtype: "F32", shape, data_offsets: [0, data.elements() * 4] };
    let mut header = serde_json::to_vec(&std::collections::BTreeMap::from([(name, info)]))
        .map_err(|e| format!("invalid header: {e}"))?;
    header.resize(header.len().next_multiple_of(SAFETENSORS_LEN_BYTES), b' ');
    out.write_all(&(header.len() as u64).to_le_bytes()).map_err(|e| io_message(&e))?;
    out.write_all(&header).map_err(|e| io_message(&e))?;
    for_each_chunk(data, |chunk| out.write_all(bytemuck::cast_slice(chunk)).map_err(|e| io_message(&e)))
}
