//! A kernel's parameter list, declared once next to its body, for a typed launch that is
//! checked twice: by the compiler on the host (the arguments' types) and, when the module
//! loads, against the PTX's own `.param` list (count, widths, pointer or value).
//!
//! [`kernel!`](crate::kernel) writes the GPU entry point (`extern "ptx-kernel"`,
//! `#[unsafe(no_mangle)]`, on nvptx64) and a marker type implementing [`DeclaredKernel`] from one
//! signature, so the name and the parameters the host launches with cannot drift from the
//! kernel's:
//!
//! ```ignore
//! shared::kernel! {
//!     /// `y[i] = x[i] · k` for `i < n`.
//!     pub struct Scale;
//!     pub unsafe fn scale_f32(x: *const f32, y: *mut f32, n: u64, k: f32) {
//!         let lane = device_support::block::lane_x();
//!         // SAFETY: the launch's contract: `x` and `y` hold `n` values.
//!         device_support::grid_stride(lane, n, |i| unsafe { y.add(i).write(x.add(i).read() * k) });
//!     }
//! }
//! ```
//!
//! On the host the same function is an ordinary `pub unsafe fn` (for the CPU emulator,
//! `device_support::emulator`), and `Scale: DeclaredKernel` with `NAME = "scale_f32"` and
//! `Params = (*const f32, *mut f32, u64, f32)`; `bitexact::gpu` launches it with
//! `(&CudaSlice<f32>, &mut CudaSlice<f32>, u64, f32)`.

/// Threads per warp on every NVIDIA GPU this project targets (sm_75 … sm_120): the
/// launch geometry's other constant, beside [`Dim3`] (`device_support::block::WARP_SIZE`
/// on the device, and its CPU emulator's warps).
pub const WARP_SIZE: u32 = 32;

/// A 3-D index or extent, CUDA's `dim3`: a launch's grid and block, a thread's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    /// `(x, 1, 1)`.
    pub const fn x(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }

    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// The number of points of an extent, `x · y · z`, in 64 bits (no wrap).
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    /// The row-major rank of index `self` in an extent `extent`: `x + extent.x · (y +
    /// extent.y · z)`, in 64 bits, CUDA's linear thread (or block) number.
    pub const fn rank_in(self, extent: Dim3) -> u64 {
        self.x as u64 + extent.x as u64 * (self.y as u64 + extent.y as u64 * self.z as u64)
    }
}

/// One kernel parameter as the PTX declares it: what the load-time check compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    /// A pointer (`.param .u64`, LLVM adds `.ptr`) to elements the kernel only reads.
    ConstPtr {
        /// The pointee's size in bytes.
        element_bytes: usize,
    },
    /// A pointer to elements the kernel may write.
    MutPtr {
        /// The pointee's size in bytes.
        element_bytes: usize,
    },
    /// An integer passed by value, `bytes` wide (`.param .u32`, `.u64`, `.u8`…).
    Integer {
        /// Its width.
        bytes: usize,
    },
    /// A floating-point value passed by value (`.param .f32` or `.f64`).
    Float {
        /// Its width.
        bytes: usize,
    },
}

impl Param {
    /// Whether the parameter is a pointer.
    pub const fn is_pointer(self) -> bool {
        matches!(self, Param::ConstPtr { .. } | Param::MutPtr { .. })
    }

    /// Its width in the PTX parameter list (8 for a pointer).
    pub const fn bytes(self) -> usize {
        match self {
            Param::ConstPtr { .. } | Param::MutPtr { .. } => 8,
            Param::Integer { bytes } | Param::Float { bytes } => bytes,
        }
    }
}

/// A type a kernel may take as a parameter: raw pointers to `Copy` elements, and the
/// integers and floats by value. Implemented here only (the trait is sealed), so every
/// parameter has a known PTX form.
pub trait KernelParam: Copy + sealed::SealedParam {
    /// What the PTX declares for it.
    const PARAM: Param;
}

mod sealed {
    /// Only this module's types are [`super::KernelParam`]s.
    pub trait SealedParam {}
    impl<T> SealedParam for *const T {}
    impl<T> SealedParam for *mut T {}
    macro_rules! sealed {
        ($($t:ty)*) => {$(impl SealedParam for $t {})*};
    }
    sealed!(u8 u16 u32 u64 i8 i16 i32 i64 f32 f64);
}

impl<T: Copy> KernelParam for *const T {
    const PARAM: Param = Param::ConstPtr { element_bytes: core::mem::size_of::<T>() };
}

impl<T: Copy> KernelParam for *mut T {
    const PARAM: Param = Param::MutPtr { element_bytes: core::mem::size_of::<T>() };
}

macro_rules! value_params {
    ($($t:ty: $kind:ident;)*) => {$(
        impl KernelParam for $t {
            const PARAM: Param = Param::$kind { bytes: core::mem::size_of::<$t>() };
        }
    )*};
}

value_params! {
    u8: Integer; u16: Integer; u32: Integer; u64: Integer;
    i8: Integer; i16: Integer; i32: Integer; i64: Integer;
    f32: Float; f64: Float;
}

/// A kernel's declaration: its PTX entry name and its parameter list. [`kernel!`](crate::kernel)
/// writes one for a kernel of one's own; [`crate::kind::KindKernel`] is the one of each
/// [`crate::KernelKind`] of a primitive (the table's kernels, the C++ baseline's, a kernel
/// crate's `unsafe impl`ed kinds), so every launch goes through the same typed path.
pub trait DeclaredKernel {
    /// The PTX entry point's name (unmangled).
    const NAME: &'static str;
    /// The parameters as a tuple of their Rust types, in order.
    type Params;
    /// The parameters as the PTX declares them, in order.
    const PARAMS: &'static [Param];
}

/// A tuple of [`KernelParam`]s: its [`Param`] list, so that a declaration writes its
/// parameters once, as the tuple type, and the list the load-time check compares follows.
pub trait ParamList {
    /// The tuple's parameters as the PTX declares them, in order.
    const PARAMS: &'static [Param];
}

macro_rules! param_lists {
    ($(($($p:ident),*);)*) => {$(
        impl<$($p: KernelParam),*> ParamList for ($($p,)*) {
            const PARAMS: &'static [Param] = &[$(<$p as KernelParam>::PARAM),*];
        }
    )*};
}

param_lists! {
    ();
    (P0);
    (P0, P1);
    (P0, P1, P2);
    (P0, P1, P2, P3);
    (P0, P1, P2, P3, P4);
    (P0, P1, P2, P3, P4, P5);
    (P0, P1, P2, P3, P4, P5, P6);
    (P0, P1, P2, P3, P4, P5, P6, P7);
    (P0, P1, P2, P3, P4, P5, P6, P7, P8);
    (P0, P1, P2, P3, P4, P5, P6, P7, P8, P9);
}

/// The longest kernel name a [`JoinedName`] holds, in bytes.
pub const MAX_JOINED_NAME_BYTES: usize = 128;

/// Two strings joined at compile time, for a generic declaration's
/// [`DeclaredKernel::NAME`] (a primitive's name and its kind's suffix): a `const` of this
/// type and [`JoinedName::as_str`] of a reference to it give a `&'static str`.
#[derive(Clone, Copy, Debug)]
pub struct JoinedName {
    bytes: [u8; MAX_JOINED_NAME_BYTES],
    len: usize,
}

impl JoinedName {
    /// `head` followed by `tail`. Evaluated in a `const`, a name longer than
    /// [`MAX_JOINED_NAME_BYTES`] is a compile-time error.
    pub const fn new(head: &str, tail: &str) -> JoinedName {
        let (head, tail) = (head.as_bytes(), tail.as_bytes());
        assert!(head.len() + tail.len() <= MAX_JOINED_NAME_BYTES, "a kernel name longer than 128 bytes");
        let mut bytes = [0u8; MAX_JOINED_NAME_BYTES];
        let mut i = 0;
        while i < head.len() {
            bytes[i] = head[i];
            i += 1;
        }
        let mut j = 0;
        while j < tail.len() {
            bytes[i + j] = tail[j];
            j += 1;
        }
        JoinedName { bytes, len: head.len() + tail.len() }
    }

    /// The joined string.
    pub const fn as_str(&self) -> &str {
        let (joined, _) = self.bytes.split_at(self.len);
        match core::str::from_utf8(joined) {
            Ok(name) => name,
            // Two whole UTF-8 strings joined are UTF-8.
            Err(_) => panic!("two UTF-8 strings joined are UTF-8"),
        }
    }
}

/// Declares a kernel: a marker type implementing [`launch::DeclaredKernel`](crate::launch::DeclaredKernel)
/// and the function itself, an `extern "ptx-kernel"` entry point with
/// `#[unsafe(no_mangle)]` on nvptx64 and an ordinary `unsafe fn` elsewhere (for the CPU
/// emulator). See the [`launch`](crate::launch) module. Every parameter's type must be a
/// [`launch::KernelParam`](crate::launch::KernelParam).
#[macro_export]
macro_rules! kernel {
    (
        $(#[$marker_attr:meta])*
        $vis:vis struct $marker:ident;
        $(#[$fn_attr:meta])*
        $fn_vis:vis unsafe fn $name:ident($($param:ident: $ty:ty),* $(,)?) $body:block
    ) => {
        $(#[$marker_attr])*
        $vis struct $marker;

        impl $crate::launch::DeclaredKernel for $marker {
            const NAME: &'static str = stringify!($name);
            type Params = ($($ty,)*);
            const PARAMS: &'static [$crate::launch::Param] =
                <($($ty,)*) as $crate::launch::ParamList>::PARAMS;
        }

        $(#[$fn_attr])*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        $fn_vis unsafe extern "ptx-kernel" fn $name($($param: $ty),*) $body

        $(#[$fn_attr])*
        #[cfg(not(target_arch = "nvptx64"))]
        $fn_vis unsafe fn $name($($param: $ty),*) $body
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kernel! {
        /// A test kernel.
        pub struct Saxpy;
        /// `y[i] = a · x[i] + y[i]`.
        ///
        /// # Safety
        /// `x` and `y` hold `n` values.
        pub unsafe fn saxpy(x: *const f32, y: *mut f32, n: u64, a: f32) {
            for i in 0..n as usize {
                // SAFETY: the function's contract.
                unsafe { y.add(i).write(a * x.add(i).read() + y.add(i).read()) };
            }
        }
    }

    #[test]
    fn the_declaration_is_the_signature() {
        assert_eq!(Saxpy::NAME, "saxpy");
        assert_eq!(
            Saxpy::PARAMS,
            [
                Param::ConstPtr { element_bytes: 4 },
                Param::MutPtr { element_bytes: 4 },
                Param::Integer { bytes: 8 },
                Param::Float { bytes: 4 }
            ]
        );
        let same: fn(<Saxpy as DeclaredKernel>::Params) -> (*const f32, *mut f32, u64, f32) = |p| p;
        let (x, mut y) = ([1.0f32, 2.0], [10.0f32, 20.0]);
        let _ = same((x.as_ptr(), y.as_mut_ptr(), 2, 3.0));
        // SAFETY: both arrays hold 2 values.
        unsafe { saxpy(x.as_ptr(), y.as_mut_ptr(), 2, 3.0) };
        assert_eq!(y, [13.0, 26.0]);
    }
}
