//! `bitexact search` and `bitexact verify` on the command line: errors are one line and a
//! non-zero exit, never a panic; a report says whether each claim holds.

mod common;

use common::bitexact;

#[test]
fn search_rejects_bad_widths_with_one_line() {
    for args in [["search", "--unorm", "0"], ["search", "--snorm", "1..4"], ["search", "--unorm", "x"]] {
        let out = bitexact(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("bitexact: "), "{args:?}: {stderr}");
    }
    let out = bitexact(&["search", "--unorm", "8", "--emit-rust"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn search_prints_one_row_per_width_asked_for() {
    let out = bitexact(&["search", "--unorm", "8,10..=11", "--snorm", "9", "--format", "json"]);
    assert!(out.status.success());
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = found.as_array().expect("an array");
    let names: Vec<String> = rows.iter().map(|r| format!("{}{}", r["kind"].as_str().unwrap(), r["bits"])).collect();
    assert_eq!(names, ["unorm8", "unorm10", "unorm11", "snorm9"]);
    assert_eq!(rows[0]["best"]["scheme"]["multiplier"], 3);
    let markdown = bitexact(&["search", "--unorm", "8", "--snorm", "2..3", "--format", "markdown"]);
    let text = String::from_utf8_lossy(&markdown.stdout);
    assert!(text.lines().filter(|l| l.starts_with("| UNORM") || l.starts_with("| SNORM")).count() == 3, "{text}");
}

#[test]
fn verify_rejects_an_unknown_variant_with_one_line() {
    let out = bitexact(&["verify", "--only", "no_such_variant", "--cpu-elements", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn verify_says_the_claims_of_the_deliberately_wrong_variants_hold() {
    // Small domains (2^16 and 2^8 inputs), each with a variant that claims less than
    // exactness: its claim holds because it is wrong somewhere, as it should be.
    for (only, non_exact, claim, mismatches) in [
        ("f16_finite", "f16_finite_unordered_lt_inf", "incorrect", 2046),
        ("unorm8_mul_recip", "unorm8_mul_recip", "1-ulp", 126),
    ] {
        let out = bitexact(&["verify", "--only", only, "--cpu-elements", "0", "--format", "json"]);
        assert!(out.status.success(), "{only}: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let rows = report.as_array().expect("an array of rows");
        for row in rows {
            assert_eq!(row["claim_holds"], true, "{row}");
        }
        let row = rows.iter().find(|r| r["variant"] == non_exact).expect("the non-exact variant is reported");
        assert_eq!((&row["claim"], &row["mismatches"]), (&claim.into(), &mismatches.into()), "{row}");
    }
}

#[test]
fn options_belong_to_their_command() {
    // verify's options are verify's: at the top level they are an error, not options
    // that another command silently ignores.
    for args in [&["--format", "json", "scan", "x.npy"][..], &["--only", "unorm8"], &["--cpu-elements", "0"]] {
        let out = bitexact(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected argument"), "{args:?}");
    }
    let help = String::from_utf8_lossy(&bitexact(&["--help"]).stdout).to_string();
    let (_, options) = help.split_once("Options:").expect("an options section");
    for verify_only in ["--cpu-elements", "--reps", "--only", "--format"] {
        assert!(!options.contains(verify_only), "top-level help lists {verify_only} as an option:\n{help}");
    }
}

#[test]
fn only_takes_name_prefixes_so_unorm8_stays_small() {
    let out = bitexact(&["verify", "--only", "unorm8", "--cpu-elements", "0", "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = report.as_array().expect("an array of rows");
    assert!(!rows.is_empty());
    for row in rows {
        let name = row["variant"].as_str().expect("a name");
        assert!(name.starts_with("unorm8"), "{name} selected by --only unorm8");
        assert_eq!(row["inputs_checked"], 256, "{row}");
    }
}
