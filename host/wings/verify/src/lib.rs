//! The verification harness: the runtime variant table ([`table`], built from
//! `shared::for_each_variant!`), each family's checked inputs ([`domain`]), the
//! independent exact reference ([`reference`](mod@reference)), the exhaustive CPU check ([`cpu`]), the
//! GPU run of each variant against the CPU ([`gpu_check`]), the
//! three-way check of a conversion against the GPU's own instruction ([`three_way`]) and
//! CPU timing ([`timing`]).
//!
//! Owns: what each variant is, which inputs prove it, and what the right answer is.
//! Uses: [`bitexact_support`], and [`bitexact_gpu`] (the table binds each variant's GPU
//! kernels to it). Nothing below it (support, gpu) uses it.
#![deny(unsafe_code)]

pub mod cpu;
pub mod domain;
#[doc(hidden)]
pub mod gpu_check;
pub mod reference;
pub mod table;
#[doc(hidden)]
pub mod three_way;
#[doc(hidden)]
pub mod timing;

#[cfg(test)]
mod tests;
