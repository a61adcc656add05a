//! `.npz` archives, as NumPy's `savez` (members stored) and `savez_compressed` (members
//! deflated) write them: a zip archive with one `.npy` member per array.
//!
//! The archive is read from its central directory, following ZIP64 end records and
//! extra fields (NumPy writes every member with ZIP64 sizes); a local header only
//! locates its member's data. The archive is a [`Source`]: positioned reads of the file
//! (never a memory map, so that a file truncated meanwhile is an error, not SIGBUS), or
//! bytes in memory. Every offset and length is checked against the archive's length
//! before it is read, each record is visited once (linear in the file's size), and
//! nothing is held beyond the central directory and the member list, whatever the bytes.
//!
//! A stored member's data lies in the file: it is scanned in place, like an `.npy` file
//! (its CRC-32 is not checked, as `.npy` and `.safetensors` data has none). A deflated
//! member's header is inflated when the archive is opened; its data is inflated again
//! when it is scanned, [`inflate`] handing it on a chunk at a time, so memory stays
//! bounded whatever the size, and the member's length and CRC-32 are checked at its end.
//! Both headers are parsed by [`crate::containers::npy_header`], in time linear
//! in their size. Other compression methods and encrypted members are listed as not
//! scanned; multi-volume archives are refused.
//!
//! # Why not the `zip` crate
//! Measured with `host/tests/npz_vs_zip.rs` (`cargo test -p host --test npz_vs_zip --
//! --include-ignored --nocapture`; 2026-12-02, a loaded 2-core machine, debug build of
//! the dependencies) on one deflated member of 64 MiB of f32: ours (`scan`'s path) 0.17 s
//! and 4.1 MiB of peak heap growth; `zip` 9.8 read in 4 MiB chunks 0.16 s and 4.0 MiB;
//! `zip`'s `read_to_end` 0.24 s and 128 MiB. So memory and speed are no reason: `zip`
//! streams a member as well. What is: ours reads through a [`Source`] (positioned reads
//! that any number of threads share, a stored member scanned in place on all cores,
//! where `zip` wants one `&mut` `Read + Seek` per member read), every failure is one of
//! this module's typed one-line errors, and it trusts no size: a central directory that
//! overstates a member's inflated length by 4096 bytes is refused by ours ("inflates to
//! 262272 bytes, the archive says 266368") and read without complaint by `zip`; one
//! that understates it is refused by both. Neither refuses overlapping members (the
//! zip-bomb construction): an entry listed twice over the same bytes is two tensors to
//! ours, each inflated in bounded memory, and one file to `zip`.

use crate::containers::npy::{self, NpyError};
use crate::containers::npy_header;
use crate::containers::{Deflated, PYTORCH_CHECKPOINT, TensorElement, TensorEntry};
use crate::message::io_message;
use crate::source::{Source, SourceReadError};
use bitexact_support::output::excerpt;
use std::io::Read;
use std::ops::Range;

/// How an archive starts: with a member's local header, or, when it has no member, with
/// the end of central directory record.
pub(crate) const MAGIC: [&[u8]; 2] = [b"PK\x03\x04", b"PK\x05\x06"];

const LOCAL_HEADER: u32 = 0x0403_4B50;
const CENTRAL_HEADER: u32 = 0x0201_4B50;
const END: u32 = 0x0605_4B50;
const ZIP64_END: u32 = 0x0606_4B50;
const ZIP64_LOCATOR: u32 = 0x0706_4B50;
/// Fixed sizes of the records, before their variable-length fields.
const LOCAL_HEADER_LEN: usize = 30;
const CENTRAL_HEADER_LEN: usize = 46;
const END_LEN: usize = 22;
const ZIP64_LOCATOR_LEN: usize = 20;
const ZIP64_END_LEN: usize = 56;
/// The extra field that holds the 64-bit values of 32-bit fields set to all ones.
const ZIP64_EXTRA: u16 = 0x0001;
const STORED: u16 = 0;
const DEFLATED: u16 = 8;
const ENCRYPTED_FLAG: u16 = 1;

/// Bytes a deflated member is inflated in, handed on per call by `inflate` (a multiple
/// of every element size): what inflating adds to a scan's heap.
pub const INFLATE_CHUNK_BYTES: usize = 4 << 20;

/// Why an archive is refused by [`parse`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpzError {
    /// No end of central directory record: not a zip archive.
    #[error("not a zip archive: no end of central directory record")]
    NotZip,
    /// An archive split over several files.
    #[error("multi-volume zip archive: not supported")]
    MultiVolume,
    /// A ZIP64 locator that points to no ZIP64 end record.
    #[error("ZIP64 end of central directory record missing")]
    Zip64EndMissing,
    /// The central directory lies (in part) outside the file.
    #[error("central directory outside the file")]
    DirectoryOutside,
    /// More members claimed than the central directory has room for.
    #[error("{count} members claimed, more than the central directory can hold")]
    TooManyMembers {
        /// Members claimed.
        count: u64,
    },
    /// A central directory header that does not parse.
    #[error("malformed central directory")]
    MalformedDirectory,
    /// A zip archive without an array (a member with NumPy's magic).
    #[error("no .npy member: not an .npz archive")]
    NoNpyMember,
    /// A zip archive without an array that holds a `data.pkl`: a PyTorch checkpoint.
    #[error("{PYTORCH_CHECKPOINT}")]
    PyTorchZip,
    /// A read of the archive failed.
    #[error(transparent)]
    Read(#[from] SourceReadError),
    /// A member is refused.
    #[error("member '{}': {error}", excerpt(.name))]
    Member {
        /// The member's name, as stored (lossily decoded).
        name: String,
        /// Why.
        error: NpzMemberError,
    },
}

/// Why one member of an archive is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpzMemberError {
    /// Its local header's offset lies outside the file.
    #[error("local header outside the file")]
    LocalHeaderOutside,
    /// No local header signature where the central directory says.
    #[error("no local header where the central directory says")]
    NoLocalHeader,
    /// The file ends inside the local header.
    #[error("truncated local header")]
    TruncatedLocalHeader,
    /// The local header names another member than the central directory.
    #[error("the local header names another member")]
    OtherName,
    /// Its data runs past the end of the file.
    #[error("{claimed} bytes of data claimed, beyond the end of the file")]
    DataBeyondEnd {
        /// Bytes of (compressed) data claimed.
        claimed: u64,
    },
    /// A stored member whose length and stored length differ.
    #[error("stored, but {len} bytes long and {compressed_len} bytes in the file")]
    StoredLengths {
        /// Its length.
        len: u64,
        /// Its length in the file.
        compressed_len: u64,
    },
    /// A read of the archive failed.
    #[error(transparent)]
    Read(#[from] SourceReadError),
    /// Its start does not inflate.
    #[error(transparent)]
    Inflate(#[from] InflateError),
    /// Its `.npy` header is refused.
    #[error(transparent)]
    Npy(#[from] NpyError),
}

/// Why a deflated member does not inflate to what the archive says.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InflateError {
    /// A read of the archive failed (the file shrank): said as the read said it.
    #[error(transparent)]
    Read(SourceReadError),
    /// The compressed stream is corrupt.
    #[error("cannot inflate: {}", io_message(.0))]
    Corrupt(std::io::Error),
    /// The member inflates to another length than the central directory's.
    #[error("inflates to {inflated} bytes, the archive says {expected}")]
    Length {
        /// Bytes inflated (at most one more than `expected`).
        inflated: u64,
        /// The central directory's length.
        expected: u64,
    },
    /// The inflated bytes' CRC-32 is not the central directory's.
    #[error("CRC-32 {crc:#010x} of the inflated data, the archive says {expected:#010x}")]
    Crc {
        /// CRC-32 of the inflated bytes.
        crc: u32,
        /// The central directory's.
        expected: u32,
    },
}

/// One member, as the central directory describes it (its name borrowed from it).
struct Member<'a> {
    name: &'a [u8],
    flags: u16,
    method: u16,
    crc32: u32,
    compressed_len: u64,
    len: u64,
    local_header: u64,
}

/// Little-endian fields at fixed offsets of a byte slice; `None` past its end.
trait LittleEndian {
    fn u16_at(&self, at: usize) -> Option<u16>;
    fn u32_at(&self, at: usize) -> Option<u32>;
    fn u64_at(&self, at: usize) -> Option<u64>;
}

impl LittleEndian for [u8] {
    fn u16_at(&self, at: usize) -> Option<u16> {
        Some(u16::from_le_bytes(*self.get(at..)?.first_chunk()?))
    }
    fn u32_at(&self, at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(*self.get(at..)?.first_chunk()?))
    }
    fn u64_at(&self, at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(*self.get(at..)?.first_chunk()?))
    }
}

/// Parses an `.npz` archive: one tensor per member, named and read as `np.load` names
/// and reads it: the member's name without a final `.npy` (case-sensitive: `X.NPY` stays
/// `X.NPY`), an array if its bytes start with NumPy's magic, whatever its name; a member
/// without the magic (`np.load` gives its bytes) is listed as not scanned. An archive
/// with no array and no member that could not be looked at is refused: as a PyTorch
/// checkpoint if it holds a `data.pkl`, else as no `.npz`. Never panics; errors say what
/// in the archive's format is wrong, or which read failed.
pub fn parse(archive: Source<'_>) -> Result<Vec<TensorEntry>, NpzError> {
    let mut directory = Vec::new();
    let members = central_directory(archive, &mut directory)?;
    let tensors = members
        .iter()
        .filter(|member| !member.name.ends_with(b"/"))
        .map(|member| {
            member_tensor(archive, member)
                .map_err(|error| NpzError::Member { name: String::from_utf8_lossy(member.name).into_owned(), error })
        })
        .collect::<Result<Vec<_>, NpzError>>()?;
    if tensors.iter().all(|(_, kind)| *kind == MemberKind::NotArray) {
        let pickled = |member: &Member<'_>| member.name == b"data.pkl" || member.name.ends_with(b"/data.pkl");
        return Err(if members.iter().any(pickled) { NpzError::PyTorchZip } else { NpzError::NoNpyMember });
    }
    Ok(tensors.into_iter().map(|(tensor, _)| tensor).collect())
}

/// What a member turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MemberKind {
    /// An array: its bytes start with NumPy's magic.
    Array,
    /// Not an array: its bytes do not start with NumPy's magic.
    NotArray,
    /// Encrypted or compressed by another method: not looked at.
    Unread,
}

/// The tensor of one member and what it is: its `.npy` header parsed and its data
/// located if it is an array.
fn member_tensor(archive: Source<'_>, member: &Member<'_>) -> Result<(TensorEntry, MemberKind), NpzMemberError> {
    let name = String::from_utf8_lossy(member.name);
    let array = name.strip_suffix(".npy").unwrap_or(&name);
    if member.flags & ENCRYPTED_FLAG != 0 {
        return Ok((not_scanned(array, "encrypted member"), MemberKind::Unread));
    }
    let data = member_data(archive, member)?;
    // The member's first bytes, enough for the longest header accepted.
    let mut head = Vec::new();
    let head_len = member.len.min(npy_header::MAX_NPY_HEAD_BYTES);
    let head = match member.method {
        STORED if member.len != member.compressed_len => {
            return Err(NpzMemberError::StoredLengths { len: member.len, compressed_len: member.compressed_len });
        }
        STORED => archive.get(data.start..data.start + head_len as usize, &mut head)?,
        DEFLATED => {
            flate2::read::DeflateDecoder::new(SourceReader::new(archive, data.clone()))
                .take(head_len)
                .read_to_end(&mut head)
                .map_err(inflate_error)?;
            if (head.len() as u64) < head_len {
                return Err(InflateError::Length { inflated: head.len() as u64, expected: member.len }.into());
            }
            &head[..]
        }
        _ => return Ok((not_scanned(array, "compressed with a method other than deflate"), MemberKind::Unread)),
    };
    if !head.starts_with(npy_header::NPY_MAGIC) {
        return Ok((not_scanned(array, "not an array (no NPY magic)"), MemberKind::NotArray));
    }
    let mut tensor = npy::parse_npy(head, member.len)?;
    if member.method == STORED {
        tensor.data = tensor.data.start + data.start..tensor.data.end + data.start;
    } else {
        tensor.deflated = Some(Deflated { compressed: data, inflated_len: member.len, crc32: member.crc32 });
    }
    tensor.name = array.to_string();
    Ok((tensor, MemberKind::Array))
}

/// A member listed without being read: no dtype, no shape, no data.
fn not_scanned(name: &str, why: &'static str) -> TensorEntry {
    TensorEntry {
        name: name.to_string(),
        dtype: "-".into(),
        element: TensorElement::Unsupported(why),
        shape: Vec::new(),
        elements: 0,
        data: 0..0,
        deflated: None,
        fortran_order: false,
    }
}

/// The byte range of `member`'s (possibly compressed) data, after its local header.
fn member_data(archive: Source<'_>, member: &Member<'_>) -> Result<Range<usize>, NpzMemberError> {
    let start = usize::try_from(member.local_header).ok().filter(|&at| at < archive.len());
    let start = start.ok_or(NpzMemberError::LocalHeaderOutside)?;
    let mut buffer = Vec::new();
    let local = archive.get(start..archive.len().min(start + LOCAL_HEADER_LEN), &mut buffer)?;
    if local.u32_at(0) != Some(LOCAL_HEADER) {
        return Err(NpzMemberError::NoLocalHeader);
    }
    let (Some(name_len), Some(extra_len)) = (local.u16_at(26), local.u16_at(28)) else {
        return Err(NpzMemberError::TruncatedLocalHeader);
    };
    let name_end = start + LOCAL_HEADER_LEN + usize::from(name_len);
    let name = if name_end <= archive.len() {
        Some(archive.get(start + LOCAL_HEADER_LEN..name_end, &mut buffer)?)
    } else {
        None
    };
    if name != Some(member.name) {
        return Err(NpzMemberError::OtherName);
    }
    let data_start = name_end + usize::from(extra_len);
    let data_end = usize::try_from(member.compressed_len).ok().and_then(|len| data_start.checked_add(len));
    match data_end {
        Some(end) if end <= archive.len() => Ok(data_start..end),
        _ => Err(NpzMemberError::DataBeyondEnd { claimed: member.compressed_len }),
    }
}

/// The members listed in the central directory, in order; the directory is read into
/// `buffer` (unless the archive is in memory), which the members' names borrow. It is
/// read whole: its size is bounded by the file's, and the member list it describes
/// takes about as much memory.
fn central_directory<'b>(archive: Source<'b>, buffer: &'b mut Vec<u8>) -> Result<Vec<Member<'b>>, NpzError> {
    let (end, record) = find_end(archive)?.ok_or(NpzError::NotZip)?;
    let record = record.as_slice();
    let (this_disk, directory_disk) = (record.u16_at(4), record.u16_at(6));
    if this_disk != Some(0) || directory_disk != Some(0) {
        return Err(NpzError::MultiVolume);
    }
    let field = |at| record.u32_at(at).map(u64::from).unwrap_or_default();
    let (mut count, mut size, mut offset) = (u64::from(record.u16_at(10).unwrap_or_default()), field(12), field(16));
    let mut directory_end = end;
    if let Some(locator) = end.checked_sub(ZIP64_LOCATOR_LEN) {
        let mut scratch = Vec::new();
        let locator_record = archive.get(locator..end, &mut scratch)?;
        if locator_record.u32_at(0) == Some(ZIP64_LOCATOR) {
            let zip64_end = locator_record.u64_at(8).and_then(|at| usize::try_from(at).ok());
            let zip64_end = zip64_end.filter(|&at| at.checked_add(ZIP64_END_LEN).is_some_and(|e| e <= locator));
            let record: &[u8] = match zip64_end {
                Some(at) => archive.get(at..at + ZIP64_END_LEN, &mut scratch)?,
                None => &[],
            };
            if record.u32_at(0) != Some(ZIP64_END) {
                return Err(NpzError::Zip64EndMissing);
            }
            (count, size, offset) = (
                record.u64_at(32).unwrap_or_default(),
                record.u64_at(40).unwrap_or_default(),
                record.u64_at(48).unwrap_or_default(),
            );
            directory_end = zip64_end.unwrap_or_default();
        }
    }
    let directory = usize::try_from(offset)
        .ok()
        .zip(usize::try_from(size).ok())
        .and_then(|(offset, size)| Some(offset..offset.checked_add(size)?))
        .filter(|range| range.end <= directory_end)
        .ok_or(NpzError::DirectoryOutside)?;
    if count > (directory.len() / CENTRAL_HEADER_LEN) as u64 {
        return Err(NpzError::TooManyMembers { count });
    }
    let directory = archive.get(directory, buffer)?;
    let mut members = Vec::with_capacity(count as usize);
    let mut at = 0;
    for _ in 0..count {
        let (member, len) = central_header(&directory[at..]).ok_or(NpzError::MalformedDirectory)?;
        members.push(member);
        at += len;
    }
    Ok(members)
}

/// The end of central directory record: where it starts, and its bytes. It is the last
/// signature in the final 64 KiB + 22 bytes whose comment length reaches exactly the end
/// of the file.
fn find_end(archive: Source<'_>) -> Result<Option<(usize, Vec<u8>)>, SourceReadError> {
    let Some(last) = archive.len().checked_sub(END_LEN) else {
        return Ok(None);
    };
    let first = last.saturating_sub(usize::from(u16::MAX));
    let mut buffer = Vec::new();
    let tail = archive.get(first..archive.len(), &mut buffer)?;
    let found = (0..=last - first).rev().find(|&at| {
        tail.u32_at(at) == Some(END)
            && tail.u16_at(at + 20).is_some_and(|comment| at + END_LEN + usize::from(comment) == tail.len())
    });
    Ok(found.map(|at| (first + at, tail[at..at + END_LEN].to_vec())))
}

/// One central directory header at the start of `record`, and its whole length.
fn central_header(record: &[u8]) -> Option<(Member<'_>, usize)> {
    if record.u32_at(0)? != CENTRAL_HEADER {
        return None;
    }
    let name_len = usize::from(record.u16_at(28)?);
    let extra_len = usize::from(record.u16_at(30)?);
    let comment_len = usize::from(record.u16_at(32)?);
    let name = record.get(CENTRAL_HEADER_LEN..CENTRAL_HEADER_LEN + name_len)?;
    let extra = record.get(CENTRAL_HEADER_LEN + name_len..CENTRAL_HEADER_LEN + name_len + extra_len)?;
    let total = CENTRAL_HEADER_LEN + name_len + extra_len + comment_len;
    if record.len() < total {
        return None;
    }
    // The 32-bit fields set to all ones take their value from the ZIP64 extra field, in
    // this order.
    let mut values = [record.u32_at(24)?, record.u32_at(20)?, record.u32_at(42)?].map(u64::from);
    if values.contains(&u64::from(u32::MAX)) {
        let zip64 = zip64_extra(extra)?;
        let mut next = 0;
        for value in values.iter_mut().filter(|v| **v == u64::from(u32::MAX)) {
            *value = zip64.u64_at(next)?;
            next += 8;
        }
    }
    let [len, compressed_len, local_header] = values;
    let member = Member {
        name,
        flags: record.u16_at(8)?,
        method: record.u16_at(10)?,
        crc32: record.u32_at(16)?,
        compressed_len,
        len,
        local_header,
    };
    Some((member, total))
}

/// The data of the ZIP64 extra field among `extra`'s fields.
fn zip64_extra(mut extra: &[u8]) -> Option<&[u8]> {
    while extra.len() >= 4 {
        let (id, len) = (extra.u16_at(0)?, usize::from(extra.u16_at(2)?));
        let data = extra.get(4..4 + len)?;
        if id == ZIP64_EXTRA {
            return Some(data);
        }
        extra = &extra[4 + len..];
    }
    None
}

/// Inflates the member `deflated` of `archive` and calls `use_chunk(first_byte, chunk)`
/// on its bytes `data` (counted from the member's start), in order, `chunk_bytes` at a
/// time; the rest of the member is inflated too, so that its length and CRC-32 can be
/// checked against the central directory's. Memory: one chunk and the inflater's state.
/// Errors: `use_chunk`'s, as it returned them, or an [`InflateError`] (a failed read of
/// the archive, a file that shrank, as [`InflateError::Read`]).
pub fn inflate<E: From<InflateError>>(
    archive: Source<'_>,
    deflated: &Deflated,
    data: Range<usize>,
    chunk_bytes: usize,
    mut use_chunk: impl FnMut(u64, &[u8]) -> Result<(), E>,
) -> Result<(), E> {
    // One byte more than the member should hold, to tell a longer stream.
    let mut inflater = CheckedReader {
        inner: flate2::read::DeflateDecoder::new(SourceReader::new(archive, deflated.compressed.clone()))
            .take(deflated.inflated_len + 1),
        crc: crc32fast::Hasher::new(),
        len: 0,
    };
    std::io::copy(&mut (&mut inflater).take(data.start as u64), &mut std::io::sink()).map_err(inflate_error)?;
    let mut chunk = vec![0; chunk_bytes.min(data.len()).max(1)];
    let mut done = 0;
    while done < data.len() {
        let len = chunk.len().min(data.len() - done);
        let read = read_full(&mut inflater, &mut chunk[..len]).map_err(inflate_error)?;
        if read < len {
            break;
        }
        use_chunk(done as u64, &chunk[..len])?;
        done += len;
    }
    std::io::copy(&mut inflater, &mut std::io::sink()).map_err(inflate_error)?;
    if inflater.len != deflated.inflated_len {
        return Err(InflateError::Length { inflated: inflater.len, expected: deflated.inflated_len }.into());
    }
    let crc = inflater.crc.finalize();
    if crc != deflated.crc32 {
        return Err(InflateError::Crc { crc, expected: deflated.crc32 }.into());
    }
    Ok(())
}

/// An error met while inflating: the archive's own read error (carried through the
/// inflater by [`SourceReader`]) as it was, anything else as a corrupt stream.
fn inflate_error(error: std::io::Error) -> InflateError {
    match error.downcast::<SourceReadError>() {
        Ok(read) => InflateError::Read(read),
        Err(error) => InflateError::Corrupt(error),
    }
}

/// The bytes `range` of a [`Source`] (clipped to it) as a stream; a failed read is an
/// `io::Error` that carries the [`SourceReadError`].
struct SourceReader<'a> {
    source: Source<'a>,
    at: usize,
    end: usize,
}

impl<'a> SourceReader<'a> {
    fn new(source: Source<'a>, range: Range<usize>) -> SourceReader<'a> {
        let end = range.end.min(source.len());
        SourceReader { source, at: range.start.min(end), end }
    }
}

impl Read for SourceReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let len = buffer.len().min(self.end - self.at);
        self.source.read_into(self.at, &mut buffer[..len]).map_err(std::io::Error::other)?;
        self.at += len;
        Ok(len)
    }
}

/// Reads until `buffer` is full or the stream ends; the bytes read.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A reader that keeps the CRC-32 and the count of what passes through it.
struct CheckedReader<R> {
    inner: R,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<R: Read> Read for CheckedReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buffer)?;
        self.crc.update(&buffer[..n]);
        self.len += n as u64;
        Ok(n)
    }
}
