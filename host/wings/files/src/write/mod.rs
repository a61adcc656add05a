//! Tensors written: f32, binary16 or bfloat16 values ([`Dtype`], and as types
//! [`DtypeOf`]) streamed from a [`TensorSource`] a chunk at a time into a `.npy` (its
//! header written by [`npy_header`]) or a `.safetensors` file, staged in a temporary file
//! and renamed into place only when whole ([`stage`], [`StagedOutput::commit`]); the
//! checks made before any work (`check_output`, which takes
//! [`crate::output::check_destination`], and `check_dtype`).
//!
//! # Adding an output dtype
//!
//! A dtype's name, title, bytes and `.safetensors` and `.npy` type strings are its entry
//! in the element-type table, [`crate::dtype`]; what it is as an output (its stored
//! type, bit layout and rounding from f32) is its one entry in this module's `dtypes!`
//! table, which makes [`Dtype`] a role of the element-type table. From those come
//! [`Dtype`]'s methods, [`Dtype::ALL`] (which `--dtype` and its `--help` list), its
//! marker type with its [`DtypeOf`], and [`with_dtype`], the one dispatch from a
//! run-time [`Dtype`] to its type (what [`crate::normalize::normalize()`] runs through).
//! So adding a dtype that `normalize` writes takes:
//!
//! 1. its entry in [`crate::dtype`]'s table, if it has none yet, and one entry here;
//! 2. one entry per sample width in [`crate::normalize::image::conversions`]
//!    (the table variant that converts UNORM8 or UNORM16 samples to it; the table's
//!    length is the sample widths times [`Dtype::ALL`]'s, so a missing entry does not
//!    compile, and a misplaced one fails the test below);
//!
//! and `host/wings/files/src/tests/cpu_levels.rs` proves every `conversions()` entry on every code at
//! every CPU level, against the exact reference. `host/wings/files/src/tests/normalize_dtypes.rs` fails
//! for a dtype that lacks a `conversions()` entry for some sample width, proves its
//! division by a PNM's `maxval` ([`crate::normalize::divide::to`], from the
//! entry's `from_f32`) against the exact reference, and writes it to every container
//! that holds it, read back by the `safetensors` and `npyz` crates. A new dtype whose
//! layout has no exact reference there fails that test until one is named. The variant
//! in the table (`shared::variants`, with its CPU forms in [`bitexact_cpu::unorm`]) is
//! the conversion itself, written and proven there before it can be an entry.
//!
//! Owns: tensor output files and their errors. Uses: [`crate::output`] (the path every
//! output takes: its temporary, writeback and commit), [`crate::containers`] (which
//! container a path names, the `.safetensors` reserved key and length field).

use crate::containers::Container;
use crate::containers::safetensors::SAFETENSORS_LEN_BYTES;
use crate::containers::safetensors::header::METADATA_KEY;
use crate::message::{io_message, one_line};
use crate::output::temporaries::PendingTemporary;
use crate::output::writeback::Writeback;
use crate::output::{Output, OutputErrorKind, OutputPathError, directory_of, put_in_place, temporary_builder};
use bitexact_support::output::{excerpt, path_text};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why an output cannot be written: the output path and what went wrong. Displayed as
/// `path: what`, on one line; the cause is in that line, not behind `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path_text(.path), one_line(.kind))]
pub struct TensorWriteError {
    /// The output path, as given.
    pub path: PathBuf,
    /// What went wrong.
    #[doc(hidden)]
    pub kind: TensorWriteErrorKind,
}

/// What went wrong with an output: see [`TensorWriteError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TensorWriteErrorKind {
    /// The output is the input file.
    #[error("is the input file; choose another output path")]
    IsInput,
    /// Its extension names no container that can be written.
    #[error("unknown output extension (expected .npy or .safetensors)")]
    UnknownExtension,
    /// The shape does not hold the number of values given.
    #[error("shape {shape:?} does not hold {values} values")]
    ShapeMismatch {
        /// The shape.
        shape: Vec<u64>,
        /// Values given.
        values: u64,
    },
    /// `.npy` cannot hold values of this type: NumPy has no bfloat16.
    #[error(".npy cannot hold --dtype {} (NumPy has no such dtype); write a .safetensors output instead, or use --dtype f16 or f32", .dtype.name())]
    NoNpyDtype {
        /// The values' type.
        dtype: Dtype,
    },
    /// The tensor name is one the format reserves.
    #[error("tensor name '{}' is reserved by the format", excerpt(.name))]
    ReservedName {
        /// The name.
        name: String,
    },
    /// The temporary file's mode cannot be set.
    #[error("cannot set the mode of the temporary file: {}", io_message(.0))]
    SetMode(std::io::Error),
    /// The `.safetensors` header cannot be serialised.
    #[error("write failed: invalid header: {0}")]
    Header(serde_json::Error),
    /// The output path failed: its name, its temporary file, the write, the rename
    /// ([`crate::output`]'s one kind, as [`Output::File`] says it).
    #[error(transparent)]
    Output(#[from] OutputErrorKind),
}

#[doc(hidden)] // the output path's error is the wing's own
impl From<OutputPathError> for TensorWriteError {
    fn from(error: OutputPathError) -> TensorWriteError {
        TensorWriteError { path: error.path, kind: error.kind.into() }
    }
}

/// Why [`stage`] (or [`write_from`]) did not stage an output: it cannot be written, or
/// its [`TensorSource`] could not produce the values (the source's own error, `E`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError<E: std::error::Error> {
    /// The output cannot be written there, or writing it failed.
    #[error(transparent)]
    Output(#[from] TensorWriteError),
    /// The values could not be produced: `path: write failed: why`, on one line.
    #[error("{}: write failed: {}", path_text(.path), one_line(.error))]
    Values {
        /// The output path, as given.
        path: PathBuf,
        /// The source's error.
        error: E,
    },
}

/// What went wrong while the temporary file was written: the output's fault, or the
/// source's own error. [`stage`] names the output in either.
enum Staging<E> {
    /// Writing failed.
    Output(TensorWriteErrorKind),
    /// The source could not produce the values.
    Values(E),
}

impl<E> From<TensorWriteErrorKind> for Staging<E> {
    fn from(kind: TensorWriteErrorKind) -> Staging<E> {
        Staging::Output(kind)
    }
}

impl<E> From<OutputErrorKind> for Staging<E> {
    fn from(kind: OutputErrorKind) -> Staging<E> {
        Staging::Output(kind.into())
    }
}

/// Checks, before any work, that `output` may be written: it is not `input` (same file
/// after resolving links), its extension names a container, it does not exist unless
/// `force`, and [`crate::output::check_destination`]. Returns the container; errors
/// name the file.
pub(crate) fn check_output(output: &Path, input: &Path, force: bool) -> Result<Container, TensorWriteError> {
    let fail = |kind: TensorWriteErrorKind| Err(TensorWriteError { path: output.to_path_buf(), kind });
    let same = matches!((output.canonicalize(), input.canonicalize()), (Ok(a), Ok(b)) if a == b);
    if same {
        return fail(TensorWriteErrorKind::IsInput);
    }
    let Some(container) = Container::of_output(output) else {
        return fail(TensorWriteErrorKind::UnknownExtension);
    };
    crate::output::check_destination(output)?;
    // `symlink_metadata`, not `exists`: a dangling symlink is there too (and the final
    // no-clobber rename would refuse it after all the work).
    if output.symlink_metadata().is_ok() && !force {
        return fail(OutputErrorKind::Exists(Output::File).into());
    }
    Ok(container)
}

/// Checks, before any work, that `container` can hold values of `dtype` (`.npy` cannot
/// hold bfloat16: NumPy has no such dtype); the error names `output`.
pub(crate) fn check_dtype(output: &Path, container: Container, dtype: Dtype) -> Result<(), TensorWriteError> {
    if dtype.npy_descr().is_none() && container == Container::Npy {
        return Err(TensorWriteError { path: output.to_path_buf(), kind: TensorWriteErrorKind::NoNpyDtype { dtype } });
    }
    Ok(())
}

/// Values per chunk when a tensor is written: 4 MiB of f32, so that writing holds a few
/// MiB however large the tensor is.
pub const WRITE_CHUNK_ELEMENTS: usize = 1 << 20;

/// Defines `normalize`'s output dtypes, a role of [`crate::dtype`]'s table (their names,
/// titles, bytes and container strings are its entries'): the [`Dtype`] role, its
/// facts as an output (bit layout), its marker type (`AsF32`...) with its [`DtypeOf`],
/// and [`with_dtype`]'s dispatch. One entry per dtype, named as the element-type table
/// names it, its fields in this order:
///
/// - `marker` and `stored`: its type, and how one value is held in memory (its bytes
///   are `stored`'s size, which must be the table's);
/// - `exponent_bits`, `mantissa_bits`: its bit layout (1 + both = its bits);
/// - `from_f32`: an f32's bits rounded to it, to nearest, ties to even.
macro_rules! dtypes {
    ($(
        $variant:ident {
            marker: $marker:ident,
            stored: $stored:ty,
            exponent_bits: $exponent_bits:literal,
            mantissa_bits: $mantissa_bits:literal,
            from_f32: $from_f32:expr $(,)?
        }
    ),* $(,)?) => {
        crate::dtype::roles! {
            /// The element type of a written tensor (`normalize --dtype`): one per entry of
            /// this module's table, each an entry of [`crate::dtype`]'s.
            pub enum Dtype { $($variant),* }
        }

        impl Dtype {
            /// Bytes per value.
            #[doc(hidden)]
            pub const fn bytes(self) -> u64 {
                self.element().bytes() as u64
            }

            /// Bits of its exponent field.
            #[doc(hidden)]
            pub const fn exponent_bits(self) -> u32 {
                match self { $(Dtype::$variant => $exponent_bits,)* }
            }

            /// Bits of its mantissa (trailing significand) field: its precision less one.
            #[doc(hidden)]
            pub const fn mantissa_bits(self) -> u32 {
                match self { $(Dtype::$variant => $mantissa_bits,)* }
            }

            /// The `.npy` type string (little-endian), or `None` where NumPy has no dtype.
            #[doc(hidden)]
            pub const fn npy_descr(self) -> Option<&'static str> {
                self.element().numpy_type_string()
            }
        }

        $(
            #[doc = concat!("[`Dtype::", stringify!($variant), "`] as a type (its title is its entry's, [`",
                "crate::dtype::ElementType::", stringify!($variant), "`]): its values, held as `",
                stringify!($stored), "`.")]
            #[derive(Clone, Copy, Debug)]
            pub enum $marker {}

            impl DtypeOf for $marker {
                const DTYPE: Dtype = Dtype::$variant;
                type Stored = $stored;
                fn from_f32_bits(bits: u32) -> $stored {
                    $from_f32(bits)
                }
            }

            const _: () = assert!(
                1 + $exponent_bits + $mantissa_bits == 8 * std::mem::size_of::<$stored>(),
                concat!("the bit layout of ", stringify!($variant), " fills its stored type")
            );
            const _: () = assert!(
                std::mem::size_of::<$stored>() == crate::dtype::ElementType::$variant.bytes(),
                concat!("the stored type of ", stringify!($variant), " has the element-type table's bytes")
            );
        )*

        /// Calls `visitor` with the type of `dtype` ([`DtypeOf`]): the one `match` on
        /// [`Dtype`] that code generic over the value type needs.
        pub fn with_dtype<V: DtypeVisitor>(dtype: Dtype, visitor: V) -> V::Output {
            match dtype { $(Dtype::$variant => visitor.visit::<$marker>(),)* }
        }
    };
}

// The dtypes `normalize` writes, in the order `--help` lists them. Adding one: see this
// module's doc.
dtypes! {
    F32 { marker: AsF32, stored: f32, exponent_bits: 8, mantissa_bits: 23, from_f32: f32::from_bits },
    F16 { marker: AsF16, stored: u16, exponent_bits: 5, mantissa_bits: 10, from_f32: shared::binary16::from_f32_bits },
    Bf16 { marker: AsBf16, stored: u16, exponent_bits: 8, mantissa_bits: 7, from_f32: shared::bfloat16::from_f32_bits },
}

impl Dtype {
    /// One line for `--help`: what it is and the containers' names for it, e.g.
    /// `IEEE 754 binary16: .npy <f2, .safetensors F16`, or for a dtype NumPy lacks,
    /// `bfloat16: .safetensors BF16; NumPy has no such dtype, so no .npy`.
    #[doc(hidden)]
    pub fn summary(self) -> String {
        match self.npy_descr() {
            Some(descr) => format!("{}: .npy {descr}, .safetensors {}", self.title(), self.safetensors_name()),
            None => format!(
                "{}: .safetensors {}; NumPy has no such dtype, so no .npy",
                self.title(),
                self.safetensors_name()
            ),
        }
    }
}

/// A [`Dtype`] as a type, so that a [`TensorSource`]'s values have the right width by
/// construction: [`AsF32`], [`AsF16`], [`AsBf16`] (made by this module's table).
pub trait DtypeOf {
    /// The dtype.
    const DTYPE: Dtype;
    /// How one value is held in memory: the f32 itself, or the 16 bits of a binary16 or
    /// bfloat16 encoding.
    type Stored: bytemuck::Pod + Default + Send + Sync;
    /// The f32 whose bits are `bits` rounded to this type, to nearest, ties to even
    /// (exact on every input, as `shared` proves for its conversions; for f32, itself).
    fn from_f32_bits(bits: u32) -> Self::Stored;
}

/// Code generic over the value type, run for a [`Dtype`] known only at run time by
/// [`with_dtype`]: `visit::<D>` is called with `D` the dtype's [`DtypeOf`] type.
pub trait DtypeVisitor {
    /// What the visit gives.
    type Output;
    /// Runs for the dtype `D::DTYPE`.
    fn visit<D: DtypeOf>(self) -> Self::Output;
}

/// The stored form of the values of a [`TensorSource`].
pub(crate) type StoredOf<S> = <<S as TensorSource>::Dtype as DtypeOf>::Stored;

/// A tensor's values in flat order, produced a chunk at a time, so that writing one
/// never needs them all in memory. `Sync`: the next chunk is produced while the
/// previous one is written, on another thread.
pub trait TensorSource: Sync {
    /// The values' type.
    type Dtype: DtypeOf;
    /// Why values cannot be produced.
    type Error: std::error::Error + Send + Sync + 'static;
    /// How many values there are.
    fn elements(&self) -> u64;
    /// Writes values `start .. start + out.len()` into `out` (a range within
    /// [`TensorSource::elements`]).
    fn fill(&self, start: u64, out: &mut [StoredOf<Self>]) -> Result<(), Self::Error>;
}

/// Values asked for beyond the end of a slice of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("values {start}.. are out of range")]
pub struct ValuesOutOfRange {
    /// The first value asked for.
    pub start: u64,
}

impl TensorSource for [f32] {
    type Dtype = AsF32;
    type Error = ValuesOutOfRange;

    fn elements(&self) -> u64 {
        self.len() as u64
    }

    fn fill(&self, start: u64, out: &mut [f32]) -> Result<(), ValuesOutOfRange> {
        let values = usize::try_from(start).ok().and_then(|start| self.get(start..start.checked_add(out.len())?));
        out.copy_from_slice(values.ok_or(ValuesOutOfRange { start })?);
        Ok(())
    }
}

/// Writes the f32 tensor `data` of `shape` to `out`: [`write_from`] of a slice.
pub fn write_f32(
    out: &Path,
    name: &str,
    shape: &[u64],
    data: &[f32],
    force: bool,
) -> Result<(), StageError<ValuesOutOfRange>> {
    write_from(out, name, shape, data, force)
}

/// Writes a tensor of `shape` to `out` as the container its extension names: [`stage`],
/// then [`StagedOutput::commit`].
pub fn write_from<S: TensorSource + ?Sized>(
    out: &Path,
    name: &str,
    shape: &[u64],
    data: &S,
    force: bool,
) -> Result<(), StageError<S::Error>> {
    Ok(stage(out, name, shape, data, force)?.commit()?)
}

/// Writes a tensor of `shape` with the values' dtype (`.npy`: `<f4` or `<f2`;
/// `.safetensors`: `F32`, `F16` or `BF16`; `.npy` refuses bfloat16, see `check_dtype`),
/// for `out`, as the container its extension names,
/// under the tensor name `name` for `.safetensors` (any name but the format's reserved
/// `__metadata__`), its values taken from `data` [`WRITE_CHUNK_ELEMENTS`] at a time
/// (the next chunk produced while the previous one is written, two chunks in memory),
/// into a temporary file in `out`'s directory, synced; `out` itself is not touched until
/// [`StagedOutput::commit`]. [`StagedOutput::phases`] says where the time went.
///
/// Permissions, as other tools give them: a new output gets the mode `open(..., 0666)`
/// gives under the umask (so `0644` under the usual `022`), like a shell's `>` or `cp`
/// to a new file; with `force`, a replaced file's permission bits are kept, like `cp`
/// onto an existing file (`install`, by contrast, sets `0755` or its `-m`). The owner is
/// whoever runs the command, as with any replace-by-rename.
///
/// On any error the temporary file is removed and `out` is left as it was; so is it if
/// the result is dropped without being committed.
pub fn stage<S: TensorSource + ?Sized>(
    out: &Path,
    name: &str,
    shape: &[u64],
    data: &S,
    force: bool,
) -> Result<StagedOutput, StageError<S::Error>> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |kind: TensorWriteErrorKind| TensorWriteError { path: out.to_path_buf(), kind };
    let container = Container::of_output(out).ok_or_else(|| fail(TensorWriteErrorKind::UnknownExtension))?;
    check_dtype(out, container, S::Dtype::DTYPE)?;
    if shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) != Some(data.elements()) {
        return Err(fail(TensorWriteErrorKind::ShapeMismatch { shape: shape.to_vec(), values: data.elements() }).into());
    }
    if container == Container::Safetensors && name == METADATA_KEY {
        // The crate would write it, but every reader takes that key for the metadata map.
        return Err(fail(TensorWriteErrorKind::ReservedName { name: name.to_string() }).into());
    }
    let directory = directory_of(out);
    let replaced_mode = match std::fs::metadata(out) {
        Ok(metadata) if force && metadata.is_file() => Some(metadata.permissions().mode() & 0o777),
        _ => None,
    };
    // The kernel applies the umask to the mode asked for here; a replaced file's mode is
    // then set exactly, before any data is written.
    let created = PendingTemporary::create(
        || {
            temporary_builder()
                .permissions(std::fs::Permissions::from_mode(replaced_mode.unwrap_or(0o666)))
                .tempfile_in(directory)
        },
        |t| t.path(),
    );
    let (pending, mut temporary) = created.map_err(|error| {
        fail(
            OutputErrorKind::CreateTemporary { output: Output::File, directory: directory.to_path_buf(), error }.into(),
        )
    })?;
    if let Some(mode) = replaced_mode {
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| fail(TensorWriteErrorKind::SetMode(e)))?;
    }
    let mut phases = WritePhases::default();
    let mut writer = BufWriter::with_capacity(1 << 20, Writeback::new(temporary.as_file_mut(), true));
    match container {
        Container::Npy => write_npy(&mut writer, shape, data, &mut phases),
        Container::Safetensors => write_safetensors(&mut writer, name, shape, data, &mut phases),
        // `of_output` has refused it above.
        Container::Npz => Err(TensorWriteErrorKind::UnknownExtension.into()),
    }
    .and_then(|()| writer.into_inner().map(drop).map_err(|e| OutputErrorKind::write(e.into_error()).into()))
    .and_then(|()| {
        let start = Instant::now();
        temporary.as_file().sync_all().map_err(OutputErrorKind::write)?;
        phases.sync = start.elapsed();
        Ok(())
    })
    .map_err(|staging| match staging {
        Staging::Output(kind) => StageError::Output(fail(kind)),
        Staging::Values(error) => StageError::Values { path: out.to_path_buf(), error },
    })?;
    phases.bytes = temporary.as_file().metadata().map_or(0, |m| m.len());
    Ok(StagedOutput { temporary, out: out.to_path_buf(), force, phases, _pending: pending })
}

/// Where the time of [`stage`] went. Producing and writing overlap: their sum may
/// exceed the time both took.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WritePhases {
    /// Producing the values (the source's `fill`; for `normalize`, the conversion).
    pub produce: Duration,
    /// Writing the file (into the page cache), on the writer thread.
    pub write: Duration,
    /// Syncing it to disk.
    pub sync: Duration,
    /// Bytes of the file.
    pub bytes: u64,
    /// Bytes of values (2 or 4 per value).
    pub value_bytes: u64,
}

/// An output written in full to a temporary file, not yet in place. Dropping it removes
/// the temporary file and leaves the output path as it was.
pub struct StagedOutput {
    temporary: tempfile::NamedTempFile,
    out: PathBuf,
    force: bool,
    phases: WritePhases,
    /// Listed until it is renamed into place or removed. Declared after `temporary`,
    /// so dropped after it: the file is gone before it leaves the list.
    _pending: PendingTemporary,
}

impl StagedOutput {
    /// Where the time of writing it went.
    pub fn phases(&self) -> WritePhases {
        self.phases
    }

    /// Renames the temporary file onto the output path. Without `force`, an existing
    /// output is never replaced (the rename itself refuses, so a file created meanwhile
    /// is not clobbered either). On error the temporary file is removed.
    pub fn commit(self) -> Result<(), TensorWriteError> {
        let (temporary, out) = (self.temporary, &self.out);
        let persisted =
            put_in_place(|| if self.force { temporary.persist(out) } else { temporary.persist_noclobber(out) });
        persisted.map(drop).map_err(|e| {
            let kind = if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                OutputErrorKind::Exists(Output::File)
            } else {
                OutputErrorKind::Rename(Output::File, e.error)
            };
            TensorWriteError { path: self.out, kind: kind.into() }
        })
    }
}

/// The values of `data`, [`WRITE_CHUNK_ELEMENTS`] at a time, handed to `write` in order
/// on a writer thread while this one produces the next chunk: two chunk buffers
/// in all. Adds the time of each side to `phases`.
fn for_each_chunk<S: TensorSource + ?Sized>(
    data: &S,
    mut write: impl FnMut(&[StoredOf<S>]) -> std::io::Result<()> + Send,
    phases: &mut WritePhases,
) -> Result<(), Staging<S::Error>> {
    let total = data.elements();
    let chunk_len = WRITE_CHUNK_ELEMENTS.min(usize::try_from(total).unwrap_or(usize::MAX));
    phases.value_bytes += total * S::Dtype::DTYPE.bytes();
    std::thread::scope(|scope| {
        // Full chunks to the writer (one may wait while another is written), and
        // written ones back.
        let (to_writer, full) = std::sync::mpsc::sync_channel::<(Vec<StoredOf<S>>, usize)>(1);
        let (to_producer, spare) = std::sync::mpsc::channel::<Vec<StoredOf<S>>>();
        let writer = scope.spawn(move || {
            let mut spent = Duration::ZERO;
            for (chunk, len) in full {
                let start = Instant::now();
                write(&chunk[..len])?;
                spent += start.elapsed();
                // The producer may have stopped: then the buffer is not wanted.
                let _ = to_producer.send(chunk);
            }
            Ok::<Duration, std::io::Error>(spent)
        });
        let mut produced = Ok(());
        let (mut buffers, mut start) = (0, 0u64);
        while start < total {
            let chunk = match spare.try_recv() {
                Ok(chunk) => Some(chunk),
                Err(_) if buffers < 2 => {
                    buffers += 1;
                    Some(vec![StoredOf::<S>::default(); chunk_len])
                }
                // None: the writer stopped on an error, which its join gives.
                Err(_) => spare.recv().ok(),
            };
            let Some(mut chunk) = chunk else { break };
            let len = chunk_len.min((total - start) as usize);
            let began = Instant::now();
            if let Err(e) = data.fill(start, &mut chunk[..len]) {
                produced = Err(Staging::Values(e));
                break;
            }
            phases.produce += began.elapsed();
            if to_writer.send((chunk, len)).is_err() {
                break;
            }
            start += len as u64;
        }
        drop(to_writer);
        let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        produced?;
        phases.write += written.map_err(OutputErrorKind::write)?;
        Ok(())
    })
}

/// The `.npy` header (format 1.0, or 2.0 for a dictionary longer than 65,535 bytes)
/// of a C-ordered array of `shape` whose dtype is `descr` (`<f4`, `<f2`), as NumPy
/// writes it: the dictionary padded with spaces and a newline so that the data starts
/// at a multiple of 64 bytes.
pub fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.as_slice() {
        [one] => format!("({one},)"),
        dims => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let (version, len_bytes) = if dict.len() + 1 + 10 <= 65_535 { (1u8, 2) } else { (2u8, 4) };
    let unpadded = 6 + 2 + len_bytes + dict.len() + 1;
    let header_len = unpadded.next_multiple_of(64) - 6 - 2 - len_bytes;
    let mut out = Vec::with_capacity(unpadded.next_multiple_of(64));
    out.extend_from_slice(b"\x93NUMPY");
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + header_len - dict.len() - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes `data` as a `.npy` array of `shape` (`<f4` for f32, `<f2` for binary16): the
/// header [`npy_header`] gives, then the values as they lie in memory; bfloat16, which
/// NumPy lacks, is refused.
fn write_npy<S: TensorSource + ?Sized>(
    out: &mut (impl Write + Send),
    shape: &[u64],
    data: &S,
    phases: &mut WritePhases,
) -> Result<(), Staging<S::Error>> {
    const _: () = assert!(cfg!(target_endian = "little"), "the header says little-endian values");
    let dtype = S::Dtype::DTYPE;
    let descr = dtype.npy_descr().ok_or(TensorWriteErrorKind::NoNpyDtype { dtype })?;
    out.write_all(&npy_header(descr, shape)).map_err(OutputErrorKind::write)?;
    for_each_chunk(data, |chunk| out.write_all(bytemuck::cast_slice(chunk)), phases)
}

/// Writes what `safetensors::serialize` writes for one F32, F16 or BF16 tensor (a test
/// compares the bytes), without building the whole file in memory as it does: the
/// length, the JSON header padded with spaces to a multiple of 8 bytes, then the
/// little-endian values.
fn write_safetensors<S: TensorSource + ?Sized>(
    out: &mut (impl Write + Send),
    name: &str,
    shape: &[u64],
    data: &S,
    phases: &mut WritePhases,
) -> Result<(), Staging<S::Error>> {
    const _: () = assert!(cfg!(target_endian = "little"), "safetensors stores little-endian values");
    /// One tensor's header entry, its fields in the crate's order.
    #[derive(serde::Serialize)]
    struct Info<'a> {
        dtype: &'static str,
        shape: &'a [u64],
        data_offsets: [u64; 2],
    }
    let dtype = S::Dtype::DTYPE;
    let info = Info { dtype: dtype.safetensors_name(), shape, data_offsets: [0, data.elements() * dtype.bytes()] };
    let mut header =
        serde_json::to_vec(&std::collections::BTreeMap::from([(name, info)])).map_err(TensorWriteErrorKind::Header)?;
    header.resize(header.len().next_multiple_of(SAFETENSORS_LEN_BYTES), b' ');
    out.write_all(&(header.len() as u64).to_le_bytes()).map_err(OutputErrorKind::write)?;
    out.write_all(&header).map_err(OutputErrorKind::write)?;
    for_each_chunk(data, |chunk| out.write_all(bytemuck::cast_slice(chunk)), phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_npy_header_reads_back_and_aligns_the_data_to_64_bytes() {
        for shape in [vec![], vec![5], vec![4096, 4096, 3], vec![u64::from(u32::MAX); 20]] {
            let header = npy_header("<f4", &shape);
            assert_eq!(header.len() % 64, 0, "{shape:?}");
            assert_eq!(header.last(), Some(&b'\n'));
            let (read, data_start) = crate::containers::npy_header::read(&header).expect("our own header parses");
            assert_eq!((read.shape, read.fortran_order, data_start), (shape.clone(), false, header.len()));
            // And as NumPy's other readers see it.
            if shape.len() < 3 {
                let values = shape.iter().product::<u64>() as usize;
                let mut file = header.clone();
                file.extend((0..values).flat_map(|i| (i as f32).to_le_bytes()));
                let npy = npyz::NpyFile::new(&file[..]).expect("npyz reads it");
                assert_eq!(npy.shape(), &shape[..]);
                assert_eq!(npy.into_vec::<f32>().expect("values").len(), values);
            }
        }
        assert!(
            npy_header("<f2", &[3])
                .starts_with(b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }")
        );
    }
}
