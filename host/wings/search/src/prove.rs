//! Proving a candidate: every code of every conversion that divides by the
//! denominator, against the exact rational reference.

use super::*;
use bitexact_verify::reference;
use shared::scheme::Scheme;

/// One conversion's reference results on every one of its `2^bits` codes.
pub(super) struct Conversion {
    kind: Kind,
    bits: u32,
    expected: Vec<u64>,
}

impl Conversion {
    /// Panics if `bits` is outside [`Kind::widths`].
    fn new(kind: Kind, bits: u32) -> Conversion {
        assert!(kind.widths().contains(&bits), "{} bits for {}", bits, kind.label());
        let codes: Vec<u64> = (0..1u64 << bits).collect();
        let mut expected = vec![0; codes.len()];
        reference::expected_many(kind.family(bits), &codes, &mut expected);
        Conversion { kind, bits, expected }
    }

    /// Codes on which `scheme` differs from the reference; stops at the first one if
    /// `stop_at_first`.
    fn wrong_codes(&self, scheme: Scheme, stop_at_first: bool) -> u64 {
        let mut wrong = 0;
        for (code, &want) in self.expected.iter().enumerate() {
            if u64::from(self.kind.apply(scheme, self.bits, code as u16).to_bits()) != want {
                wrong += 1;
                if stop_at_first {
                    break;
                }
            }
        }
        wrong
    }
}

/// Checks schemes for one denominator against the reference's results on every code of
/// every conversion in [`uses`], worked out once.
pub struct Prover {
    conversions: Vec<Conversion>,
}

impl Prover {
    /// A prover for the denominator `2^k - 1`.
    ///
    /// Panics if `k` is outside [`DENOMINATOR_BITS`].
    pub fn new(k: u32) -> Prover {
        assert!(DENOMINATOR_BITS.contains(&k), "no conversion divides by 2^{k} - 1");
        Prover { conversions: uses(k).into_iter().map(|(kind, bits)| Conversion::new(kind, bits)).collect() }
    }

    /// Whether `scheme` is right on every code of every conversion.
    pub fn is_exact(&self, scheme: Scheme) -> bool {
        self.conversions.iter().all(|c| c.wrong_codes(scheme, true) == 0)
    }

    /// The codes on which `scheme` is wrong, per conversion, in the order of [`uses`].
    pub fn count_wrong(&self, scheme: Scheme) -> Vec<Use> {
        let tally = |c: &Conversion| Use {
            kind: c.kind,
            bits: c.bits,
            codes: c.expected.len() as u64,
            wrong: c.wrong_codes(scheme, false),
        };
        self.conversions.iter().map(tally).collect()
    }
}

/// Number of codes of `kind`/`bits` (all `2^bits` of them) on which `scheme` is wrong.
///
/// Panics if `bits` is outside [`Kind::widths`].
pub fn count_wrong(kind: Kind, bits: u32, scheme: Scheme) -> u64 {
    Conversion::new(kind, bits).wrong_codes(scheme, false)
}
