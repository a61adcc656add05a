//! The nvptx64 backend of `device_support::block` (`device-support/src/block/nvptx.rs`),
//! checked in what it compiles to: the kernels of `tests/block-kernels/`, which use
//! every item of the block API, are built to PTX for sm_75 (with `ptx-builder`'s nested
//! cargo command, once per test process, in `$CARGO_TARGET_TMPDIR`), and
//!
//! * each kernel's PTX holds the instruction of each item it uses, in the form that is
//!   correct when threads diverge (`barrier.sync`, `barrier.red`, `shfl.sync`, `vote.sync`,
//!   scoped `atom.relaxed`), with the `c` operand CUDA passes to each shuffle;
//! * no kernel holds an aligned barrier (`bar.sync`, `barrier.sync.aligned`, core's
//!   `_syncthreads`), a shuffle or vote without `.sync`, or an atomic without a scope;
//! * `check_ptx` finds nothing wrong with it (shared-memory declarations, non-aligned
//!   barriers, convergent warp operations, atomics in inline asm all pass);
//! * ptxas assembles it for sm_75, sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120, and the
//!   sm_90 SASS has the blocking barrier, its reductions, the shuffles and the fences.
//!
//! The tests that need ptxas or cuobjdump print `skipped: <reason>` and pass when they
//! are missing, or fail when `REQUIRE_CUDA_TOOLS=1`.

use ptx_builder::skip::require_or_skip;
use ptx_builder::{Module, PtxBuilder, PtxProblem, TOOLS_DIR_VAR, Target, check_ptx, find_below_in, is_executable};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The architectures the project supports, which the PTX must assemble for.
const ARCHS: [u32; 7] = [75, 80, 86, 89, 90, 100, 120];

/// The PTX target the kernels are built for (the project's baseline).
const BASELINE: Target = Target::new(75);

/// The PTX file's name, in [`out_dir`].
const PTX_FILE: &str = "block_kernels.ptx";

/// The kernel crate.
fn kernel_crate() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/block-kernels")
}

/// The kernels' PTX, built once per test process; panics with the compiler's messages.
fn ptx() -> &'static str {
    static PTX: OnceLock<String> = OnceLock::new();
    PTX.get_or_init(|| {
        let out_dir = out_dir();
        std::fs::create_dir_all(&out_dir).expect("create the PTX folder");
        let module = Module::new(PTX_FILE, BASELINE);
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
        // The builder's command (not `build`, which would exit the process on a failure):
        // the check below runs `check_ptx` itself.
        let output = PtxBuilder::new(kernel_crate())
            .command(&cargo, &module, &out_dir)
            .output()
            .unwrap_or_else(|e| panic!("running cargo for the nvptx64 kernels: {e}"));
        assert!(output.status.success(), "building the kernels failed:\n{}", String::from_utf8_lossy(&output.stderr));
        std::fs::read_to_string(out_dir.join(module.file())).expect("read the PTX")
    })
}

/// The instructions of kernel `name` (its `.entry` body), each with its whitespace
/// collapsed, its predicate guard (`@%p1`) and trailing `;` removed; labels and
/// declarations left out.
fn instructions(ptx: &str, name: &str) -> Vec<String> {
    let header = format!(".entry {name}(");
    let start = ptx.find(&header).unwrap_or_else(|| panic!("the PTX has no kernel {name}"));
    let body = &ptx[start..];
    let open = body.find('{').expect("a kernel body");
    let close = body.find("\n}").expect("the end of the kernel body");
    body[open + 1..close]
        .lines()
        .map(|line| line.split("//").next().unwrap_or("").trim().trim_end_matches(';'))
        .filter(|line| !line.is_empty() && !line.starts_with('.') && !line.ends_with(':'))
        .map(|line| {
            let line =
                if line.starts_with('@') { line.split_once(char::is_whitespace).map_or("", |(_, i)| i) } else { line };
            line.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// The names of the kernels the PTX defines.
fn kernel_names(ptx: &str) -> Vec<String> {
    ptx.match_indices(".entry ")
        .map(|(at, _)| ptx[at + ".entry ".len()..].split('(').next().unwrap_or("").trim().to_string())
        .collect()
}

/// Fails naming the kernel and the missing instructions unless every one of `wanted` is
/// the start of some instruction of `kernel`.
#[track_caller]
fn assert_has(ptx: &str, kernel: &str, wanted: &[&str]) {
    let instructions = instructions(ptx, kernel);
    let missing: Vec<_> = wanted.iter().filter(|w| !instructions.iter().any(|i| i.starts_with(*w))).collect();
    assert!(missing.is_empty(), "{kernel} lacks {missing:?}; its instructions:\n{}", instructions.join("\n"));
}

#[test]
fn the_kernels_are_the_eight_of_the_kernel_crate() {
    let mut names = kernel_names(ptx());
    names.sort();
    let expected = [
        "block_atomics",
        "block_barriers",
        "block_indices",
        "block_reductions",
        "block_shared",
        "block_warp_ops",
        "global_copy_raw",
        "global_copy_slice",
    ];
    assert_eq!(names, expected);
}

/// A kernel's instructions as a sorted list of opcodes (register numbers, labels and the
/// kernel's own parameter names left out).
fn opcodes(ptx: &str, name: &str) -> Vec<String> {
    let mut ops: Vec<String> =
        instructions(ptx, name).iter().map(|i| i.split_whitespace().next().unwrap_or("").to_string()).collect();
    ops.sort();
    ops
}

/// A kernel through `GlobalSlice` handles compiles to the instructions of its twin through
/// raw pointers: the handle's length (which the emulator checks) is never read on the
/// GPU. The PTX has the same opcodes as many times each (LLVM orders the two parameters'
/// loads differently, so the register numbers differ); the sm_90 SASS is the same
/// instruction for instruction (`sm_90_sass_…`).
#[test]
fn a_global_slice_costs_nothing_in_the_ptx() {
    let (raw, slice) = (opcodes(ptx(), "global_copy_raw"), opcodes(ptx(), "global_copy_slice"));
    assert!(raw.iter().any(|i| i.starts_with("ld.global")) && raw.iter().any(|i| i.starts_with("st.global")));
    assert_eq!(slice, raw, "global_copy_slice's opcodes against global_copy_raw's");
}

/// Fails naming the kernel unless one of its instructions starts with `opcode` and ends
/// with the operand `last` (`mov.u32 %r3, %laneid`: `mov.u32`, `%laneid`).
#[track_caller]
fn assert_reads(ptx: &str, kernel: &str, opcode: &str, last: &str) {
    let instructions = instructions(ptx, kernel);
    let (opcode, last) = (format!("{opcode} "), format!(", {last}"));
    assert!(
        instructions.iter().any(|i| i.starts_with(&opcode) && i.ends_with(&last)),
        "{kernel} has no `{opcode}…{last}`; its instructions:\n{}",
        instructions.join("\n")
    );
}

#[test]
fn indices_come_from_the_special_registers() {
    for register in ["tid", "ctaid", "ntid", "nctaid"] {
        for axis in ["x", "y", "z"] {
            assert_reads(ptx(), "block_indices", "mov.u32", &format!("%{register}.{axis}"));
        }
    }
    assert_reads(ptx(), "block_indices", "mov.u32", "%laneid");
}

#[test]
fn barriers_are_the_non_aligned_forms() {
    assert_has(
        ptx(),
        "block_barriers",
        &["barrier.sync 0", "barrier.red.popc.u32 ", "barrier.red.and.pred ", "barrier.red.or.pred "],
    );
    // The two branches of the kernel's `if` each keep their barrier.
    let barriers = instructions(ptx(), "block_barriers").iter().filter(|i| *i == "barrier.sync 0").count();
    assert_eq!(barriers, 2, "one barrier.sync per branch");
}

#[test]
fn shuffles_and_votes_are_the_sync_forms_with_cudas_clamp_operand() {
    let instructions = instructions(ptx(), "block_warp_ops");
    // shfl.sync.<mode>.b32 d, a, b, c, membermask: c as CUDA's __shfl_*_sync at width 32.
    for (mode, c) in [("idx", "31"), ("up", "0"), ("down", "31"), ("bfly", "31")] {
        let prefix = format!("shfl.sync.{mode}.b32 ");
        let shuffle = instructions.iter().find(|i| i.starts_with(&prefix));
        let operands: Vec<&str> = shuffle.map(|i| i[prefix.len()..].split(", ").collect()).unwrap_or_default();
        assert_eq!(operands.get(3..), Some(&[c, "-1"][..]), "{mode}: {shuffle:?}");
    }
    assert_has(ptx(), "block_warp_ops", &["vote.sync.all.pred ", "vote.sync.any.pred ", "vote.sync.ballot.b32 "]);
    assert_has(ptx(), "block_warp_ops", &["bar.warp.sync "]);
}

#[test]
fn reductions_are_butterflies_and_barriers_over_static_shared_memory() {
    let instructions = instructions(ptx(), "block_reductions");
    for lane_mask in [16, 8, 4, 2, 1] {
        let butterfly = format!(", {lane_mask}, 31, -1");
        assert!(
            instructions.iter().any(|i| i.starts_with("shfl.sync.bfly.b32 ") && i.ends_with(&butterfly)),
            "no butterfly step {lane_mask}:\n{}",
            instructions.join("\n")
        );
    }
    // Three block reductions of three barriers each, and the caller's barrier between
    // each two (their contract: `scratch` is read by every thread before it is reused).
    assert_eq!(instructions.iter().filter(|i| *i == "barrier.sync 0").count(), 11);
    assert_reads(ptx(), "block_reductions", "cvta.shared.u64", "__device_support_shared_scratch");
}

#[test]
fn shared_memory_is_declared_per_static_array_and_sized_at_launch_for_the_dynamic_one() {
    let declarations: Vec<&str> = ptx().lines().map(str::trim).filter(|l| l.contains(".shared .align")).collect();
    assert!(declarations.contains(&".shared .align 16 .b8 __device_support_shared_scratch[128];"), "{declarations:?}");
    assert!(declarations.contains(&".shared .align 16 .b8 __device_support_shared_tile[2048];"), "{declarations:?}");
    assert!(
        declarations.iter().any(|d| d.starts_with(".extern .shared .align 16 .b8 ") && d.ends_with("[];")),
        "no dynamic shared memory: {declarations:?}"
    );
    assert_reads(ptx(), "block_shared", "mov.u32", "%dynamic_smem_size");
    assert_reads(ptx(), "block_shared", "cvta.shared.u64", "__device_support_shared_tile");
    assert_has(ptx(), "block_shared", &["barrier.sync 0"]);
}

#[test]
fn atomics_have_their_scope_and_fences_are_acq_rel() {
    assert_has(
        ptx(),
        "block_atomics",
        &[
            "atom.relaxed.cta.add.u32 ",
            "atom.relaxed.gpu.add.u32 ",
            "atom.relaxed.sys.add.u32 ",
            "atom.relaxed.gpu.min.u32 ",
            "atom.relaxed.gpu.max.u32 ",
            "atom.relaxed.gpu.exch.b32 ",
            "atom.relaxed.gpu.cas.b32 ",
            "atom.relaxed.gpu.add.u64 ",
            "atom.relaxed.gpu.min.u64 ",
            "atom.relaxed.gpu.max.u64 ",
            "atom.relaxed.gpu.exch.b64 ",
            "atom.relaxed.gpu.cas.b64 ",
            "atom.relaxed.gpu.add.f32 ",
            "fence.acq_rel.cta",
            "fence.acq_rel.gpu",
            "fence.acq_rel.sys",
        ],
    );
    // The atomic on the static shared array goes through its generic address.
    assert_reads(ptx(), "block_atomics", "cvta.shared.u64", "__device_support_shared_scratch");
}

/// Instructions no kernel may hold: barriers whose `.aligned` promise LLVM may break
/// under divergence, warp operations without `.sync`, atomics and fences without a scope.
const FORBIDDEN: [&str; 10] = [
    "bar.sync ",
    "bar.red.",
    "bar.arrive ",
    "barrier.sync.aligned",
    "barrier.red.popc.aligned",
    "shfl.idx.",
    "shfl.bfly.",
    "vote.all.",
    "membar.",
    "atom.global.",
];

#[test]
fn no_kernel_has_an_aligned_barrier_an_unsynchronised_warp_operation_or_an_unscoped_atomic() {
    let ptx = ptx();
    for kernel in kernel_names(ptx) {
        for instruction in instructions(ptx, &kernel) {
            let forbidden = FORBIDDEN.iter().find(|f| instruction.starts_with(*f));
            assert!(forbidden.is_none(), "{kernel}: `{instruction}`");
            let unscoped_atomic = instruction.starts_with("atom.") && !instruction.starts_with("atom.relaxed.");
            assert!(!unscoped_atomic && !instruction.contains(".aligned"), "{kernel}: `{instruction}`");
        }
    }
}

#[test]
fn check_ptx_refuses_nothing_in_the_block_level_kernels() {
    // Shared-memory declarations, the non-aligned barriers, the convergent shuffles and
    // votes, and atomics and fences in inline asm are all what check_ptx accepts.
    let problems: Vec<PtxProblem> = check_ptx(ptx(), BASELINE);
    assert!(problems.is_empty(), "{problems:?}");
}

/// The folder of the CUDA tools: `$BITEXACT_CUDA_TOOLS`, else the first `.cuda-tools/`
/// in or above this crate, as `ptx_builder::find_ptxas` looks.
fn tools_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(TOOLS_DIR_VAR).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().map(|d| d.join(".cuda-tools")).find(|d| d.is_dir())
}

/// Tool `name` of the CUDA tools, or `None` after printing why the test is skipped
/// (panics instead if `REQUIRE_CUDA_TOOLS` is set).
fn tool(name: &str) -> Option<PathBuf> {
    let found = tools_dir().and_then(|dir| find_below_in(&dir, "bin", name, 5, is_executable));
    let missing = || format!("no {name} (${TOOLS_DIR_VAR} or .cuda-tools/; scripts/install-cuda-tools.sh)");
    require_or_skip("REQUIRE_CUDA_TOOLS", found.ok_or_else(missing))
}

/// Where the PTX and the cubins are.
fn out_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("block-kernels")
}

/// The kernels assembled by `ptxas` for `sm_<arch>`: the cubin's path, made once per
/// test process and architecture (tests run in parallel and share the files); panics
/// with ptxas's messages.
fn assemble(ptxas: &Path, arch: u32) -> PathBuf {
    static ASSEMBLED: Mutex<BTreeMap<u32, PathBuf>> = Mutex::new(BTreeMap::new());
    ptx();
    let ptx_file = out_dir().join(PTX_FILE);
    let mut assembled = ASSEMBLED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(cubin) = assembled.get(&arch) {
        return cubin.clone();
    }
    let cubin = out_dir().join(format!("block_kernels.sm_{arch}.cubin"));
    let output = Command::new(ptxas)
        .arg(format!("-arch=sm_{arch}"))
        .arg(&ptx_file)
        .arg("-o")
        .arg(&cubin)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", ptxas.display()));
    let log = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "ptxas -arch=sm_{arch} rejects the block kernels:\n{log}");
    assembled.insert(arch, cubin.clone());
    cubin
}

#[test]
fn the_kernels_assemble_for_every_supported_architecture() {
    let Some(ptxas) = tool("ptxas") else { return };
    for arch in ARCHS {
        assemble(&ptxas, arch);
    }
}

/// The SASS instructions of kernel `name` in `cuobjdump -sass` output, without their
/// addresses and encodings.
fn sass_of(listing: &str, name: &str) -> Vec<String> {
    let header = format!("Function : {name}");
    let start = listing.find(&header).unwrap_or_else(|| panic!("no SASS for {name}"));
    let body = &listing[start + header.len()..];
    let end = body.find("Function : ").unwrap_or(body.len());
    body[..end]
        .lines()
        .filter_map(|line| line.trim().strip_prefix("/*")?.split_once("*/").map(|(_, rest)| rest))
        .map(|rest| rest.split("/*").next().unwrap_or("").trim().trim_end_matches(';').trim().to_string())
        .filter(|i| !i.is_empty())
        .collect()
}

#[test]
fn sm_90_sass_has_the_blocking_barrier_its_reductions_the_shuffles_the_fences_and_a_free_global_slice() {
    let (Some(ptxas), Some(cuobjdump)) = (tool("ptxas"), tool("cuobjdump")) else { return };
    let cubin = assemble(&ptxas, 90);
    let output = Command::new(&cuobjdump).arg("-sass").arg(&cubin).output().expect("run cuobjdump");
    assert!(output.status.success(), "cuobjdump -sass failed: {}", String::from_utf8_lossy(&output.stderr));
    let listing = String::from_utf8_lossy(&output.stdout);
    let expectations: [(&str, &[&str]); 3] = [
        (
            "block_barriers",
            &[
                "BAR.SYNC.DEFER_BLOCKING 0x0",
                "BAR.RED.POPC.DEFER_BLOCKING 0x0",
                "BAR.RED.AND.DEFER_BLOCKING 0x0",
                "BAR.RED.OR.DEFER_BLOCKING 0x0",
                // The non-aligned barrier: a divergent warp branches to a path that waits
                // for its threads, instead of each branch's barrier counting the warp.
                "BRA.DIV",
            ],
        ),
        ("block_warp_ops", &["SHFL.IDX", "SHFL.UP", "SHFL.DOWN", "SHFL.BFLY", "VOTE.ALL", "VOTE.ANY"]),
        (
            "block_atomics",
            &[
                "ATOM.E.ADD.STRONG.SM",
                "ATOM.E.ADD.STRONG.GPU",
                "ATOM.E.ADD.STRONG.SYS",
                "ATOM.E.CAS.64.STRONG.GPU",
                // atom.add.f32 flushes subnormal inputs and results to zero.
                "ATOM.E.ADD.F32.FTZ.RN.STRONG.GPU",
                "MEMBAR.ALL.CTA",
                "MEMBAR.ALL.GPU",
                "MEMBAR.ALL.SYS",
            ],
        ),
    ];
    for (kernel, wanted) in expectations {
        let sass = sass_of(&listing, kernel);
        let missing: Vec<_> = wanted.iter().filter(|w| !sass.iter().any(|i| i.contains(*w))).collect();
        assert!(missing.is_empty(), "sm_90 {kernel} lacks {missing:?}:\n{}", sass.join("\n"));
    }
    // The GlobalSlice twin is the raw pointers' SASS too, instruction for instruction.
    let (raw, slice) = (sass_of(&listing, "global_copy_raw"), sass_of(&listing, "global_copy_slice"));
    assert!(raw.iter().any(|i| i.starts_with("LDG")) && raw.iter().any(|i| i.starts_with("STG")), "{raw:?}");
    assert_eq!(slice, raw, "sm_90 SASS of global_copy_slice against global_copy_raw");
}
