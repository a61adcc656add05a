//! The embedded PTX modules, checked with the real CUDA tools: each assembles for every
//! supported architecture from its target on (and a newer target's module for no older
//! one), is self-contained, uses registers only, the SASS report covers every variant and
//! every hardware kernel, every timing kernel's chain loop holds its variant's work (what
//! `bench` times), every bandwidth kernel's loop has the coalesced shape
//! (`crate::sass::bandwidth`, which fails on the layout before issue 10), and no kernel
//! hides a float → integer conversion its source did not ask for (the guards of
//! `crate::guards`, which fail on commit 846e06b's kernels). (They were `host`'s
//! `ptx_tools` tests; the commands `ptx` and `sass` are still tested there.)
//!
//! Tests that need `ptxas`/`cuobjdump` print `skipped: <reason>` and pass when the tools
//! are missing, or fail when `REQUIRE_CUDA_TOOLS=1` (as CI sets after running
//! `scripts/install-cuda-tools.sh`). The structural checks need no tools and always run.

use super::{all_costs, tools};
use crate::guards;
use crate::sass::{self, Kernel, bandwidth, chain::ChainVerdict};
use crate::tools::{ARCHS, Assembled, CudaTools, REQUIRE_CUDA_TOOLS, Tool};
use bitexact_gpu::ptx::{self, MODULES, Module, PTX};
use bitexact_support::skip::require_or_skip;
use bitexact_verify::table::{VARIANTS, Variant};
use ptx_builder::ptx_text;
use shared::KernelKind;
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// One PTX text assembled for one architecture, with its SASS parsed on first use.
struct Listing {
    assembled: Assembled,
    kernels: OnceLock<Vec<Kernel>>,
}

/// `ptx` assembled for `arch`, made once per test process (several tests read each one,
/// and ptxas on seven architectures is most of this file's time); panics with ptxas's
/// error.
fn assembled(tools: &CudaTools, ptx: &'static str, arch: &'static str) -> &'static Listing {
    type Cache = Mutex<HashMap<(usize, &'static str), &'static OnceLock<Listing>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cell = *CACHE
        .get_or_init(Default::default)
        .lock()
        .expect("the cache lock")
        .entry((ptx.as_ptr() as usize, arch))
        .or_insert_with(|| Box::leak(Box::default()));
    cell.get_or_init(|| {
        let assembled = tools.assemble(ptx, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        Listing { assembled, kernels: OnceLock::new() }
    })
}

/// The parsed SASS of `ptx` for `arch` (cached, see [`assembled`]).
fn listing(tools: &CudaTools, ptx: &'static str, arch: &'static str) -> &'static [Kernel] {
    let listing = assembled(tools, ptx, arch);
    listing.kernels.get_or_init(|| {
        sass::parse_listing(&tools.disassemble(&listing.assembled).unwrap_or_else(|e| panic!("{arch}: {e}")))
    })
}

fn kernels_with_narrow_float_stores(ptx: &str) -> Vec<String> {
    guards::narrow_float_stores(ptx).into_iter().map(|f| f.kernel).collect()
}

/// Every `F2I*` of the module's SASS on every architecture it assembles for, outside
/// kernels that ask for one.
fn unrequested_conversions(tools: &CudaTools, module: &Module) -> Vec<String> {
    let mut found = Vec::new();
    let ptx = module.ptx;
    for arch in ARCHS.into_iter().filter(|arch| module.assembles_for(arch)) {
        let kernels = listing(tools, ptx, arch);
        assert!(!kernels.is_empty(), "{arch}: empty SASS listing");
        found.extend(guards::unrequested_float_to_int(ptx, kernels, arch).iter().map(ToString::to_string));
    }
    found
}

/// The integer immediates of a kernel's PTX instructions (where a select's thresholds
/// show), as `u32`s.
fn immediates(kernel: &guards::PtxKernel) -> Vec<u32> {
    kernel.instructions.iter().flat_map(|i| i.operands.iter().filter_map(|o| o.parse::<u32>().ok())).collect()
}

/// The f32 → UNORM kernels of commit 846e06b, which returned 255 for every input on an
/// H200 (see `crate::guards`), and the minimal reproducer of the ptxas behaviour.
const PTX_846E06B: &str = include_str!("../../../../tests/fixtures/ptx_846e06b_f32_to_unorm.ptx");

const REPRODUCER: &str = include_str!("../../../../../scripts/repro/narrow-store-of-float.ptx");

/// The bandwidth kernels of issue 10 before the coalesced layout (commit 6148ec3): two
/// UNORM8 → f32 kernels of 16 codes in and four 16-byte stores out per lane, and the
/// binary16 count kernel, whose 16-byte loads were already contiguous across a warp.
const PTX_6148EC3: &str = include_str!("../../../../tests/fixtures/ptx_6148ec3_wide.ptx");

#[test]
fn each_module_declares_its_target_and_ptx_version() {
    for module in MODULES {
        let (sm, version) = (module.target.sm, module.target.ptx);
        let lines: Vec<&str> = module.ptx.lines().map(str::trim).collect();
        assert!(lines.contains(&format!(".target sm_{sm}").as_str()), "module {}", module.target);
        let wanted = format!(".version {}.{}", version / 10, version % 10);
        assert!(lines.contains(&wanted.as_str()), "module {}: no `{wanted}`", module.target);
        let entries = ptx::entry_names(module.ptx);
        assert!(!entries.is_empty(), "module {} has no kernel", module.target);
        if module.target != shared::hardware::BASELINE {
            // The newer modules hold hardware kernels only.
            let hardware = [shared::kernel_suffix!(Hardware), shared::kernel_suffix!(HardwareStream)];
            assert!(entries.iter().all(|e| hardware.iter().any(|s| e.ends_with(s))), "{entries:?}");
        }
    }
}

#[test]
fn the_ptx_declares_nothing_external_and_calls_only_what_it_defines() {
    for module in MODULES {
        let ptx = module.ptx;
        assert_eq!(
            ptx_text::extern_declarations(ptx),
            Vec::<&str>::new(),
            "the PTX needs functions it does not define"
        );
        let defined = ptx_text::defined_functions(ptx);
        for target in ptx_text::call_targets(ptx) {
            assert!(
                defined.contains(&target),
                "call to {target}, which the PTX does not define (defined: {defined:?})"
            );
            let lower = target.to_lowercase();
            for forbidden in ["panic", "fmt", "unwind", "format"] {
                assert!(!lower.contains(forbidden), "a kernel calls {target}: a panic or formatting path survived");
            }
        }
    }
}

#[test]
fn every_tool_is_found_and_runs() {
    for tool in Tool::ALL {
        let Some(path) = require_or_skip(REQUIRE_CUDA_TOOLS, crate::tools::find(tool)) else { return };
        let output = Command::new(&path).arg("--version").output();
        let ran = output.as_ref().is_ok_and(|o| o.status.success());
        assert!(ran, "{tool} at {} does not run: {output:?}", path.display());
    }
}

#[test]
fn the_ptx_assembles_for_every_architecture() {
    let Some(tools) = tools() else { return };
    for module in MODULES {
        for arch in ARCHS.into_iter().filter(|arch| module.assembles_for(arch)) {
            let assembled = &assembled(&tools, module.ptx, arch).assembled;
            let functions = crate::tools::resource_usage(&assembled.ptxas_log).len();
            println!("module {} on {arch}: assembled ({functions} functions)", module.target);
        }
    }
}

/// Why the hardware kernels need their own modules: ptxas rejects each newer module for
/// the architecture just below its target (its instructions do not exist there).
#[test]
fn a_newer_module_does_not_assemble_for_an_older_architecture() {
    let Some(tools) = tools() else { return };
    for module in &MODULES[1..] {
        let older = ARCHS.into_iter().rev().find(|arch| !module.assembles_for(arch)).expect("an older architecture");
        let rejected = tools.assemble(module.ptx, older);
        assert!(rejected.is_err(), "the {} module assembles for {older}", module.target);
    }
}

#[test]
fn no_function_has_a_stack_frame_or_spills() {
    let Some(tools) = tools() else { return };
    for module in MODULES {
        let entries = ptx::entry_names(module.ptx);
        for arch in ARCHS.into_iter().filter(|arch| module.assembles_for(arch)) {
            let assembled = &assembled(&tools, module.ptx, arch).assembled;
            let usage = crate::tools::resource_usage(&assembled.ptxas_log);
            for entry in &entries {
                assert!(usage.iter().any(|f| f.function == *entry), "{arch}: ptxas -v says nothing about {entry}");
            }
            for function in usage {
                assert!(function.registers_only(), "{arch}: {function:?} uses local memory");
            }
        }
    }
}

#[test]
fn the_sass_report_covers_every_variant_on_every_architecture() {
    let Some(tools) = tools() else { return };
    let costs = all_costs(&tools);
    assert_eq!(costs.len(), VARIANTS.len() * ARCHS.len());
    for arch in ARCHS {
        for v in VARIANTS {
            let cost = costs.iter().find(|c| c.arch == arch && c.variant == v.name);
            let Some(cost) = cost else { panic!("no SASS cost for {} on {arch}", v.name) };
            let w = &cost.work;
            assert!(w.skeleton_instructions > 0, "{arch} {}: empty skeleton", v.name);
            assert_eq!(w.work_instructions, w.variant_instructions as i64 - w.skeleton_instructions as i64);
            assert_eq!(w.work_instructions, w.work_opcodes.len() as i64 - w.skeleton_only_opcodes.len() as i64);
            assert_eq!(cost.hardware.is_some(), v.has(KernelKind::Hardware), "{arch} {}", v.name);
            if let Some(hardware) = &cost.hardware {
                let module = MODULES.iter().find(|m| m.target.to_string() == hardware.target).expect("a module");
                assert_eq!(hardware.work.is_some(), module.assembles_for(arch), "{arch} {}: {hardware:?}", v.name);
                if let Some(hw) = &hardware.work {
                    // One conversion instruction and no branch around it.
                    assert!(hw.variant_instructions > 0 && hw.work_instructions >= 1, "{arch} {}: {hw:?}", v.name);
                    assert!(!hw.work_opcodes.iter().any(|op| op == "BSSY"), "{arch} {}: {hw:?}", v.name);
                }
            }
            if w.work_instructions < 0 {
                // Only a variant whose result does not depend on its input (E4M3 has no
                // infinities) may be cheaper than the skeleton: its kernel skips the load.
                let skips_load = w.skeleton_only_opcodes.iter().any(|op| op.starts_with("LDG"));
                assert!(skips_load, "{arch} {}: kernel shorter than its skeleton but loads: {w:?}", v.name);
            } else {
                assert!(!w.work_opcodes.is_empty(), "{arch} {}: no work opcodes: {w:?}", v.name);
            }
        }
    }
}

#[test]
fn no_kernel_stores_a_float_register_narrow() {
    let found: Vec<guards::NarrowFloatStore> =
        MODULES.iter().flat_map(|m| guards::narrow_float_stores(m.ptx)).collect();
    let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert!(lines.is_empty(), "ptxas turns these stores into float → integer conversions:\n{}", lines.join("\n"));
    // The check reads every kernel, the stream kernels with 8- and 16-bit results
    // included: their vector loop packs four results into one 32- or 64-bit store, but
    // their scalar pass stores one result at a time, a narrow store the check examined.
    let kernels = guards::ptx_kernels(PTX);
    let narrowing: Vec<&Variant> =
        VARIANTS.iter().filter(|v| v.has(KernelKind::Stream) && v.output_bits < 32).collect();
    assert!(!narrowing.is_empty(), "no stream kernel with narrow results in the table");
    for v in narrowing {
        let name = v.kernel(KernelKind::Stream).expect("has a stream kernel").to_string();
        let kernel = kernels.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no {name} in the PTX"));
        let width = format!(".b{}", v.output_bits);
        let narrow_stores =
            kernel.instructions.iter().filter(|i| i.opcode.starts_with("st.") && i.opcode.ends_with(&width));
        assert_eq!(narrow_stores.count(), 1, "{name}: one {}-bit store (the scalar pass)", v.output_bits);
    }
    // The same check fails on the kernels that were wrong on the GPU, and on the reproducer.
    assert_eq!(kernels_with_narrow_float_stores(PTX_846E06B), ["f32_to_unorm8", "f32_to_unorm16"]);
    assert_eq!(kernels_with_narrow_float_stores(REPRODUCER), ["store_low_byte_of_float_bits"]);
}

#[test]
fn the_sass_converts_float_to_integer_only_where_the_source_asks() {
    let Some(tools) = tools() else { return };
    let found: Vec<String> = MODULES.iter().flat_map(|m| unrequested_conversions(&tools, m)).collect();
    assert!(found.is_empty(), "conversions nobody asked for:\n{}", found.join("\n"));
    // The same check fails on the kernels of 846e06b: both folded kernels, on every
    // architecture; `f32_to_unorm8_mul_add_half` converts on purpose and is not reported.
    let old = unrequested_conversions(&tools, &Module { target: shared::hardware::BASELINE, ptx: PTX_846E06B });
    for arch in ARCHS {
        for kernel in ["f32_to_unorm8", "f32_to_unorm16"] {
            let prefix = format!("{arch} {kernel}:");
            assert!(old.iter().any(|line| line.starts_with(&prefix)), "{prefix} not reported in {old:#?}");
        }
    }
    assert!(old.iter().all(|line| !line.contains("mul_add_half")), "{old:#?}");
}

/// Every `Stream`, `HardwareStream` and `CountNonfinite` kernel of every variant, on
/// every architecture its module assembles for:
/// the loop has the shape `crate::sass::bandwidth` checks (one load of four
/// inputs and one store of their four results per lane per step, e.g. `LDG.E` +
/// `STG.E.128` for UNORM8 → f32, `LDG.E.128` + `STG.E` for f32 → UNORM8; one 16-byte
/// load and no store), and nothing else
/// loops over more than one element per lane. The sm_90 figures are printed (`cargo
/// test -- --nocapture`): what the README's table shows. The same check fails on the
/// stream kernels of commit 6148ec3, on every architecture.
#[test]
fn every_bandwidth_kernel_loop_has_the_coalesced_shape_on_every_architecture() {
    let Some(tools) = tools() else { return };
    let mut wrong = Vec::new();
    let mut checked = 0;
    for arch in ARCHS {
        let number = ptx::arch_number(arch).expect("sm_XX");
        let listings: Vec<(shared::hardware::PtxTarget, &[Kernel])> = MODULES
            .iter()
            .filter(|m| m.target.sm <= number)
            .map(|m| (m.target, listing(&tools, m.ptx, arch)))
            .collect();
        for v in VARIANTS {
            for kind in [KernelKind::Stream, KernelKind::HardwareStream, KernelKind::CountNonfinite] {
                let Some(name) = v.kernel(kind) else { continue };
                let target = ptx::module_of(name, shared::hardware::Conversion::of(v.family)).target;
                let Some((_, kernels)) = listings.iter().find(|(t, _)| *t == target) else { continue };
                let name = name.to_string();
                let kernel = kernels.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{arch}: no {name}"));
                let bytes = v.input_bits / 8;
                let found = match kind {
                    KernelKind::Stream | KernelKind::HardwareStream => {
                        bandwidth::stream_loop(kernel, bytes, v.output_bits / 8)
                    }
                    _ => bandwidth::count_loop(kernel, bytes),
                };
                checked += 1;
                match found {
                    Ok(found) if arch == "sm_90" => println!(
                        "| `{name}` | {} | {} | {} | {} | {} / {} = {:.2} |",
                        found.load_summary(),
                        found.store_summary(),
                        found.elements_per_step,
                        found.instructions,
                        found.fast_path_instructions,
                        found.elements_per_step,
                        found.instructions_per_element()
                    ),
                    Ok(_) => {}
                    Err(e) => wrong.push(format!("{arch} {e}")),
                }
            }
        }
    }
    assert!(wrong.is_empty(), "bandwidth kernels without the coalesced shape:\n{}", wrong.join("\n"));
    assert!(checked > 0, "no bandwidth kernel in the table");
    // The layout before issue 10 fails the same check on every architecture, for both
    // stream kernels, and only them.
    for arch in ARCHS {
        let old = listing(&tools, PTX_6148EC3, arch);
        let kernel = |name: &str| old.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{arch}: no {name}"));
        for name in ["unorm8_times3_int_wide", "unorm8_mul_recip_wide"] {
            let error = bandwidth::stream_loop(kernel(name), 1, 4).expect_err("the 16-in/64-out layout");
            assert!(error.why.contains("stores [STG.E.128"), "{arch}: {error}");
            if arch == "sm_90" {
                println!("6148ec3 {error}");
            }
        }
        let old_count = shared::KernelName::of::<shared::variants::f16_finite_exp_mask>(KernelKind::CountNonfinite);
        let count = bandwidth::count_loop(kernel(&old_count.to_string()), 2)
            .unwrap_or_else(|e| panic!("{arch}: the old count kernel was coalesced already: {e}"));
        if arch == "sm_90" {
            let (fast, elements) = (count.fast_path_instructions, count.elements_per_step);
            println!(
                "6148ec3 {}: {} per lane, {fast} / {elements} instructions per element",
                count.kernel,
                count.load_summary()
            );
        }
    }
}

/// The hardware forms of the OCP non-saturating FP8 modes are the saturating `cvt` plus
/// a select on the input's bits (`shared::hardware::e4m3_standard`, `e5m2_standard`).
/// A kernel that lost its select computes the saturating mode, which only the GPU
/// three-way test would notice; this check needs neither a GPU nor the CUDA tools:
/// every `_hw` and `_hw_stream` kernel of `f32_to_e4m3` uses 464 (the input's magnitude
/// compared with it), those of `f32_to_e5m2` 61440 and +inf (a compare, and the
/// subtraction that tells NaN; LLVM may move a bound by one when it turns `>=` into
/// `>`), and the saturating forms' kernels none of these (so the check can fail).
#[test]
fn the_non_saturating_fp8_hardware_kernels_keep_their_selects() {
    use shared::hardware::{Conversion, E4M3_NAN_PAST, E5M2_INF_FROM};
    let near = |t: u32| [t - 1, t, t + 1];
    let inf = f32::INFINITY.to_bits();
    let mut checked = 0;
    for v in VARIANTS {
        let Some(instruction) = Conversion::of(v.family) else { continue };
        let wanted: Vec<u32> = match instruction {
            Conversion::F32ToE4m3 => vec![E4M3_NAN_PAST],
            Conversion::F32ToE5m2 => vec![E5M2_INF_FROM, inf],
            Conversion::F32ToE4m3Satfinite | Conversion::F32ToE5m2Satfinite => vec![],
            _ => continue,
        };
        for kind in [KernelKind::Hardware, KernelKind::HardwareStream] {
            let Some(name) = v.kernel(kind) else { continue };
            let module = ptx::module_of(name, Some(instruction));
            let kernels = guards::ptx_kernels(module.ptx);
            let name = name.to_string();
            let kernel = kernels.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no {name}"));
            let compared = immediates(kernel);
            let selects = [E4M3_NAN_PAST, E5M2_INF_FROM, inf];
            if wanted.is_empty() {
                let found: Vec<u32> =
                    selects.into_iter().filter(|t| near(*t).iter().any(|n| compared.contains(n))).collect();
                assert!(found.is_empty(), "{name}: the saturating form uses {found:#x?}");
            }
            for threshold in &wanted {
                assert!(
                    near(*threshold).iter().any(|n| compared.contains(n)),
                    "{name}: does not use {threshold:#x} (its immediates: {compared:#x?})"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 8, "the _hw and _hw_stream kernels of the four FP8 narrowings");
}

/// What `bench` times must be the variant's work: on every architecture, each latency and
/// throughput kernel has a chain loop (not a remainder loop) holding the work of the
/// variant's map kernel, except for constant functions, which the SASS shows as having
/// no work and `bench` proves constant on the CPU (and does not time).
#[test]
fn every_timing_kernel_holds_its_variants_work_in_its_chain_loop() {
    let Some(tools) = tools() else { return };
    let mut missing = Vec::new();
    for cost in all_costs(&tools) {
        let variant = bitexact_verify::table::find(cost.variant).expect("a variant of the table");
        let constant = variant.is_constant();
        let chain = &cost.chain;
        match &chain.chain {
            ChainVerdict::HoldsWork => {
                assert!(!constant, "{} {}: constant on the CPU, yet the SASS has work", cost.arch, cost.variant);
                assert!(chain.chain_holds_work);
                let applications = [chain.latency_loop_applications, chain.throughput_loop_applications];
                assert!(
                    applications.iter().all(|a| a.is_some_and(|a| a >= 1)),
                    "{} {}: {chain:?}",
                    cost.arch,
                    cost.variant
                );
            }
            ChainVerdict::Constant => {
                assert!(constant, "{} {}: no work in the SASS, but not constant on the CPU", cost.arch, cost.variant)
            }
            ChainVerdict::Missing(why) => missing.push(format!("{} {}: {why}", cost.arch, cost.variant)),
        }
    }
    assert!(missing.is_empty(), "timing kernels that do not time the work:\n{}", missing.join("\n"));
}
