//! A non-interlaced PNG decoded on a thread of its own, a band of samples at a time,
//! while the bands already decoded are used: `normalize`'s streamed path, which
//! overlaps decoding with converting and writing and never holds the whole image.
//!
//! The samples are exactly the `image` crate's for the same file: the same `png`
//! decoder with the same transformation (`EXPAND`: palettes to RGB or RGBA, a `tRNS`
//! chunk to an alpha channel, fewer than 8 bits to 8), 16-bit samples turned from
//! PNG's big-endian order to native `u16`s as the `image` crate turns them.
//!
//! The bands cut the samples in flat (HWC) order at multiples of the band length, not
//! at rows, so that a reader asking for band-aligned runs gets each as one slice. A
//! band is handed over only once it is full; the last one only once the decoder has
//! read the rest of the image data, so that an error anywhere in it (a bad CRC, a
//! truncated file) is reported before the last samples are.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The 8 bytes every PNG file starts with.
pub(crate) const PNG_SIGNATURE: [u8; 8] = *b"\x89PNG\r\n\x1a\n";

/// Bands decoded ahead of the reader, at most (one more is the reader's own): the
/// decoder keeps going while a band is converted and written.
const BANDS_AHEAD: usize = 3;

/// The `png` crate's allowance for the decoder's own allocations (chunks it keeps), as
/// the `image` crate's default `max_alloc` gives it.
const PNG_ALLOC_LIMIT: usize = 512 << 20;

/// Why a PNG's samples could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PngRowsError {
    /// The decoder refused the file (as the `image` crate reports it), or reading it
    /// failed.
    #[error("cannot decode image: {0}")]
    Decode(image::ImageError),
    /// Samples asked for before ones already handed out: they are decoded once, front
    /// to back.
    #[error("samples {start}.. asked for after later ones: a streamed PNG is read once, in order")]
    Unordered {
        /// The first sample asked for.
        start: u64,
    },
    /// Samples asked for beyond the image's.
    #[error("samples {start}.. are out of range")]
    OutOfRange {
        /// The first sample asked for.
        start: u64,
    },
    /// The decoding thread ended without handing over every band or an error.
    #[error("the PNG decoding thread stopped early")]
    Stopped,
}

/// Why [`PngRows::open`] (or `check_palette`) could not start: the file could not be
/// opened or read ([`PngOpenError::Open`], reported as the `image` crate's
/// `ImageReader::open` errors are), or its header was refused by the decoder
/// ([`PngOpenError::Decode`], as the `image` crate's decoding errors are).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PngOpenError {
    /// Opening or reading the file's first bytes failed.
    #[error(transparent)]
    Open(std::io::Error),
    /// The decoder refused the header (a truncated header included).
    #[error("cannot decode image: {0}")]
    Decode(image::ImageError),
}

/// Refuses, before any decoder sees it, a PNG whose `PLTE` chunk is not a whole number of
/// 3-byte RGB entries: the `png` crate (0.18) panics expanding such a palette instead of
/// returning an error. Walks the chunk headers up to the first `IDAT` (or the end),
/// reading 8 bytes a chunk at their offsets (positioned reads: `file`'s own position is
/// left where it was, so a decoder can read it from the start next); a file that is not
/// a PNG passes.
pub(crate) fn check_palette(file: &File) -> Result<(), PngOpenError> {
    let mut head = [0u8; 8];
    if read_up_to_at(file, &mut head, 0).map_err(PngOpenError::Open)? < 8 || head != PNG_SIGNATURE {
        return Ok(());
    }
    let mut at = PNG_SIGNATURE.len() as u64;
    loop {
        if read_up_to_at(file, &mut head, at).map_err(PngOpenError::Open)? < 8 {
            return Ok(()); // truncated: the decoder says so
        }
        let length = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        match &head[4..] {
            b"IDAT" | b"IEND" => return Ok(()),
            b"PLTE" if length % 3 != 0 => {
                let message = format!("PLTE chunk of {length} bytes is not a whole number of 3-byte RGB entries");
                let error = image::error::DecodingError::new(image::ImageFormat::Png.into(), message);
                return Err(PngOpenError::Decode(image::ImageError::Decoding(error)));
            }
            _ => {}
        }
        // The chunk's header, its data and its 4-byte CRC.
        at += 8 + u64::from(length) + 4;
    }
}

/// Reads `file`'s bytes from `offset` into `buf` until it is full or the file ends (a
/// positioned read: the file's position is not moved); how many bytes it got.
pub(crate) fn read_up_to_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A `png` error as the `image` crate reports it, so that both paths say the same.
fn image_error(error: png::DecodingError) -> image::ImageError {
    use image::error::{DecodingError, LimitError, LimitErrorKind, ParameterError, ParameterErrorKind};
    match error {
        png::DecodingError::IoError(error) => image::ImageError::IoError(error),
        png::DecodingError::Format(error) => image::ImageError::Decoding(DecodingError::new(
            image::ImageFormat::Png.into(),
            plain_chunk_types(&error.to_string()),
        )),
        png::DecodingError::Parameter(error) => {
            image::ImageError::Parameter(ParameterError::from_kind(ParameterErrorKind::Generic(error.to_string())))
        }
        png::DecodingError::LimitsExceeded => {
            image::ImageError::Limits(LimitError::from_kind(LimitErrorKind::InsufficientMemory))
        }
    }
}

/// `message` with each chunk type the `png` crate writes as its Rust `Debug` value
/// (`ChunkType { type: IDAT, critical: true, private: false, ... }`) written as its four
/// letters (`IDAT`).
fn plain_chunk_types(message: &str) -> String {
    const START: &str = "ChunkType { type: ";
    let mut plain = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(START) {
        plain.push_str(&rest[..at]);
        let after = &rest[at + START.len()..];
        let (Some(name_end), Some(close)) = (after.find(','), after.find(" }")) else {
            plain.push_str(&rest[at..]);
            return plain;
        };
        plain.push_str(&after[..name_end.min(close)]);
        rest = &after[close + 2..];
    }
    plain.push_str(rest);
    plain
}

/// Consecutive samples, native order: one band of a [`PngRows`], or a whole image
/// ([`PngHeader::decode_whole`]).
pub(crate) enum Band {
    /// 8-bit samples.
    Unorm8(Vec<u8>),
    /// 16-bit samples.
    Unorm16(Vec<u16>),
}

impl Band {
    fn len(&self) -> usize {
        match self {
            Band::Unorm8(v) => v.len(),
            Band::Unorm16(v) => v.len(),
        }
    }
}

/// Consecutive samples of a [`PngRows`], as handed to its reader.
pub enum SampleRun<'a> {
    /// 8-bit samples.
    Unorm8(&'a [u8]),
    /// 16-bit samples.
    Unorm16(&'a [u16]),
}

/// What the reader side holds: the bands on their way, the band being read.
struct ReaderState {
    /// Full bands (or the decoder's error), in order.
    full: Receiver<Result<Band, png::DecodingError>>,
    /// Bands read, back to the decoder for reuse.
    spent: Sender<Band>,
    /// The band being read and the index of its first sample.
    current: Option<(u64, Band)>,
    /// Where the next band starts.
    next_start: u64,
    /// An error already reported, reported again to any later call.
    failed: bool,
    /// Time spent waiting for the decoder.
    waited: Duration,
}

/// A non-interlaced PNG being decoded on its own thread, its samples read in order: see
/// the module's documentation. Dropping it stops the decoder and waits for it.
pub struct PngRows {
    path: PathBuf,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// Samples per pixel as decoded: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    pub channels: u8,
    /// Bits per sample: 8 or 16.
    pub bits: u32,
    samples: u64,
    state: Mutex<ReaderState>,
    /// Nanoseconds the decoder spent decoding (not waiting for a free band).
    busy_ns: Arc<AtomicU64>,
    decoder: Option<JoinHandle<()>>,
}

/// What [`PngRows::open`] found.
pub enum PngOpen {
    /// A PNG whose samples are being decoded.
    Rows(PngRows),
    /// An interlaced (Adam7) PNG: its rows come in seven passes, so it cannot be
    /// handed over in order before the last pass; decode it whole.
    Interlaced,
    /// Not a PNG (no PNG signature).
    NotPng,
}

/// A PNG whose header (every chunk before the image data) has been read, nothing of
/// its image data yet: its size is known before anything is allocated for it. The
/// decoder is the `png` crate's with `EXPAND` (what the `image` crate does), text chunks
/// (`tEXt`, `zTXt`, `iTXt`) and the ICC profile (`iCCP`) skipped unread, so that a
/// compressed ancillary chunk cannot inflate into memory (a 3 MB `iCCP` chunk inflated
/// to 3 GiB through the `image` crate), and the `png` crate's own allocations capped at
/// `PNG_ALLOC_LIMIT`.
pub(crate) struct PngHeader {
    reader: png::Reader<BufReader<File>>,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// Samples per pixel as decoded: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    pub channels: u8,
    /// Bits per sample: 8 or 16.
    pub bits: u32,
    /// Adam7-interlaced: its rows come in seven passes.
    pub interlaced: bool,
}

impl PngHeader {
    /// Reads `path`'s PNG header (`None` for a file without the PNG signature): the file
    /// opened once, then [`PngHeader::from_file`].
    pub fn read(path: &Path) -> Result<Option<PngHeader>, PngOpenError> {
        let file = File::open(path).map_err(PngOpenError::Open)?;
        let mut signature = [0u8; 8];
        if read_up_to_at(&file, &mut signature, 0).map_err(PngOpenError::Open)? < 8 || signature != PNG_SIGNATURE {
            return Ok(None);
        }
        PngHeader::from_file(file).map(Some)
    }

    /// Reads the PNG header of `file`, open and at its start, after `check_palette`; the
    /// decoder then owns the file, so nothing opens it again. A file without the PNG
    /// signature is the decoder's error.
    pub fn from_file(file: File) -> Result<PngHeader, PngOpenError> {
        check_palette(&file)?;
        let mut decoder = png::Decoder::new_with_limits(BufReader::new(file), png::Limits { bytes: PNG_ALLOC_LIMIT });
        decoder.set_transformations(png::Transformations::EXPAND);
        decoder.set_ignore_text_chunk(true);
        decoder.set_ignore_iccp_chunk(true);
        let reader = decoder.read_info().map_err(|e| PngOpenError::Decode(image_error(e)))?;
        let (color, depth) = reader.output_color_type();
        let bits = match depth {
            png::BitDepth::Eight => 8,
            png::BitDepth::Sixteen => 16,
            // EXPAND widens 1, 2 and 4 bits to 8.
            other => unreachable!("EXPAND leaves no {other:?}-bit samples"),
        };
        let channels = color.samples() as u8;
        let (width, height) = reader.info().size();
        let interlaced = reader.info().interlaced;
        Ok(PngHeader { reader, height, width, channels, bits, interlaced })
    }

    /// `height * width * channels`.
    pub(crate) fn samples(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * u64::from(self.channels)
    }

    /// Decodes the whole image (interlaced or not) into one band, in HWC order, 16-bit
    /// samples in native order: the same samples as [`PngRows`] and the `image` crate.
    pub(crate) fn decode_whole(mut self) -> Result<Band, image::ImageError> {
        let bytes = self.reader.output_buffer_size().ok_or_else(|| {
            use image::error::{LimitError, LimitErrorKind};
            image::ImageError::Limits(LimitError::from_kind(LimitErrorKind::InsufficientMemory))
        })?;
        let mut buffer = vec![0u8; bytes];
        self.reader.next_frame(&mut buffer).map_err(image_error)?;
        // The data after the image's (IEND, its CRC) is read as the `image` crate does:
        // not at all.
        Ok(match self.bits {
            8 => Band::Unorm8(buffer),
            _ => Band::Unorm16(buffer.as_chunks::<2>().0.iter().map(|&be| u16::from_be_bytes(be)).collect()),
        })
    }

    /// Starts decoding a non-interlaced PNG's samples on a thread of their own,
    /// `band_samples` at a time (at least 1), at most a few bands ahead of the reader
    /// ([`PngOpen::Interlaced`] for an interlaced one). Later errors come from
    /// [`PngRows::read`].
    pub(crate) fn stream(self, path: &Path, band_samples: usize) -> Result<PngOpen, PngOpenError> {
        if self.interlaced {
            return Ok(PngOpen::Interlaced);
        }
        let samples = self.samples();
        let PngHeader { reader, height, width, channels, bits, .. } = self;
        let band_samples = band_samples.max(1);
        let (to_reader, full) = std::sync::mpsc::sync_channel(BANDS_AHEAD - 1);
        let (spent, reused) = std::sync::mpsc::channel();
        let busy_ns = Arc::new(AtomicU64::new(0));
        let decoding = Decoding { reader, bits, samples, band_samples, busy_ns: Arc::clone(&busy_ns) };
        let decoder = std::thread::Builder::new()
            .name("png-rows".into())
            .spawn(move || decoding.run(&to_reader, &reused))
            .map_err(PngOpenError::Open)?;
        Ok(PngOpen::Rows(PngRows {
            path: path.to_path_buf(),
            height,
            width,
            channels,
            bits,
            samples,
            state: Mutex::new(ReaderState {
                full,
                spent,
                current: None,
                next_start: 0,
                failed: false,
                waited: Duration::ZERO,
            }),
            busy_ns,
            decoder: Some(decoder),
        }))
    }
}

impl PngRows {
    /// Reads `path`'s PNG header and, for a non-interlaced PNG, starts decoding its
    /// samples on a thread of their own: [`PngHeader::read`], then
    /// [`PngHeader::stream`].
    pub fn open(path: &Path, band_samples: usize) -> Result<PngOpen, PngOpenError> {
        match PngHeader::read(path)? {
            Some(header) => header.stream(path, band_samples),
            None => Ok(PngOpen::NotPng),
        }
    }

    /// The file, as given.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `height * width * channels`.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Time the decoder has spent decoding so far (not waiting for the reader), and
    /// the time readers spent waiting for it.
    pub(crate) fn timing(&self) -> (Duration, Duration) {
        let waited = self.state.lock().unwrap_or_else(PoisonError::into_inner).waited;
        (Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed)), waited)
    }

    /// Hands samples `start .. start + len` to `take` as consecutive runs, each with
    /// its offset from `start`, waiting for the decoder as needed: one run when the range
    /// lies within a band. `start` may not come before the end of the band that an
    /// earlier call read from: the bands before it are gone. The first error, the
    /// decoder's or `take`'s, stops the call; once the decoder has failed, every later
    /// call fails.
    pub fn read<E: From<PngRowsError>>(
        &self,
        start: u64,
        len: usize,
        mut take: impl FnMut(usize, SampleRun<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let end = start.checked_add(len as u64).filter(|&end| end <= self.samples);
        let end = end.ok_or(PngRowsError::OutOfRange { start })?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.failed {
            return Err(PngRowsError::Stopped.into());
        }
        let mut at = start;
        while at < end {
            if state.current.as_ref().is_none_or(|(first, band)| *first + band.len() as u64 <= at) {
                if let Some((_, band)) = state.current.take() {
                    // The decoder may have finished: then the band is not wanted.
                    let _ = state.spent.send(band);
                }
                let began = Instant::now();
                let next = state.full.recv();
                state.waited += began.elapsed();
                let band = match next {
                    Ok(Ok(band)) => band,
                    Ok(Err(error)) => {
                        state.failed = true;
                        return Err(PngRowsError::Decode(image_error(error)).into());
                    }
                    Err(_) => {
                        state.failed = true;
                        return Err(PngRowsError::Stopped.into());
                    }
                };
                let first = state.next_start;
                state.next_start += band.len() as u64;
                state.current = Some((first, band));
                continue;
            }
            let Some((first, band)) = state.current.as_ref() else { unreachable!("a band was just received") };
            if at < *first {
                return Err(PngRowsError::Unordered { start }.into());
            }
            let from = (at - first) as usize;
            let n = (band.len() - from).min((end - at) as usize);
            let run = match band {
                Band::Unorm8(v) => SampleRun::Unorm8(&v[from..from + n]),
                Band::Unorm16(v) => SampleRun::Unorm16(&v[from..from + n]),
            };
            take((at - start) as usize, run)?;
            at += n as u64;
        }
        Ok(())
    }
}

impl Drop for PngRows {
    fn drop(&mut self) {
        // Closing both channels ends the decoder wherever it waits.
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        let (_, dead_full) = std::sync::mpsc::sync_channel(0);
        let (dead_spent, _) = std::sync::mpsc::channel();
        drop(std::mem::replace(&mut state.full, dead_full));
        drop(std::mem::replace(&mut state.spent, dead_spent));
        if let Some(decoder) = self.decoder.take()
            && let Err(panic) = decoder.join()
            && !std::thread::panicking()
        {
            std::panic::resume_unwind(panic);
        }
    }
}

/// The decoder thread's side.
struct Decoding {
    reader: png::Reader<BufReader<File>>,
    bits: u32,
    samples: u64,
    band_samples: usize,
    busy_ns: Arc<AtomicU64>,
}

/// The decoder's bands: the one being filled, and how far.
struct Filling {
    band: Option<Band>,
    /// Samples in `band` so far.
    filled: usize,
    /// Samples in the bands handed over.
    handed: u64,
    /// Bands allocated.
    bands: usize,
    /// Time spent waiting for the reader (a band back, room in the queue).
    idle: Duration,
}

/// The reader is gone: stop decoding.
struct ReaderGone;

impl Decoding {
    /// Decodes every row into bands, sending each full one to `to_reader` (the last
    /// once the image data has been read to its end), or the first error; stops early
    /// when the reader is gone.
    fn run(mut self, to_reader: &SyncSender<Result<Band, png::DecodingError>>, reused: &Receiver<Band>) {
        let started = Instant::now();
        let line = self.reader.output_line_size(self.reader.info().width).unwrap_or(0);
        let mut row = vec![0u8; line];
        let bytes_per_sample = (self.bits / 8) as usize;
        let mut at = Filling { band: None, filled: 0, handed: 0, bands: 0, idle: Duration::ZERO };
        let publish = |idle: Duration| {
            let busy = started.elapsed().saturating_sub(idle);
            self.busy_ns.store(u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        };
        loop {
            if self.next_band(&mut at, reused).is_err() {
                return;
            }
            // An 8-bit row that fits in the band is decoded straight into it.
            let direct = match &mut at.band {
                Some(Band::Unorm8(v)) if at.filled + line <= v.len() => Some(&mut v[at.filled..at.filled + line]),
                _ => None,
            };
            let is_direct = direct.is_some();
            match self.reader.read_row(direct.unwrap_or(&mut row)) {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(error) => {
                    let _ = to_reader.send(Err(error));
                    return;
                }
            }
            if is_direct {
                at.filled += line;
                if self.hand_over_if_full(&mut at, to_reader, &publish).is_err() {
                    return;
                }
                continue;
            }
            let mut src = &row[..];
            while !src.is_empty() {
                if self.next_band(&mut at, reused).is_err() {
                    return;
                }
                let Some(current) = &mut at.band else { break };
                let n = (current.len() - at.filled).min(src.len() / bytes_per_sample);
                if n == 0 {
                    break; // rows past the last sample: `png` gives none
                }
                let (now, rest) = src.split_at(n * bytes_per_sample);
                match current {
                    Band::Unorm8(v) => v[at.filled..at.filled + n].copy_from_slice(now),
                    Band::Unorm16(v) => {
                        for (out, be) in v[at.filled..at.filled + n].iter_mut().zip(now.as_chunks::<2>().0) {
                            *out = u16::from_be_bytes(*be);
                        }
                    }
                }
                src = rest;
                at.filled += n;
                if self.hand_over_if_full(&mut at, to_reader, &publish).is_err() {
                    return;
                }
            }
        }
        publish(at.idle);
        let last = match at.band {
            Some(last) if at.filled == last.len() && at.handed + at.filled as u64 == self.samples => Ok(last),
            // Rows that end before the image does: `png` reports that itself, so this
            // is not expected.
            _ => Err(png::DecodingError::IoError(std::io::ErrorKind::UnexpectedEof.into())),
        };
        let _ = to_reader.send(last);
    }

    /// Makes sure `at` has a band to fill while samples remain: a spent one back from
    /// the reader, a new one while fewer than `BANDS_AHEAD + 1` exist, else waits.
    fn next_band(&self, at: &mut Filling, reused: &Receiver<Band>) -> Result<(), ReaderGone> {
        if at.band.is_some() || at.handed == self.samples {
            return Ok(());
        }
        let len = self.band_samples.min((self.samples - at.handed) as usize);
        let began = Instant::now();
        let reuse = match reused.try_recv() {
            Ok(spent) => Some(spent),
            Err(_) if at.bands < BANDS_AHEAD + 1 => None,
            Err(_) => Some(reused.recv().map_err(|_| ReaderGone)?),
        };
        at.idle += began.elapsed();
        at.bands += usize::from(reuse.is_none());
        at.band = Some(self.fresh(reuse, len));
        at.filled = 0;
        Ok(())
    }

    /// Sends `at`'s band to the reader once it is full, except the last, which is kept
    /// until the image data has been read to its end.
    fn hand_over_if_full(
        &self,
        at: &mut Filling,
        to_reader: &SyncSender<Result<Band, png::DecodingError>>,
        publish: &impl Fn(Duration),
    ) -> Result<(), ReaderGone> {
        let Some(band) = &at.band else { return Ok(()) };
        if at.filled < band.len() || at.handed + at.filled as u64 == self.samples {
            return Ok(());
        }
        at.handed += at.filled as u64;
        let full = at.band.take().expect("a full band");
        let began = Instant::now();
        let sent = to_reader.send(Ok(full));
        at.idle += began.elapsed();
        publish(at.idle);
        sent.map_err(|_| ReaderGone)
    }

    /// A band of `len` samples, reusing `spent`'s memory when there is one.
    fn fresh(&self, spent: Option<Band>, len: usize) -> Band {
        match (self.bits, spent) {
            (8, Some(Band::Unorm8(mut v))) => {
                v.resize(len, 0);
                Band::Unorm8(v)
            }
            (8, _) => Band::Unorm8(vec![0; len]),
            (_, Some(Band::Unorm16(mut v))) => {
                v.resize(len, 0);
                Band::Unorm16(v)
            }
            (_, _) => Band::Unorm16(vec![0; len]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_types_are_named_by_their_letters() {
        let debug = "CRC error: expected 0x1 have 0x2 while decoding ChunkType { type: IDAT, critical: true, \
                     private: false, reserved: false, safecopy: false } chunk.";
        assert_eq!(plain_chunk_types(debug), "CRC error: expected 0x1 have 0x2 while decoding IDAT chunk.");
        let two = "ChunkType { type: tRNS, critical: false } then ChunkType { type: PLTE, critical: true }";
        assert_eq!(plain_chunk_types(two), "tRNS then PLTE");
        assert_eq!(plain_chunk_types("no chunk here"), "no chunk here");
        assert_eq!(plain_chunk_types("ChunkType { type: IDAT"), "ChunkType { type: IDAT");
    }
}
