//! The CUDA C++ baseline (`cuda-baseline/forms.cu`, `crate::baseline`),
//! without a GPU: every form is paired with an existing Rust variant of the same widths
//! and a matching claim; with NVRTC, the headers and the CUDA tools, every form compiles
//! on every architecture under every flag set, its SASS is parsed (the parser checked
//! against a checked-in listing of one C++ kernel, which a fresh build must reproduce),
//! and the report flags the exact forms whose code a flag changes (`/ 255.0f` under
//! `--use_fast_math` at least).
//!
//! (They were `host`'s `cuda_baseline` tests; `bitexact sass --cxx` is still tested
//! there.)
//!
//! Tests that need NVRTC or the tools print `skipped: <reason>` and pass when they are
//! missing, or fail when `REQUIRE_CUDA_TOOLS=1` (as CI sets after running
//! `scripts/install-cuda-tools.sh`, which installs them all).

use crate::baseline::{self, CxxCost, Expect, FORMS, Flags};
use crate::nvrtc::Nvrtc;
use crate::sass::{self, Kernel, SassCost};
use crate::tools::{ARCHS, CudaTools, REQUIRE_CUDA_TOOLS};
use bitexact_support::skip::require_or_skip;
use bitexact_verify::table::VARIANTS;
use std::sync::OnceLock;

/// `cuobjdump -sass -fun cxx_unorm8_div,cxx_unorm8_div_skeleton` (cuobjdump 13.5) of
/// `forms.cu` compiled by NVRTC 12.9 for `compute_90` under default flags and assembled
/// by `ptxas -arch=sm_90` (12.9): the IEEE division `(float)x / 255.0f` and its skeleton.
const CXX_LISTING_SM_90: &str = include_str!("../../../../tests/fixtures/cxx_sass_sm_90.txt");

/// NVRTC and the tools, or `None` after printing why this test is skipped (panics if
/// required).
#[track_caller]
fn nvrtc_and_tools() -> Option<(Nvrtc, CudaTools)> {
    let nvrtc = require_or_skip(REQUIRE_CUDA_TOOLS, Nvrtc::find())?;
    let tools = require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find())?;
    Some((nvrtc, tools))
}

/// The C++ column for every form on every architecture, with the Rust variants' work
/// (their rows of the whole table's SASS report, which `ptx_tools` reads too), made once
/// for the tests that read it.
fn report(nvrtc: &Nvrtc, tools: &CudaTools) -> &'static [CxxCost] {
    static REPORT: OnceLock<Vec<CxxCost>> = OnceLock::new();
    REPORT.get_or_init(|| {
        let paired = |cost: &&SassCost| FORMS.iter().any(|f| f.variant == cost.variant);
        let rust: Vec<SassCost> = super::all_costs(tools).iter().filter(paired).cloned().collect();
        baseline::cost_report(tools, nvrtc, FORMS, &rust, &ARCHS).unwrap_or_else(|e| panic!("{e}"))
    })
}

#[test]
fn every_form_pairs_with_a_variant_of_the_same_widths_and_claim() {
    let declared = baseline::declared_forms(baseline::SOURCE);
    assert_eq!(declared.len(), FORMS.len(), "FORM lines in the source vs rows of FORMS");
    for (form, declared) in FORMS.iter().zip(&declared) {
        assert_eq!(form.name, declared.name, "FORMS follows the source's order");
        let variant = VARIANTS
            .iter()
            .find(|v| v.name == form.variant)
            .unwrap_or_else(|| panic!("{}: no variant {}", form.name, form.variant));
        assert_eq!(declared.input_bits, Some(variant.input_bits), "{}: input width vs {}", form.name, variant.name);
        assert_eq!(declared.output_bits, Some(variant.output_bits), "{}: output width vs {}", form.name, variant.name);
        assert_eq!(variant.claim, form.expect.claim(), "{}: expected {:?} vs {}", form.name, form.expect, variant.name);
        // The form's marker: its kernel's name, the variant's family and widths, the claim
        // its expectation pairs with.
        let kernels = form.kernels;
        assert_eq!(kernels.name(), form.kernel(), "{}: marker name", form.name);
        assert_eq!(kernels.family(), variant.family, "{}: marker family vs {}", form.name, variant.name);
    }
    // The negative control is there.
    assert!(FORMS.iter().any(|f| f.expect == Expect::Incorrect && f.code.contains("__hltu")));
}

#[test]
fn the_parser_reads_the_checked_in_cxx_listing() {
    let kernels = sass::parse_listing(CXX_LISTING_SM_90);
    let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["cxx_unorm8_div_skeleton", "cxx_unorm8_div"]);
    // Counted independently of the parser: the listing's `/*ADDR*/ OPCODE ... ;` lines,
    // less the NOPs and each kernel's closing self-branch.
    let instruction_lines = CXX_LISTING_SM_90
        .lines()
        .map(str::trim_start)
        .filter_map(|l| Some(l.strip_prefix("/*")?.split_once("*/")?.1.trim_start()))
        .filter(|rest| rest.contains(';') && !rest.starts_with("NOP"))
        .count();
    let parsed: usize = kernels.iter().map(|k| k.instructions.len()).sum();
    assert_eq!(parsed + kernels.len(), instruction_lines, "one self-branch per kernel is padding");
    let work = sass::work(&kernels[1], &kernels[0]);
    assert!(work.work_instructions > 50, "the IEEE division's slow path: {work:?}");
    for opcode in ["I2F.U16", "MUFU.RCP", "FCHK"] {
        assert!(work.work_opcodes.iter().any(|o| o == opcode), "no {opcode} in {:?}", work.work_opcodes);
    }
}

#[test]
fn a_fresh_build_reproduces_the_checked_in_listing() {
    let Some((nvrtc, tools)) = nvrtc_and_tools() else { return };
    let fresh = baseline::listing(&tools, &nvrtc, "sm_90", Flags::Default).unwrap_or_else(|e| panic!("{e}"));
    let fixture = sass::parse_listing(CXX_LISTING_SM_90);
    for expected in &fixture {
        let built = fresh.iter().find(|k| k.name == expected.name).expect("the kernel is in the fresh build");
        assert_eq!(texts(built), texts(expected), "{}", expected.name);
    }
}

fn texts(kernel: &Kernel) -> Vec<&str> {
    kernel.instructions.iter().map(|i| i.text.as_str()).collect()
}

#[test]
fn every_form_compiles_on_every_architecture_under_every_flag_set() {
    let Some((nvrtc, tools)) = nvrtc_and_tools() else { return };
    let costs = report(&nvrtc, &tools);
    assert_eq!(costs.len(), FORMS.len() * ARCHS.len());
    for (cost, (arch, form)) in costs.iter().zip(ARCHS.iter().flat_map(|a| FORMS.iter().map(move |f| (a, f)))) {
        assert_eq!((cost.arch.as_str(), cost.kernel.as_str()), (*arch, form.kernel().as_str()));
        let flags: Vec<Flags> = cost.by_flags.iter().map(|c| c.flags).collect();
        assert_eq!(flags, Flags::ALL);
        let default = cost.default_work();
        assert!(default.skeleton_instructions > 0, "{arch} {}: an empty skeleton", cost.kernel);
        // Counts can tie (ptxas may spend on the skeleton's moves what the form spends on
        // work), but every form has opcodes its skeleton lacks.
        assert!(!default.work_opcodes.is_empty(), "{arch} {}: no work over the skeleton: {default:?}", cost.kernel);
        assert!(cost.rust_work.is_some(), "{arch} {}: no Rust row for {}", cost.kernel, cost.variant);
    }
    println!("{} forms x {} architectures x {} flag sets compiled", FORMS.len(), ARCHS.len(), Flags::ALL.len());
}

#[test]
fn the_report_flags_exact_forms_whose_code_a_flag_changes() {
    let Some((nvrtc, tools)) = nvrtc_and_tools() else { return };
    let costs = report(&nvrtc, &tools);
    for cost in costs {
        let flagged = cost.flags_changing_exact_code();
        if !flagged.is_empty() {
            println!("{} {} ({}): code changed by {flagged:?}", cost.arch, cost.kernel, cost.code);
        }
        let fast_math = &cost.by_flags[1];
        assert_eq!(fast_math.flags, Flags::UseFastMath);
        let fast_math_flagged = flagged.contains(&Flags::UseFastMath);
        assert_eq!(
            fast_math_flagged,
            cost.expect.is_exact() && fast_math.code_changed,
            "{} {}",
            cost.arch,
            cost.kernel
        );
        match cost.kernel.as_str() {
            // The known case: fast-math turns the IEEE division into a multiply.
            "cxx_unorm8_div" => {
                assert!(fast_math_flagged, "{}: / 255.0f not flagged under --use_fast_math", cost.arch);
                assert!(fast_math.work.work_instructions < 10, "{}: {:?}", cost.arch, fast_math.work);
                assert!(
                    flagged.contains(&Flags::NoPrecDiv),
                    "{}: / 255.0f not flagged under --prec-div=false",
                    cost.arch
                );
            }
            // Integer-only forms: no float flag can change them, so a flag here would
            // mean the comparison sees differences that are not there.
            "cxx_f16_finite_exp_mask" | "cxx_f16_finite_abs_bits_lt_inf" => {
                assert!(flagged.is_empty(), "{} {}: flagged {flagged:?}", cost.arch, cost.kernel)
            }
            _ => {}
        }
    }
}

/// The markers (`baseline::cxx`) each vouch that their kernels have their kinds'
/// signatures: the PTX that NVRTC makes of the source under every flag set must have
/// each form's kernel and skeleton with the `Map` shape (three 64-bit parameters) and its
/// latency and throughput kernels with the timing shape (64, 32, 64 bits).
#[test]
fn every_marker_kernel_has_its_kinds_signature_in_the_ptx_of_every_flag_set() {
    use crate::cxx_gpu;
    let Some(nvrtc) = require_or_skip(REQUIRE_CUDA_TOOLS, Nvrtc::find()) else { return };
    let ptx = cxx_gpu::compile(&nvrtc, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ptx.by_flags().iter().map(|(f, _)| *f).collect::<Vec<_>>(), Flags::ALL);
    for (flags, text) in ptx.by_flags() {
        assert_eq!(cxx_gpu::misshapen_entries(text, FORMS), Vec::<String>::new(), "{}", flags.label());
    }
    // The check sees a missing kernel and another shape.
    let (_, default) = &ptx.by_flags()[0];
    let form = &FORMS[0];
    let renamed = default.replace(&format!(".entry {}(", form.kernel()), ".entry cxx_renamed(");
    assert_eq!(cxx_gpu::misshapen_entries(&renamed, &FORMS[..1]), [format!("{}: no such entry", form.kernel())]);
    let two_params = ".visible .entry cxx_x(\n\t.param .u64 .ptr .align 1 a,\n\t.param .u32 n\n)\n{\n}\n";
    assert_eq!(cxx_gpu::entry_params(two_params, "cxx_x"), Some(vec![".u64".to_string(), ".u32".to_string()]));
    let latency = format!("{}_latency", form.kernel());
    let widened =
        default.replace(&format!("{latency}_param_1"), "wide").replace(".param .u32 wide", ".param .u64 wide");
    let wrong = cxx_gpu::misshapen_entries(&widened, &FORMS[..1]);
    assert_eq!(
        wrong,
        [format!("{latency}: parameters [\".u64\", \".u64\", \".u64\"], not [\".u64\", \".u32\", \".u64\"]")]
    );
}

/// `cxx_gpu::write` writes one PTX file per flag set (what `bitexact sass --cxx
/// --emit-ptx DIR` runs), which `cxx_gpu::read` reads back for a device of that
/// architecture or a newer one, and refuses once a kernel is renamed.
#[test]
fn written_ptx_is_read_back_for_the_device() {
    use crate::cxx_gpu;
    let Some(nvrtc) = require_or_skip(REQUIRE_CUDA_TOOLS, Nvrtc::find()) else { return };
    let dir = tempfile::tempdir().expect("temporary folder");
    for arch in ["sm_80", "sm_90"] {
        let ptx = cxx_gpu::compile(&nvrtc, arch).unwrap_or_else(|e| panic!("{e}"));
        let written = cxx_gpu::write(&ptx, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written.len(), Flags::ALL.len(), "{arch}");
    }
    for (sm, arch) in [(90, "sm_90"), (100, "sm_90"), (86, "sm_80")] {
        let read = cxx_gpu::read(dir.path(), sm).unwrap_or_else(|e| panic!("sm_{sm}: {e}"));
        assert_eq!(read.arch, arch, "sm_{sm}");
        for (flags, text) in read.by_flags() {
            assert!(text.contains(&format!(".target {}", arch)), "{arch} {}", flags.label());
            assert!(cxx_gpu::misshapen_entries(text, FORMS).is_empty(), "{arch} {}", flags.label());
        }
    }
    let error = cxx_gpu::read(dir.path(), 75).expect_err("no PTX for sm_75").to_string();
    assert!(error.contains("no C++ baseline PTX for sm_75") && error.contains("sm_80, sm_90"), "{error}");
    // A file that is not what was written (a kernel renamed) is refused: the markers
    // vouch only for the baseline's own kernels.
    let file = dir.path().join(cxx_gpu::ptx_file_name("sm_90", Flags::Default));
    let text = std::fs::read_to_string(&file).expect("written above");
    std::fs::write(&file, text.replace(".entry cxx_unorm8_div(", ".entry cxx_unorm8_div_renamed(")).expect("rewrite");
    let error = cxx_gpu::read(dir.path(), 90).expect_err("a renamed kernel").to_string();
    assert!(error.contains("not the C++ baseline's PTX") && error.contains("cxx_unorm8_div"), "{error}");
}
