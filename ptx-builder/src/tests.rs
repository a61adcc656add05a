use super::*;
use std::collections::HashMap;

fn args(command: &Command) -> Vec<String> {
    command.get_args().map(|a| a.to_string_lossy().into_owned()).collect()
}

/// The environment changes of `command`: `Some(value)` set, `None` removed.
fn env_changes(command: &Command) -> HashMap<String, Option<String>> {
    command
        .get_envs()
        .map(|(k, v)| (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned())))
        .collect()
}

#[test]
fn the_nested_cargo_builds_the_crate_for_nvptx_with_its_own_target_dir_and_emits_asm() {
    let builder = PtxBuilder::new("/w/my-kernels");
    let module = Module::new("k.ptx", Target::new(75));
    let command = builder.command(OsStr::new("cargo"), &module, Path::new("/out"));
    assert_eq!(command.get_current_dir(), Some(Path::new("/w/my-kernels")));
    assert_eq!(
        args(&command),
        [
            "rustc",
            "--manifest-path",
            "/w/my-kernels/Cargo.toml",
            "--release",
            "--target",
            "nvptx64-nvidia-cuda",
            "-Zbuild-std=core",
            "--target-dir",
            "/out/nvptx-sm_75",
            "--",
            "-C",
            "codegen-units=1",
            "--emit=asm=/out/k.ptx",
        ]
    );
}

/// The `--target-dir` of `module` in `command`.
fn target_dir_of(command: &Command) -> String {
    let args = args(command);
    let at = args.iter().position(|a| a == "--target-dir").expect("a --target-dir");
    args[at + 1].clone()
}

#[test]
fn builds_inside_a_cargo_target_folder_share_one_nested_target_dir_per_target() {
    let target = std::env::temp_dir().join(format!("ptx-builder-shared-target-{}", std::process::id()));
    let out = |hash: &str| target.join("debug/build/host").join(hash).join("out");
    std::fs::create_dir_all(out("a")).unwrap();
    std::fs::create_dir_all(out("b")).unwrap();
    std::fs::write(target.join("CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55\n").unwrap();
    let module = Module::new("k.ptx", Target::new(75));
    let builder = PtxBuilder::new("/w/my-kernels");
    let a = builder.command(OsStr::new("cargo"), &module, &out("a"));
    let b = builder.command(OsStr::new("cargo"), &module, &out("b"));
    let shared = target_dir_of(&a);
    assert_eq!(shared, target_dir_of(&b), "two runs of the build script, one nested target dir");
    assert_eq!(shared, target.join("nvptx-builds/nvptx-sm_75").to_string_lossy(), "{shared}");
    // Each run's PTX goes to its own $OUT_DIR.
    assert!(args(&b).contains(&format!("--emit=asm={}", out("b").join("k.ptx").display())));
    // Another crate, or another module, for the same target shares it: one `core`.
    let other = PtxBuilder::new("/w/other-kernels").command(
        OsStr::new("cargo"),
        &Module::new("o.ptx", Target::new(75)),
        &out("a"),
    );
    assert_eq!(target_dir_of(&other), shared);
    // Another target (its RUSTFLAGS differ) has its own.
    let second = builder.command(OsStr::new("cargo"), &Module::new("k2.ptx", Target::new(80)), &out("a"));
    assert!(target_dir_of(&second).ends_with("/nvptx-builds/nvptx-sm_80"), "{}", target_dir_of(&second));
    let versioned =
        builder.command(OsStr::new("cargo"), &Module::new("k3.ptx", Target::new(89).with_ptx_version(81)), &out("a"));
    assert!(target_dir_of(&versioned).ends_with("/nvptx-builds/nvptx-sm_89-ptx81"), "{}", target_dir_of(&versioned));
    std::fs::remove_dir_all(&target).unwrap();
}

#[test]
fn a_module_gets_its_cfgs_before_the_emit_and_its_env() {
    let module = Module::new("k_sm_89.ptx", Target::new(89).with_ptx_version(81)).cfg("only_new").env("LIST", "/x.rs");
    let command = PtxBuilder::new("kc").command(OsStr::new("cargo"), &module, Path::new("/out"));
    let args = args(&command);
    let tail = &args[args.len() - 3..];
    assert_eq!(tail, ["--cfg", "only_new", "--emit=asm=/out/k_sm_89.ptx"]);
    assert!(args.contains(&"/out/nvptx-sm_89-ptx81".to_string()), "{args:?}");
    assert_eq!(env_changes(&command)["LIST"].as_deref(), Some("/x.rs"));
}

#[test]
fn the_outer_builds_flags_are_removed_and_the_target_goes_through_rustflags() {
    let module = Module::new("k.ptx", Target::new(80).with_ptx_version(70));
    let env = env_changes(&PtxBuilder::new("kc").command(OsStr::new("cargo"), &module, Path::new("/out")));
    for scrubbed in SCRUBBED_ENV.into_iter().filter(|&v| v != "RUSTFLAGS") {
        assert_eq!(env.get(scrubbed), Some(&None), "{scrubbed} is not removed");
    }
    assert_eq!(env["RUSTFLAGS"].as_deref(), Some("-C target-cpu=sm_80 -C target-feature=+ptx70"));
    assert_eq!(Target::new(75).rustflags(), "-C target-cpu=sm_75");
}

#[test]
fn without_modules_the_crate_is_built_for_sm_75_under_its_own_name() {
    let modules = PtxBuilder::new("../my-kernels").modules();
    assert_eq!(modules.len(), 1);
    assert_eq!((modules[0].file(), modules[0].target()), ("my_kernels.ptx", Target::new(75)));
    let chosen = PtxBuilder::new("x").module(Module::new("a.ptx", Target::new(90))).modules();
    assert_eq!(chosen.iter().map(Module::file).collect::<Vec<_>>(), ["a.ptx"]);
}

/// Cargo's stderr for a kernel crate with one warning and one error.
const NESTED_LOG: &str = "   Compiling core v0.0.0 (/sysroot/library/core)
   Compiling my-kernels v0.1.0 (/w/my-kernels)
warning: unused variable: `x`
 --> src/lib.rs:3:9
  |
3 |     let x = 1;
  |         ^ help: if this is intentional, prefix it with an underscore: `_x`

error[E0425]: cannot find value `y` in this scope
 --> src/lib.rs:4:5
  |
4 |     y
  |     ^ not found in this scope

warning: `my-kernels` (lib) generated 1 warning
error: could not compile `my-kernels` (lib) due to 1 previous error; 1 warning emitted
";

#[test]
fn warnings_and_errors_are_split_out_of_the_nested_log() {
    let found = split_diagnostics(NESTED_LOG);
    assert_eq!(found.warnings.len(), 1, "{found:?}");
    assert!(found.warnings[0].starts_with("warning: unused variable: `x`\n --> src/lib.rs:3:9"));
    assert!(found.warnings[0].ends_with("prefix it with an underscore: `_x`"));
    assert_eq!(found.errors.len(), 2, "{found:?}");
    assert!(found.errors[0].starts_with("error[E0425]: cannot find value `y`"));
    assert!(found.errors[1].starts_with("error: could not compile"));
    let error = Error::Compile { module: "k.ptx".into(), target: Target::new(75), errors: found.errors };
    assert_eq!(
        error.to_string(),
        "building k.ptx for nvptx64-nvidia-cuda (sm_75) failed: error[E0425]: cannot find value `y` in this scope"
    );
    assert_eq!(split_diagnostics("   Compiling a\n    Finished `release`\n"), Diagnostics::default());
    let failed = split_diagnostics("warning: build failed, waiting for other jobs to finish...\nerror: x\n");
    assert_eq!((failed.warnings.len(), failed.errors.len()), (0, 1), "{failed:?}");
}

/// A module as rustc writes it: one kernel calling a helper it defines.
const SELF_CONTAINED: &str = "
//
// Generated by LLVM NVPTX Back-End
//
.version 7.0
.target sm_75
.address_size 64

.func  (.param .b32 func_retval0) helper()
{
\t.reg .b32 %r<2>;
\tmov.b32 %r1, 7;
\tst.param.b32 [func_retval0], %r1;
\tret;
}
\t// .globl\tkernel
.visible .entry kernel(.param .u64 kernel_param_0)
{
\t{ // callseq 0, 0
\t.param .b32 retval0;
\tcall.uni (retval0), helper, ();
\t} // callseq 0
\tret;
}
";

#[test]
fn a_self_contained_module_for_its_target_passes() {
    assert_eq!(check_ptx(SELF_CONTAINED, Target::new(75)), []);
}

#[test]
fn a_module_for_another_target_fails() {
    let problems = check_ptx(SELF_CONTAINED, Target::new(89).with_ptx_version(81));
    assert_eq!(problems, [PtxProblem::WrongTarget { wanted: ".target sm_89".into() }]);
}

/// A module of [`SELF_CONTAINED`]'s header with `body` after it (declarations, functions).
fn module_with(body: &str) -> String {
    SELF_CONTAINED.to_string() + body
}

/// A kernel `name` whose body is `statements`.
fn kernel(name: &str, statements: &str) -> String {
    format!("\n.visible .entry {name}(.param .u64 p)\n{{\n{statements}\n\tret;\n}}\n")
}

#[test]
fn a_bad_call_names_its_function_demangled_and_tells_a_panic_path_from_a_missing_function() {
    let helper = symbol::tests::v0(&["my_kernels", "helper"]);
    let index_fail = symbol::tests::v0(&["core", "slice", "index", "slice_index_fail"]);
    let panic = symbol::tests::v0(&["core", "panicking", "panic"]);
    let not_inlined = symbol::tests::v0(&["my_dep", "not_inlined"]);
    let ptx = module_with(&format!(
        "
.extern .func {index_fail}(.param .b64 p);
.extern .func (.param .b32 func_retval0) {not_inlined}(.param .b64 p);
.func {helper}(.param .b64 p)
{{
\t@%p1 call.uni {index_fail}, (param0);
\tcall.uni (retval0), {not_inlined}, (param0);
\tret;
}}
{}",
        kernel(
            "scale",
            &format!(
                "\tcall.uni {helper}, (param0);\n\t@%p2 call.uni {panic}, (param0);\n\tcall %rd4, (param0), prototype_1;"
            )
        )
    ));
    let problems = check_ptx(&ptx, Target::new(75));
    assert_eq!(
        problems,
        [
            PtxProblem::PanicPath { caller: helper.clone(), callee: index_fail },
            PtxProblem::UndefinedCall { caller: helper, callee: not_inlined },
            PtxProblem::PanicPath { caller: "scale".into(), callee: panic },
        ],
        "a called .extern is reported at its call, an indirect call not at all"
    );
    let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(messages[0].starts_with("`my_kernels::helper` can panic: it calls `core::slice::index::slice_index_fail`"));
    assert!(messages[1].starts_with("`my_kernels::helper` calls `my_dep::not_inlined`, which the PTX does not define"));
    assert!(messages[2].starts_with("`scale` can panic: it calls `core::panicking::panic`"));
    assert!(messages.iter().all(|m| !m.contains("_R")), "{messages:?}");
    assert!(messages[0].contains("must not panic") && messages[1].contains("#[inline]"), "{messages:?}");
    let error = Error::Check { path: "k.ptx".into(), problems };
    assert!(error.to_string().starts_with("k.ptx: 3 problem(s), the first: `my_kernels::helper` can panic"), "{error}");
}

#[test]
fn shared_memory_declarations_are_accepted_and_other_externs_are_not() {
    let uses_them = kernel("tile", "\tmov.u64 %rd1, dyn_smem;\n\tmov.u64 %rd2, tile_smem;");
    let ptx = module_with(&format!(
        ".extern .shared .align 16 .b8 dyn_smem[];\n.shared .align 4 .b8 tile_smem[128];\n{uses_them}"
    ));
    assert_eq!(check_ptx(&ptx, Target::new(75)), []);
    let other = ".extern .global .align 4 .b8 a_static[4];";
    let uncalled = ".extern .func never_called(.param .b64 p);";
    let problems = check_ptx(&module_with(&format!("{other}\n{uncalled}\n")), Target::new(75));
    assert_eq!(problems, [PtxProblem::Extern(other.into()), PtxProblem::Extern(uncalled.into())]);
}

/// `instruction` in a kernel, outside and inside inline assembly as LLVM marks it.
fn in_kernel_and_in_inline_asm(instruction: &str) -> (String, String) {
    let outside = kernel("k", &format!("\t{instruction};"));
    let inside = kernel("k", &format!("\t// begin inline asm\n\t{instruction};\n\t// end inline asm"));
    (module_with(&outside), module_with(&inside))
}

#[test]
fn aligned_barriers_and_collectives_in_inline_asm_are_refused_naming_the_function() {
    let aligned = [
        "bar.sync 0",
        "bar.red.popc.u32 %r1, 0, %p1",
        "barrier.sync.aligned 0",
        "barrier.red.and.aligned.pred %p2, 0, %p1",
    ];
    let divergence_safe = ["barrier.sync 0", "barrier.red.popc.u32 %r1, 0, %p1", "bar.warp.sync -1"];
    let warp = [
        "shfl.sync.bfly.b32 %r2, %r1, 16, 31, -1",
        "vote.sync.ballot.b32 %r2, %p1, -1",
        "match.any.sync.b32 %r2, %r1, -1",
        "redux.sync.add.u32 %r2, %r1, -1",
    ];
    let fine_in_asm = [
        "atom.shared.cta.add.u32 %r2, [%rd1], 1",
        "atom.global.gpu.cas.b32 %r2, [%rd1], %r3, %r4",
        "red.global.add.u32 [%rd1], 1",
        "fence.acq_rel.cta",
        "mov.u32 %r1, %laneid",
    ];
    let one = |ptx: &str| -> PtxProblem {
        let problems = check_ptx(ptx, Target::new(75));
        let [problem] = problems.as_slice() else { panic!("{problems:?}") };
        let message = problem.to_string();
        assert!(message.starts_with("`k`: ") && message.contains("device_support::block"), "{message}");
        problem.clone()
    };
    for instruction in aligned {
        let (outside, inside) = in_kernel_and_in_inline_asm(instruction);
        let problem = one(&outside);
        assert!(
            matches!(problem, PtxProblem::AlignedBarrier { .. }) && problem.to_string().contains("137086"),
            "{problem}"
        );
        assert!(
            matches!(one(&inside), PtxProblem::CollectiveInInlineAsm { .. }),
            "{instruction}: reported once, as inline asm"
        );
    }
    for instruction in divergence_safe.iter().chain(&warp) {
        let (outside, inside) = in_kernel_and_in_inline_asm(instruction);
        assert_eq!(check_ptx(&outside, Target::new(75)), [], "{instruction} from an intrinsic");
        let problem = one(&inside);
        assert!(
            matches!(problem, PtxProblem::CollectiveInInlineAsm { .. }) && problem.to_string().contains("inline asm"),
            "{problem}"
        );
    }
    for instruction in fine_in_asm {
        let (outside, inside) = in_kernel_and_in_inline_asm(instruction);
        assert_eq!(check_ptx(&outside, Target::new(75)), [], "{instruction}");
        assert_eq!(check_ptx(&inside, Target::new(75)), [], "{instruction} in inline asm");
    }
}

#[test]
fn a_kernel_with_a_mangled_name_is_refused_with_the_attribute_to_add() {
    let name = symbol::tests::v0(&["my_kernels", "scale"]);
    let problems = check_ptx(&module_with(&kernel(&name, "")), Target::new(75));
    assert_eq!(problems, [PtxProblem::MangledEntry(name.clone())]);
    let message = problems[0].to_string();
    assert!(message.starts_with("the kernel `my_kernels::scale` has the mangled name `_R"), "{message}");
    assert!(message.ends_with("add #[unsafe(no_mangle)] to it"), "{message}");
    let legacy = "_ZN10my_kernels5scale17h0123456789abcdefE";
    assert_eq!(
        check_ptx(&module_with(&kernel(legacy, "")), Target::new(75)),
        [PtxProblem::MangledEntry(legacy.into())]
    );
}

#[test]
fn a_function_only_declared_or_named_in_a_comment_is_not_defined() {
    let ptx = ".target sm_75
.func declared(.param .b32 p);
// .func commented() {
.visible .entry kernel()
{
\tcall.uni declared, (param0);
\tcall.uni commented, (param0);
}
";
    let problems = check_ptx(ptx, Target::new(75));
    let undefined = |callee: &str| PtxProblem::UndefinedCall { caller: "kernel".into(), callee: callee.into() };
    assert_eq!(problems, [undefined("declared"), undefined("commented")]);
}

#[test]
fn ptxas_is_found_below_a_tools_folder_in_a_bin_folder_only() {
    let root = std::env::temp_dir().join(format!("ptx-builder-find-{}", std::process::id()));
    let tools = root.join(".cuda-tools");
    let crate_dir = root.join("kernels/src");
    std::fs::create_dir_all(tools.join("nvidia/other")).unwrap();
    std::fs::create_dir_all(tools.join("nvidia/cuda_nvcc/bin")).unwrap();
    std::fs::create_dir_all(&crate_dir).unwrap();
    let write_executable = |path: &Path| {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    };
    write_executable(&tools.join("nvidia/other/ptxas"));
    assert_eq!(ptxas::find_below(&tools, "ptxas", 5), None, "a ptxas outside bin/ is not a tool");
    write_executable(&tools.join("nvidia/cuda_nvcc/bin/ptxas"));
    assert_eq!(ptxas::find_below(&tools, "ptxas", 5), Some(tools.join("nvidia/cuda_nvcc/bin/ptxas")));
    assert_eq!(ptxas::find_below(&tools, "ptxas", 2), None, "deeper than asked");
    if std::env::var_os(TOOLS_DIR_VAR).is_none() {
        assert_eq!(find_ptxas(&crate_dir), Some(tools.join("nvidia/cuda_nvcc/bin/ptxas")));
    }
    std::fs::remove_dir_all(&root).unwrap();
}

/// With the project's ptxas (`scripts/install-cuda-tools.sh`), a module it rejects is an
/// error naming ptxas's message; skipped visibly without it, unless `REQUIRE_CUDA_TOOLS`
/// is set (as CI does), as `host`'s tests of the tools do.
#[test]
fn ptxas_rejections_are_build_errors() {
    let found = find_ptxas(Path::new(env!("CARGO_MANIFEST_DIR")));
    let missing = "no ptxas ($BITEXACT_CUDA_TOOLS or .cuda-tools/; scripts/install-cuda-tools.sh)";
    let Some(ptxas) = skip::require_or_skip("REQUIRE_CUDA_TOOLS", found.ok_or(missing)) else { return };
    let dir = std::env::temp_dir().join(format!("ptx-builder-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.ptx");
    std::fs::write(&good, SELF_CONTAINED).unwrap();
    ptxas::assemble(&ptxas, &good, Target::new(75)).expect("ptxas assembles the fixture");
    let bad = dir.join("bad.ptx");
    std::fs::write(&bad, SELF_CONTAINED.replace("\tmov.b32 %r1, 7;", "\tbogus.op %r1;")).unwrap();
    let error = ptxas::assemble(&ptxas, &bad, Target::new(75)).expect_err("ptxas rejects an unknown instruction");
    assert!(matches!(error, Error::Ptxas { .. }), "{error:?}");
    assert!(error.to_string().starts_with("ptxas -arch=sm_75 rejects "), "{error}");
    assert!(error.to_string().contains("error"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_narrow_store_of_a_float_register_fails_the_check() {
    let folded = SELF_CONTAINED.to_string()
        + "
.visible .entry folded()
{
\tfma.rn.f32 \t%r8, %r7, 0f437F0000, 0f4B000000;
\tst.global.b8 \t[%rd12], %r8;
\tret;
}
";
    let problems = check_ptx(&folded, Target::new(75));
    let [PtxProblem::NarrowFloatStore(store)] = problems.as_slice() else { panic!("{problems:?}") };
    assert_eq!((store.kernel.as_str(), store.register.as_str()), ("folded", "%r8"));
    let message = PtxProblem::NarrowFloatStore(store.clone()).to_string();
    assert!(message.contains("st.global.b8 [%rd12], %r8") && message.contains("saturating"), "{message}");
}

#[test]
fn an_io_error_is_in_the_line_and_not_behind_source_too() {
    let cause = std::io::Error::from(std::io::ErrorKind::NotFound);
    let error = Error::Io { action: "running ptxas".into(), error: std::io::Error::from(std::io::ErrorKind::NotFound) };
    assert_eq!(error.to_string(), format!("running ptxas: {cause}"));
    assert!(std::error::Error::source(&error).is_none());
}

#[test]
fn each_failure_is_one_line_with_the_first_message() {
    let compile = Error::Compile {
        module: "k.ptx".into(),
        target: Target::new(75),
        errors: vec!["error[E0425]: x\n  --> a.rs".into()],
    };
    assert_eq!(compile.to_string(), format!("building k.ptx for {NVPTX_TARGET} (sm_75) failed: error[E0425]: x"));
    let ptxas =
        Error::Ptxas { path: "k.ptx".into(), target: Target::new(90), log: "info\nptxas fatal error: bad\n".into() };
    assert_eq!(ptxas.to_string(), "ptxas -arch=sm_90 rejects k.ptx: ptxas fatal error: bad");
    assert_eq!(
        Error::NotInBuildScript("OUT_DIR").to_string(),
        "$OUT_DIR is not set: run the builder from a build script"
    );
}

/// Writes a package `name` in `dir` with `dependencies` (TOML lines) and an empty
/// library; `workspace` is the extra manifest text (a `[workspace]` table or nothing).
fn write_package(dir: &Path, name: &str, dependencies: &str, workspace: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    let manifest =
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n{dependencies}\n{workspace}");
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
}

/// A kernel crate in a workspace of its own, with a path dependency in its workspace
/// that depends on one in another workspace (through `workspace = true`), which depends
/// on a third; plus a build-dependency and a dev-dependency. Every path dependency but
/// the dev-dependency is watched, the crate itself is not listed.
#[test]
fn every_path_dependency_is_watched_transitively_across_workspaces_but_dev_dependencies() {
    let root = std::env::temp_dir().join(format!("ptx-builder-watch-{}", std::process::id()));
    let (kernels, near, build, dev) =
        (root.join("app/kernels"), root.join("app/near"), root.join("app/build"), root.join("app/dev"));
    let (far, farther) = (root.join("lib/far"), root.join("lib/farther"));
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(
        root.join("app/Cargo.toml"),
        "[workspace]\nmembers = [\"kernels\", \"near\", \"build\", \"dev\"]\nresolver = \"3\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(
        root.join("lib/Cargo.toml"),
        "[workspace]\nmembers = [\"far\", \"farther\"]\nresolver = \"3\"\n[workspace.dependencies]\nfarther = { path = \"farther\" }\n",
    )
    .unwrap();
    write_package(
        &kernels,
        "kernels",
        "[dependencies]\nnear = { path = \"../near\" }\n[build-dependencies]\nbuild = { path = \"../build\" }\n[dev-dependencies]\ndev = { path = \"../dev\" }",
        "",
    );
    write_package(&near, "near", "[dependencies]\nfar = { path = \"../../lib/far\" }", "");
    write_package(&build, "build", "", "");
    write_package(&dev, "dev", "", "");
    write_package(&far, "far", "[dependencies]\nfarther.workspace = true", "");
    write_package(&farther, "farther", "", "");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let watched = watch::path_dependencies(&cargo, &kernels.join("../kernels")).unwrap_or_else(|e| panic!("{e}"));
    let canonical = |paths: &[PathBuf]| -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = paths.iter().map(|p| p.canonicalize().unwrap()).collect();
        paths.sort();
        paths
    };
    assert_eq!(canonical(&watched), canonical(&[near, build, far, farther]));
    let missing = watch::path_dependencies(&cargo, &root.join("nowhere")).expect_err("no crate there");
    assert!(missing.to_string().starts_with("cargo metadata --manifest-path "), "{missing}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn what_a_crate_outside_the_workspace_misses_gets_a_hint() {
    let compile = |error: &str| Error::Compile {
        module: "k.ptx".into(),
        target: Target::new(75),
        errors: vec![error.into(), "error: could not compile `k`".into()],
    };
    let stable = compile(
        "error: the `-Z` flag is only accepted on the nightly channel of Cargo, but this is the `stable` channel",
    );
    assert!(
        stable
            .to_string()
            .contains("; hint: building for nvptx64 needs a nightly toolchain: put a rust-toolchain.toml"),
        "{stable}"
    );
    let with_std = compile("error[E0463]: can't find crate for `std`");
    assert!(
        with_std.to_string().contains("; hint: the kernel crate and every crate it depends on must be #![no_std]"),
        "{with_std}"
    );
    let other = compile("error[E0425]: cannot find value `y` in this scope");
    assert!(!other.to_string().contains("hint"), "{other}");
}

/// A kernel crate in a folder below another workspace's root, listed in neither its
/// members nor its exclude: cargo refuses it, and the message says what to add.
#[test]
fn a_kernel_crate_inside_a_foreign_workspace_is_told_what_to_add() {
    let root = std::env::temp_dir().join(format!("ptx-builder-foreign-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
    write_package(&root.join("kernels"), "kernels", "", "");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let error = watch::path_dependencies(&cargo, &root.join("kernels")).expect_err("cargo refuses the crate");
    let message = error.to_string();
    assert!(message.contains("believes it's in a workspace when it's not"), "{message}");
    assert!(message.contains("; hint: the kernel crate lies inside another workspace's folder"), "{message}");
    std::fs::remove_dir_all(&root).unwrap();
}
