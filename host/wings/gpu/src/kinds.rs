//! The kinds' launches ([`shared::KernelKind`]), on the one typed path: each is the
//! kind's declaration [`KindKernel`]`<P, tag::Kind>` made into a typed handle
//! ([`KernelModule::kernel`]: the declaration checked against the module's PTX) and
//! launched with `TypedKernel::launch`. The arguments of each signature are pushed in one
//! place: `elementwise`'s `(input, output, n)` for the five element-wise kinds
//! ([`kind::Elementwise`]), `timing`'s `(seed, iterations, out)` for both timing kinds
//! ([`kind::Timing`]), the count's `(input, n, result)` and the stream count's
//! `(input, output, n, result)`.
//!
//! What the typed launch leaves to its caller, that the kernel's accesses stay inside
//! the buffers, each kind's trait promises ([`shared::kind`]'s `Safety` section): the
//! `unsafe` blocks here stand on it, after checking the buffer lengths the promise is
//! about.
#![allow(unsafe_code)]

use super::shape::LaunchShape;
use super::{Bits, GpuError, KernelModule, NonFinite};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig};
use shared::kind::{self, KindKernel, tag};
use shared::launch::DeclaredKernel;
use shared::{KernelKind, KernelName};

/// A [`GpuError::Length`] for kernel `name`.
fn length_error(name: &str, detail: String) -> GpuError {
    GpuError::Length { kernel: name.to_string(), detail }
}

/// Count 0, first index "none": a count kernel adds to the one and lowers the other.
const RESULT_START: [u64; 2] = [0, u64::MAX];

impl KernelModule {
    /// Checks that `input` and `output` have equal lengths and queues `K`, an
    /// element-wise kernel `(input, output, n)`, on `stream` over them, `n` their length,
    /// with a grid-stride launch of `per_thread` elements per thread per step.
    ///
    /// # Safety
    /// `K`'s kernel, launched so, touches only elements below `n` of both buffers (the
    /// promise of the kind trait behind `K`).
    unsafe fn elementwise<K, I, O>(
        &self,
        stream: &CudaStream,
        per_thread: u64,
        input: &CudaView<'_, I>,
        output: &mut CudaViewMut<'_, O>,
    ) -> Result<(), GpuError>
    where
        K: DeclaredKernel<Params = kind::Elementwise<I, O>>,
    {
        if input.len() != output.len() {
            let detail = format!("input has {} elements but output {}", input.len(), output.len());
            return Err(length_error(K::NAME, detail));
        }
        let kernel = self.kernel::<K>()?;
        let n = input.len() as u64;
        // SAFETY: both views hold `n` elements (checked above) and the caller guarantees
        // the kernel touches only those.
        unsafe { kernel.launch_on(stream, self.grid_stride(input.len(), per_thread), (input, &mut *output, n)) }
    }

    /// Checks that `out` holds `needed` elements and queues `K`, a timing kernel
    /// `(seed, iterations, out)`, with `shape`.
    ///
    /// # Safety
    /// `K`'s kernel, launched with `shape`, writes only elements of `out` below `needed`.
    unsafe fn timing<K>(
        &self,
        shape: LaunchShape,
        needed: u64,
        seed: u64,
        iterations: u32,
        out: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError>
    where
        K: DeclaredKernel<Params = kind::Timing>,
    {
        if (out.len() as u64) < needed {
            return Err(length_error(K::NAME, format!("out has {} elements, needs {needed}", out.len())));
        }
        let kernel = self.kernel::<K>()?;
        // SAFETY: `out` holds `needed` elements (checked above), all the kernel writes.
        unsafe { kernel.launch(shape, (seed, iterations, out)) }
    }

    /// `output[i] = P(input[i])` (equal lengths) with the module's [`KernelKind::Map`]
    /// kernel of `P`; waits for it.
    pub fn map<P: kind::Map>(
        &self,
        input: &CudaView<'_, P::In>,
        output: &mut CudaViewMut<'_, Bits<P>>,
    ) -> Result<(), GpuError> {
        // SAFETY: `P: kind::Map`: its kernel touches only elements below `n`.
        unsafe { self.elementwise::<KindKernel<P, tag::Map>, _, _>(self.stream(), 1, input, output)? };
        self.wait(KernelName::of::<P>(KernelKind::Map))
    }

    /// Queues the module's [`KernelKind::Stream`] kernel of `P` (equal lengths); does not
    /// wait.
    pub fn launch_stream<P: kind::Stream>(
        &self,
        input: &CudaView<'_, P::In>,
        output: &mut CudaViewMut<'_, Bits<P>>,
    ) -> Result<(), GpuError> {
        self.launch_stream_on::<P>(self.stream(), input, output)
    }

    /// [`KernelModule::launch_stream`] on `stream` (a staging lane's).
    pub(super) fn launch_stream_on<P: kind::Stream>(
        &self,
        stream: &CudaStream,
        input: &CudaView<'_, P::In>,
        output: &mut CudaViewMut<'_, Bits<P>>,
    ) -> Result<(), GpuError> {
        // SAFETY: `P: kind::Stream`: its kernel touches only elements below `n` (a
        // misaligned start for its vector accesses sends it down its scalar pass).
        unsafe {
            self.elementwise::<KindKernel<P, tag::Stream>, _, _>(stream, kind::STREAM_LANE_ELEMENTS, input, output)
        }
    }

    /// `output[i]` = the GPU's own conversion instruction for `P`'s family applied to
    /// `input[i]` (equal lengths), with the module's [`KernelKind::Hardware`] kernel of
    /// `P`; waits for it.
    #[doc(hidden)]
    pub fn map_hardware<P: kind::Hardware>(
        &self,
        input: &CudaView<'_, P::In>,
        output: &mut CudaViewMut<'_, Bits<P>>,
    ) -> Result<(), GpuError> {
        // SAFETY: `P: kind::Hardware`: its kernel touches only elements below `n`.
        unsafe { self.elementwise::<KindKernel<P, tag::Hardware>, _, _>(self.stream(), 1, input, output)? };
        self.wait(KernelName::of::<P>(KernelKind::Hardware))
    }

    /// Queues the module's [`KernelKind::HardwareStream`] kernel of `P` (equal lengths);
    /// does not wait.
    #[doc(hidden)]
    pub fn launch_hardware_stream<P: kind::HardwareStream>(
        &self,
        input: &CudaView<'_, P::In>,
        output: &mut CudaViewMut<'_, Bits<P>>,
    ) -> Result<(), GpuError> {
        let per_thread = kind::STREAM_LANE_ELEMENTS;
        // SAFETY: `P: kind::HardwareStream`: its kernel touches only elements below `n`
        // (a misaligned start sends it down its scalar pass).
        unsafe {
            self.elementwise::<KindKernel<P, tag::HardwareStream>, _, _>(self.stream(), per_thread, input, output)
        }
    }

    /// Counts the non-finite values of `input` with the module's
    /// [`KernelKind::CountNonfinite`] kernel of `P`, and finds the first.
    pub fn count_nonfinite<P: kind::CountNonfinite>(&self, input: &CudaView<'_, P::In>) -> Result<NonFinite, GpuError> {
        let mut result = self.result()?;
        self.launch_count_on::<P>(self.stream(), input, &mut result.as_view_mut())?;
        self.read_result(KernelName::of::<P>(KernelKind::CountNonfinite), &result)
    }

    /// Queues the module's [`KernelKind::CountNonfinite`] kernel of `P` over `input`,
    /// accumulating into `result` (at least 2 elements: count, first index); does not
    /// wait.
    pub fn launch_count<P: kind::CountNonfinite>(
        &self,
        input: &CudaView<'_, P::In>,
        result: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError> {
        self.launch_count_on::<P>(self.stream(), input, &mut result.as_view_mut())
    }

    /// [`KernelModule::launch_count`] on `stream` (a staging lane's), into a view.
    pub(super) fn launch_count_on<P: kind::CountNonfinite>(
        &self,
        stream: &CudaStream,
        input: &CudaView<'_, P::In>,
        result: &mut CudaViewMut<'_, u64>,
    ) -> Result<(), GpuError> {
        type K<P> = KindKernel<P, tag::CountNonfinite>;
        if result.len() < RESULT_START.len() {
            return Err(length_error(K::<P>::NAME, "result needs 2 elements".into()));
        }
        let kernel = self.kernel::<K<P>>()?;
        let shape = self.grid_stride(input.len(), kind::count_lane_elements::<P::In>());
        // SAFETY: `P: kind::CountNonfinite`: its kernel reads the `n` elements of `input`
        // and updates `result[0]` and `result[1]`, which exist (checked above).
        unsafe { kernel.launch_on(stream, shape, (input, input.len() as u64, &mut *result)) }
    }

    /// `output[i] = P(input[i])` (equal lengths) and the elements failing
    /// [`kind::StreamCount::passes`], in one pass, with the module's
    /// [`KernelKind::StreamCount`] kernel of `P`; waits for it.
    pub fn stream_count<P: kind::StreamCount>(
        &self,
        input: &CudaView<'_, P::In>,
        output: &mut CudaViewMut<'_, Bits<P>>,
    ) -> Result<super::Failing, GpuError> {
        let mut result = self.result()?;
        self.launch_stream_count::<P>(input, output, &mut result)?;
        self.read_result(KernelName::of::<P>(KernelKind::StreamCount), &result)
    }

    /// Queues [`KernelModule::stream_count`]'s kernel, accumulating into `result` (2
    /// elements: the count, and the first index, which starts at `u64::MAX`); does not
    /// wait. For a buffer processed in pieces: the index is the piece's own.
    pub fn launch_stream_count<P: kind::StreamCount>(
        &self,
        input: &CudaView<'_, P::In>,
        output: &mut CudaViewMut<'_, Bits<P>>,
        result: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError> {
        type K<P> = KindKernel<P, tag::StreamCount>;
        if input.len() != output.len() {
            let detail = format!("input has {} elements but output {}", input.len(), output.len());
            return Err(length_error(K::<P>::NAME, detail));
        }
        if result.len() < RESULT_START.len() {
            return Err(length_error(K::<P>::NAME, "result needs 2 elements".into()));
        }
        let kernel = self.kernel::<K<P>>()?;
        let shape = self.grid_stride(input.len(), kind::STREAM_LANE_ELEMENTS);
        // SAFETY: `P: kind::StreamCount`, whose implementer vouches that its kernel
        // touches only elements below `n` and `result[0..2]`; `input` and `output` hold
        // `n` elements and `result` at least 2 (checked above).
        unsafe { kernel.launch(shape, (input, &mut *output, input.len() as u64, result)) }
    }

    /// Runs the module's [`KernelKind::Latency`] kernel of `P` on one thread: a dependent
    /// chain of `iterations` steps from `seed`, whose cycles and final value it writes to
    /// `out[0]` and `out[1]`; waits for it.
    #[doc(hidden)]
    pub fn latency<P: kind::Latency>(
        &self,
        seed: u64,
        iterations: u32,
        out: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError> {
        let one_thread = LaunchShape::linear(1, 1);
        // SAFETY: `P: kind::Latency`: on one thread its kernel writes `out[0..2]`.
        unsafe { self.timing::<KindKernel<P, tag::Latency>>(one_thread, 2, seed, iterations, out)? };
        self.wait(KernelName::of::<P>(KernelKind::Latency))
    }

    /// Queues the module's [`KernelKind::Throughput`] kernel of `P` with `config`: every
    /// thread runs four independent chains of `iterations` steps and writes to its own
    /// element of `out`, which must hold one per launched thread; does not wait.
    #[doc(hidden)]
    pub fn launch_throughput<P: kind::Throughput>(
        &self,
        config: LaunchConfig,
        seed: u64,
        iterations: u32,
        out: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError> {
        let threads = u64::from(config.grid_dim.0) * u64::from(config.block_dim.0);
        let shape = LaunchShape::of_config(config);
        // SAFETY: `P: kind::Throughput`: its kernel writes `out[thread]` for each launched
        // thread (its index counts the x dimensions only), so `threads` elements.
        unsafe { self.timing::<KindKernel<P, tag::Throughput>>(shape, threads, seed, iterations, out) }
    }

    /// A result buffer: count 0, first index `u64::MAX` (none).
    fn result(&self) -> Result<CudaSlice<u64>, GpuError> {
        self.stream()
            .clone_htod(&RESULT_START)
            .map_err(|error| GpuError::Driver { stage: "allocating a result buffer".into(), error })
    }

    /// Waits for kernel `name` and reads its result buffer: the count and the first index.
    fn read_result(&self, name: KernelName, result: &CudaSlice<u64>) -> Result<NonFinite, GpuError> {
        self.wait(name)?;
        let words = self
            .stream()
            .clone_dtoh(result)
            .map_err(|error| GpuError::Driver { stage: "copying results to the host".into(), error })?;
        match words[..] {
            [count, first] => Ok(NonFinite { count, first: (first != u64::MAX).then_some(first) }),
            _ => Err(GpuError::Length {
                kernel: name.to_string(),
                detail: format!("result buffer came back with {} elements", words.len()),
            }),
        }
    }
}
