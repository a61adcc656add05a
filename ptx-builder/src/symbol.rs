//! Rust symbol names as a PTX module spells them, made readable for messages.
//!
//! rustc mangles every function without `#[unsafe(no_mangle)]` (`_R…` in the v0 scheme,
//! `_ZN…E` in the legacy one), and LLVM's NVPTX back end replaces each `.`, which a PTX
//! name may not hold, with `_$_`: [`demangled`] undoes both.

/// Whether `name` is a mangled Rust symbol (v0 `_R…` or legacy `_ZN…`, with LLVM's
/// `_$_` for `.`) that demangles: a name of one's own that merely starts with `_R`
/// (`_Reduce`) is not one.
pub fn is_mangled(name: &str) -> bool {
    (name.starts_with("_R") || name.starts_with("_ZN"))
        && rustc_demangle::try_demangle(&name.replace("_$_", ".")).is_ok()
}

/// The Rust path of a mangled symbol (`core::panicking::panic`, without its hash or
/// crate disambiguator); any other name as it is.
pub fn demangled(name: &str) -> String {
    let restored = name.replace("_$_", ".");
    match rustc_demangle::try_demangle(&restored) {
        Ok(symbol) => format!("{symbol:#}"),
        Err(_) => name.to_string(),
    }
}

/// The crates whose panic machinery a call may reach.
const RUNTIME_CRATES: [&str; 3] = ["core", "alloc", "std"];

/// Whether `name` (a PTX function name) is part of the panic machinery of Rust's
/// runtime crates: a function of `core`, `alloc` or `std` with `panic` in its path
/// (`core::panicking::panic_fmt`, `core::cell::panic_already_borrowed`), in `fmt`
/// (`core::fmt::write`), or named `…_fail`/`…_failed` (`core::slice::index::slice_index_fail`,
/// `core::option::unwrap_failed`); or the panic handler's own symbol, `rust_begin_unwind`.
pub fn is_panic_machinery(name: &str) -> bool {
    if name == "rust_begin_unwind" || name == "rust_panic" {
        return true;
    }
    let path = demangled(name);
    let segments: Vec<&str> = path.split("::").map(|s| s.trim_start_matches('<')).collect();
    let Some((function, modules)) = segments.split_last() else { return false };
    let in_runtime = modules.first().is_some_and(|krate| RUNTIME_CRATES.contains(krate));
    in_runtime
        && (segments.iter().any(|s| s.contains("panic"))
            || modules.contains(&"fmt")
            || function.ends_with("_fail")
            || function.ends_with("_failed"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The v0 mangling of the function `path` (crate first), as rustc writes it:
    /// `_R` `Nv` (a value) inside `Nt`s (modules) around the crate root `C`, with a crate
    /// disambiguator `s…_`.
    pub(crate) fn v0(path: &[&str]) -> String {
        let (krate, rest) = path.split_first().expect("a crate");
        let mut symbol = String::from("_R");
        if !rest.is_empty() {
            symbol += "Nv";
            symbol += &"Nt".repeat(rest.len() - 1);
        }
        symbol += &format!("Cs5zbBcx8EDkU_{}{krate}", krate.len());
        for segment in rest {
            symbol += &format!("{}{segment}", segment.len());
        }
        symbol
    }

    /// The legacy mangling of `path`, with a hash, and with its `.`s as LLVM's NVPTX
    /// back end rewrites them.
    fn legacy(path: &[&str]) -> String {
        let segments: String = path.iter().map(|s| format!("{}{s}", s.len())).collect();
        format!("_ZN{segments}17h0123456789abcdefE").replace('.', "_$_")
    }

    #[test]
    fn both_manglings_demangle_to_the_path() {
        for path in [&["core", "panicking", "panic"][..], &["my_kernels", "helper"], &["k"]] {
            assert_eq!(demangled(&v0(path)), path.join("::"));
            assert!(is_mangled(&v0(path)));
        }
        assert_eq!(demangled(&legacy(&["core", "fmt", "write"])), "core::fmt::write");
        assert_eq!(demangled(&legacy(&["a", "b$LT$u32$GT$"])), "a::b<u32>");
        assert_eq!(demangled("f16_to_f32_checked_stream_count"), "f16_to_f32_checked_stream_count");
        assert!(!is_mangled("f16_to_f32_checked_stream_count"));
        assert!(is_mangled(&legacy(&["core", "fmt", "write"])));
        // Unmangled names of one's own that start like a mangled one.
        for name in ["_Reduce", "_R", "_ZNope", "_RNvreduce"] {
            assert!(!is_mangled(name), "{name}");
        }
    }

    #[test]
    fn the_panic_machinery_is_the_runtime_crates_panic_fmt_and_fail_functions() {
        let panicking = [
            &["core", "panicking", "panic"][..],
            &["core", "panicking", "panic_bounds_check"],
            &["core", "slice", "index", "slice_index_fail"],
            &["core", "option", "unwrap_failed"],
            &["core", "result", "unwrap_failed"],
            &["core", "fmt", "write"],
            &["core", "cell", "panic_already_borrowed"],
            &["alloc", "alloc", "handle_alloc_error", "rt_panic"],
        ];
        for path in panicking {
            assert!(is_panic_machinery(&v0(path)), "{}", path.join("::"));
            assert!(is_panic_machinery(&legacy(path)), "{}", path.join("::"));
        }
        let not_panicking =
            [&["core", "num", "f32", "max"][..], &["my_kernels", "panic_free_helper"], &["my_kernels", "fmt", "x"]];
        for path in not_panicking {
            assert!(!is_panic_machinery(&v0(path)), "{}", path.join("::"));
        }
        assert!(is_panic_machinery("rust_begin_unwind"));
        assert!(!is_panic_machinery("helper"));
    }
}
