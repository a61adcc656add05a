//! The warnings and errors in a nested cargo's stderr, for passing them on.

/// The diagnostics of one build's stderr, each a block of lines: its first line
/// (`warning: ...`, `error[E0425]: ...`) and what follows up to the next blank line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// The warnings, without cargo's "generated N warnings" summaries.
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

/// ``warning: `crate` (lib) generated 2 warnings`` (possibly with "(run `cargo fix`
/// ...)" after it).
fn is_warning_summary(line: &str) -> bool {
    line.contains(") generated ") && line.contains(" warning")
}
