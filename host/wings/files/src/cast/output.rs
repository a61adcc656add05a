//! The files `cast` writes: each safetensors output (header first, then every tensor
//! streamed a chunk at a time from its input), the rewritten indexes and the
//! `config.json`, all in a temporary folder beside the output ([`write_all`]), renamed
//! into place only when all are whole and synced (`Staged::commit`). The folder is
//! listed for the signal handler ([`crate::output::temporaries`]), so that an
//! interrupted run leaves nothing.

use crate::cast::chunks::{amax_block_with, convert_block_with, widened};
use crate::cast::convert::{CastTarget, ElementCast, Outcome, SourceDtype, Target};
use crate::cast::select::Decision;
use crate::cast::{
    CastError, CastOptions, CastRecipe, ConfigWritten, NonFiniteValues, Plan, PlannedFile, Refusal, RefusalKind,
    ScaleLayout, ScaleMode, added_names, data_name, global_scale_name, matrix_shape, scale_name, scale_shape,
};
use crate::containers::Container;
use crate::containers::TensorEntry;
use crate::containers::index::{Index, MAX_INDEX_BYTES};
use crate::containers::npz::InflateError;
use crate::containers::safetensors::SAFETENSORS_LEN_BYTES;
use crate::message::io_message;
use crate::output::temporaries::PendingTemporary;
use crate::output::writeback::Writeback;
use crate::output::{Output, OutputErrorKind, directory_of, put_in_place, temporary_builder};
use crate::read::TensorReader;
use crate::source::{Source, SourceReadError};
use bitexact_support::progress::Progress;
use rayon::prelude::*;
use serde_json::{Map, Value, json};
use shared::fp8::e4m3;
use shared::fp8_block::{self, Blocks, quantize_blocks_with};
use shared::fp8_scale::{Fp8Format, dequant_scale, scale_for, scale_for_f64};
use shared::mx::{self, ElementFormat};
use shared::narrow::Overflow;
use shared::nvfp4::{self, Nvfp4Recipe, WeightDtype};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Elements read, converted and written at a time: a few MiB per chunk, whatever the
/// tensor's size.
pub(crate) const CHUNK_ELEMENTS: usize = 1 << 20;
/// Elements per parallel block of a chunk: one task of the rayon pool.
pub const BLOCK_ELEMENTS: usize = 1 << 14;
/// The `__metadata__` key under which each output file records how it was cast.
pub(crate) const METADATA_CAST_KEY: &str = "bitexact.cast";

/// What is wrong with an output: see [`CastError::Output`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CastOutputErrorKind {
    /// A `.npy` or `.npz` output name: `cast` writes safetensors.
    #[error("names a NumPy file; cast writes safetensors: name a .safetensors file (one input file) or a folder")]
    NumpyName,
    /// A `.safetensors` output file for more than one input file or a sharded checkpoint.
    #[error(
        "an output .safetensors file takes one input file; give a folder name for a sharded checkpoint or several files"
    )]
    FileNeedsOneInput,
    /// The output path failed: its name, its temporary folder, a write, the rename
    /// ([`crate::output`]'s one kind, as [`Output::New`] says it).
    #[error(transparent)]
    #[doc(hidden)]
    Output(OutputErrorKind),
}

#[doc(hidden)] // the output path's kinds are the wing's own
impl From<OutputErrorKind> for CastOutputErrorKind {
    fn from(kind: OutputErrorKind) -> CastOutputErrorKind {
        CastOutputErrorKind::Output(kind)
    }
}

/// `CastError::Output` for `path`.
fn output_error(path: &Path, kind: impl Into<CastOutputErrorKind>) -> CastError {
    CastError::Output { path: path.to_path_buf(), kind: kind.into() }
}

/// `output` without the `/`s it ends in, and whether it had any: `out/` names the folder
/// `out` (a folder whatever its name's extension). `/`, `.` and `..`-ending paths are
/// left as they are, for [`check_output`] to refuse.
pub(crate) fn folder_named(output: &Path) -> (PathBuf, bool) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = output.as_os_str().as_bytes();
    let without = &bytes[..bytes.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1)];
    let stripped = Path::new(std::ffi::OsStr::from_bytes(without)).to_path_buf();
    let names_something = stripped.file_name().is_some_and(|name| without.ends_with(name.as_bytes()));
    if without.len() < bytes.len() && names_something { (stripped, true) } else { (output.to_path_buf(), false) }
}

/// Whether `output` names a single `.safetensors` file (for a plan of one file and no
/// index; refused otherwise) rather than a folder; a `.npy` or `.npz` name is refused.
pub(crate) fn single_file_output(output: &Path, plan: &Plan) -> Result<bool, CastError> {
    match Container::from_extension(output) {
        Some(Container::Safetensors) => {}
        Some(Container::Npy | Container::Npz) => return Err(output_error(output, CastOutputErrorKind::NumpyName)),
        _ => return Ok(false),
    }
    if plan.files.len() != 1 || !plan.indexes.is_empty() {
        return Err(output_error(output, CastOutputErrorKind::FileNeedsOneInput));
    }
    Ok(true)
}

/// Checks, before any work, that `output` names something new
/// ([`crate::output::check_new`]).
pub(crate) fn check_output(output: &Path) -> Result<(), CastError> {
    crate::output::check_new(output).map_err(|kind| output_error(output, kind))
}

/// Every output file written in a temporary folder beside the output, not yet in place.
/// Dropped, the folder is removed.
pub struct Staged {
    folder: tempfile::TempDir,
    output: PathBuf,
    /// For a single-file output, the file's name in the folder.
    single: Option<String>,
    /// `(file, tensor) →` the scales of every scaled tensor.
    pub scales: BTreeMap<(String, String), TensorScales>,
    /// What became of `config.json`.
    pub config: Option<ConfigWritten>,
    /// Listed until renamed into place or removed; declared after `folder`, so dropped
    /// after it.
    _pending: PendingTemporary,
}

impl Staged {
    /// Puts the output in place: the folder renamed onto the output path, or for a
    /// single file, that file linked there (which never replaces a file that appeared
    /// meanwhile); an output that appeared since `check_output` is not replaced.
    pub fn commit(self) -> Result<(), CastError> {
        let output = self.output.clone();
        let fail = |kind| output_error(&output, kind);
        let placed = put_in_place(|| match &self.single {
            Some(name) => std::fs::hard_link(self.folder.path().join(name), &output).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    fail(OutputErrorKind::Exists(Output::New))
                } else {
                    fail(OutputErrorKind::Rename(Output::New, e))
                }
            }),
            None if output.symlink_metadata().is_ok() => Err(fail(OutputErrorKind::Exists(Output::New))),
            None => {
                std::fs::rename(self.folder.path(), &output).map_err(|e| fail(OutputErrorKind::Rename(Output::New, e)))
            }
        });
        if placed.is_ok() && self.single.is_none() {
            // Renamed: there is nothing left to remove.
            let _ = self.folder.keep();
        }
        placed
    }
}

/// The scales of one scaled tensor.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TensorScales {
    /// The dequantisation scales: `[fl32(1 / s)]` per tensor, each block's `d` per
    /// channel, per block or MX (row-major); NVFP4's E4M3 block scales `s`.
    pub blocks: Vec<f32>,
    /// NVFP4's tensor scale, as stored (ModelOpt's `g`, compressed-tensors' `gs`).
    pub global: Option<f32>,
}

/// Writes every output file of `plan` into a new temporary folder beside `output`.
/// `progress` advances by every byte of tensor data read (a scaled tensor's twice).
pub fn write_all(
    output: &Path,
    plan: &Plan,
    options: &CastOptions,
    single_file: bool,
    progress: &Progress,
) -> Result<Staged, CastError> {
    let directory = directory_of(output);
    let (pending, folder) = PendingTemporary::create(|| temporary_builder().tempdir_in(directory), |t| t.path())
        .map_err(|error| {
            output_error(
                output,
                OutputErrorKind::CreateTemporary { output: Output::New, directory: directory.to_path_buf(), error },
            )
        })?;
    let mut scales = BTreeMap::new();
    let mut written: BTreeMap<String, WrittenFile> = BTreeMap::new();
    let tensor_scales =
        if options.nvfp4() { nvfp4_tensor_scales(plan, options, output, progress)? } else { HashMap::new() };
    for planned in &plan.files {
        let path = folder.path().join(&planned.name);
        let done = write_file(&path, output, planned, options, &tensor_scales, progress)?;
        for (tensor, scale) in &done.scales {
            scales.insert((planned.name.clone(), tensor.clone()), scale.clone());
        }
        written.insert(planned.name.clone(), done);
    }
    let mut config = None;
    if !single_file {
        for index in &plan.indexes {
            write_index(folder.path(), output, index, &written, options)?;
        }
        if let Some(path) = &plan.config {
            config = Some(write_config(folder.path(), output, path, plan, options)?);
        }
    }
    let single = single_file.then(|| plan.files[0].name.clone());
    Ok(Staged { folder, output: output.to_path_buf(), single, scales, config, _pending: pending })
}

/// `(file, tensor) →` each NVFP4 tensor's amax and the tensor scale its recipe gives it
/// ([`nvfp4::tensor_scale`], in the tensor's dtype). In a fused layer's group
/// ([`fused_group`]) every part gets the group's largest amax and one tensor scale: the
/// largest `g` of the exact and ModelOpt's recipes (that of the largest amax), the least
/// `gs` of compressed-tensors' (as llm-compressor's `update_fused_layer_weight_global_scales`
/// takes it): so q/k/v and gate/up share one, as the producers give them and as vLLM
/// assumes (it loads a fused layer with one of its parts' scales). One pass over every cast
/// tensor, before any is written; a non-finite value is refused here.
fn nvfp4_tensor_scales(
    plan: &Plan,
    options: &CastOptions,
    output: &Path,
    progress: &Progress,
) -> Result<TensorScaleMap, CastError> {
    let recipe = options.recipe.nvfp4().unwrap_or_default();
    let mut scales = HashMap::new();
    for planned in &plan.files {
        let reader = planned.file.reader()?;
        for ((tensor, decision), &big_endian) in
            planned.file.tensors.iter().zip(&planned.decisions).zip(&planned.big_endian)
        {
            let Decision::Cast(source) = *decision else { continue };
            let amax = amax_tensor(&reader, tensor, source, big_endian, options, progress)
                .map_err(|e| piece_error(e, planned, &Piece::Cast(tensor, source, big_endian), output))?;
            // Exact: the amax of an f32, bf16 or f16 tensor is an f32 (the plan refuses f64).
            let amax = f64::from_bits(amax) as f32;
            let global = nvfp4::tensor_scale(recipe, amax, weight_dtype(source));
            scales.insert((planned.name.clone(), tensor.name.clone()), (amax, global));
        }
    }
    let mut groups: HashMap<(String, &str), (f32, f32)> = HashMap::new();
    for ((_, name), &(amax, global)) in &scales {
        let Some(group) = fused_group(name) else { continue };
        let shared = groups.entry(group).or_insert((amax, global));
        let global = match recipe {
            Nvfp4Recipe::CompressedTensors => shared.1.min(global),
            Nvfp4Recipe::Exact | Nvfp4Recipe::ModelOpt => shared.1.max(global),
        };
        *shared = (shared.0.max(amax), global);
    }
    for ((_, name), scale) in &mut scales {
        if let Some(shared) = fused_group(name).and_then(|group| groups.get(&group)) {
            *scale = *shared;
        }
    }
    Ok(scales)
}

/// `(file, tensor) → (amax, tensor scale)` of NVFP4's tensors ([`nvfp4_tensor_scales`]).
type TensorScaleMap = HashMap<(String, String), (f32, f32)>;

/// The dtype compressed-tensors computes a tensor of `source` in: bfloat16 for a bf16
/// weight, f32 otherwise (the plan refuses f16 for its recipe; the others compute in f32).
fn weight_dtype(source: SourceDtype) -> WeightDtype {
    if source == SourceDtype::Bf16 { WeightDtype::Bf16 } else { WeightDtype::F32 }
}

/// The fused layer that the tensor `name` is a part of, as vLLM fuses them and the NVFP4
/// producers give them one tensor scale (llm-compressor's `FUSED_LAYER_NAMES`, ModelOpt's
/// layers that share an input): `(<prefix>, "qkv")` for `<prefix>.q_proj.weight`,
/// `k_proj` and `v_proj`; `(<prefix>, "gate_up")` for `gate_proj` and `up_proj` (a dense
/// MLP's, a shared expert's, each MoE expert's); `(<prefix>, "qkv_a")` for DeepSeek's
/// multi-latent attention's `q_a_proj` and `kv_a_proj_with_mqa` (vLLM's
/// `fused_qkv_a_proj`); `(<prefix>, "w13")` for an expert's `w1` and `w3` (Mixtral's
/// names for gate and up: vLLM's MoE layers load `w13` with one scale, w1's).
fn fused_group(name: &str) -> Option<(String, &'static str)> {
    const PARTS: [(&str, &str); 9] = [
        (".q_proj.weight", "qkv"),
        (".k_proj.weight", "qkv"),
        (".v_proj.weight", "qkv"),
        (".gate_proj.weight", "gate_up"),
        (".up_proj.weight", "gate_up"),
        (".q_a_proj.weight", "qkv_a"),
        (".kv_a_proj_with_mqa.weight", "qkv_a"),
        (".w1.weight", "w13"),
        (".w3.weight", "w13"),
    ];
    PARTS.iter().find_map(|(suffix, group)| name.strip_suffix(suffix).map(|prefix| (prefix.to_string(), *group)))
}

/// What one output file holds beyond its input's tensors.
struct WrittenFile {
    /// Its scaled tensors and their scales, in file order.
    scales: Vec<(String, TensorScales)>,
    /// Each tensor's name and bytes of data, the scales' too.
    tensor_bytes: HashMap<String, u64>,
}

/// One tensor of an output file: where its bytes come from. The `bool`: its elements
/// are stored big-endian, and are swapped as they are read.
enum Piece<'a> {
    /// The input tensor's bytes, as they are (but for their byte order).
    Copy(&'a TensorEntry, bool),
    /// The input tensor converted from `SourceDtype`.
    Cast(&'a TensorEntry, SourceDtype, bool),
    /// The dequantisation scale of the tensor before it.
    Scale(&'a TensorEntry),
    /// NVFP4: the tensor scale of the tensor before its block scales.
    GlobalScale(&'a TensorEntry),
}

impl Piece<'_> {
    /// The output tensor's name, dtype, shape and byte length.
    fn layout(&self, options: &CastOptions) -> (String, String, Vec<u64>, u64) {
        match *self {
            Piece::Copy(t, _) => (t.name.clone(), t.dtype.clone(), t.shape.clone(), t.data.len() as u64),
            Piece::Cast(t, _, _) => {
                // NVFP4's codes are packed two per byte, along the rows.
                let mut shape = t.shape.clone();
                if options.nvfp4()
                    && let Some(cols) = shape.last_mut()
                {
                    *cols = cols.div_ceil(2);
                }
                (
                    data_name(&t.name, options),
                    options.to.safetensors_name().to_string(),
                    shape,
                    options.to.data_bytes(t.elements),
                )
            }
            Piece::GlobalScale(t) => {
                // compressed-tensors' weight_global_scale has shape [1], ModelOpt's
                // weight_scale_2 none (a scalar).
                let shape = if options.layout == ScaleLayout::ModelOpt { vec![] } else { vec![1] };
                let name = global_scale_name(&t.name, options).unwrap_or_default();
                (name, crate::dtype::ElementType::F32.safetensors_name().to_string(), shape, 4)
            }
            Piece::Scale(t) => {
                // MX scales are E8M0 codes, one byte each; NVFP4's E4M3 codes;
                // compressed-tensors' FP8 scales the weights' dtype; the others f32.
                let scale = if options.nvfp4() {
                    crate::dtype::ElementType::E4m3
                } else if options.scale == ScaleMode::Mx {
                    crate::dtype::ElementType::U8
                } else if SourceDtype::of_safetensors(&t.dtype).is_some_and(|source| options.bf16_scales(source)) {
                    crate::dtype::ElementType::Bf16
                } else {
                    crate::dtype::ElementType::F32
                };
                // The plan casts only tensors whose scales' shape exists and whose bytes fit.
                let shape = scale_shape(&t.shape, options).unwrap_or(vec![0]);
                let bytes = shape.iter().product::<u64>() * scale.bytes() as u64;
                (scale_name(&t.name, options), scale.safetensors_name().to_string(), shape, bytes)
            }
        }
    }
}

/// The pieces of an output file, in the input's order, each scaled tensor followed by
/// its scale.
fn pieces<'a>(planned: &'a PlannedFile, options: &CastOptions) -> Vec<Piece<'a>> {
    let mut pieces = Vec::new();
    for ((tensor, decision), &big_endian) in
        planned.file.tensors.iter().zip(&planned.decisions).zip(&planned.big_endian)
    {
        match *decision {
            Decision::Cast(source) => {
                pieces.push(Piece::Cast(tensor, source, big_endian));
                if options.scaled() {
                    pieces.push(Piece::Scale(tensor));
                }
                if options.nvfp4() {
                    pieces.push(Piece::GlobalScale(tensor));
                }
            }
            _ => pieces.push(Piece::Copy(tensor, big_endian)),
        }
    }
    pieces
}

/// The `__metadata__` of the input file at `path` (empty when it has none, and for a
/// `.npy` or `.npz` file).
fn read_metadata(path: &Path, container: Container) -> Result<Map<String, Value>, CastError> {
    if container != Container::Safetensors {
        return Ok(Map::new());
    }
    let fail = |error: String| CastError::InputJson { path: path.to_path_buf(), error };
    let file = std::fs::File::open(path).map_err(|e| fail(io_message(&e)))?;
    let mut length = [0; SAFETENSORS_LEN_BYTES];
    file.read_exact_at(&mut length, 0).map_err(|e| fail(io_message(&e)))?;
    // The header was checked against the limit when the file was opened.
    let mut header = vec![0; u64::from_le_bytes(length) as usize];
    file.read_exact_at(&mut header, SAFETENSORS_LEN_BYTES as u64).map_err(|e| fail(io_message(&e)))?;
    let parsed: Map<String, Value> = serde_json::from_slice(&header).map_err(|e| fail(e.to_string()))?;
    Ok(match parsed.get("__metadata__") {
        Some(Value::Object(metadata)) => metadata.clone(),
        _ => Map::new(),
    })
}

/// What `options` does, as recorded in each output's `__metadata__` (a JSON string, as
/// safetensors metadata values are strings).
fn cast_record(planned: &PlannedFile, options: &CastOptions) -> String {
    let cast: Map<String, Value> = planned
        .file
        .tensors
        .iter()
        .zip(&planned.decisions)
        .filter(|(_, d)| matches!(d, Decision::Cast(_)))
        .map(|(t, _)| (t.name.clone(), Value::String(t.dtype.clone())))
        .collect();
    let mut record = json!({
        "tool": format!("bitexact {}", env!("CARGO_PKG_VERSION")),
        "to": match options.to {
            CastTarget::Element(target) => target.safetensors_name(),
            CastTarget::Nvfp4 => options.to.name(),
        },
        "rounding": match (options.nvfp4(), options.recipe) {
            (_, CastRecipe::DeepGemm) | (true, CastRecipe::ModelOpt | CastRecipe::CompressedTensors) => {
                "as the recipe computes it (scale.q)"
            }
            (false, CastRecipe::CompressedTensors) if options.scale != ScaleMode::Mx => {
                "as the recipe computes it (scale.q)"
            }
            _ => "nearest-even, once from the source value",
        },
        "nonfinite": options.nonfinite,
        "tensors": cast,
    });
    if let Some(format) = options.to.fp8() {
        let scale = if let Some(blocks) = options.blocks() {
            let stored = scale_name("<name>", options);
            json!({
                "kind": options.scale,
                "blocks": match blocks {
                    Blocks::PerRow => json!("row"),
                    Blocks::Tiles { rows, cols } => json!([rows, cols]),
                },
                "recipe": crate::cast::recipe_name(options.recipe),
                "d": match (options.scale, options.recipe) {
                    (ScaleMode::Mx, CastRecipe::CompressedTensors) => "2^k per 32 values of a row, k = log2(amax rounded to a power of two, up from a significand of 1.75) - 8 (compressed-tensors' round_to_power_2), clamped to -127..127".to_string(),
                    (ScaleMode::Mx, CastRecipe::Rceil) => "2^k per 32 values of a row, the least at or above fl32(amax * fl32(1/448)) (torchao's RCEIL), clamped to -127..127".to_string(),
                    (ScaleMode::Mx, CastRecipe::Ocp) => "2^k per 32 values of a row, k = floor(log2 amax) - 8 (OCP MX v1.0, torchao's FLOOR), clamped to -127..127: values past 448 * 2^k saturate".to_string(),
                    (ScaleMode::Mx, _) => format!("2^k per 32 values of a row, k the least with amax <= {} * 2^k, clamped to -127..127", format.max_finite()),
                    (_, CastRecipe::DeepGemm) if options.scale_format == crate::cast::ScaleFormat::Ue8m0 => format!("2^k per block, the least at or above fl32(max(amax, fl32(1e-4)) * fl32(1 / {})) (DeepGEMM's sf rounded up on its bits to UE8M0, its ceil_to_ue8m0)", format.max_finite()),
                    (_, _) if options.scale_format == crate::cast::ScaleFormat::Ue8m0 => format!("2^k per block, k the least with amax <= {} * 2^k, clamped to -127..127 (UE8M0), 1 for an all-zero block", format.max_finite()),
                    (_, _) if options.scale_format == crate::cast::ScaleFormat::Bf16 => format!("the least bfloat16 d with amax <= {} * d per block, at least 2^-133, 1 for an all-zero block", format.max_finite()),
                    (_, CastRecipe::DeepGemm) => format!("fl32(max(amax, fl32(1e-4)) * fl32(1 / {})) per block (DeepGEMM's sf)", format.max_finite()),
                    (_, CastRecipe::CompressedTensors) => format!("W(fl32(amax / {})) per block, W the weights' dtype, its eps where that is 0 (compressed-tensors')", format.max_finite()),
                    _ => format!("fl32(amax / {}) per block, 1 for an all-zero block, at least 2^-149", format.max_finite()),
                },
                "q": match options.recipe {
                    CastRecipe::DeepGemm => "fl32(x * fl32(1 / d)), then rounded to nearest even (DeepGEMM's)",
                    CastRecipe::CompressedTensors if options.scale != ScaleMode::Mx => "clamp(W(fl32(x / d)), -max, max), then rounded to nearest even (compressed-tensors')",
                    _ => "x/d exact, rounded once to nearest even, saturated",
                },
                "stored": if options.scale == ScaleMode::Mx {
                    format!("{stored} = k + 127 (U8, E8M0)")
                } else if options.scale_format == crate::cast::ScaleFormat::Bf16 {
                    format!("{stored} = d (BF16)")
                } else if options.recipe == CastRecipe::CompressedTensors {
                    format!("{stored} = d (the weights' dtype: F32, or BF16 for bf16 weights)")
                } else {
                    format!("{stored} = d (F32)")
                },
            })
        } else if options.scaled() {
            json!({
                "kind": "per-tensor",
                "s": format!("fl32({} / amax)", format.max_finite()),
                "product": match options.rounding {
                    shared::fp8_scale::Rounding::Once => "x*s exact, rounded once",
                    shared::fp8_scale::Rounding::TwoStep => "fl32(x*s), then rounded",
                },
                "stored": "<name>_scale = fl32(1 / s)",
            })
        } else {
            json!({ "kind": "none", "saturate": options.saturate })
        };
        record["scale"] = scale;
    }
    if options.nvfp4() {
        record["scale"] = nvfp4_record(options);
    }
    record.to_string()
}

/// NVFP4's part of [`cast_record`]: the tensor scale, the block scales and the codes, as
/// the recipe computes them, and where each is stored.
fn nvfp4_record(options: &CastOptions) -> Value {
    let (g, s, q) = match options.recipe {
        CastRecipe::ModelOpt => (
            "g = fl32(amax * fl32(1/2688)) (ModelOpt's weight_scale_2)",
            "e4m3(clamp(fl32(b / fl32(6 g)), 2^-9, 448)), 1 where that quotient is 0 (ModelOpt's)",
            "e2m1(fl32(x / fl32(s g))), to nearest even, saturated (ModelOpt's)",
        ),
        CastRecipe::CompressedTensors => (
            "gs = W(fl32(W(fl32(1 / max(amax, 2^-126))) * 2688)), W the weight's dtype, 1 where not finite (compressed-tensors' weight_global_scale)",
            "e4m3(min(fl32(gs * W(fl32(b / 6))), 448)), 0.125 where that is 0 (compressed-tensors')",
            "e2m1(fl32(x / fl32(s / gs))), to nearest even, saturated (compressed-tensors')",
        ),
        _ => (
            "g = fl32(amax / 2688), 1 for an all-zero tensor, at least 2^-149",
            "sat_rne_e4m3(b / (6 g)) from the exact quotient, 2^-9 where that rounds to 0, 1 for an all-zero block",
            "x/(s g) exact, rounded once to nearest even E2M1, saturated",
        ),
    };
    let global = global_scale_name("<name>", options).unwrap_or_default();
    json!({
        "kind": "nvfp4",
        "blocks": [1, nvfp4::BLOCK_SIZE],
        "recipe": crate::cast::recipe_name(options.recipe),
        "tensor_scale": g,
        "s": s,
        "q": q,
        "stored": format!(
            "{} = q (U8, two E2M1 codes a byte, the even index in the low nibble), {} = s (F8_E4M3), {global} (F32)",
            data_name("<name>", options),
            scale_name("<name>", options)
        ),
    })
}

/// Writes one output file at `path`: its header, then every piece's data; synced where
/// `options` say so, its writeback started as it is written ([`Writeback`]).
/// `tensor_scales`: NVFP4's ([`nvfp4_tensor_scales`]).
fn write_file(
    path: &Path,
    output: &Path,
    planned: &PlannedFile,
    options: &CastOptions,
    tensor_scales: &TensorScaleMap,
    progress: &Progress,
) -> Result<WrittenFile, CastError> {
    let write_failed = |error| output_error(output, OutputErrorKind::Write { file: Some(planned.name.clone()), error });
    let pieces = pieces(planned, options);
    let mut metadata = read_metadata(&planned.file.path, planned.file.container)?;
    metadata.insert(METADATA_CAST_KEY.to_string(), Value::String(cast_record(planned, options)));
    let mut header = Map::new();
    header.insert("__metadata__".to_string(), Value::Object(metadata));
    let (mut offset, mut tensor_bytes) = (0u64, HashMap::new());
    for piece in &pieces {
        let (name, dtype, shape, len) = piece.layout(options);
        header.insert(name.clone(), json!({ "dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len] }));
        tensor_bytes.insert(name, len);
        offset += len;
    }
    let mut text = Value::Object(header).to_string();
    // Padded with spaces to a multiple of 8 bytes, as the safetensors crate writes it,
    // so that every tensor's data is 8-byte aligned in the file.
    while !(SAFETENSORS_LEN_BYTES + text.len()).is_multiple_of(8) {
        text.push(' ');
    }
    let file = std::fs::File::create_new(path).map_err(write_failed)?;
    let mut writer = BufWriter::with_capacity(1 << 20, Writeback::new(file, options.sync));
    writer.write_all(&(text.len() as u64).to_le_bytes()).map_err(write_failed)?;
    writer.write_all(text.as_bytes()).map_err(write_failed)?;
    let reader = planned.file.reader()?;
    let mut scales = Vec::new();
    let (mut last_scale, mut last_global) = (None, None);
    for piece in &pieces {
        match *piece {
            Piece::Copy(tensor, big_endian) => copy_tensor(&reader, tensor, big_endian, progress, &mut writer),
            Piece::Cast(tensor, source, big_endian) => {
                let nvfp4 = tensor_scales.get(&(planned.name.clone(), tensor.name.clone())).copied();
                let cast = TensorCast { source, big_endian, nvfp4 };
                cast_tensor(&reader, tensor, cast, options, progress, &mut writer).map(|scale| {
                    last_scale = scale;
                })
            }
            Piece::Scale(tensor) => {
                let scale: TensorScales = last_scale.take().expect("a scale follows its tensor");
                let bytes: Vec<u8> = if options.nvfp4() {
                    // Exact: each s is an E4M3 value (or NaN, E4M3's NaN).
                    scale.blocks.iter().map(|&s| e4m3::from_f32_bits_satfinite(s.to_bits())).collect()
                } else if options.scale == ScaleMode::Mx {
                    scale.blocks.iter().map(|&d| e8m0_code(d)).collect()
                } else if SourceDtype::of_safetensors(&tensor.dtype).is_some_and(|source| options.bf16_scales(source)) {
                    // Exact: compressed-tensors' recipe rounds each s to bfloat16.
                    scale.blocks.iter().flat_map(|d| ((d.to_bits() >> 16) as u16).to_le_bytes()).collect()
                } else {
                    scale.blocks.iter().flat_map(|d| d.to_le_bytes()).collect()
                };
                let global = scale.global;
                scales.push((tensor.name.clone(), scale));
                last_global = global;
                writer.write_all(&bytes).map_err(PieceError::Write)
            }
            Piece::GlobalScale(_) => {
                let global = last_global.take().expect("NVFP4's tensor scale follows its block scales");
                writer.write_all(&global.to_le_bytes()).map_err(PieceError::Write)
            }
        }
        .map_err(|error| piece_error(error, planned, piece, output))?;
    }
    let file = writer.into_inner().map_err(|e| write_failed(e.into_error()))?.into_inner();
    if options.sync {
        file.sync_all().map_err(write_failed)?;
    }
    Ok(WrittenFile { scales, tensor_bytes })
}

/// The E8M0 code of an MX scale `d = 2^k` (exact in f32 for every `k` of E8M0's range,
/// `2^-127` a subnormal), or the NaN code for a NaN `d`.
fn e8m0_code(d: f32) -> u8 {
    shared::e8m0::floor_log2(d.to_bits()).and_then(shared::e8m0::from_exponent).unwrap_or(shared::e8m0::NAN)
}

/// The MX scale `2^k` (an f32) of the E8M0 code `code` (NaN for the NaN code).
fn mx_scale(code: u8) -> f32 {
    f32::from_bits(shared::e8m0::to_f32_bits(code))
}

/// Why a piece could not be written.
enum PieceError {
    /// Reading the input failed.
    Read(SourceReadError),
    /// Writing the output failed.
    Write(std::io::Error),
    /// A value refused, at this index.
    Refused(u64, RefusalKind),
    /// ModelOpt's scales are 0 for this tensor ([`CastError::ModelOptZeroScale`]).
    ModelOptZeroScale {
        /// The amax.
        amax: f32,
        /// ModelOpt's `weight_scale_2`.
        g: f32,
    },
    /// The tensor's amax is past what an f32 scale can take ([`CastError::ScaleOutOfRange`]).
    ScaleOutOfRange {
        /// The amax.
        amax: f64,
        /// The format's largest finite value.
        max: f32,
        /// The scale.
        s: f32,
    },
}

impl From<InflateError> for PieceError {
    fn from(error: InflateError) -> PieceError {
        PieceError::Read(SourceReadError::Failed(std::io::Error::other(error.to_string())))
    }
}

impl From<SourceReadError> for PieceError {
    fn from(error: SourceReadError) -> PieceError {
        PieceError::Read(error)
    }
}

/// The job's error for a piece's.
fn piece_error(error: PieceError, planned: &PlannedFile, piece: &Piece, output: &Path) -> CastError {
    let tensor = match *piece {
        Piece::Copy(t, _) | Piece::Cast(t, _, _) | Piece::Scale(t) | Piece::GlobalScale(t) => t.name.clone(),
    };
    let path = planned.file.path.clone();
    match error {
        PieceError::Read(error) => CastError::Read { path, tensor, error },
        PieceError::Write(error) => {
            output_error(output, OutputErrorKind::Write { file: Some(planned.name.clone()), error })
        }
        PieceError::Refused(index, kind) => CastError::Refused(Refusal { path, tensor, index, kind }),
        PieceError::ScaleOutOfRange { amax, max, s } => CastError::ScaleOutOfRange { path, tensor, amax, max, s },
        PieceError::ModelOptZeroScale { amax, g } => CastError::ModelOptZeroScale { path, tensor, amax, g },
    }
}

/// Copies `tensor`'s bytes as they are, each element's reversed where `big_endian`.
fn copy_tensor(
    reader: &TensorReader,
    tensor: &TensorEntry,
    big_endian: bool,
    progress: &Progress,
    writer: &mut impl Write,
) -> Result<(), PieceError> {
    let element_bytes =
        if big_endian && tensor.elements > 0 { tensor.data.len() / tensor.elements as usize } else { 1 };
    let mut buffers = BlockBuffers::default();
    for_each_chunk_source(reader, tensor, element_bytes, progress, |_, data, chunk| {
        let bytes = read_block(&data, chunk, element_bytes, big_endian, &mut buffers).map_err(PieceError::Read)?;
        writer.write_all(bytes).map_err(PieceError::Write)
    })
}

/// The refusal of the first element of a chunk whose outcome is not finite, where
/// non-finite values are refused.
fn refusal(first: Option<(u64, Outcome)>, target: Target, options: &CastOptions) -> Result<(), PieceError> {
    match first {
        Some((index, outcome)) if options.nonfinite == NonFiniteValues::Refuse => {
            let kind = match outcome {
                Outcome::Overflow => RefusalKind::Overflow(target),
                _ if options.nvfp4() => RefusalKind::Nvfp4NonFinite,
                _ => RefusalKind::NonFiniteValues,
            };
            Err(PieceError::Refused(index, kind))
        }
        _ => Ok(()),
    }
}

/// Calls `use_chunk(first_element, source, bytes)` for each chunk of [`CHUNK_ELEMENTS`]
/// elements of `element_bytes` of `tensor`'s data, in order: `bytes`, the chunk's byte
/// range in `source`. Nothing is read here: `use_chunk` reads it with [`read_block`]
/// (a cast a block per task, in parallel; a copy the whole chunk). `progress` advances by
/// each chunk's bytes.
fn for_each_chunk_source(
    reader: &TensorReader,
    tensor: &TensorEntry,
    element_bytes: usize,
    progress: &Progress,
    use_chunk: impl FnMut(u64, Source<'_>, Range<usize>) -> Result<(), PieceError>,
) -> Result<(), PieceError> {
    for_each_chunk_sized(reader, tensor, element_bytes, CHUNK_ELEMENTS, progress, use_chunk)
}

/// [`for_each_chunk_source`] with chunks of `chunk_elements`.
fn for_each_chunk_sized(
    reader: &TensorReader,
    tensor: &TensorEntry,
    element_bytes: usize,
    chunk_elements: usize,
    progress: &Progress,
    mut use_chunk: impl FnMut(u64, Source<'_>, Range<usize>) -> Result<(), PieceError>,
) -> Result<(), PieceError> {
    let chunk_bytes = chunk_elements * element_bytes;
    reader.for_each_chunk(tensor, chunk_bytes, |first_byte, source: Source<'_>| {
        for start in (0..source.len()).step_by(chunk_bytes) {
            let end = (start + chunk_bytes).min(source.len());
            use_chunk((first_byte + start as u64) / element_bytes as u64, source, start..end)?;
            progress.advance((end - start) as u64);
        }
        Ok(())
    })
}

/// A task's buffers for [`read_block`]: the bytes read, and their swapped copy.
type BlockBuffers = (Vec<u8>, Vec<u8>);

/// The bytes `range` of `source` (whole elements of `element_bytes`), read into the
/// task's `buffers` where they are in a file, each element's bytes reversed where
/// `big_endian`, so that they are little-endian.
fn read_block<'b>(
    source: &Source<'b>,
    range: Range<usize>,
    element_bytes: usize,
    big_endian: bool,
    buffers: &'b mut BlockBuffers,
) -> Result<&'b [u8], SourceReadError> {
    let (buffer, swapped) = buffers;
    let bytes = source.get(range, buffer)?;
    if !big_endian || element_bytes == 1 {
        return Ok(bytes);
    }
    swapped.clear();
    swapped.extend_from_slice(bytes);
    swapped.chunks_exact_mut(element_bytes).for_each(<[u8]>::reverse);
    Ok(swapped)
}

/// The `k`th block (of [`BLOCK_ELEMENTS`] elements of `element_bytes`) of the chunk
/// `chunk`: its byte range.
fn block_range(chunk: &Range<usize>, k: usize, element_bytes: usize) -> Range<usize> {
    let start = chunk.start + k * BLOCK_ELEMENTS * element_bytes;
    start..(start + BLOCK_ELEMENTS * element_bytes).min(chunk.end)
}

/// The amax of `tensor` (of `source`): the largest finite magnitude as f64 bits (exact
/// for every source; [`amax_block_with`]), the chunks' blocks read and reduced in
/// parallel; refused at its first non-finite element where `options` refuse them.
fn amax_tensor(
    reader: &TensorReader,
    tensor: &TensorEntry,
    source: SourceDtype,
    big_endian: bool,
    options: &CastOptions,
    progress: &Progress,
) -> Result<u64, PieceError> {
    let eb = source.bytes();
    let mut max = 0u64;
    for_each_chunk_source(reader, tensor, eb, progress, |first, data, chunk| {
        let (chunk_max, nonfinite) = (0..chunk.len().div_ceil(BLOCK_ELEMENTS * eb))
            .into_par_iter()
            .map_init(
                || (BlockBuffers::default(), Vec::new()),
                |(buffers, scratch), k| {
                    let bytes = read_block(&data, block_range(&chunk, k, eb), eb, big_endian, buffers)?;
                    let (m, at) = amax_block_with(source, bytes, scratch);
                    Ok((m, at.map(|i| first + (k * BLOCK_ELEMENTS + i) as u64)))
                },
            )
            .try_reduce(|| (0, None), |a, b| Ok((a.0.max(b.0), first_of(a.1, b.1))))
            .map_err(PieceError::Read)?;
        max = max.max(chunk_max);
        refusal(nonfinite.map(|i| (i, Outcome::NonFiniteValues)), options.to.element().unwrap_or(Target::E4m3), options)
    })?;
    Ok(max)
}

/// Converts `tensor` (of `source`) and writes it; for FP8 scaled per tensor, first
/// finds its amax (a pass over the data), and returns the dequantisation scale
/// `[fl32(1 / s)]`; per channel or per block, returns every block's scale
/// ([`BlockCast`]); NVFP4, its block scales and tensor scale ([`cast_nvfp4`]).
///
/// Each chunk's blocks are read and converted in parallel, into one of two buffers; the
/// chunk before is written meanwhile, so that the write overlaps the next conversion.
fn cast_tensor(
    reader: &TensorReader,
    tensor: &TensorEntry,
    cast: TensorCast,
    options: &CastOptions,
    progress: &Progress,
    writer: &mut (impl Write + Send),
) -> Result<Option<TensorScales>, PieceError> {
    let TensorCast { source, big_endian, nvfp4 } = cast;
    let only_blocks = |blocks| Some(TensorScales { blocks, global: None });
    if let Some(scales) = nvfp4.filter(|_| options.nvfp4()) {
        return cast_nvfp4(reader, tensor, cast, scales, options, progress, writer).map(Some);
    }
    if let (Some(blocks), Some(format)) = (options.blocks(), options.to.fp8()) {
        let cast = BlockCast { source, big_endian, blocks, format, nvfp4: None, options };
        // The plan makes sure of the shapes, the recipe and the target these take.
        return cast.run(reader, tensor, progress, writer).map(only_blocks);
    }
    let target = options.to.element().unwrap_or(Target::Bf16);
    let (conversion, scale) = match options.to.fp8() {
        Some(format) if options.scaled() => {
            let amax = f64::from_bits(amax_tensor(reader, tensor, source, big_endian, options, progress)?);
            let s = match source {
                SourceDtype::F64 => scale_for_f64(amax, format),
                // Exact: the amax of an f32, bf16 or f16 tensor is an f32.
                _ => scale_for(amax as f32, format),
            };
            let dequant = dequant_scale(s);
            if !dequant.is_finite() {
                return Err(PieceError::ScaleOutOfRange { amax, max: format.max_finite(), s });
            }
            (ElementCast::Scaled { source, format, s, rounding: options.rounding }, Some(vec![dequant]))
        }
        fp8 => {
            let overflow = if fp8.is_some() && options.saturate { Overflow::SatFinite } else { Overflow::Standard };
            (ElementCast::Plain { source, target, overflow }, None)
        }
    };
    let check = options.nonfinite == NonFiniteValues::Refuse;
    let (eb, ob) = (source.bytes(), conversion.output_bytes());
    let (mut converted, mut written) = (Vec::new(), Vec::new());
    let convert = |first: u64, data: Source<'_>, chunk: Range<usize>, out: &mut Vec<u8>| {
        out.resize(chunk.len() / eb * ob, 0);
        let bad = out
            .par_chunks_mut(BLOCK_ELEMENTS * ob)
            .enumerate()
            .map_init(
                || (BlockBuffers::default(), Vec::new()),
                |(buffers, scratch), (k, o)| {
                    let bytes = read_block(&data, block_range(&chunk, k, eb), eb, big_endian, buffers)?;
                    Ok(convert_block_with(&conversion, bytes, o, check, scratch)
                        .map(|(j, outcome)| (first + (k * BLOCK_ELEMENTS + j) as u64, outcome)))
                },
            )
            .try_reduce(|| None, |a, b| Ok(a.into_iter().chain(b).min_by_key(|&(index, _)| index)))
            .map_err(PieceError::Read)?;
        refusal(bad, target, options)
    };
    for_each_chunk_source(reader, tensor, eb, progress, |first, data, chunk| {
        std::mem::swap(&mut converted, &mut written);
        let (wrote, done) = rayon::join(|| writer.write_all(&written), || convert(first, data, chunk, &mut converted));
        wrote.map_err(PieceError::Write)?;
        done
    })?;
    writer.write_all(&converted).map_err(PieceError::Write)?;
    Ok(scale.and_then(only_blocks))
}

/// How one tensor is read: its source dtype, whether it is stored big-endian, and for
/// NVFP4 its amax and tensor scale ([`nvfp4_tensor_scales`]).
#[derive(Clone, Copy)]
struct TensorCast {
    source: SourceDtype,
    big_endian: bool,
    nvfp4: Option<(f32, f32)>,
}

/// `2^-9`, E4M3's least value and ModelOpt's least block scale.
const E4M3_MIN: f32 = 1.0 / 512.0;

/// Casts `tensor` (2-D, its rows a whole number of blocks: the plan makes sure) to NVFP4
/// by the options' recipe, with `(amax, tensor scale)` (found by [`nvfp4_tensor_scales`]):
/// its blocks ([`BlockCast`]). Returns the E4M3 block scales and the tensor scale as
/// stored.
fn cast_nvfp4(
    reader: &TensorReader,
    tensor: &TensorEntry,
    cast: TensorCast,
    (amax, global): (f32, f32),
    options: &CastOptions,
    progress: &Progress,
    writer: &mut (impl Write + Send),
) -> Result<TensorScales, PieceError> {
    let TensorCast { source, big_endian, .. } = cast;
    let recipe = options.recipe.nvfp4().unwrap_or_default();
    let dtype = weight_dtype(source);
    if recipe == Nvfp4Recipe::ModelOpt && E4M3_MIN * global == 0.0 {
        return Err(PieceError::ModelOptZeroScale { amax, g: global });
    }
    let blocks = Blocks::Tiles { rows: 1, cols: nvfp4::BLOCK_SIZE };
    let cast = BlockCast {
        source,
        big_endian,
        blocks,
        format: Fp8Format::E4M3,
        nvfp4: Some((recipe, global, dtype)),
        options,
    };
    let scales = cast.run(reader, tensor, progress, writer)?;
    Ok(TensorScales { blocks: scales, global: Some(global) })
}

/// A tensor cast to FP8 with a scale per channel or per block
/// ([`shared::fp8_block::quantize_blocks_with`], by the options' recipe, compiled for the
/// CPU level: `bitexact_cpu::fp8_scale::quantize_blocks_at`), or MX
/// ([`shared::mx::quantize_blocks`], by the recipe's rule, compiled for the CPU level:
/// `bitexact_cpu::fp8_scale::quantize_mx_blocks_at`).
struct BlockCast<'o> {
    source: SourceDtype,
    big_endian: bool,
    blocks: Blocks,
    format: Fp8Format,
    /// For NVFP4: the recipe, the tensor scale it found and the dtype it computes in.
    nvfp4: Option<(Nvfp4Recipe, f32, WeightDtype)>,
    options: &'o CastOptions,
}

impl BlockCast<'_> {
    /// Quantises `tensor` (2-D: the plan casts no other with block scales) a chunk of
    /// whole bands of blocks at a time, and writes its codes; returns its scales
    /// (row-major, of [`Blocks::scale_shape`]). One pass over the data: a band's rows are
    /// in memory when its blocks' amax is found. Each chunk's tasks (a band of tiles, or
    /// about [`BLOCK_ELEMENTS`] of rows) are read, widened to f32 and quantised in
    /// parallel, into one of two buffers; the chunk before is written meanwhile.
    fn run(
        &self,
        reader: &TensorReader,
        tensor: &TensorEntry,
        progress: &Progress,
        writer: &mut (impl Write + Send),
    ) -> Result<Vec<f32>, PieceError> {
        let (blocks, format) = (self.blocks, self.format);
        let (rows, cols) = matrix_shape(&tensor.shape).unwrap_or((0, 0));
        // The blocks' height (1 per row); cast's tiles have no empty side.
        let h = blocks.extent(cols).map_or(1, |(h, _)| h.max(1));
        let scale_count = |rows: usize| blocks.scale_shape(rows, cols).map_or(0, |(r, c)| r * c);
        if rows == 0 || cols == 0 {
            // No data: every block (a row of no columns) is empty, its scale 1.
            let mut scales = vec![0f32; scale_count(rows)];
            let recipe = self.options.block_recipe(weight_dtype(self.source)).unwrap_or_default();
            let _ = quantize_blocks_with(recipe, &[], rows, cols, blocks, format, &mut [], &mut scales);
            return Ok(scales);
        }
        // A task: whole bands of `h` rows, about BLOCK_ELEMENTS (at least one band); a
        // chunk: whole tasks, about 4 · CHUNK_ELEMENTS, and one per thread (so that a
        // wide tensor's bands, one task each, still run on every core) up to
        // 64 · CHUNK_ELEMENTS (at least one task).
        let task_rows = h * (BLOCK_ELEMENTS / h.saturating_mul(cols)).max(1);
        let task_elements = task_rows * cols;
        let budget = 64 * CHUNK_ELEMENTS / task_elements;
        let tasks = (4 * CHUNK_ELEMENTS / task_elements).max(rayon::current_num_threads()).min(budget).max(1);
        let chunk_elements = task_elements * tasks;
        let eb = self.source.bytes();
        // The output bytes of `elements` values: NVFP4 packs two to a byte (a task's and a
        // chunk's are whole rows of a multiple of 16).
        let out_bytes = |elements: usize| if self.nvfp4.is_some() { elements / 2 } else { elements };
        let check = self.options.nonfinite == NonFiniteValues::Refuse;
        let mut scales = Vec::with_capacity(scale_count(rows));
        let (mut converted, mut written, mut chunk_scales) = (Vec::new(), Vec::new(), Vec::new());
        let convert = |first: u64, data: Source<'_>, chunk: Range<usize>, out: &mut Vec<u8>, d: &mut Vec<f32>| {
            let elements = chunk.len() / eb;
            out.resize(out_bytes(elements), 0);
            d.clear();
            d.resize(scale_count(elements / cols), 0.0);
            let first_problem = out
                .par_chunks_mut(out_bytes(task_elements))
                .zip(d.par_chunks_mut(scale_count(task_rows)))
                .enumerate()
                .map_init(
                    || (BlockBuffers::default(), Vec::new(), Vec::new()),
                    |(buffers, scratch, codes), (k, (q, d))| {
                        let values = if self.nvfp4.is_some() { 2 * q.len() } else { q.len() };
                        let range =
                            chunk.start + k * task_elements * eb..chunk.start + (k * task_elements + values) * eb;
                        let bytes = read_block(&data, range, eb, self.big_endian, buffers)?;
                        let x = widened(self.source, bytes, scratch);
                        let at = self.quantize(x, cols, q, d, codes);
                        Ok(at.map(|(i, kind)| (first + (k * task_elements + i) as u64, kind)))
                    },
                )
                .try_reduce(|| None, |a, b| Ok(a.into_iter().chain(b).min_by_key(|&(index, _)| index)))
                .map_err(PieceError::Read)?;
            match first_problem {
                // A value past compressed-tensors' recipe is refused whatever --nonfinite says
                // (the recipe takes no --nonfinite keep).
                Some((index, kind)) if check || kind != RefusalKind::NonFiniteValues => {
                    Err(PieceError::Refused(index, kind))
                }
                _ => Ok(()),
            }
        };
        for_each_chunk_sized(reader, tensor, eb, chunk_elements, progress, |first, data, chunk| {
            std::mem::swap(&mut converted, &mut written);
            let (wrote, done) = rayon::join(
                || writer.write_all(&written),
                || convert(first, data, chunk, &mut converted, &mut chunk_scales),
            );
            wrote.map_err(PieceError::Write)?;
            scales.extend_from_slice(&chunk_scales);
            done
        })?;
        writer.write_all(&converted).map_err(PieceError::Write)?;
        Ok(scales)
    }
}

impl BlockCast<'_> {
    /// One task's whole rows `x` (f32 bits, `cols` to a row) quantised into `q`, their
    /// scales into `d` (MX: `2^k`, its E8M0 code first made in `codes`); the index in `x`
    /// of the first value to refuse, if any, and why: a NaN or an infinity, or, by
    /// compressed-tensors' MX recipe, a value whose block's scale that recipe overflows
    /// ([`RefusalKind::PastCompressedTensors`]). NVFP4: `q` the packed codes, `d` the E4M3
    /// block scales' values.
    fn quantize(
        &self,
        x: &[u32],
        cols: usize,
        q: &mut [u8],
        d: &mut [f32],
        codes: &mut Vec<u8>,
    ) -> Option<(usize, RefusalKind)> {
        let recipe = self.options.recipe;
        let block_recipe = self.options.block_recipe(weight_dtype(self.source));
        let at = match (self.options.scale, recipe.scale_rule(), block_recipe, self.nvfp4) {
            (.., Some((nvfp4_recipe, global, dtype))) => {
                codes.resize(d.len(), 0);
                let level = bitexact_cpu::level();
                let at =
                    bitexact_cpu::fp8_scale::quantize_nvfp4_blocks_at(level, x, nvfp4_recipe, global, dtype, q, codes);
                d.iter_mut().zip(codes.iter()).for_each(|(d, &code)| *d = f32::from_bits(e4m3::to_f32_bits(code)));
                at
            }
            (ScaleMode::Mx, Some(rule), ..) => {
                codes.resize(d.len(), 0);
                let element = mx_element(self.format);
                // Compiled for the CPU level: its elements in a vector loop.
                let at =
                    bitexact_cpu::fp8_scale::quantize_mx_blocks_at(bitexact_cpu::level(), x, element, rule, q, codes);
                d.iter_mut().zip(codes.iter()).for_each(|(d, &code)| *d = mx_scale(code));
                at
            }
            (_, _, Some(recipe), None) => {
                let level = bitexact_cpu::level();
                bitexact_cpu::fp8_scale::quantize_blocks_at(
                    level,
                    recipe,
                    x,
                    q.len() / cols,
                    cols,
                    self.blocks,
                    self.format,
                    q,
                    d,
                )
            }
            // The plan refuses a recipe that the scale mode does not take.
            _ => Err(fp8_block::BlockError::EmptyTile),
        };
        let nonfinite = at.expect("a task is whole rows, with its scales' slice; the recipe is the mode's");
        // Only compressed-tensors' MX scale overflows (its per-channel and block scales
        // are fl32(amax / 448), far inside the range).
        // A value at or past the limit puts its block's amax there, and its scale code at
        // or above that amax's (`scale_code` does not decrease with amax; a block's NaN
        // code, for a NaN or an infinity beside such a value, is above every other): only
        // a task holding such a code is searched.
        // (MX only: NVFP4 takes no --scale, and its codes here are E4M3 block scales.)
        let mx_by_compressed_tensors = self.nvfp4.is_none() && self.options.scale == ScaleMode::Mx;
        let past = (recipe == CastRecipe::CompressedTensors && mx_by_compressed_tensors)
            .then(|| {
                let element = mx_element(self.format);
                let past_code = mx::scale_code(COMPRESSED_TENSORS_MX_LIMIT, element, mx::ScaleRule::CompressedTensors);
                codes.iter().any(|&code| code >= past_code).then(|| {
                    x.iter().position(|&v| (COMPRESSED_TENSORS_MX_LIMIT..0x7F80_0000).contains(&(v & 0x7FFF_FFFF)))
                })
            })
            .flatten()
            .flatten();
        let nonfinite = nonfinite.map(|i| (i, RefusalKind::NonFiniteValues));
        nonfinite.into_iter().chain(past.map(|i| (i, RefusalKind::PastCompressedTensors))).min_by_key(|&(i, _)| i)
    }
}

/// `1.75 · 2^127` (f32 bits): from this magnitude on, compressed-tensors'
/// `round_to_power_2` carries its block's amax into the exponent field's top, infinity,
/// and the block's scale overflows (its values become 0), which its recipe here does not
/// model.
const COMPRESSED_TENSORS_MX_LIMIT: u32 = 0x7F60_0000;

/// The MX element format of an FP8 target.
const fn mx_element(format: Fp8Format) -> ElementFormat {
    match format {
        Fp8Format::E4M3 => ElementFormat::E4M3,
        Fp8Format::E5M2 => ElementFormat::E5M2,
    }
}

/// The lower of two indices, where there are any.
fn first_of(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => a.or(b),
    }
}

/// Reads the JSON object at `path` (at most [`MAX_INDEX_BYTES`]); an error names `path`.
pub(crate) fn read_json_object(path: &Path) -> Result<Map<String, Value>, CastError> {
    let fail = |error: String| CastError::InputJson { path: path.to_path_buf(), error };
    let len = std::fs::metadata(path).map_err(|e| fail(io_message(&e)))?.len();
    if len > MAX_INDEX_BYTES {
        return Err(fail(format!("over {MAX_INDEX_BYTES} bytes")));
    }
    let text = std::fs::read(path).map_err(|e| fail(io_message(&e)))?;
    match serde_json::from_slice(&text).map_err(|e| fail(e.to_string()))? {
        Value::Object(object) => Ok(object),
        _ => Err(fail("not a JSON object".into())),
    }
}

/// Writes `value` as pretty JSON to `folder/name`, synced.
fn write_json(folder: &Path, name: &str, value: &Value, output: &Path) -> Result<(), CastError> {
    let write_failed = |error| output_error(output, OutputErrorKind::Write { file: Some(name.to_string()), error });
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serialises");
    text.push('\n');
    let mut file = std::fs::File::create_new(folder.join(name)).map_err(write_failed)?;
    file.write_all(text.as_bytes()).map_err(write_failed)?;
    file.sync_all().map_err(write_failed)
}

/// The index rewritten: its other keys kept, `weight_map` listing every tensor of the
/// output shards (the scales too), `metadata.total_size` the data bytes of the tensors
/// it lists, each in the shard it names (a copy of a tensor in another shard, which the
/// plan warns of, is not counted).
fn write_index(
    folder: &Path,
    output: &Path,
    index: &Index,
    written: &BTreeMap<String, WrittenFile>,
    options: &CastOptions,
) -> Result<(), CastError> {
    let mut object = read_json_object(&index.path)?;
    let shard_name = |shard: &PathBuf| shard.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut weight_map: BTreeMap<String, String> =
        index.weight_map.iter().map(|(tensor, shard)| (tensor.clone(), shard_name(shard))).collect();
    let shards: std::collections::BTreeSet<String> = index.weight_map.values().map(shard_name).collect();
    for shard in &shards {
        if let Some(done) = written.get(shard) {
            // A scale goes where the index places its tensor: a copy of the tensor in
            // another shard (which the plan warns of) does not move it. A tensor stored
            // under another name (NVFP4's `_packed`) is listed under that one.
            for (tensor, _) in &done.scales {
                if index.weight_map.get(tensor).map(shard_name).as_ref() == Some(shard) {
                    let data = data_name(tensor, options);
                    if data != *tensor {
                        weight_map.remove(tensor);
                    }
                    for name in std::iter::once(data).chain(added_names(tensor, options)) {
                        weight_map.insert(name, shard.clone());
                    }
                }
            }
        }
    }
    let total: u64 = weight_map
        .iter()
        .filter_map(|(tensor, shard)| written.get(shard).and_then(|done| done.tensor_bytes.get(tensor)))
        .sum();
    object.insert("weight_map".into(), json!(weight_map));
    match object.get_mut("metadata") {
        Some(Value::Object(metadata)) => {
            metadata.insert("total_size".into(), json!(total));
        }
        _ => {
            object.insert("metadata".into(), json!({ "total_size": total }));
        }
    }
    let name = index.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    write_json(folder, &name, &Value::Object(object), output)
}

/// The `config.json` carried over: with a `quantization_config` for scaled E4M3 and
/// NVFP4 (ModelOpt's beside an `hf_quant_config.json`), with `torch_dtype` set to the
/// target for bf16/f16 (where it had one), else as it was.
fn write_config(
    folder: &Path,
    output: &Path,
    path: &Path,
    plan: &Plan,
    options: &CastOptions,
) -> Result<ConfigWritten, CastError> {
    let mut config = read_json_object(path)?;
    let written = match options.to {
        CastTarget::Nvfp4 if options.layout == ScaleLayout::ModelOpt => {
            let (config_json, hf_quant_config) = modelopt_configs(plan);
            config.insert("quantization_config".into(), config_json);
            write_json(folder, MODELOPT_CONFIG, &hf_quant_config, output)?;
            ConfigWritten::WithQuantizationConfig
        }
        CastTarget::Element(Target::E4m3) | CastTarget::Nvfp4 if options.scaled() => {
            config.insert("quantization_config".into(), quantization_config(plan, options));
            ConfigWritten::WithQuantizationConfig
        }
        CastTarget::Element(target @ (Target::Bf16 | Target::F16)) => {
            if config.contains_key("torch_dtype") {
                config.insert("torch_dtype".into(), json!(target.element().torch_name()));
            }
            ConfigWritten::Copied
        }
        _ => ConfigWritten::Copied,
    };
    write_json(folder, "config.json", &Value::Object(config), output)?;
    Ok(written)
}

/// The modules of the 2-D floating `.weight` tensors that were not cast, sorted: the
/// layers a loader must keep in their dtype.
fn not_cast_modules(plan: &Plan) -> Vec<String> {
    let mut modules = Vec::new();
    for file in &plan.files {
        for (tensor, decision) in file.file.tensors.iter().zip(&file.decisions) {
            let floating = SourceDtype::of_safetensors(&tensor.dtype).is_some();
            if let Some(module) = tensor.name.strip_suffix(".weight")
                && floating
                && tensor.shape.len() >= 2
                && !matches!(decision, Decision::Cast(_))
            {
                modules.push(module.to_string());
            }
        }
    }
    modules.sort();
    modules
}

/// The file beside `config.json` that ModelOpt writes and vLLM reads first.
pub(crate) const MODELOPT_CONFIG: &str = "hf_quant_config.json";

/// ModelOpt's NVFP4 weights-only configuration, as ModelOpt exports it: `config.json`'s
/// `quantization_config` (`quant_method: "modelopt"`, ModelOpt's `convert_hf_config.py`
/// form) and [`MODELOPT_CONFIG`] (`quantization`: `quant_algo: "W4A16_NVFP4"`, group size
/// 16, no KV-cache quantisation, the modules not cast excluded), which vLLM's
/// `ModelOptNvFp4Config` reads (it requires `group_size`, `kv_cache_quant_algo` and
/// `exclude_modules` there; `W4A16_NVFP4` is in its list from 2026 on).
fn modelopt_configs(plan: &Plan) -> (Value, Value) {
    let exclude = not_cast_modules(plan);
    let producer = json!({ "name": "bitexact", "version": env!("CARGO_PKG_VERSION") });
    let config = json!({
        "quant_method": "modelopt",
        "quant_algo": MODELOPT_ALGO,
        "group_size": nvfp4::BLOCK_SIZE,
        "producer": producer,
        "config_groups": {
            "group_0": {
                "weights": { "dynamic": false, "num_bits": 4, "type": "float", "group_size": nvfp4::BLOCK_SIZE },
                "targets": ["Linear"],
            }
        },
        "ignore": exclude,
        "kv_cache_scheme": null,
    });
    let hf_quant_config = json!({
        "producer": producer,
        "quantization": {
            "quant_algo": MODELOPT_ALGO,
            "kv_cache_quant_algo": null,
            "group_size": nvfp4::BLOCK_SIZE,
            "exclude_modules": exclude,
        }
    });
    (config, hf_quant_config)
}

/// ModelOpt's name of NVFP4 weights with activations left as they are.
const MODELOPT_ALGO: &str = "W4A16_NVFP4";

/// The `quantization_config` of FP8 E4M3 weights: compressed-tensors' for per-tensor,
/// per-channel, block and MX scales, static, symmetric, activations left as they are
/// (vLLM's W8A16 FP8 scheme): `Linear` layers targeted, and the modules of the 2-D `.weight`
/// tensors that were not cast ignored. In [`ScaleLayout::DeepSeek`], DeepSeek-V3's
/// (`quant_method: "fp8"`, read by vLLM's `Fp8Config` and transformers'
/// `FineGrainedFP8Config`), the same modules as `modules_to_not_convert` (which both
/// read; a Linear layer not listed there is loaded as FP8).
fn quantization_config(plan: &Plan, options: &CastOptions) -> Value {
    let ignore = not_cast_modules(plan);
    let (strategy, block_structure) = match options.blocks() {
        Some(Blocks::PerRow) => ("channel", Value::Null),
        Some(Blocks::Tiles { rows, cols }) => ("block", json!([rows, cols])),
        None => ("tensor", Value::Null),
    };
    if options.layout == ScaleLayout::DeepSeek {
        let mut config = json!({
            "quant_method": "fp8",
            "fmt": "e4m3",
            "activation_scheme": "dynamic",
            "weight_block_size": block_structure,
            "modules_to_not_convert": ignore,
        });
        // DeepSeek-V3.1's key for power-of-two scales, which vLLM reads.
        if options.scale_format == crate::cast::ScaleFormat::Ue8m0 {
            config["scale_fmt"] = json!("ue8m0");
        }
        return config;
    }
    let mut weights = json!({
        "num_bits": 8,
        "type": "float",
        "strategy": strategy,
        "symmetric": true,
        "dynamic": false,
        "group_size": null,
        "block_structure": block_structure,
        "actorder": null,
        "observer": "minmax",
        "observer_kwargs": {},
    });
    let mut group = json!({
        "targets": ["Linear"],
        "input_activations": null,
        "output_activations": null,
    });
    let mut format = "float-quantized";
    if options.nvfp4() {
        // compressed-tensors' NVFP4 weights only (`format: "nvfp4-pack-quantized"`), as
        // its `NVFP4A16` preset serialises it (`quantization/quant_scheme.py`): E2M1 in
        // groups of 16 along the rows, one tensor scale (`tensor_group`). vLLM picks its
        // `CompressedTensorsW4A16Fp4` scheme from the weights' arguments alone (4-bit
        // `float`, `tensor_group`, group size 16, symmetric) with no input activations.
        // No `scale_dtype`: compressed-tensors before 0.13 refuses the key, and E4M3 is
        // the compressor's default.
        format = "nvfp4-pack-quantized";
        weights["num_bits"] = json!(4);
        weights["strategy"] = json!("tensor_group");
        weights["group_size"] = json!(nvfp4::BLOCK_SIZE);
        weights["block_structure"] = Value::Null;
        group["format"] = json!(format);
    } else if options.scale == ScaleMode::Mx {
        // compressed-tensors' MXFP8 (`format: "mxfp8-quantized"`), as its `MXFP8A16` preset
        // serialises it (`quantization/quant_scheme.py`): E4M3 in groups of 32 along the
        // rows, the scales `torch.uint8` (E8M0 codes), the format named in the group too.
        // vLLM picks its MXFP8 scheme (`CompressedTensorsW8A8Mxfp8`) from the weights'
        // arguments alone (`group`, 8-bit `float`, group size 32, symmetric, `scale_dtype`
        // uint8), and then quantises the activations to MXFP8 as it runs, whatever
        // `input_activations` says.
        format = "mxfp8-quantized";
        weights["strategy"] = json!("group");
        weights["group_size"] = json!(mx::BLOCK_SIZE);
        weights["block_structure"] = Value::Null;
        weights["observer"] = json!("memoryless_minmax");
        weights["scale_dtype"] = json!("torch.uint8");
        weights["zp_dtype"] = Value::Null;
        group["format"] = json!(format);
    }
    group["weights"] = weights;
    json!({
        "quant_method": "compressed-tensors",
        "format": format,
        "quantization_status": "compressed",
        "config_groups": { "group_0": group },
        "ignore": ignore,
        "kv_cache_scheme": null,
    })
}
