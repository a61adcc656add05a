//! Host data streamed through a kernel (stream, map or count) with the host, the copy engines and the kernel
//! all busy at once: page-locked (pinned) staging buffers in two lanes, each with its
//! own CUDA stream. While one lane's chunk is copied to the device, run through the
//! kernel and copied back, the host fills the other lane's input (reads a file, copies
//! samples) and takes the previous chunk's output out of it.
//!
//! The only `unsafe` (allocating pinned memory, viewing a device buffer as another
//! integer type) stays in `raw`.

use super::{Bits, Gpu, GpuError, KernelModule, NonFinite, alloc_error, driver, raw};
use bitexact_support::element::Element;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PinnedHostSlice};
use shared::{KernelKind, KernelName, kind};
use std::sync::Arc;

/// Two lanes of staging buffers for [`KernelModule::stream_staged`] and
/// [`KernelModule::count_staged`]:
/// per lane a CUDA stream, a pinned input and output buffer on the host and their twins
/// on the device. Made by [`Gpu::staging`]; kept and reused across calls (allocating
/// pinned memory is slow).
pub struct Staging {
    lanes: [Lane; 2],
    input_bytes: usize,
    output_bytes: usize,
}

/// One lane: buffers held as `u64` words, so that they are aligned for every
/// [`Element`] type and viewed as the type a call needs.
struct Lane {
    stream: Arc<CudaStream>,
    host_in: PinnedHostSlice<u64>,
    device_in: CudaSlice<u64>,
    device_out: CudaSlice<u64>,
    host_out: PinnedHostSlice<u64>,
    /// The chunk queued on this lane and not yet handed back.
    in_flight: Option<InFlight>,
}

/// A queued chunk: its index and its input and output lengths in elements.
#[derive(Clone, Copy)]
struct InFlight {
    chunk: usize,
    input: usize,
    output: usize,
}

impl Drop for Lane {
    fn drop(&mut self) {
        // The pinned buffers are freed next: no copy may still be using them.
        let _ = self.stream.synchronize();
    }
}

impl Lane {
    fn new(gpu: &Gpu, input_words: usize, output_words: usize) -> Result<Lane, GpuError> {
        let stream = gpu.ctx.new_stream().map_err(driver("creating a stream"))?;
        let pinned = |words: usize| raw::alloc_pinned_zeroed(&gpu.ctx, words).map_err(alloc_error(words * 8));
        let device = |words: usize| stream.alloc_zeros::<u64>(words).map_err(alloc_error(words * 8));
        Ok(Lane {
            host_in: pinned(input_words)?,
            device_in: device(input_words)?,
            device_out: device(output_words)?,
            host_out: pinned(output_words)?,
            in_flight: None,
            stream,
        })
    }

    /// Waits for this lane's queued work; a failure is reported as `kernel`'s.
    fn wait(&self, kernel: KernelName) -> Result<(), GpuError> {
        self.stream.synchronize().map_err(|error| GpuError::Launch { kernel: kernel.to_string(), error })
    }
}

impl Staging {
    /// Bytes of input a lane holds: the largest chunk, in bytes.
    #[doc(hidden)]
    pub fn input_bytes(&self) -> usize {
        self.input_bytes
    }

    /// Bytes of output a lane holds.
    #[doc(hidden)]
    pub fn output_bytes(&self) -> usize {
        self.output_bytes
    }

    /// Runs `chunks` chunks through the device, two in flight (see the module doc).
    /// For chunk `i`: `fill(i, input)` writes its elements at the start of `input` (the
    /// lane's pinned buffer, its whole capacity) and returns how many (at most the
    /// capacity); they are copied up; `queue` queues the kernel on the lane's stream
    /// over them into the lane's output and returns how many output elements to copy
    /// back; `drain(i, input, output)` then gets the chunk's input and output, chunks in
    /// order. A failure on the device is reported as `kernel`'s.
    fn run<I: Element, O: Element, E: From<GpuError>>(
        &mut self,
        kernel: KernelName,
        chunks: usize,
        mut fill: impl FnMut(usize, &mut [I]) -> Result<usize, E>,
        mut queue: impl FnMut(&Arc<CudaStream>, &CudaView<'_, I>, CudaViewMut<'_, O>) -> Result<usize, GpuError>,
        mut drain: impl FnMut(usize, &[I], &[O]) -> Result<(), E>,
    ) -> Result<(), E> {
        let pinned = |e| driver("waiting for a pinned buffer")(e);
        // A run that stopped on an error may have left copies in flight: nothing touches
        // a lane's buffers before its stream is idle.
        for lane in &mut self.lanes {
            lane.in_flight = None;
            lane.wait(kernel)?;
        }
        let in_capacity = self.input_bytes / size_of::<I>();
        let out_capacity = self.output_bytes / size_of::<O>();
        for step in 0..chunks + 2 {
            let lane = &mut self.lanes[step % 2];
            // This lane's previous chunk (step - 2) is done: hand it back.
            if let Some(done) = lane.in_flight.take() {
                lane.wait(kernel)?;
                let input: &[I] = bytemuck::cast_slice(lane.host_in.as_slice().map_err(pinned)?);
                let output: &[O] = bytemuck::cast_slice(lane.host_out.as_slice().map_err(pinned)?);
                drain(done.chunk, &input[..done.input], &output[..done.output])?;
            }
            if step >= chunks {
                continue;
            }
            let input: &mut [I] = bytemuck::cast_slice_mut(lane.host_in.as_mut_slice().map_err(pinned)?);
            let len = fill(step, &mut input[..in_capacity])?.min(in_capacity);
            let mut device_in = raw::words_as_mut::<I>(&mut lane.device_in, len).ok_or(GpuError::CopyLength {
                copy: super::DeviceCopy::ToDevice,
                from: len,
                into: in_capacity,
            })?;
            lane.stream.memcpy_htod(&input[..len], &mut device_in).map_err(driver("copying a chunk to the device"))?;
            let device_in = raw::words_as::<I>(&lane.device_in, len).ok_or(GpuError::CopyLength {
                copy: super::DeviceCopy::ToDevice,
                from: len,
                into: in_capacity,
            })?;
            let device_out =
                raw::words_as_mut::<O>(&mut lane.device_out, out_capacity).ok_or(GpuError::CopyLength {
                    copy: super::DeviceCopy::ToHost,
                    from: out_capacity,
                    into: out_capacity,
                })?;
            let out_len = queue(&lane.stream, &device_in, device_out)?;
            if out_len > out_capacity {
                return Err(GpuError::CopyLength {
                    copy: super::DeviceCopy::ToHost,
                    from: out_len,
                    into: out_capacity,
                }
                .into());
            }
            let output: &mut [O] = bytemuck::cast_slice_mut(lane.host_out.as_mut_slice().map_err(pinned)?);
            let device_out = raw::words_as::<O>(&lane.device_out, out_len).ok_or(GpuError::CopyLength {
                copy: super::DeviceCopy::ToHost,
                from: out_len,
                into: out_capacity,
            })?;
            lane.stream
                .memcpy_dtoh(&device_out, &mut output[..out_len])
                .map_err(driver("copying a chunk's results to the host"))?;
            lane.in_flight = Some(InFlight { chunk: step, input: len, output: out_len });
        }
        Ok(())
    }
}

impl Gpu {
    /// Two lanes of staging buffers, each holding `input_bytes` of input and
    /// `output_bytes` of output (rounded up to whole 8-byte words, at least one), pinned
    /// on the host and allocated on the device.
    pub fn staging(&self, input_bytes: usize, output_bytes: usize) -> Result<Staging, GpuError> {
        let (input_words, output_words) = (input_bytes.div_ceil(8).max(1), output_bytes.div_ceil(8).max(1));
        Ok(Staging {
            lanes: [Lane::new(self, input_words, output_words)?, Lane::new(self, input_words, output_words)?],
            input_bytes: input_words * 8,
            output_bytes: output_words * 8,
        })
    }
}

impl KernelModule {
    /// The module's [`KernelKind::Stream`] kernel of `P` over `chunks` chunks staged
    /// through `staging` (made by [`Gpu::staging`] of the `Gpu` that loaded the module),
    /// two in flight: `fill(i, input)` writes chunk `i`'s inputs at the start
    /// of `input` and returns how many (at most `staging.input_bytes() /
    /// size_of::<P::In>()`, and `staging.output_bytes()` must hold a stored result for
    /// each); `drain(i, input, output)` then gets the chunk's inputs and their stored
    /// results, `output[j]` that of `input[j]`, chunks in order. The host fills chunk
    /// `i + 1` while chunk `i` is on the device.
    pub fn stream_staged<P, E>(
        &self,
        staging: &mut Staging,
        chunks: usize,
        mut fill: impl FnMut(usize, &mut [P::In]) -> Result<usize, E>,
        mut drain: impl FnMut(usize, &[P::In], &[Bits<P>]) -> Result<(), E>,
    ) -> Result<(), E>
    where
        P: kind::Stream,
        P::In: Element,
        Bits<P>: Element,
        E: From<GpuError>,
    {
        let name = KernelName::of::<P>(KernelKind::Stream);
        let queue = |stream: &Arc<CudaStream>, input: &CudaView<'_, P::In>, mut output: CudaViewMut<'_, Bits<P>>| {
            let n = input.len();
            let mut output = output.try_slice_mut(..n).ok_or(GpuError::Length {
                kernel: name.to_string(),
                detail: format!("{n} results do not fit the staging output"),
            })?;
            self.launch_stream_on::<P>(stream, input, &mut output)?;
            Ok(n)
        };
        staging.run(name, chunks, &mut fill, queue, &mut drain)
    }

    /// The module's [`KernelKind::CountNonfinite`] kernel of `P` over `chunks` chunks
    /// staged through `staging` (made by [`Gpu::staging`] of the `Gpu` that loaded the
    /// module), two in flight: `fill(i, input)` writes chunk `i`'s elements at the
    /// start of `input` and returns how many; `drain(i, input, found)` then gets the
    /// chunk's elements and what the kernel found in them (indices from the chunk's
    /// start), chunks in order. The host fills chunk `i + 1` while chunk `i` is on the
    /// device.
    pub fn count_staged<P, E>(
        &self,
        staging: &mut Staging,
        chunks: usize,
        mut fill: impl FnMut(usize, &mut [P::In]) -> Result<usize, E>,
        mut drain: impl FnMut(usize, &[P::In], NonFinite) -> Result<(), E>,
    ) -> Result<(), E>
    where
        P: kind::CountNonfinite,
        P::In: Element,
        E: From<GpuError>,
    {
        let name = KernelName::of::<P>(KernelKind::CountNonfinite);
        let queue = |stream: &Arc<CudaStream>, input: &CudaView<'_, P::In>, mut output: CudaViewMut<'_, u64>| {
            let mut result = output.try_slice_mut(..2).ok_or(GpuError::Length {
                kernel: name.to_string(),
                detail: "the staging output holds fewer than 2 counters".into(),
            })?;
            // Count 0, first index "none": the kernel adds to the one and lowers the other.
            stream.memcpy_htod(&[0u64, u64::MAX], &mut result).map_err(driver("resetting a count"))?;
            self.launch_count_on::<P>(stream, input, &mut result)?;
            Ok(2)
        };
        let drain_counts = |chunk: usize, input: &[P::In], result: &[u64]| {
            let (count, first) = (result.first().copied().unwrap_or(0), result.get(1).copied().unwrap_or(u64::MAX));
            drain(chunk, input, NonFinite { count, first: (first != u64::MAX).then_some(first) })
        };
        staging.run(name, chunks, &mut fill, queue, drain_counts)
    }
}
