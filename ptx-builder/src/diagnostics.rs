//! The warnings and errors in a nested cargo's stderr, for passing them on.

/// The diagnostics of one build's stderr, each a block of lines: its first line
/// (`warning: ...`, `error[E0425]: ...`) and what follows up to the next blank line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// The warnings, without cargo's "generated N warnings" summaries and "build failed"
    /// notes.
    pub warnings: Vec<String>,
    /// The errors, cargo's "could not compile" summaries after the compiler's own.
    pub errors: Vec<String>,
}

/// Splits cargo's stderr (uncoloured) into its diagnostics. Progress lines
/// (`Compiling ...`, `Finished ...`) and anything else outside a diagnostic are dropped.
pub fn split_diagnostics(stderr: &str) -> Diagnostics {
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut open = false;
    for line in stderr.lines() {
        if line.starts_with("warning") || line.starts_with("error") {
            blocks.push(vec![line]);
            open = true;
        } else if line.trim().is_empty() {
            open = false;
        } else if open && let Some(block) = blocks.last_mut() {
            block.push(line);
        }
    }
    let mut found = Diagnostics::default();
    let mut summaries = Vec::new();
    for block in blocks {
        let text = block.join("\n");
        if block[0].starts_with("warning") {
            if !is_warning_summary(block[0]) {
                found.warnings.push(text);
            }
        } else if block[0].contains("could not compile") {
            summaries.push(text);
        } else {
            found.errors.push(text);
        }
    }
    found.errors.extend(summaries);
    found
}

/// Cargo's own lines that start like a warning: ``warning: `crate` (lib) generated 2
/// warnings`` (possibly with "(run `cargo fix` ...)" after it), and "warning: build
/// failed, waiting for other jobs to finish...".
fn is_warning_summary(line: &str) -> bool {
    (line.contains(") generated ") && line.contains(" warning")) || line.starts_with("warning: build failed")
}

/// What a kernel crate outside this repository's workspace needs, as docs/own-kernel.md
/// lists it, keyed by the message cargo or rustc prints when it is missing.
const HINTS: [(&str, &str); 3] = [
    (
        "only accepted on the nightly channel",
        "building for nvptx64 needs a nightly toolchain: put a rust-toolchain.toml pinned like bitexact's \
         (channel = \"nightly-2026-10-01\", components = [\"rust-src\", \"llvm-tools\"]) at the root of the \
         workspace you build from (docs/own-kernel.md)",
    ),
    (
        "believes it's in a workspace when it's not",
        "the kernel crate lies inside another workspace's folder: list it in that workspace's members or \
         exclude, or give it a [workspace] table of its own (docs/own-kernel.md)",
    ),
    (
        "can't find crate for `std`",
        "the kernel crate and every crate it depends on must be #![no_std] (the kernel crate with \
         device_support::trap_on_panic!())",
    ),
];

/// `; hint: …` for the first message in `text` that says something a kernel crate needs
/// is missing (`HINTS`), else nothing.
pub fn hint(text: &str) -> String {
    HINTS.iter().find(|(says, _)| text.contains(says)).map(|(_, hint)| format!("; hint: {hint}")).unwrap_or_default()
}
