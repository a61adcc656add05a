//! The kernels' declarations against the PTX the compiler made of them: every declared
//! kernel's parameter list equals its entry's `.param` list, and a declaration that
//! says something else is refused with the kernel's name. No GPU needed.

use bitexact::gpu::{GpuError, check_params};
use fp8_scale::PTX;
use fp8_scale_kernels::{
    Amax, DequantizeE4m3, DequantizeE5m2, QuantizeE4m3Once, QuantizeE4m3TwoStep, QuantizeE5m2Once, QuantizeE5m2TwoStep,
};
use shared::launch::{DeclaredKernel, Param};

fn check<K: DeclaredKernel>() -> Result<(), GpuError> {
    check_params(K::NAME, K::PARAMS, PTX)
}

#[test]
fn every_declaration_matches_its_ptx_entry() {
    for (name, result) in [
        (Amax::NAME, check::<Amax>()),
        (QuantizeE4m3Once::NAME, check::<QuantizeE4m3Once>()),
        (QuantizeE4m3TwoStep::NAME, check::<QuantizeE4m3TwoStep>()),
        (QuantizeE5m2Once::NAME, check::<QuantizeE5m2Once>()),
        (QuantizeE5m2TwoStep::NAME, check::<QuantizeE5m2TwoStep>()),
        (DequantizeE4m3::NAME, check::<DequantizeE4m3>()),
        (DequantizeE5m2::NAME, check::<DequantizeE5m2>()),
    ] {
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn a_declaration_that_differs_from_the_ptx_is_refused() {
    // The dequantisation kernel takes an f32 scale; declared as a u32, or with a
    // parameter missing, or as a pointer, it is refused before any launch.
    let pointer = Param::ConstPtr { element_bytes: 1 };
    let wrong: [(&[Param], &str); 3] = [
        (
            &[pointer, Param::MutPtr { element_bytes: 4 }, Param::Integer { bytes: 8 }, Param::Integer { bytes: 4 }],
            "parameter 3 is declared a 4-byte integer but the PTX has .param .f32",
        ),
        (
            &[pointer, Param::MutPtr { element_bytes: 4 }, Param::Integer { bytes: 8 }],
            "3 parameters but the PTX's entry has 4",
        ),
        (
            &[pointer, Param::MutPtr { element_bytes: 4 }, pointer, Param::Float { bytes: 4 }],
            "parameter 2 is declared a pointer",
        ),
    ];
    for (params, expected) in wrong {
        let error = check_params(DequantizeE4m3::NAME, params, PTX).unwrap_err();
        assert!(matches!(&error, GpuError::Signature { kernel, .. } if kernel == "fp8_dequantize_e4m3"), "{error}");
        assert!(error.to_string().contains(expected), "{error}: should say {expected:?}");
    }
}
