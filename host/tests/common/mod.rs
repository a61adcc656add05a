//! Test helpers: the `bitexact` executable to run; tensor files written by the
//! container crates with NaN and infinities at known positions, and the expected counts
//! decided by decoders independent of `shared` (`half`, core's floats, the OCP field
//! rules).
#![allow(dead_code)] // each test binary uses part of this

pub mod alloc_counter;

use bitexact::cuda_tools::sass::{self, SassCost};
use bitexact::cuda_tools::tools::{ARCHS, CudaTools};
use bitexact::verify::table::{VARIANTS, Variant};
use std::sync::OnceLock;

/// The SASS report of every variant of the table on every architecture, made once per
/// test process for the tests that read it (`ptx_tools`, and `cuda_baseline`'s Rust
/// column): assembling every module for seven architectures takes a while.
pub fn all_costs(tools: &CudaTools) -> &'static [SassCost] {
    static COSTS: OnceLock<Vec<SassCost>> = OnceLock::new();
    COSTS.get_or_init(|| {
        let variants: Vec<&'static Variant> = VARIANTS.iter().collect();
        sass::cost_report(tools, bitexact::gpu::ptx::MODULES, &variants, &ARCHS).unwrap_or_else(|e| panic!("{e}"))
    })
}

use bitexact::files::backend::Device;
use bitexact::files::scan::report::{Counts, Report};
use bitexact::files::scan::{ScanOptions, scan as scan_job};
use std::path::Path;
use std::process::Command;

/// The environment variable that names the `bitexact` executable for the command-line
/// tests. The GPU check bundle sets it: the path cargo compiles into a test binary
/// does not exist on the machine the bundle is carried to.
pub const BITEXACT_EXE: &str = "BITEXACT_EXE";

/// The `bitexact` executable: `$BITEXACT_EXE` if set, else the binary cargo built along
/// with this test.
pub fn bitexact_exe() -> std::ffi::OsString {
    let exe = std::env::var_os(BITEXACT_EXE).filter(|p| !p.is_empty());
    exe.unwrap_or_else(|| env!("CARGO_BIN_EXE_bitexact").into())
}

/// A command running [`bitexact_exe`].
pub fn bitexact_command() -> Command {
    Command::new(bitexact_exe())
}

/// Starts [`bitexact_exe`] with `args`, its stdout and stderr piped, for a test that
/// acts on the running process (a deadline, a closed pipe).
pub fn spawn_bitexact(args: &[&str]) -> std::process::Child {
    bitexact_command()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start bitexact")
}

/// Runs [`bitexact_exe`] with `args`.
pub fn bitexact(args: &[&str]) -> std::process::Output {
    bitexact_command().args(args).output().expect("run bitexact")
}

/// Deterministic pseudo-random numbers (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Class of an encoding as the independent decoders see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Finite,
    Nan,
    PosInf,
    NegInf,
}

fn kind_of(nan: bool, infinite: bool, negative: bool) -> Kind {
    match (nan, infinite, negative) {
        (true, _, _) => Kind::Nan,
        (_, true, false) => Kind::PosInf,
        (_, true, true) => Kind::NegInf,
        _ => Kind::Finite,
    }
}

fn kind_f16(b: u64) -> Kind {
    let x = half::f16::from_bits(b as u16);
    kind_of(x.is_nan(), x.is_infinite(), x.is_sign_negative())
}

fn kind_bf16(b: u64) -> Kind {
    let x = half::bf16::from_bits(b as u16);
    kind_of(x.is_nan(), x.is_infinite(), x.is_sign_negative())
}

fn kind_f32(b: u64) -> Kind {
    let x = f32::from_bits(b as u32);
    kind_of(x.is_nan(), x.is_infinite(), x.is_sign_negative())
}

fn kind_f64(b: u64) -> Kind {
    let x = f64::from_bits(b);
    kind_of(x.is_nan(), x.is_infinite(), x.is_sign_negative())
}

/// E5M2 is the top byte of a binary16, so `half` decodes it.
fn kind_e5m2(b: u64) -> Kind {
    kind_f16((b & 0xFF) << 8)
}

/// E4M3 (OCP): no infinities; NaN only with exponent and mantissa all ones.
fn kind_e4m3(b: u64) -> Kind {
    let (exponent, mantissa) = ((b >> 3) & 0b1111, b & 0b111);
    if exponent == 0b1111 && mantissa == 0b111 { Kind::Nan } else { Kind::Finite }
}

/// FNUZ (E4M3FNUZ, E5M2FNUZ): no infinities, no negative zero; the encoding that would
/// be -0 is the only NaN (Noune et al., arXiv:2206.02915).
fn kind_fnuz(b: u64) -> Kind {
    if b & 0xFF == 0x80 { Kind::Nan } else { Kind::Finite }
}

/// A floating-point dtype under test.
#[derive(Clone, Copy, Debug)]
pub struct Dtype {
    pub name: &'static str,
    pub bytes: usize,
    pub mantissa_bits: u32,
    pub safetensors: safetensors::Dtype,
    /// npy type string without the byte-order character (`f2`), if npy has the type.
    pub npy: Option<&'static str>,
    pub kind: fn(u64) -> Kind,
    /// The one non-finite encoding of a format that has only one (FNUZ's 0x80).
    pub only_non_finite: Option<u64>,
}

impl Dtype {
    fn width_mask(&self) -> u64 {
        u64::MAX >> (64 - 8 * self.bytes)
    }
    fn exponent_mask(&self) -> u64 {
        (self.width_mask() >> 1) & !((1u64 << self.mantissa_bits) - 1)
    }
}

pub const DTYPES: [Dtype; 8] = [
    Dtype {
        name: "binary16",
        bytes: 2,
        mantissa_bits: 10,
        safetensors: safetensors::Dtype::F16,
        npy: Some("f2"),
        kind: kind_f16,
        only_non_finite: None,
    },
    Dtype {
        name: "bfloat16",
        bytes: 2,
        mantissa_bits: 7,
        safetensors: safetensors::Dtype::BF16,
        npy: None,
        kind: kind_bf16,
        only_non_finite: None,
    },
    Dtype {
        name: "binary32",
        bytes: 4,
        mantissa_bits: 23,
        safetensors: safetensors::Dtype::F32,
        npy: Some("f4"),
        kind: kind_f32,
        only_non_finite: None,
    },
    Dtype {
        name: "binary64",
        bytes: 8,
        mantissa_bits: 52,
        safetensors: safetensors::Dtype::F64,
        npy: Some("f8"),
        kind: kind_f64,
        only_non_finite: None,
    },
    Dtype {
        name: "fp8_e4m3",
        bytes: 1,
        mantissa_bits: 3,
        safetensors: safetensors::Dtype::F8_E4M3,
        npy: None,
        kind: kind_e4m3,
        only_non_finite: None,
    },
    Dtype {
        name: "fp8_e5m2",
        bytes: 1,
        mantissa_bits: 2,
        safetensors: safetensors::Dtype::F8_E5M2,
        npy: None,
        kind: kind_e5m2,
        only_non_finite: None,
    },
    Dtype {
        name: "fp8_e4m3fnuz",
        bytes: 1,
        mantissa_bits: 3,
        safetensors: safetensors::Dtype::F8_E4M3FNUZ,
        npy: None,
        kind: kind_fnuz,
        only_non_finite: Some(0x80),
    },
    Dtype {
        name: "fp8_e5m2fnuz",
        bytes: 1,
        mantissa_bits: 2,
        safetensors: safetensors::Dtype::F8_E5M2FNUZ,
        npy: None,
        kind: kind_fnuz,
        only_non_finite: Some(0x80),
    },
];

/// `n` encodings of `dtype`: random finite values, and at each of `positions` an
/// encoding with the exponent field all ones (random sign; mantissa zero, all ones or
/// random in turn), which is NaN or an infinity, or for E4M3 sometimes finite (448); for
/// a format with one non-finite encoding (FNUZ), that encoding.
pub fn elements(dtype: &Dtype, n: usize, positions: &[usize], seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    let (width, exponent) = (dtype.width_mask(), dtype.exponent_mask());
    let mantissa = (1u64 << dtype.mantissa_bits) - 1;
    let sign = (width >> 1) + 1;
    let finite = |b: u64| (dtype.kind)(b) == Kind::Finite;
    let mut bits: Vec<u64> = (0..n)
        .map(|_| {
            let b = rng.next() & width;
            [b, b & !exponent, 0].into_iter().find(|&b| finite(b)).unwrap_or(0)
        })
        .collect();
    for (turn, &p) in positions.iter().enumerate() {
        let m = [0, mantissa, rng.next() & mantissa][turn % 3];
        bits[p] = dtype.only_non_finite.unwrap_or((rng.next() & sign) | exponent | m);
    }
    bits
}

/// Counts and first index as the independent decoders see `bits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    pub nan: u64,
    pub pos_inf: u64,
    pub neg_inf: u64,
    pub first: Option<u64>,
}

pub fn expected(dtype: &Dtype, bits: &[u64]) -> Expected {
    let mut e = Expected::default();
    for (i, &b) in bits.iter().enumerate() {
        let kind = (dtype.kind)(b);
        match kind {
            Kind::Finite => continue,
            Kind::Nan => e.nan += 1,
            Kind::PosInf => e.pos_inf += 1,
            Kind::NegInf => e.neg_inf += 1,
        }
        e.first.get_or_insert(i as u64);
    }
    e
}

/// The low `dtype.bytes` bytes of each element, little- or big-endian.
pub fn to_bytes(dtype: &Dtype, bits: &[u64], big_endian: bool) -> Vec<u8> {
    bits.iter()
        .flat_map(|&b| {
            let le = b.to_le_bytes();
            let mut element = le[..dtype.bytes].to_vec();
            if big_endian {
                element.reverse();
            }
            element
        })
        .collect()
}

/// Writes a `.safetensors` file with the `safetensors` crate.
pub fn write_safetensors(path: &Path, tensors: &[(&str, safetensors::Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(&str, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            (*name, safetensors::tensor::TensorView::new(*dtype, shape.clone(), data).expect("consistent view"))
        })
        .collect();
    std::fs::write(path, safetensors::serialize(views, None).expect("serialize")).expect("write");
}

/// Writes a `.npy` file of `dtype` (which must have an npy type) with `npyz`, in the
/// given byte order.
pub fn write_npy(path: &Path, dtype: &Dtype, shape: &[u64], bits: &[u64], big_endian: bool) {
    let type_str = format!("{}{}", if big_endian { '>' } else { '<' }, dtype.npy.expect("npy dtype"));
    let npy_dtype = npyz::DType::Plain(type_str.parse().expect("type string"));
    match dtype.bytes {
        2 => write_npy_items(path, npy_dtype, shape, bits.iter().map(|&b| half::f16::from_bits(b as u16))),
        4 => write_npy_items(path, npy_dtype, shape, bits.iter().map(|&b| f32::from_bits(b as u32))),
        _ => write_npy_items(path, npy_dtype, shape, bits.iter().map(|&b| f64::from_bits(b))),
    }
}

/// Writes `items` as a `.npy` file of `dtype` and `shape` with `npyz`.
pub fn write_npy_items<T: npyz::Serialize>(
    path: &Path,
    dtype: npyz::DType,
    shape: &[u64],
    items: impl IntoIterator<Item = T>,
) {
    std::fs::write(path, npy_items_bytes(dtype, shape, items)).expect("write");
}

/// `items` as the bytes of a `.npy` file of `dtype` and `shape`, written by `npyz`.
pub fn npy_items_bytes<T: npyz::Serialize>(
    dtype: npyz::DType,
    shape: &[u64],
    items: impl IntoIterator<Item = T>,
) -> Vec<u8> {
    use npyz::WriterBuilder;
    let mut bytes = Vec::new();
    let mut writer =
        npyz::WriteOptions::<T>::new().dtype(dtype).shape(shape).writer(&mut bytes).begin_nd().expect("begin");
    writer.extend(items).expect("extend");
    writer.finish().expect("finish");
    bytes
}

/// How `write_npz` stores its members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZipMethod {
    Stored,
    Deflated,
}

/// Writes `members` (file name, bytes) as a zip archive with the `zip` crate, each with
/// ZIP64 sizes in its local header as NumPy's `savez` writes them.
pub fn write_npz(path: &Path, members: &[(&str, Vec<u8>)], method: ZipMethod) {
    use std::io::Write;
    let method = match method {
        ZipMethod::Stored => zip::CompressionMethod::Stored,
        ZipMethod::Deflated => zip::CompressionMethod::Deflated,
    };
    let options = zip::write::SimpleFileOptions::default().compression_method(method).large_file(true);
    let mut archive = zip::ZipWriter::new(std::fs::File::create(path).expect("create"));
    for (name, bytes) in members {
        archive.start_file(*name, options).expect("start member");
        archive.write_all(bytes).expect("write member");
    }
    archive.finish().expect("finish archive");
}

/// Prints `skipped: <reason>` and the test's name straight to the process's stderr, which
/// the test harness does not capture, so that a skipped check shows in a plain `cargo
/// test` run: the workspace's one skip helper, for a skip that no `REQUIRE_*` switch
/// turns into a failure.
pub use bitexact::support::skip::skip;

/// The switch that makes a missing python3, or a python3 without NumPy, fail the tests
/// that need them instead of skipping them.
pub const REQUIRE_NUMPY: &str = "REQUIRE_NUMPY";

/// What python3 gave running a script that imports NumPy (`run`: its `output()`): the
/// output where the script succeeded; `None` after skipping the test (a failure when
/// [`REQUIRE_NUMPY`] is set) where python3 is not installed or has no NumPy. A script
/// that ran and failed panics with its stderr: a tool that is present but fails is a
/// failure, never a skip.
pub fn numpy_output(run: std::io::Result<std::process::Output>) -> Option<std::process::Output> {
    let output = match run {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bitexact::support::skip::skip_or_fail(REQUIRE_NUMPY, format!("python3 is not installed ({e})"));
            return None;
        }
        Err(e) => panic!("python3 does not run: {e}"),
        Ok(output) => output,
    };
    if output.status.success() {
        return Some(output);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stderr.contains("ModuleNotFoundError: No module named 'numpy'") {
        panic!("the NumPy script failed ({}):\n{stderr}", output.status);
    }
    bitexact::support::skip::skip_or_fail(REQUIRE_NUMPY, "python3 has no NumPy (No module named 'numpy')");
    None
}

/// A `.safetensors` file's bytes: the length of `header`, `header`, then `data_len`
/// bytes of 0x7F.
pub fn safetensors_bytes(header: &str, data_len: usize) -> Vec<u8> {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.resize(bytes.len() + data_len, 0x7F);
    bytes
}

/// An `.npy` file's bytes in format `version` (1: u16 header length, else u32): magic,
/// version, length, `header`, then `data_len` bytes of 0xFF.
pub fn npy_bytes(version: u8, header: &str, data_len: usize) -> Vec<u8> {
    let mut bytes = vec![0x93, b'N', b'U', b'M', b'P', b'Y', version, 0];
    if version == 1 {
        bytes.extend((header.len() as u16).to_le_bytes());
    } else {
        bytes.extend((header.len() as u32).to_le_bytes());
    }
    bytes.extend(header.as_bytes());
    bytes.resize(bytes.len() + data_len, 0xFF);
    bytes
}

/// Scans `path` through the library's scan job on the CPU and hands the report to
/// `use_report`.
pub fn with_scan<R>(path: &Path, use_report: impl FnOnce(&Report<'_>) -> R) -> Result<R, String> {
    let options = ScanOptions { device: Device::Cpu, ..ScanOptions::default() };
    let scanned = scan_job(&[path.to_path_buf()], &options).map_err(|e| e.to_string())?;
    Ok(use_report(&scanned.report))
}

/// One tensor's scan result, owned.
#[derive(Clone, Debug)]
pub struct Scanned {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub skipped: Option<&'static str>,
    pub counts: Counts,
}

/// Scans `path` through the library on the CPU backend.
pub fn scan(path: &Path) -> Result<Vec<Scanned>, String> {
    with_scan(path, |report| {
        report.files[0]
            .tensors
            .iter()
            .map(|t| Scanned {
                name: t.name.to_string(),
                dtype: t.dtype.to_string(),
                shape: t.shape.to_vec(),
                skipped: t.skipped,
                counts: t.counts,
            })
            .collect()
    })
}

/// `path` as an argument (the temporary paths of the tests are UTF-8).
pub fn path_arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// Asserts a scanned tensor's counts and first index; `what` names the case.
#[allow(dead_code)] // not every test binary that includes `common` uses it
pub fn assert_counts(tensor: &Scanned, expected: Expected, what: &str) {
    let got = &tensor.counts;
    assert_eq!(
        (got.nan, got.pos_inf, got.neg_inf, got.first_non_finite),
        (expected.nan, expected.pos_inf, expected.neg_inf, expected.first),
        "{what}: tensor '{}' ({}): (nan, +inf, -inf, first) differ",
        tensor.name,
        tensor.dtype
    );
}

/// `/dev/full` opened for writing, to make a child's stdout unwritable; `None` (after
/// printing why the test is skipped) where there is none.
#[allow(dead_code)]
pub fn unwritable_stdout() -> Option<std::fs::File> {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").ok();
    if full.is_none() {
        skip("no /dev/full to make stdout unwritable");
    }
    full
}

/// A PNG of `raw` (rows of packed samples, 16-bit ones big-endian, as PNG stores them)
/// written by the `png` crate's encoder, with a palette and a `tRNS` chunk when given.
pub fn png_file(
    path: &Path,
    (width, height): (u32, u32),
    (color, depth): (png::ColorType, png::BitDepth),
    palette: Option<&[u8]>,
    trns: Option<&[u8]>,
    raw: &[u8],
) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(color);
    encoder.set_depth(depth);
    if let Some(palette) = palette {
        encoder.set_palette(palette.to_vec());
    }
    if let Some(trns) = trns {
        encoder.set_trns(trns.to_vec());
    }
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(raw).unwrap();
    writer.finish().unwrap();
}

/// An interlaced (Adam7) 8-bit RGB PNG of `rgb` (`width * height` pixels), made by hand:
/// the `png` crate's encoder writes no interlaced images. Each pass's rows are stored
/// unfiltered, zlib-compressed.
pub fn adam7_rgb_png(path: &Path, width: u32, height: u32, rgb: &[u8]) {
    const PASSES: [(u32, u32, u32, u32); 7] =
        [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)];
    let mut filtered = Vec::new();
    for (x0, y0, dx, dy) in PASSES {
        if x0 >= width || y0 >= height {
            continue; // an empty pass has no rows at all
        }
        for y in (y0..height).step_by(dy as usize) {
            filtered.push(0); // filter type None
            for x in (x0..width).step_by(dx as usize) {
                let at = ((y * width + x) * 3) as usize;
                filtered.extend_from_slice(&rgb[at..at + 3]);
            }
        }
    }
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut zlib, &filtered).unwrap();
    let idat = zlib.finish().unwrap();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 1]); // 8-bit, RGB, deflate, adaptive filters, Adam7
    png_from_chunks(path, &[(b"IHDR", &ihdr), (b"IDAT", &idat), (b"IEND", &[])]);
}

/// Writes a PNG of exactly these chunks (type, data), each with its length and CRC.
pub fn png_from_chunks(path: &Path, chunks: &[(&[u8; 4], &[u8])]) {
    let mut file = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in chunks {
        file.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = file.len();
        file.extend_from_slice(*kind);
        file.extend_from_slice(data);
        let crc = crc32fast::hash(&file[start..]);
        file.extend_from_slice(&crc.to_be_bytes());
    }
    std::fs::write(path, file).unwrap();
}
