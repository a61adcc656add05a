//! PNM images with samples of any maximum value (P2, P3, P5, P6 and P7; `maxval` 1 to
//! 65535), read raw: each sample as it is in the file, with its `maxval`, so that
//! `normalize` divides by that `maxval` itself. The `image` crate's decoder rescales
//! every other `maxval` to 8 or 16 bits first, which rounds: 95 of the 101 values of a
//! `maxval` 100 image came out wrong against `v / 100`.
//!
//! The header is parsed by the `image` crate's `PnmDecoder` (comments, PAM's `TUPLTYPE`
//! lines and their checks), which leaves its reader at the first sample. Samples are
//! bytes for a `maxval` below 256 and big-endian 16-bit words otherwise (binary forms),
//! or decimal numbers separated by whitespace (P2, P3). A sample above `maxval`, a
//! missing sample and a malformed decimal one are errors. Bitmaps (P1, P4), whose
//! samples are bits, are left to the `image` crate.

use image::codecs::pnm::{PnmDecoder, PnmHeader, PnmSubtype, SampleEncoding};
use std::fs::File;
use std::io::{BufReader, Read};

/// The magic numbers this module reads: greymaps, pixmaps and PAM.
const MAGICS: [&[u8; 2]; 5] = [b"P2", b"P3", b"P5", b"P6", b"P7"];

/// Why a PNM's samples cannot be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PnmError {
    /// Opening or reading the file failed.
    #[error("cannot read the PNM samples: {0}")]
    Io(std::io::Error),
    /// The `image` crate refused the header.
    #[error("cannot decode image: {0}")]
    Header(image::ImageError),
    /// A PAM depth other than 1 to 4 samples per pixel.
    #[error("a PAM of depth {0}: only 1 to 4 samples per pixel are read")]
    Depth(u32),
    /// A `maxval` outside 1 to 65535 (which the `image` crate's header parser refuses
    /// first).
    #[error("a PNM maxval of {0}: only 1 to 65535 are read")]
    Maxval(u32),
    /// The file ends after `got` of its `expected` samples.
    #[error("cannot decode image: the PNM ends after {got} of its {expected} samples (truncated)")]
    Truncated {
        /// Samples read.
        got: u64,
        /// Samples the header promises.
        expected: u64,
    },
    /// A sample above the header's `maxval`.
    #[error("cannot decode image: PNM sample {index} is {value}, above the header's maxval {maxval}")]
    AboveMaxval {
        /// Its index, in file order.
        index: u64,
        /// Its value.
        value: u32,
        /// The header's maximum.
        maxval: u16,
    },
    /// A plain (ASCII) sample that is not a decimal number below 2^16.
    #[error("cannot decode image: PNM sample {index} is not a decimal number below 65536")]
    BadDecimal {
        /// Its index, in file order.
        index: u64,
    },
}

/// Whether a file starting with `head` is a greymap, pixmap or PAM, which this module
/// reads (bitmaps are not).
pub(crate) fn is_read_here(head: &[u8]) -> bool {
    head.first_chunk::<2>().is_some_and(|magic| MAGICS.contains(&magic))
}

/// A PNM's samples as they are in the file: bytes for a `maxval` below 256, else
/// 16-bit words.
#[derive(Debug)]
pub(crate) enum PnmSamples {
    /// `maxval` 1 to 255.
    Unorm8(Vec<u8>),
    /// `maxval` 256 to 65535.
    Unorm16(Vec<u16>),
}

/// A PNM whose header has been read, its reader at the first sample: see
/// [`PnmHeaderRead::from_file`] and [`PnmHeaderRead::samples`].
pub(crate) struct PnmHeaderRead {
    reader: BufReader<File>,
    encoding: SampleEncoding,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Samples per pixel: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    pub channels: u8,
    /// The largest sample value, what every sample is divided by.
    pub maxval: u16,
}

impl PnmHeaderRead {
    /// The PNM header of `file`, open and at its start (its first bytes passed
    /// [`is_read_here`]); the reader then owns the file, so nothing opens it again.
    /// Nothing of the samples is read yet.
    pub fn from_file(file: File) -> Result<PnmHeaderRead, PnmError> {
        let decoder = PnmDecoder::new(BufReader::new(file)).map_err(PnmError::Header)?;
        let (reader, header) = decoder.into_inner();
        let (encoding, depth) = encoding_and_depth(&header);
        let channels = u8::try_from(depth).ok().filter(|c| (1..=4).contains(c)).ok_or(PnmError::Depth(depth))?;
        // `PnmDecoder::new` refuses a maxval of 0 or above 65535.
        let maxval = header.maximal_sample();
        let maxval = u16::try_from(maxval).ok().filter(|&m| m > 0).ok_or(PnmError::Maxval(maxval))?;
        Ok(PnmHeaderRead { reader, encoding, width: header.width(), height: header.height(), channels, maxval })
    }

    /// `width · height · channels`.
    pub(crate) fn sample_count(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * u64::from(self.channels)
    }

    /// Reads every sample, in file order, checking each against `maxval`. Memory grows
    /// with the data actually read, so a short file that claims a large image allocates
    /// what it holds, not what it claims.
    pub(crate) fn samples(self) -> Result<PnmSamples, PnmError> {
        let expected = self.sample_count();
        let maxval = self.maxval;
        let samples = match self.encoding {
            SampleEncoding::Binary => binary_samples(self.reader, expected, maxval)?,
            SampleEncoding::Ascii => ascii_samples(self.reader, expected, maxval)?,
        };
        Ok(samples)
    }
}

/// The sample encoding and samples per pixel of a greymap, pixmap or PAM header.
fn encoding_and_depth(header: &PnmHeader) -> (SampleEncoding, u32) {
    match header.subtype() {
        PnmSubtype::Graymap(encoding) => (encoding, 1),
        PnmSubtype::Pixmap(encoding) => (encoding, 3),
        PnmSubtype::ArbitraryMap => (SampleEncoding::Binary, header.as_arbitrary().map_or(0, |h| h.depth)),
        PnmSubtype::Bitmap(encoding) => (encoding, 1),
    }
}

/// The first sample of `values` above `maxval`, as an error.
fn check_maxval(values: impl Iterator<Item = u32>, maxval: u16) -> Result<(), PnmError> {
    match values.enumerate().find(|&(_, value)| value > u32::from(maxval)) {
        Some((index, value)) => Err(PnmError::AboveMaxval { index: index as u64, value, maxval }),
        None => Ok(()),
    }
}

/// Binary samples: one byte each below `maxval` 256, else a big-endian word.
fn binary_samples(reader: impl Read, expected: u64, maxval: u16) -> Result<PnmSamples, PnmError> {
    let width = if maxval < 256 { 1 } else { 2 };
    let mut bytes = Vec::new();
    reader.take(expected * width).read_to_end(&mut bytes).map_err(PnmError::Io)?;
    let got = bytes.len() as u64 / width;
    if got < expected {
        return Err(PnmError::Truncated { got, expected });
    }
    if width == 1 {
        check_maxval(bytes.iter().map(|&b| u32::from(b)), maxval)?;
        return Ok(PnmSamples::Unorm8(bytes));
    }
    let words: Vec<u16> = bytes.as_chunks::<2>().0.iter().map(|&be| u16::from_be_bytes(be)).collect();
    check_maxval(words.iter().map(|&w| u32::from(w)), maxval)?;
    Ok(PnmSamples::Unorm16(words))
}

/// Plain samples: decimal numbers separated by whitespace.
fn ascii_samples(reader: BufReader<File>, expected: u64, maxval: u16) -> Result<PnmSamples, PnmError> {
    let mut values: Vec<u16> = Vec::new();
    let mut current: Option<u32> = None;
    let finish = |current: &mut Option<u32>, values: &mut Vec<u16>| -> Result<(), PnmError> {
        if let Some(value) = current.take() {
            let index = values.len() as u64;
            if value > u32::from(maxval) {
                return Err(PnmError::AboveMaxval { index, value, maxval });
            }
            values.push(value as u16);
        }
        Ok(())
    };
    for byte in reader.bytes() {
        if values.len() as u64 == expected {
            break;
        }
        let byte = byte.map_err(PnmError::Io)?;
        match byte {
            b'0'..=b'9' => {
                let value = current.unwrap_or(0) * 10 + u32::from(byte - b'0');
                if value > u32::from(u16::MAX) {
                    return Err(PnmError::BadDecimal { index: values.len() as u64 });
                }
                current = Some(value);
            }
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' => finish(&mut current, &mut values)?,
            _ => return Err(PnmError::BadDecimal { index: values.len() as u64 }),
        }
    }
    finish(&mut current, &mut values)?;
    let got = values.len() as u64;
    if got < expected {
        return Err(PnmError::Truncated { got, expected });
    }
    Ok(if maxval < 256 {
        PnmSamples::Unorm8(values.iter().map(|&v| v as u8).collect())
    } else {
        PnmSamples::Unorm16(values)
    })
}
