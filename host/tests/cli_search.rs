//! `bitexact search` and `bitexact verify` on the command line: errors are one line and a
//! non-zero exit, never a panic; a report says whether each claim holds.

use crate::common;

use common::bitexact;
use std::process::Output;

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

/// What clap refuses (an unknown value, a missing argument, an unknown subcommand or
/// option) is one line and exit 2, as every other error; `--help` is still the help.
#[test]
fn command_line_errors_are_one_line() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["cast", "x", "-o", "y", "--to", "e9"],
            "invalid value 'e9' for '--to <TO>' [possible values: bf16, f16, e4m3, e5m2, nvfp4]",
        ),
        (&["scan"], "the following required arguments were not provided: <FILES>..."),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&["scan", "--no-such-option", "x"], "unexpected argument '--no-such-option'"),
    ];
    for (args, problem) in cases {
        let out = bitexact(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(&format!("bitexact: {problem}")), "{args:?}: {stderr}");
        assert!(stderr.trim_end().ends_with("(see --help)"), "{args:?}: {stderr}");
    }
    let help = bitexact(&["cast", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: bitexact cast"));
}

#[test]
fn search_prints_one_row_per_denominator_asked_for() {
    // SNORM9 divides by 255 as UNORM8 does: one row for both, proven on both.
    let out = bitexact(&["search", "--unorm", "11,8,10..=11", "--snorm", "9", "--format", "json"]);
    assert!(out.status.success());
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = found.as_array().expect("an array");
    let denominators: Vec<&serde_json::Value> = rows.iter().map(|r| &r["denominator"]).collect();
    assert_eq!(denominators, [255, 1023, 2047]);
    let uses: Vec<String> = rows[0]["naive_wrong"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|u| format!("{}{} {}/{}", u["kind"].as_str().unwrap(), u["bits"], u["wrong"], u["codes"]))
        .collect();
    assert_eq!(uses, ["unorm8 126/256", "snorm9 252/512"]);
    assert_eq!(rows[0]["best"]["scheme"]["multiplier"], 3);
    let markdown = bitexact(&["search", "--unorm", "8", "--snorm", "2..3", "--format", "markdown"]);
    let text = String::from_utf8_lossy(&markdown.stdout);
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("| UNORM")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0].starts_with("| 1 ") && rows[0].contains("| UNORM1, SNORM2 "), "{text}");
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

#[test]
fn verify_runs_on_the_thread_count_asked_for() {
    let threads_line = |out: &Output| {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("f16_finite_exp_mask "), "{stdout}");
        stdout.lines().find(|l| l.starts_with("checked on ")).map(str::to_owned).expect("a line with the thread count")
    };
    let verify = ["verify", "--only", "f16_finite_exp_mask", "--cpu-elements", "0"];
    let one = threads_line(&bitexact(&[&verify[..], &["--threads", "1"]].concat()));
    assert!(one.starts_with("checked on 1 CPU thread "), "{one}");
    // Before the subcommand too, and over RAYON_NUM_THREADS.
    let out = common::bitexact_command().env("RAYON_NUM_THREADS", "5").args(["--threads", "3"]).args(verify).output();
    assert!(threads_line(&out.expect("bitexact runs")).starts_with("checked on 3 CPU threads "));
    // Without --threads (or with 0), RAYON_NUM_THREADS decides.
    for extra in [&[][..], &["--threads", "0"]] {
        let out = common::bitexact_command().env("RAYON_NUM_THREADS", "5").args(verify).args(extra).output();
        assert!(threads_line(&out.expect("bitexact runs")).starts_with("checked on 5 CPU threads "), "{extra:?}");
    }
}

/// Every command's help reads as plain text: no rustdoc link or markup (clap takes doc
/// comments as help; `--device` used to show ``[`bitexact::files::backend::auto`]``).
#[test]
fn no_help_shows_rustdoc_markup() {
    let top = String::from_utf8_lossy(&bitexact(&["--help"]).stdout).into_owned();
    let (_, commands) = top.split_once("Commands:").expect("a commands section");
    let (commands, _) = commands.split_once("Options:").expect("an options section");
    let names: Vec<&str> =
        commands.lines().filter_map(|line| line.split_whitespace().next()).filter(|&name| name != "help").collect();
    assert!(names.contains(&"normalize") && names.len() >= 8, "{names:?}");
    let mut helps = vec![("bitexact --help".to_string(), top.clone())];
    for name in names {
        for flag in ["--help", "-h"] {
            let out = bitexact(&[name, flag]);
            assert!(out.status.success(), "{name} {flag}");
            helps.push((format!("bitexact {name} {flag}"), String::from_utf8_lossy(&out.stdout).into_owned()));
        }
    }
    for (command, help) in helps {
        for markup in ["[`", "bitexact::", "`"] {
            assert!(!help.contains(markup), "{command} shows {markup:?}:\n{help}");
        }
    }
}

/// `bitexact` alone starts `verify`, which takes minutes: its first line, on stderr,
/// says so at once, and where the other commands are. It used to print nothing for
/// several seconds. "At once" is checked by order, not by a clock (which a busy machine
/// would fail): the line is stderr's first, before any progress line of the work, and
/// comes while the verification still runs.
#[test]
fn bitexact_alone_says_at_once_that_it_verifies() {
    use std::io::BufRead;
    let mut child = common::spawn_bitexact(&[]);
    // Kept open until the end: the pipe's closing must not be what stops bitexact.
    let mut stderr_pipe = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr_pipe.read_line(&mut line).unwrap();
    let exited = child.try_wait().unwrap();
    if exited.is_none() {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    assert!(line.starts_with("bitexact: verifying ") && line.contains("variants"), "{line:?}");
    assert!(line.contains("bitexact --help lists the other commands"), "{line:?}");
    assert_eq!(exited, None, "the first line came only as the verification ended: {line:?}");
    // Asked for by name, the same line without the pointer to the other commands.
    let out = bitexact(&["verify", "--only", "unorm8_to_f32", "--cpu-elements", "0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("bitexact: verifying "), "{stderr}");
    assert!(!stderr.contains("--help"), "{stderr}");
}
