//! Tensor containers: `.npy` and `.safetensors` headers parsed from a read-only memory
//! map, and f32 tensors written atomically.
//!
//! Parsing is done by the format's own crate (`npyz`, `safetensors`); this module only
//! bounds what those crates are handed (header sizes, so that a hostile length field
//! cannot make them allocate gigabytes) and checks that every tensor's bytes lie inside
//! the file. Every function returns a one-line message instead of panicking, whatever
//! the bytes.

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

/// The container formats `scan` reads and `normalize` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Container {
    /// NumPy's `.npy`: one array.
    Npy,
    /// Hugging Face's `.safetensors`: named tensors after a JSON header.
    Safetensors,
}

impl Container {
    /// The container named by `path`'s extension (`.npy`, `.safetensors`), if any.
    pub fn from_extension(path: &Path) -> Option<Container> {
        match path.extension()?.to_str()? {
            "npy" => Some(Container::Npy),
            "safetensors" => Some(Container::Safetensors),
            _ => None,
        }
    }

    /// The container of an input file: by extension, else `.npy` if the bytes start with
    /// NumPy's magic.
    pub fn detect(path: &Path, bytes: &[u8]) -> Result<Container, String> {
        match Container::from_extension(path) {
            Some(container) => Ok(container),
            None if bytes.starts_with(NPY_MAGIC) => Ok(Container::Npy),
            None => Err("unknown file type (expected a .npy or .safetensors file)".into()),
        }
    }
}

/// How the elements of a tensor are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// A floating-point format with NaN and/or infinities: scanned.
    Float(FloatFormat, Endian),
    /// A type with no NaN or infinity encodings (integers, booleans, FP4/FP6): finite by
    /// construction, not scanned. The string says why.
    AlwaysFinite(&'static str),
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
    /// Number of elements (the product of `shape`, never 0).
    pub elements: u64,
    /// Byte range of the data within the file; its length is `elements` times the
    /// element size (in bits, over 8, for sub-byte dtypes), and it lies inside the file.
    pub data: Range<usize>,
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
    /// Guarantees on success: every tensor's `data` range lies inside the mapping, its
    /// length matches shape × element size, and no tensor is empty. Nothing of the data
    /// is read or copied.
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

    /// The bytes of `tensor` (one of `self.tensors`).
    pub fn data(&self, tensor: &TensorEntry) -> &[u8] {
        self.map.get(tensor.data.clone()).unwrap_or_default()
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
            let (element, bits) = safetensors_element(info.dtype)
                .ok_or_else(|| format!("tensor '{name}': dtype {:?} is not supported", info.dtype))?;
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

/// How a safetensors dtype is checked, and its size in bits; `None` for floating-point
/// dtypes whose NaN encodings `shared` does not model (FNUZ FP8, E8M0, complex).
fn safetensors_element(dtype: safetensors::Dtype) -> Option<(Element, u64)> {
    use safetensors::Dtype as D;
    let float = |format: FloatFormat| Element::Float(format, Endian::Little);
    let element = match dtype {
        D::F16 => float(FloatFormat::Binary16),
        D::BF16 => float(FloatFormat::Bfloat16),
        D::F32 => float(FloatFormat::Binary32),
        D::F64 => float(FloatFormat::Binary64),
        D::F8_E4M3 => float(FloatFormat::Fp8E4m3),
        D::F8_E5M2 => float(FloatFormat::Fp8E5m2),
        D::BOOL | D::U8 | D::I8 | D::U16 | D::I16 | D::U32 | D::I32 | D::U64 | D::I64 => {
            Element::AlwaysFinite("integer dtype")
        }
        D::F4 | D::F6_E2M3 | D::F6_E3M2 => Element::AlwaysFinite("MX format without NaN or infinity"),
        _ => return None,
    };
    Some((element, dtype.bitsize() as u64))
}

/// Parses a `.npy` file with `npyz`, after checking the header length field against
/// [`MAX_NPY_HEADER`] and the file size (npyz allocates whatever the field says).
pub fn parse_npy(bytes: &[u8]) -> Result<TensorEntry, String> {
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
    let npyz::DType::Plain(type_str) = header.dtype() else {
        return Err("structured dtype is not supported".into());
    };
    let descr = type_str.to_string();
    let element = npy_element(&type_str).ok_or_else(|| format!("dtype {descr} is not supported"))?;
    let shape = header.shape().to_vec();
    let elements = element_count("array", &shape)?;
    let item_size = type_str.num_bytes().unwrap_or(0) as u64;
    let data_len = elements.checked_mul(item_size).filter(|&n| n <= rest.len() as u64).ok_or_else(|| {
        format!(
            "header claims {elements} × {item_size} data bytes, the file holds only {} after the header",
            rest.len()
        )
    })?;
    Ok(TensorEntry {
        name: "array".into(),
        dtype: descr,
        element,
        shape,
        elements,
        data: data_start..data_start + data_len as usize,
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

/// How a plain npy dtype is checked; `None` for anything but floats of 2, 4 or 8 bytes,
/// integers and booleans.
fn npy_element(type_str: &npyz::TypeStr) -> Option<Element> {
    use npyz::{Endianness, TypeChar};
    match type_str.type_char() {
        TypeChar::Bool | TypeChar::Int | TypeChar::Uint => Some(Element::AlwaysFinite("integer dtype")),
        TypeChar::Float => {
            let format = match type_str.size_field() {
                2 => FloatFormat::Binary16,
                4 => FloatFormat::Binary32,
                8 => FloatFormat::Binary64,
                _ => return None,
            };
            let endian = match type_str.endianness() {
                Endianness::Big => Endian::Big,
                Endianness::Little | Endianness::Irrelevant => Endian::Little,
            };
            Some(Element::Float(format, endian))
        }
        _ => None,
    }
}

/// The product of `shape`, refusing zero-sized tensors and overflow.
fn element_count(name: &str, shape: &[u64]) -> Result<u64, String> {
    if shape.contains(&0) {
        return Err(format!("tensor '{name}' has no elements (shape {shape:?})"));
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
    let Some(container) = Container::from_extension(output) else {
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

/// Writes an f32 tensor of `shape` to `out` as the container its extension names, under
/// the tensor name `name` for `.safetensors` (any name but the format's reserved
/// `__metadata__`).
///
/// Guarantees: the bytes go to a temporary file in `out`'s directory, which is synced and
/// then renamed onto `out`; on any error the temporary file is removed and `out` is left
/// as it was. Without `force`, an existing `out` is never replaced (the rename itself
/// refuses, so a file created meanwhile is not clobbered either).
pub fn write_f32(out: &Path, name: &str, shape: &[u64], data: &[f32], force: bool) -> Result<(), String> {
    let fail = |message: String| format!("{}: {}", out.display(), one_line(message));
    let container = Container::from_extension(out)
        .ok_or_else(|| fail("unknown output extension (expected .npy or .safetensors)".into()))?;
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
    match container {
        Container::Npy => write_npy(temporary.as_file_mut(), shape, data),
        Container::Safetensors => write_safetensors(temporary.as_file_mut(), name, shape, data),
    }
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

fn write_npy(file: &mut File, shape: &[u64], data: &[f32]) -> Result<(), String> {
    use npyz::WriterBuilder;
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(BufWriter::with_capacity(1 << 20, file))
        .begin_nd()
        .map_err(|e| io_message(&e))?;
    writer.extend(data.iter().copied()).map_err(|e| io_message(&e))?;
    writer.finish().map_err(|e| io_message(&e))
}

fn write_safetensors(file: &mut File, name: &str, shape: &[u64], data: &[f32]) -> Result<(), String> {
    const _: () = assert!(cfg!(target_endian = "little"), "safetensors stores little-endian f32");
    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape, bytemuck::cast_slice(data))
        .map_err(|e| format!("invalid tensor: {e}"))?;
    let serialized = safetensors::serialize([(name, view)], None).map_err(|e| e.to_string())?;
    file.write_all(&serialized).map_err(|e| io_message(&e))
}
