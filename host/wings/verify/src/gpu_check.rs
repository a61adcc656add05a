//! A variant run on the GPU against the same variant run on the CPU (`shared` on the
//! host), over the same inputs, bit for bit (`check_against_cpu`): what
//! [`VariantOps::gpu_check`](crate::table::VariantOps::gpu_check) runs for each variant
//! of the table.

use bitexact_gpu::{Bits, Gpu, GpuError, InputAt};
use bitexact_support::element::Element;
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use shared::{KernelKind, Stored, kind};

/// First difference between GPU and CPU results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GpuMismatch {
    /// Element index.
    pub index: u64,
    /// Input bits.
    pub input: u64,
    /// GPU result bits.
    pub gpu: u64,
    /// CPU (`shared` on the host) result bits.
    pub cpu: u64,
}

/// Outcome of running a variant on the GPU and on the CPU over the same inputs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GpuCheck {
    /// Elements compared.
    pub elements: u64,
    /// Elements whose bits differ.
    pub mismatches: u64,
    /// The first of those.
    pub first_mismatch: Option<GpuMismatch>,
}

/// Runs `P` on the GPU over `len` inputs (`input_at(i)` for element `i`) and compares
/// every result bit for bit with `P` run on the CPU (all cores).
pub(crate) fn check_against_cpu<P>(gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<GpuCheck, GpuError>
where
    P: kind::Map,
    P::In: Element,
    Bits<P>: Element,
{
    let input: Vec<P::In> = bitexact_support::parallel::map_indices(len, |i| P::In::from_u64(input_at(i as u64)));
    let output = run_on_gpu::<P>(gpu, &input)?;
    let (mismatches, first) = bitexact_support::parallel::count_where(len, |i| {
        let cpu = P::apply(input[i]).to_stored();
        (cpu != output[i]).then(|| GpuMismatch {
            index: i as u64,
            input: input[i].to_u64(),
            gpu: output[i].to_u64(),
            cpu: cpu.to_u64(),
        })
    });
    Ok(GpuCheck { elements: len as u64, mismatches, first_mismatch: first })
}

/// `P`'s [`shared::KernelKind::Map`] kernel over a host slice: uploaded, run, the stored
/// results downloaded.
fn run_on_gpu<P>(gpu: &Gpu, input: &[P::In]) -> Result<Vec<Bits<P>>, GpuError>
where
    P: kind::Map,
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr + ValidAsZeroBits + Default + Clone,
{
    let device_input = gpu.upload(input)?;
    let mut device_output = gpu.zeros::<Bits<P>>(input.len())?;
    gpu.module_for::<P>(KernelKind::Map)?.map::<P>(&device_input.as_view(), &mut device_output.as_view_mut())?;
    gpu.download(&device_output)
}
