//! Whether an error reports each cause once along its `source()` chain: the check that
//! every wing's error tests and the CLI's share (a wing cannot see another's `cfg(test)`
//! items).

/// The messages of `error`'s `source()` chain that the message before it already
/// contains: what a chain printer (anyhow's `{:#}`, eyre) would print twice. Empty for
/// an error that shows each cause once.
pub fn repeated_causes(error: &dyn std::error::Error) -> Vec<String> {
    let mut repeated = Vec::new();
    let mut outer = error;
    while let Some(inner) = outer.source() {
        let text = inner.to_string();
        if outer.to_string().contains(&text) {
            repeated.push(text);
        }
        outer = inner;
    }
    repeated
}
