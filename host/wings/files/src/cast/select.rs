//! Which tensors `cast` converts: the default rule of each target, changed by
//! `--only` and `--skip`; and why each other tensor is copied as it is.

use crate::cast::convert::{CastTarget, SourceDtype};

/// Name parts of the tensors FP8 servers keep in high precision by default: the token
/// embedding and the output head (Llama/Mistral/Qwen `embed_tokens`, `lm_head`; GPT-2
/// `wte`, `wpe`; BLOOM `word_embeddings`; GPT-NeoX `embed_in`, `embed_out`). A tensor is
/// kept when one of its dot-separated name components is one of these.
pub(crate) const FP8_KEPT_NAME_PARTS: [&str; 7] =
    ["embed_tokens", "lm_head", "wte", "wpe", "word_embeddings", "embed_in", "embed_out"];

/// The `--only` and `--skip` patterns, compiled.
#[derive(Clone, Debug, Default)]
pub struct Patterns {
    /// Only tensors whose name matches (anywhere in it) are cast; replaces the target's
    /// default rule.
    pub only: Option<regex::Regex>,
    /// Tensors whose name matches are not cast.
    pub skip: Option<regex::Regex>,
}

/// What becomes of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Converted from this source dtype.
    Cast(SourceDtype),
    /// Copied: already in the target format.
    AlreadyTarget,
    /// Copied: not a floating dtype `cast` reads (integers, booleans, FP8, ...).
    NotASource,
    /// Copied: FP8 by default keeps tensors of fewer than two dimensions.
    UnderTwoDims,
    /// Copied: FP8 by default keeps the embedding and the output head.
    EmbeddingOrHead,
    /// Copied: per-channel, block and MX scales take 2-D tensors (rows × columns) only.
    NotAMatrix,
    /// Copied: a 2-D tensor with no elements has no blocks to scale.
    NoElements,
    /// Copied: `--only` does not match it.
    NotMatchedByOnly,
    /// Copied: `--skip` matches it.
    Skipped,
}

impl Decision {
    /// Why a tensor is copied, as the dry run says it; `None` for one that is cast.
    pub const fn reason(self) -> Option<&'static str> {
        match self {
            Decision::Cast(_) => None,
            Decision::AlreadyTarget => Some("already the target format"),
            Decision::NotASource => Some("not f32, f64, bf16 or f16"),
            Decision::UnderTwoDims => Some("fewer than 2 dimensions (FP8 and NVFP4 default)"),
            Decision::EmbeddingOrHead => Some("embedding or output head (FP8 and NVFP4 default)"),
            Decision::NotAMatrix => Some("not 2-D (per-channel, block, MX and NVFP4 scales)"),
            Decision::NoElements => Some("no elements (per-channel, block, MX and NVFP4 scales)"),
            Decision::NotMatchedByOnly => Some("not matched by --only"),
            Decision::Skipped => Some("matched by --skip"),
        }
    }
}

/// Whether `name` has a component FP8 servers keep in high precision
/// ([`FP8_KEPT_NAME_PARTS`]).
pub(crate) fn is_embedding_or_head(name: &str) -> bool {
    name.split('.').any(|part| FP8_KEPT_NAME_PARTS.contains(&part))
}

/// What becomes of the tensor `name` of safetensors dtype `dtype` and `dims` dimensions
/// when cast to `target`: `--skip` first, then `--only` (which replaces the default
/// rule), then the default (every floating source tensor for bf16/f16; for FP8 and NVFP4 those of
/// two or more dimensions but the embedding and the output head). A selected tensor
/// whose dtype is not a source is [`Decision::NotASource`]; the caller refuses it when
/// `--only` asked for it.
pub(crate) fn decide(
    name: &str,
    dtype: &str,
    dims: usize,
    target: impl Into<CastTarget>,
    patterns: &Patterns,
) -> Decision {
    let target = target.into();
    if patterns.skip.as_ref().is_some_and(|skip| skip.is_match(name)) {
        return Decision::Skipped;
    }
    if let Some(only) = &patterns.only
        && !only.is_match(name)
    {
        return Decision::NotMatchedByOnly;
    }
    let Some(source) = SourceDtype::of_safetensors(dtype) else {
        return Decision::NotASource;
    };
    if target.is(source) {
        return Decision::AlreadyTarget;
    }
    if patterns.only.is_none() && (target.fp8().is_some() || target == CastTarget::Nvfp4) {
        if dims < 2 {
            return Decision::UnderTwoDims;
        }
        if is_embedding_or_head(name) {
            return Decision::EmbeddingOrHead;
        }
    }
    Decision::Cast(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cast::convert::Target;

    fn patterns(only: Option<&str>, skip: Option<&str>) -> Patterns {
        Patterns {
            only: only.map(|p| regex::Regex::new(p).unwrap()),
            skip: skip.map(|p| regex::Regex::new(p).unwrap()),
        }
    }

    #[test]
    fn fp8_keeps_vectors_the_embedding_and_the_head_by_default() {
        let none = patterns(None, None);
        let e4m3 = |name: &str, dims| decide(name, "BF16", dims, Target::E4m3, &none);
        assert_eq!(e4m3("model.layers.0.mlp.up_proj.weight", 2), Decision::Cast(SourceDtype::Bf16));
        assert_eq!(e4m3("model.layers.0.input_layernorm.weight", 1), Decision::UnderTwoDims);
        assert_eq!(e4m3("model.embed_tokens.weight", 2), Decision::EmbeddingOrHead);
        assert_eq!(e4m3("lm_head.weight", 2), Decision::EmbeddingOrHead);
        assert_eq!(e4m3("transformer.wte.weight", 2), Decision::EmbeddingOrHead);
        // A component, not a substring.
        assert_eq!(e4m3("model.lm_headless.weight", 2), Decision::Cast(SourceDtype::Bf16));
        assert_eq!(decide("x", "I64", 2, Target::E4m3, &none), Decision::NotASource);
    }

    #[test]
    fn sixteen_bit_targets_take_every_floating_tensor() {
        let none = patterns(None, None);
        assert_eq!(decide("lm_head.weight", "F32", 2, Target::Bf16, &none), Decision::Cast(SourceDtype::F32));
        assert_eq!(decide("norm", "F64", 1, Target::F16, &none), Decision::Cast(SourceDtype::F64));
        assert_eq!(decide("norm", "F16", 1, Target::F16, &none), Decision::AlreadyTarget);
    }

    #[test]
    fn only_replaces_the_default_and_skip_wins() {
        let only = patterns(Some(r"lm_head|norm"), Some(r"^skip"));
        assert_eq!(decide("lm_head.weight", "F32", 2, Target::E4m3, &only), Decision::Cast(SourceDtype::F32));
        assert_eq!(decide("final_norm", "F32", 1, Target::E4m3, &only), Decision::Cast(SourceDtype::F32));
        assert_eq!(decide("up_proj.weight", "F32", 2, Target::E4m3, &only), Decision::NotMatchedByOnly);
        assert_eq!(decide("skip.norm", "F32", 2, Target::E4m3, &only), Decision::Skipped);
    }
}
