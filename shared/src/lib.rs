//! Bit-exact numeric-format primitives, `no_std`, shared by CPU and GPU code.
//!
//! Every function here is `#[inline]`, free of panics and of calls into anything but
//! `core`: the same source is compiled into the host library and into the
//! `nvptx64-nvidia-cuda` kernels of `kernels-gpu`, and the PTX must define everything
//! it calls.
//!
//! All arithmetic relies on IEEE 754 round-to-nearest-even with subnormals kept: no
//! fast-math, no flush-to-zero, no approximate division, and no contraction of a
//! multiply and an add unless a function asks for a fused multiply-add by name.
//!
//! The one list of variants lives in [`for_each_variant!`]; [`variants`] holds a marker
//! type per entry implementing [`Primitive`] and the [`kind`] trait of each kernel the
//! entry has.
#![no_std]
#![feature(f16, core_float_math)]
// Bit literals are grouped by the encoding's fields (sign_exponent_mantissa), not by nibbles.
#![allow(clippy::unusual_byte_groupings)]

pub mod bfloat16;
pub mod binary16;
pub mod binary32;
pub mod binary64;
mod class;
pub mod e8m0;
pub mod fp4;
pub mod fp8;
pub mod fp8_block;
pub mod fp8_scale;
pub mod hardware;
pub mod kind;
pub mod launch;
pub mod mx;
pub mod narrow;
pub mod norm;
pub mod nvfp4;
pub mod packed;
pub mod scheme;
pub mod schemes;
mod table;
pub mod unorm16;
pub mod unorm8;
pub mod unorm_narrow;

pub use class::Class;
pub use kind::{KernelKind, KernelName};
pub use table::{Claim, Domain, Family, Format, Primitive, Stored};

/// The stored result type of a primitive: the bits its kernels write (`u32` for an f32
/// result, `u16` for binary16, …). One definition for the host and the kernels.
pub type Bits<P> = <<P as Primitive>::Out as Stored>::Bits;

/// One marker type per entry of [`for_each_variant!`], each implementing [`Primitive`]
/// and the [`kind`] trait of each kind of kernel the entry has.
///
/// The type names are the variant names (snake case), which also begin the GPU kernel
/// names ([`KernelName`]), so a name cannot drift between the table, the kernels and
/// the host.
pub mod variants {
    crate::for_each_variant!(crate::table::define_primitives);
}
