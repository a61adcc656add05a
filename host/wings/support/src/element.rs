//! The integer element types that inputs and stored outputs are made of (`u8`, `u16`,
//! `u32`, `u64`), as the CPU checks and the GPU buffers both need them, and the byte
//! order elements are stored in ([`Endian`]), as tensor files and the loops that count
//! them both need it.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// An integer element type that inputs and stored outputs are made of.
pub trait Element:
    bytemuck::Pod + PartialEq + Default + Send + Sync + core::fmt::Debug + DeviceRepr + ValidAsZeroBits + 'static
{
    /// Width in bits.
    #[doc(hidden)]
    const BITS: u32;
    /// The low `BITS` bits of `v`.
    #[doc(hidden)]
    fn from_u64(v: u64) -> Self;
    /// Zero-extended to `u64`.
    #[doc(hidden)]
    fn to_u64(self) -> u64;
}

macro_rules! element {
    ($($t:ty)*) => {$(
        impl Element for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn from_u64(v: u64) -> $t {
                v as $t
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                u64::from(self)
            }
        }
    )*};
}
element!(u8 u16 u32 u64);

/// Byte order of stored elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Endian {
    /// Least significant byte first (safetensors, `<` in npy).
    Little,
    /// Most significant byte first (`>` in npy).
    Big,
}
