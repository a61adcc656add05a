//! How the file tools' errors read: an I/O error as a short lowercase phrase, any
//! message on one line. The error types of [`crate`] render I/O errors, and the
//! messages they put after a path, through these, so that the CLI prints each error as
//! one line.

/// `error` as a short lowercase phrase ("no such file or directory").
pub(crate) fn io_message(error: &std::io::Error) -> String {
    let text = error.to_string();
    // "No such file or directory (os error 2)" → "no such file or directory"
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

/// `message` on one line: line breaks (which some decoders' messages contain) become
/// "; ".
pub(crate) fn one_line(message: impl std::fmt::Display) -> String {
    message.to_string().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
