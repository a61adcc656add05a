//! The CPU backend ([`CpuBackend`]): every core of the global rayon pool, in blocks of
//! [`BLOCK_BYTES`], each block run by the loops compiled for the CPU level chosen at run
//! time.

use crate::backend::conversion::SampleConversion;
use crate::backend::count::{self, BLOCK_BYTES, Counts};
use crate::backend::{Backend, BackendError, CountJob};
use bitexact_cpu::convert::LevelForms;
use rayon::prelude::*;

/// The CPU backend: every core of the global rayon pool, in blocks of [`BLOCK_BYTES`].
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({})", bitexact_support::output::count_of(rayon::current_num_threads() as u64, "thread"))
    }

    fn count(&self, job: CountJob<'_>) -> Result<Counts, BackendError> {
        Ok(count::count_parallel(job.format, job.endian, job.data, job.progress)?)
    }

    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        conversion.elements(src, dst)?;
        let (in_bytes, out_bytes) = (conversion.in_bytes(), conversion.out_bytes());
        let block = BLOCK_BYTES / out_bytes;
        let level = bitexact_cpu::level();
        let streaming = dst.len() >= bitexact_cpu::STREAMING_BYTES;
        let path = conversion.cpu_path();
        dst.par_chunks_mut(block * out_bytes).zip(src.par_chunks(block * in_bytes)).for_each(|(d, s)| {
            if !(streaming && path.run_streaming_at(level, s, d)) {
                path.run_at(level, s, d);
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::conversion::convert_slices;

    /// A conversion for the tests.
    const UNORM8: fn() -> SampleConversion = SampleConversion::of::<shared::variants::unorm8_times3_int>;

    #[test]
    fn conversions_refuse_buffers_of_different_lengths() {
        let error = convert_slices(&CpuBackend, UNORM8(), &[1u8, 2, 3], &mut [0f32; 2]).expect_err("3 into 2");
        assert_eq!(error.to_string(), "3 samples cannot be converted into 2 values");
    }

    #[test]
    fn conversions_refuse_partial_or_misaligned_elements() {
        let words = [0u32; 4];
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        let mut out = [0f32; 4];
        let out: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        let unorm16 = SampleConversion::of::<shared::variants::unorm16_to_f32>();
        let error = CpuBackend.convert(unorm16, &bytes[1..7], &mut out[..12]).expect_err("misaligned");
        assert_eq!(
            error.to_string(),
            "6 bytes cannot be converted into 12 by unorm16_to_f32: not whole, aligned elements"
        );
        CpuBackend.convert(unorm16, &bytes[..5], &mut out[..8]).expect_err("a partial sample");
        CpuBackend.convert(unorm16, &bytes[..4], &mut out[..8]).expect("whole");
    }
}
