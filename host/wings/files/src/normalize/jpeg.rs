//! Whether a JPEG file is whole: its markers walked from SOI to EOI. The `image` crate's
//! JPEG decoder (zune-jpeg, in its lenient mode) decodes a truncated file without an
//! error, filling the rows it never reached with grey (128): the first half of a
//! 300 × 300 JPEG gave exit 0 and 150 rows of 128/255. A file that ends before its
//! end-of-image marker is refused instead.
//!
//! The walk: after SOI, each marker segment is skipped by its 2-byte length; after an
//! SOS header, the entropy-coded data runs to the next marker that is neither a stuffed
//! `FF 00` nor a restart marker (`FF D0`–`FF D7`), which cannot occur inside it. Fill
//! bytes (`FF FF ...`) before a marker are skipped. Reaching the end of the file before
//! `FF D9` (EOI) means the file was cut; anything after EOI is ignored (as decoders do).
//! An embedded thumbnail (its own SOI ... EOI inside an APP1 segment) is skipped with
//! its segment, so it cannot end the walk early.

/// A JPEG that ends before its end-of-image marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot decode image: the JPEG ends inside {inside} at byte {length}, before its end-of-image marker (truncated)"
)]
pub struct JpegTruncated {
    /// The file's length.
    pub length: usize,
    /// Where the file ended: `"a marker segment"`, `"the entropy-coded data"`, ...
    pub inside: &'static str,
}

/// The start-of-image marker every JPEG begins with.
const SOI: [u8; 2] = [0xFF, 0xD8];
/// End of image.
const EOI: u8 = 0xD9;
/// Start of scan: entropy-coded data follows its header.
const SOS: u8 = 0xDA;

/// `Ok` when `bytes` is not a JPEG (no SOI) or reaches its EOI marker; see the module's
/// documentation for the walk.
pub(crate) fn check_complete(bytes: &[u8]) -> Result<(), JpegTruncated> {
    if !bytes.starts_with(&SOI) {
        return Ok(());
    }
    let cut = |inside| Err(JpegTruncated { length: bytes.len(), inside });
    let mut at = SOI.len();
    loop {
        // A marker: FF, any fill FFs, then its code (anything else between segments is
        // skipped, as lenient decoders do).
        while at < bytes.len() && bytes[at] != 0xFF {
            at += 1;
        }
        while at < bytes.len() && bytes[at] == 0xFF {
            at += 1;
        }
        let Some(&code) = bytes.get(at) else { return cut("the markers") };
        at += 1;
        match code {
            EOI => return Ok(()),
            // Restart markers, TEM and a stray stuffed zero have no length.
            0xD0..=0xD7 | 0x01 | 0x00 => {}
            _ => {
                let Some(length) = bytes.get(at..at + 2) else { return cut("a marker segment") };
                at += usize::from(u16::from_be_bytes([length[0], length[1]]));
                if at > bytes.len() {
                    return cut("a marker segment");
                }
                if code == SOS {
                    at = entropy_coded_end(bytes, at)
                        .ok_or(JpegTruncated { length: bytes.len(), inside: "the entropy-coded data" })?;
                }
            }
        }
    }
}

/// Where the entropy-coded data starting at `at` ends: the index of the `FF` of the
/// first marker after it that is not a stuffed zero or a restart marker; `None` if the
/// file ends first.
fn entropy_coded_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let ff = at + bytes.get(at..)?.iter().position(|&b| b == 0xFF)?;
        match bytes.get(ff + 1)? {
            0x00 | 0xD0..=0xD7 => at = ff + 2,
            _ => return Some(ff),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SOI, a DQT-like segment, SOS with entropy data holding a stuffed FF and a restart
    /// marker, a second scan, EOI.
    fn whole() -> Vec<u8> {
        let mut j = vec![0xFF, 0xD8];
        j.extend([0xFF, 0xDB, 0x00, 0x04, 0xAA, 0xBB]);
        j.extend([0xFF, 0xDA, 0x00, 0x03, 0x01, 0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD3, 0x56]);
        j.extend([0xFF, 0xDA, 0x00, 0x03, 0x02, 0x78]);
        j.extend([0xFF, 0xD9]);
        j
    }

    #[test]
    fn a_whole_jpeg_passes_and_every_cut_before_eoi_is_refused() {
        let j = whole();
        assert_eq!(check_complete(&j), Ok(()));
        let mut trailing = j.clone();
        trailing.extend(b"trailing bytes");
        assert_eq!(check_complete(&trailing), Ok(()));
        for cut in 2..j.len() - 1 {
            assert!(check_complete(&j[..cut]).is_err(), "cut at {cut} passed");
        }
        // A cut between FF and D9 is as cut.
        assert!(check_complete(&j[..j.len() - 1]).is_err());
        assert_eq!(check_complete(b"not a jpeg"), Ok(()));
    }

    #[test]
    fn an_eoi_inside_a_segment_does_not_end_the_walk() {
        // An APP1 segment holding a whole thumbnail (SOI ... EOI), then a cut scan.
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x06, 0xFF, 0xD8, 0xFF, 0xD9];
        j.extend([0xFF, 0xDA, 0x00, 0x03, 0x01, 0x12, 0x34]);
        assert_eq!(check_complete(&j).map_err(|e| e.inside), Err("the entropy-coded data"));
    }
}
