//! The `.npy` header: magic, version, length, and the Python dict literal NumPy writes
//! (`{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`), parsed in one pass.
//!
//! # Why a parser of our own
//!
//! `npyz` hands the header to a general Python-literal grammar that backtracks: a
//! 16 KB header of `{`×8, `1,`×8180, `1`, `}`×8 took 68 s to refuse, and a well-formed
//! header with an extra key holding a 7-deep nest of sets 17.5 s to accept; no nesting
//! limit bounds that, because `{` may open a dict or a set and the cost also grows with
//! the width. This parser is LL(1): it decides from the next byte what comes, never backs
//! up, and looks at each byte a bounded number of times. It counts those looks
//! ([`Parsed::steps`]); tests and the fuzz target check [`STEPS_PER_BYTE`] on adversarial
//! and random headers of growing size.
//!
//! # What is accepted
//!
//! A dict with the keys `'descr'` (a string; or a list, NumPy's structured dtype, which
//! is skipped like any other value and kept as text: `scan` lists such arrays as not
//! scanned), `'fortran_order'` (`True` / `False`) and `'shape'` (a tuple or list of
//! non-negative decimal integers, with Python 2's `L` suffix allowed), each once, and any
//! other keys, whose values are skipped: strings, numbers, `True`, `False`, `None`,
//! tuples, lists, dicts and sets nested at most [`MAX_NPY_NESTING`] deep. Whitespace as
//! in Python. What is accepted means here what it means to NumPy's reader
//! (`ast.literal_eval`, after removing Python 2's `L`); beyond that, only a list as the
//! shape and loosely checked numbers in skipped values are accepted. What this parser
//! does not understand (string prefixes, adjacent strings, escapes in keys or in
//! `'descr'`, comments, line continuations) is refused, and so are known keys given
//! twice, which Python would resolve silently: a file cannot be read as one shape here
//! and as another by NumPy.

/// Largest `.npy` header text accepted, in bytes. NumPy itself refuses headers over
/// 10,000 bytes by default; `np.save` writes about 128 for a plain array.
pub const MAX_NPY_HEADER: u64 = 16 << 10;
/// Deepest bracket nesting accepted in an `.npy` header, the dict itself included. A
/// plain array's header nests 2 deep. The parser's work does not depend on it (it is
/// linear whatever the nesting); the limit bounds its recursion.
pub const MAX_NPY_NESTING: usize = 8;
/// Upper bound of [`Parsed::steps`] per byte of header text (plus one, for the empty
/// text). Each byte is looked at a bounded number of times: by the whitespace skip before
/// a token, the check for a closing bracket, the dispatch on a value's first byte, and
/// the token's own loop, never again once consumed. The densest case is `1,` repeated in
/// a sequence: 9 looks per 2 bytes.
pub const STEPS_PER_BYTE: u64 = 5;

/// The first bytes of every `.npy` file.
pub(crate) const NPY_MAGIC: &[u8] = b"\x93NUMPY";
/// Bytes before the header text in version 1.0: magic, version, u16 length.
const PREFIX_V1: usize = 10;
/// Bytes before the header text in versions 2.0 and 3.0: magic, version, u32 length.
const PREFIX_V2: usize = 12;
/// The longest prefix before the header text.
pub(crate) const MAX_NPY_PREFIX: u64 = PREFIX_V2 as u64;
/// Bytes at the start of an `.npy` file that hold the longest header accepted: [`read`]
/// needs no more.
pub(crate) const MAX_NPY_HEAD_BYTES: u64 = MAX_NPY_PREFIX + MAX_NPY_HEADER;

/// What an `.npy` header says about its array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The dtype.
    pub descr: Descr,
    /// Column-major storage.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<u64>,
}

/// An `.npy` header's `'descr'`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Descr {
    /// A type string (`<f4`, `|b1`, ...), as written.
    Plain(String),
    /// A structured dtype: the list's text as written, whitespace runs made one space.
    Structured(String),
}

/// The result of parsing a header's text, and the work it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The header, or why it is refused.
    pub header: Result<Header, NpySyntaxError>,
    /// Bytes looked at: at most [`STEPS_PER_BYTE`] × (text length + 1).
    pub steps: u64,
}

/// The keys of an `.npy` header that are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NpyHeaderKey {
    /// `'descr'`.
    Descr,
    /// `'fortran_order'`.
    FortranOrder,
    /// `'shape'`.
    Shape,
}

impl NpyHeaderKey {
    /// The key as written (`descr`, `fortran_order`, `shape`).
    pub const fn name(self) -> &'static str {
        match self {
            NpyHeaderKey::Descr => "descr",
            NpyHeaderKey::FortranOrder => "fortran_order",
            NpyHeaderKey::Shape => "shape",
        }
    }
}

/// Why a header's text is refused by [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpySyntaxError {
    /// The text breaks the accepted grammar at byte `at` (of the text).
    #[error("{problem} at byte {at}")]
    At {
        /// Byte offset in the header text.
        at: usize,
        /// What is wrong there.
        problem: NpySyntaxProblem,
    },
    /// A known key is missing.
    #[error("no '{}' key", .0.name())]
    MissingKey(NpyHeaderKey),
    /// A known key is given twice.
    #[error("duplicate key '{}'", .0.name())]
    DuplicateKey(NpyHeaderKey),
}

/// What is wrong at a byte of a header's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpySyntaxProblem {
    /// The text does not start with `{`.
    #[error("expected a dict")]
    ExpectedDict,
    /// Something follows the dict's `}`.
    #[error("unexpected text after the dict")]
    TextAfterDict,
    /// A dict key is not a plain quoted string.
    #[error("expected a string key")]
    ExpectedKey,
    /// No `:` after a key of the header dict.
    #[error("expected ':' after a key")]
    ExpectedColonAfterKey,
    /// `'fortran_order'` is `None`.
    #[error("'fortran_order' must be True or False")]
    FortranOrderNotBool,
    /// `'descr'` is a string of bytes that are not UTF-8.
    #[error("'descr' is not UTF-8")]
    DescrNotUtf8,
    /// `'descr'` is neither a string nor a list.
    #[error("'descr' must be a string or a list")]
    DescrKind,
    /// `'shape'` is neither a tuple nor a list.
    #[error("'shape' must be a tuple of integers")]
    ShapeKind,
    /// `'shape'` is `(n)`, an integer in parentheses.
    #[error("'shape' must be a tuple of integers, not a parenthesised integer")]
    ShapeParenthesisedInteger,
    /// A dimension with a leading zero.
    #[error("leading zero in a dimension")]
    LeadingZero,
    /// A dimension over `u64::MAX`.
    #[error("dimension larger than 2^64 - 1")]
    DimensionOverflow,
    /// A dimension that is not a non-negative decimal integer.
    #[error("expected a non-negative integer dimension")]
    ExpectedDimension,
    /// Brackets nested deeper than [`MAX_NPY_NESTING`].
    #[error("brackets nested deeper than {MAX_NPY_NESTING}")]
    TooDeep,
    /// Neither `,` nor the closing bracket after an item.
    #[error("expected ',' or '{0}'")]
    ExpectedCommaOr(char),
    /// No value where one must be.
    #[error("expected a value")]
    ExpectedValue,
    /// No `:` after a key of a nested dict.
    #[error("expected ':' in a dict")]
    ExpectedColonInDict,
    /// No quote where a string must start.
    #[error("expected a string")]
    ExpectedString,
    /// A string not closed on its line.
    #[error("unterminated string")]
    UnterminatedString,
    /// A backslash escape in a key or in `'descr'`.
    #[error("escape sequence in a key or in 'descr'")]
    EscapeInKey,
    /// A sign not followed by a digit or `.`.
    #[error("expected a number")]
    ExpectedNumber,
    /// A word other than `True`, `False` and `None`.
    #[error("expected True, False or None")]
    ExpectedWord,
}

/// Why the start of an `.npy` file is refused by [`read`] or [`header_text`]. A syntax
/// error's text is in the message, not behind `source()`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpyHeaderError {
    /// The bytes do not start with `NPY_MAGIC`.
    #[error("not an NPY file (wrong magic)")]
    WrongMagic,
    /// A format version other than 1.0, 2.0 and 3.0.
    #[error("unsupported NPY version {major}.{minor}")]
    UnsupportedVersion {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// The bytes end before the header length field does.
    #[error("truncated header: {len} bytes")]
    NoLength {
        /// Bytes available.
        len: usize,
    },
    /// The length field exceeds [`MAX_NPY_HEADER`].
    #[error("oversized header: {len} bytes (limit {MAX_NPY_HEADER})")]
    Oversized {
        /// Bytes claimed.
        len: u64,
    },
    /// The bytes end before the header text does.
    #[error("truncated header: claims {claimed} bytes, file holds {available}")]
    Truncated {
        /// Bytes of header text claimed.
        claimed: u64,
        /// Bytes available, the prefix included.
        available: usize,
    },
    /// The header text is refused by [`parse`].
    #[error("invalid header: {0}")]
    Invalid(NpySyntaxError),
}

impl From<NpySyntaxError> for NpyHeaderError {
    fn from(error: NpySyntaxError) -> NpyHeaderError {
        NpyHeaderError::Invalid(error)
    }
}

/// Reads the header of an `.npy` file's `bytes` (the file, or a prefix holding at least
/// its header): returns it and the offset where the data starts.
pub fn read(bytes: &[u8]) -> Result<(Header, usize), NpyHeaderError> {
    let text = header_text(bytes)?;
    let data_start = text.end;
    let header = parse(&bytes[text]).header?;
    Ok((header, data_start))
}

/// Where the header text of `bytes` lies, after checking the magic, the version and the
/// length field against [`MAX_NPY_HEADER`] and the bytes available.
pub fn header_text(bytes: &[u8]) -> Result<std::ops::Range<usize>, NpyHeaderError> {
    if !bytes.starts_with(NPY_MAGIC) {
        return Err(NpyHeaderError::WrongMagic);
    }
    // Version 1.0 has a u16 length at offset 8, versions 2.0 and 3.0 a u32.
    let (text_start, length) = match bytes.get(6..8) {
        Some([1, 0]) => (PREFIX_V1, bytes.get(8..PREFIX_V1).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])))),
        Some([2 | 3, 0]) => {
            (PREFIX_V2, bytes.get(8..PREFIX_V2).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))))
        }
        Some(&[major, minor]) => return Err(NpyHeaderError::UnsupportedVersion { major, minor }),
        _ => (0, None),
    };
    let Some(length) = length else {
        return Err(NpyHeaderError::NoLength { len: bytes.len() });
    };
    if length > MAX_NPY_HEADER {
        return Err(NpyHeaderError::Oversized { len: length });
    }
    let end = text_start + length as usize;
    if end > bytes.len() {
        return Err(NpyHeaderError::Truncated { claimed: length, available: bytes.len() });
    }
    Ok(text_start..end)
}

/// Parses a header's text (what follows the length field), counting the work.
pub fn parse(text: &[u8]) -> Parsed {
    let mut parser = Parser { text, pos: 0, steps: 0 };
    let header = parser.header();
    Parsed { header, steps: parser.steps }
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    steps: u64,
}

/// The known keys' values, as found so far.
#[derive(Default)]
struct Fields {
    descr: Option<Descr>,
    fortran_order: Option<bool>,
    shape: Option<Vec<u64>>,
}

impl Parser<'_> {
    /// The next byte, not consumed: the only way the parser reads the text (but for
    /// `word` comparing the few bytes it has just consumed, and `descr` copying once the
    /// structured dtype it has just skipped), so `steps` counts every look. Each loop
    /// below either consumes the byte it peeked or ends.
    fn peek(&mut self) -> Option<u8> {
        self.steps += 1;
        self.text.get(self.pos).copied()
    }

    /// The next byte, consumed.
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek();
        self.pos += usize::from(byte.is_some());
        byte
    }

    /// `problem` at the current position.
    fn error(&self, problem: NpySyntaxProblem) -> NpySyntaxError {
        NpySyntaxError::At { at: self.pos, problem }
    }

    /// Python's whitespace between tokens (form feed included).
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0C') = self.peek() {
            self.pos += 1;
        }
    }

    fn header(&mut self) -> Result<Header, NpySyntaxError> {
        self.skip_whitespace();
        if self.next() != Some(b'{') {
            return Err(self.error(NpySyntaxProblem::ExpectedDict));
        }
        let mut fields = Fields::default();
        self.items(b'}', 1, |parser| parser.entry(&mut fields))?;
        self.skip_whitespace();
        if self.peek().is_some() {
            return Err(self.error(NpySyntaxProblem::TextAfterDict));
        }
        use NpySyntaxError::MissingKey;
        Ok(Header {
            descr: fields.descr.ok_or(MissingKey(NpyHeaderKey::Descr))?,
            fortran_order: fields.fortran_order.ok_or(MissingKey(NpyHeaderKey::FortranOrder))?,
            shape: fields.shape.ok_or(MissingKey(NpyHeaderKey::Shape))?,
        })
    }

    /// One `key: value` of the header dict.
    fn entry(&mut self, fields: &mut Fields) -> Result<(), NpySyntaxError> {
        let key_at = self.pos;
        let key = self
            .string(true)
            .map_err(|e| if self.pos == key_at { self.error(NpySyntaxProblem::ExpectedKey) } else { e })?;
        self.skip_whitespace();
        if self.next() != Some(b':') {
            return Err(self.error(NpySyntaxProblem::ExpectedColonAfterKey));
        }
        self.skip_whitespace();
        use NpySyntaxError::DuplicateKey;
        match key.as_slice() {
            b"descr" => {
                if fields.descr.is_some() {
                    return Err(DuplicateKey(NpyHeaderKey::Descr));
                }
                fields.descr = Some(self.descr()?);
            }
            b"fortran_order" => {
                let value = match self.word()? {
                    Word::True => true,
                    Word::False => false,
                    Word::None => return Err(self.error(NpySyntaxProblem::FortranOrderNotBool)),
                };
                if fields.fortran_order.replace(value).is_some() {
                    return Err(DuplicateKey(NpyHeaderKey::FortranOrder));
                }
            }
            b"shape" => {
                let shape = self.shape()?;
                if fields.shape.replace(shape).is_some() {
                    return Err(DuplicateKey(NpyHeaderKey::Shape));
                }
            }
            _ => self.value(2)?,
        }
        Ok(())
    }

    fn descr(&mut self) -> Result<Descr, NpySyntaxError> {
        match self.peek() {
            Some(b'\'' | b'"') => {
                let bytes = self.string(true)?;
                String::from_utf8(bytes).map(Descr::Plain).map_err(|_| self.error(NpySyntaxProblem::DescrNotUtf8))
            }
            Some(b'[') => {
                let start = self.pos;
                self.value(2)?;
                let text = String::from_utf8_lossy(&self.text[start..self.pos]);
                Ok(Descr::Structured(text.split_ascii_whitespace().collect::<Vec<_>>().join(" ")))
            }
            _ => Err(self.error(NpySyntaxProblem::DescrKind)),
        }
    }

    /// A tuple or list of dimensions. `(3)` is the integer 3 in Python, not a tuple.
    fn shape(&mut self) -> Result<Vec<u64>, NpySyntaxError> {
        let (open, close) = match self.peek() {
            Some(b'(') => (b'(', b')'),
            Some(b'[') => (b'[', b']'),
            _ => return Err(self.error(NpySyntaxProblem::ShapeKind)),
        };
        self.pos += 1;
        let mut shape = Vec::new();
        let mut closed_after_comma = true;
        self.items(close, 2, |parser| {
            shape.push(parser.dimension()?);
            parser.skip_whitespace();
            closed_after_comma = parser.peek() == Some(b',');
            Ok(())
        })?;
        if open == b'(' && shape.len() == 1 && !closed_after_comma {
            return Err(self.error(NpySyntaxProblem::ShapeParenthesisedInteger));
        }
        Ok(shape)
    }

    /// A non-negative decimal integer that fits in a u64.
    fn dimension(&mut self) -> Result<u64, NpySyntaxError> {
        let start = self.pos;
        let mut value = 0u64;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            if self.pos == start + 1 && value == 0 {
                return Err(self.error(NpySyntaxProblem::LeadingZero));
            }
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(digit - b'0')))
                .ok_or_else(|| self.error(NpySyntaxProblem::DimensionOverflow))?;
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.error(NpySyntaxProblem::ExpectedDimension));
        }
        if let Some(b'L' | b'l') = self.peek() {
            self.pos += 1; // Python 2's long suffix, which NumPy's reader also accepts
        }
        Ok(value)
    }

    /// The items of a tuple, list, set or dict up to `close` (the opening bracket already
    /// consumed), separated by commas, a trailing comma allowed; `item` parses one.
    fn items(
        &mut self,
        close: u8,
        depth: usize,
        mut item: impl FnMut(&mut Self) -> Result<(), NpySyntaxError>,
    ) -> Result<(), NpySyntaxError> {
        if depth > MAX_NPY_NESTING {
            return Err(self.error(NpySyntaxProblem::TooDeep));
        }
        loop {
            self.skip_whitespace();
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(());
            }
            item(self)?;
            if self.end_of_item(close)? {
                return Ok(());
            }
        }
    }

    /// After an item: `,` (returns `false`) or `close` (consumed; returns `true`).
    fn end_of_item(&mut self, close: u8) -> Result<bool, NpySyntaxError> {
        self.skip_whitespace();
        match self.next() {
            Some(b',') => Ok(false),
            Some(b) if b == close => Ok(true),
            _ => Err(self.error(NpySyntaxProblem::ExpectedCommaOr(close as char))),
        }
    }

    /// Skips one value nested at `depth` (the header dict is depth 1).
    fn value(&mut self, depth: usize) -> Result<(), NpySyntaxError> {
        match self.peek() {
            Some(b'\'' | b'"') => self.string(false).map(drop),
            Some(b'(') => self.sequence(b')', depth),
            Some(b'[') => self.sequence(b']', depth),
            Some(b'{') => self.dict_or_set(depth),
            Some(b'0'..=b'9' | b'.' | b'-' | b'+') => self.number(),
            Some(b'A'..=b'Z' | b'a'..=b'z') => self.word().map(drop),
            _ => Err(self.error(NpySyntaxProblem::ExpectedValue)),
        }
    }

    fn sequence(&mut self, close: u8, depth: usize) -> Result<(), NpySyntaxError> {
        self.pos += 1;
        self.items(close, depth, |parser| parser.value(depth + 1))
    }

    /// `{}` (a dict), `{k: v, ...}` or `{v, ...}`: which one is decided by what follows
    /// the first item, so nothing is parsed twice.
    fn dict_or_set(&mut self, depth: usize) -> Result<(), NpySyntaxError> {
        self.pos += 1;
        if depth > MAX_NPY_NESTING {
            return Err(self.error(NpySyntaxProblem::TooDeep));
        }
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        self.value(depth + 1)?;
        self.skip_whitespace();
        let is_dict = self.peek() == Some(b':');
        let pair = |parser: &mut Self| {
            parser.skip_whitespace();
            if parser.next() != Some(b':') {
                return Err(parser.error(NpySyntaxProblem::ExpectedColonInDict));
            }
            parser.skip_whitespace();
            parser.value(depth + 1)
        };
        if is_dict {
            pair(self)?;
        }
        if self.end_of_item(b'}')? {
            return Ok(());
        }
        self.items(b'}', depth, |parser| {
            parser.value(depth + 1)?;
            if is_dict { pair(parser) } else { Ok(()) }
        })
    }

    /// A quoted string without prefix; its bytes if `keep`. A backslash escape is
    /// refused when the bytes are kept (keys and `descr` are compared as written, so an
    /// escape could make them mean one thing here and another to Python) and skipped
    /// otherwise.
    fn string(&mut self, keep: bool) -> Result<Vec<u8>, NpySyntaxError> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.error(NpySyntaxProblem::ExpectedString)),
        };
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.next() {
                Some(b) if b == quote => return Ok(bytes),
                None | Some(b'\n' | b'\r') => return Err(self.error(NpySyntaxProblem::UnterminatedString)),
                Some(b'\\') if keep => return Err(self.error(NpySyntaxProblem::EscapeInKey)),
                Some(b'\\') => {
                    if self.next().is_none() {
                        return Err(self.error(NpySyntaxProblem::UnterminatedString));
                    }
                }
                Some(b) if keep => bytes.push(b),
                Some(_) => {}
            }
        }
    }

    /// A number token (int, float, with exponent), lenient on its exact form: only ever
    /// skipped.
    fn number(&mut self) -> Result<(), NpySyntaxError> {
        if let Some(b'-' | b'+') = self.peek() {
            self.pos += 1;
        }
        if !matches!(self.peek(), Some(b'0'..=b'9' | b'.')) {
            return Err(self.error(NpySyntaxProblem::ExpectedNumber));
        }
        let mut previous = 0u8;
        loop {
            match self.peek() {
                Some(b @ (b'0'..=b'9' | b'.' | b'_' | b'a'..=b'z' | b'A'..=b'Z')) => previous = b,
                Some(b'-' | b'+') if matches!(previous, b'e' | b'E') => previous = b'+',
                _ => return Ok(()),
            }
            self.pos += 1;
        }
    }

    /// `True`, `False` or `None`.
    fn word(&mut self) -> Result<Word, NpySyntaxError> {
        let start = self.pos;
        while let Some(b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_') = self.peek() {
            self.pos += 1;
        }
        match &self.text[start..self.pos] {
            b"True" => Ok(Word::True),
            b"False" => Ok(Word::False),
            b"None" => Ok(Word::None),
            _ => {
                self.pos = start;
                Err(self.error(NpySyntaxProblem::ExpectedWord))
            }
        }
    }
}

enum Word {
    True,
    False,
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Result<Header, NpySyntaxError> {
        parse(text.as_bytes()).header
    }

    fn plain(descr: &str, fortran_order: bool, shape: &[u64]) -> Header {
        Header { descr: Descr::Plain(descr.into()), fortran_order, shape: shape.to_vec() }
    }

    #[test]
    fn what_numpy_and_others_write_is_accepted() {
        for (text, want) in [
            // np.save, padded with spaces to a multiple of 64 and ended by a newline
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }          \n", plain("<f4", false, &[3, 4])),
            ("{'descr': '|b1', 'fortran_order': True, 'shape': (5,), }\n", plain("|b1", true, &[5])),
            ("{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n", plain("<f8", false, &[])),
            // Python 2's NumPy: long suffixes
            ("{'descr': '<f2', 'fortran_order': False, 'shape': (2L, 3L), }\n", plain("<f2", false, &[2, 3])),
            // other writers: a list, double quotes, another key order, no trailing comma
            ("{\"shape\": [7], \"fortran_order\": False, \"descr\": \">f4\"}", plain(">f4", false, &[7])),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (0,)}", plain("<f4", false, &[0])),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551615,)}",
                plain("<f4", false, &[u64::MAX]),
            ),
            // a structured dtype, kept as text on one line
            (
                "{'descr': [('a', '<f4'),\n  ('b', '<i4', (2,))], 'fortran_order': False, 'shape': (3,), }",
                Header {
                    descr: Descr::Structured("[('a', '<f4'), ('b', '<i4', (2,))]".into()),
                    fortran_order: false,
                    shape: vec![3],
                },
            ),
            // extra keys, skipped whatever they hold
            (
                "{'descr': '<f4', 'x': {1: [2.5e-3, -1, None], 'a\\'b': {(1, 2), \"q\"}}, 'y': {}, \
                 'fortran_order': False, 'shape': (1,)}",
                plain("<f4", false, &[1]),
            ),
        ] {
            assert_eq!(header(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn what_the_parser_does_not_understand_is_refused() {
        let known = "'descr': '<f4', 'fortran_order': False";
        for (text, problem) in [
            ("", "expected a dict at byte 0"),
            ("['descr']", "expected a dict at byte 1"),
            ("{'descr': '<f4', 'fortran_order': False}", "no 'shape' key"),
            ("{'fortran_order': False, 'shape': ()}", "no 'descr' key"),
            ("{'descr': '<f4', 'shape': ()}", "no 'fortran_order' key"),
            (&format!("{{{known}, 'shape': (3), }}"), "not a parenthesised integer"),
            (&format!("{{{known}, 'shape': (-3,)}}"), "non-negative integer"),
            (&format!("{{{known}, 'shape': (03,)}}"), "leading zero"),
            (&format!("{{{known}, 'shape': (3.0,)}}"), "expected ',' or ')'"),
            (&format!("{{{known}, 'shape': (18446744073709551616,)}}"), "larger than 2^64 - 1"),
            (&format!("{{{known}, 'shape': 3}}"), "must be a tuple"),
            (&format!("{{{known}, 'shape': (1,), 'shape': (2,)}}"), "duplicate key 'shape'"),
            ("{'descr': '<f4', 'descr': '<f8'}", "duplicate key 'descr'"),
            ("{'fortran_order': True, 'fortran_order': False}", "duplicate key 'fortran_order'"),
            // Python reads 'sh\x61pe' as 'shape': an escape in a key could hide a second shape
            (&format!("{{{known}, 'shape': (1,), 'sh\\x61pe': (2,)}}"), "escape sequence"),
            ("{'descr': '<f\\x34'}", "escape sequence"),
            ("{u'descr': '<f4'}", "expected a string key"),
            ("{'descr': '<f' '4'}", "expected ',' or '}'"),
            ("{'descr': [('a', '<f4')}", "expected ',' or ']'"),
            ("{'descr': 4}", "'descr' must be a string or a list"),
            ("{'fortran_order': 0}", "expected True, False or None"),
            ("{'fortran_order': None}", "must be True or False"),
            (&format!("{{{known}, 'shape': (1,)}} # comment"), "unexpected text after the dict"),
            (&format!("{{{known}, 'shape': (1,), # comment\n}}"), "expected a string key"),
            (&format!("{{{known}, 'shape': (1,)}}}}"), "unexpected text after the dict"),
            ("{'x': 'a\nb'}", "unterminated string"),
            ("{'x': {1: 2, 3}}", "expected ':' in a dict"),
            ("{'x': {1, 2: 3}}", "expected ',' or '}'"),
            ("{'x': [[[[[[[[1]]]]]]]]}", "nested deeper than 8"),
            ("{'x': {{{{{{{{1}}}}}}}}}", "nested deeper than 8"),
            ("{'x': -}", "expected a number"),
            ("{'x': ,}", "expected a value"),
        ] {
            let error = header(text).expect_err(text).to_string();
            assert!(error.contains(problem), "{text:?}: {error:?} should mention {problem:?}");
        }
        // Seven levels inside the dict are still accepted.
        let deepest = format!("{{{known}, 'shape': (1,), 'x': [[[[[[[1]]]]]]]}}");
        assert!(header(&deepest).is_ok());
    }

    #[test]
    fn the_header_text_is_located_and_bounded() {
        let file = |version: [u8; 2], length: &[u8], text: &[u8]| [NPY_MAGIC, &version, length, text].concat();
        let text = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n";
        let v1 = file([1, 0], &(text.len() as u16).to_le_bytes(), text);
        assert_eq!(header_text(&v1), Ok(10..10 + text.len()));
        assert_eq!(read(&v1).map(|(_, start)| start), Ok(10 + text.len()));
        let v3 = file([3, 0], &(text.len() as u32).to_le_bytes(), text);
        assert_eq!(header_text(&v3), Ok(12..12 + text.len()));
        for (bytes, problem) in [
            (b"\x93NUMPZ\x01\x00".to_vec(), "wrong magic"),
            (file([4, 0], &[0, 0], b""), "unsupported NPY version 4.0"),
            (file([1, 0], &[5], b""), "truncated header"),
            (file([1, 0], &100u16.to_le_bytes(), text), "claims 100 bytes"),
            (file([2, 0], &(MAX_NPY_HEADER as u32 + 1).to_le_bytes(), b""), "oversized header"),
        ] {
            let error = header_text(&bytes).expect_err(problem).to_string();
            assert!(error.contains(problem), "{error:?} should mention {problem:?}");
        }
    }
}
