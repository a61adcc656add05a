//! The wing's own tests: the report's invalid rows and what it says of them.
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`).

use crate::*;

fn figures(latency_cycles: f64, throughput_gops: f64, ops_per_sm_per_cycle: f64) -> Figures {
    Figures { latency_cycles, throughput_gops, ops_per_sm_per_cycle }
}

#[test]
fn the_report_names_its_invalid_rows() {
    let device = DeviceInfo {
        ordinal: 0,
        name: "test".into(),
        compute_capability: (9, 0),
        multiprocessors: 132,
        clock_khz: 1_980_000,
        memory_bytes: 0,
    };
    let report = BenchReport {
        device,
        bytes: 0,
        reps: 1,
        bandwidth: Vec::new(),
        per_element: vec![
            TimingRow::measured("a", figures(-0.0, 1.0, 1.0)),
            TimingRow::measured("b", figures(20.0, 1.0, 1.0)),
            TimingRow::constant("c"),
            TimingRow::measured("d", figures(20.0, 1.0, 2312.0)),
        ],
        cxx: cxx::CxxRows { ptx: "skipped: test".into(), rows: Vec::new(), per_element: Vec::new() },
    };
    assert_eq!(report.invalid_variants(), ["a", "d"]);
}
