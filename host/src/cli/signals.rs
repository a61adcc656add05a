//! The signals that end a run: each one a user meets removes the temporary files of the
//! outputs being written before the process exits, so that an interrupted run leaves
//! every output path as it was ([`TERMINATING`] says which signals are not caught:
//! SIGKILL, a crash's, and a few no one sends a command).

use signal_hook::consts::signal::{
    SIGALRM, SIGHUP, SIGINT, SIGPROF, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGXCPU, SIGXFSZ,
};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The catchable signals whose default action ends the process and that a user or a
/// supervisor sends: Ctrl-C (INT), Ctrl-\ (QUIT), `kill` and `timeout` (TERM), a closed
/// terminal or SSH session (HUP), `ulimit -t` (XCPU), `kill -USR1`/`-USR2`, and the
/// timers' ALRM, VTALRM and PROF. SIGPIPE is not among them: Rust ignores it, so a closed
/// stdout is a write error that the commands handle (a reader that closed the pipe early
/// is not an error). Not caught: the real-time signals, SIGPWR and SIGSTKFLT (no one
/// sends them to a command), and the signals of a crash (ABRT, TRAP, SYS, SEGV, BUS, ILL,
/// FPE): those, like SIGKILL, can leave a `.bitexact-*.tmp`.
pub const TERMINATING: [i32; 10] =
    [SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF];

/// The exit status after `signal`: 128 + its number, as a shell reports a process
/// that the signal ended (130 for Ctrl-C).
pub const fn exit_status(signal: i32) -> i32 {
    128 + signal
}

/// What is said on stderr after `signal`: `interrupted` for Ctrl-C, else
/// `interrupted by SIGTERM` (and so on).
pub fn message(signal: i32) -> String {
    if signal == SIGINT {
        return "interrupted".to_string();
    }
    match signal_hook::low_level::signal_name(signal) {
        Some(name) => format!("interrupted by {name}"),
        None => format!("interrupted by signal {signal}"),
    }
}

/// Starts a thread that waits for any [`TERMINATING`] signal and then removes the
/// pending temporary files, says [`message`] on stderr and exits with
/// [`exit_status`]. Also catches SIGXFSZ and does nothing, so that a write past
/// `ulimit -f` fails with "File too large", an error the writer cleans up after, instead
/// of killing the process with the temporary file in place. Handlers, unlike a blocked
/// signal mask, are reset for the programs a command runs (ptxas, Python).
pub fn remove_temporaries_on_termination() -> std::io::Result<()> {
    signal_hook::flag::register(SIGXFSZ, Arc::new(AtomicBool::new(false)))?;
    let mut signals = signal_hook::iterator::Signals::new(TERMINATING)?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            bitexact::files::output::temporaries::remove_pending_temporaries();
            crate::cli::say!("bitexact: {}", message(signal));
            std::process::exit(exit_status(signal));
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_exits_as_a_shell_reports_it_and_says_which() {
        assert_eq!((exit_status(SIGINT), message(SIGINT)), (130, "interrupted".to_string()));
        assert_eq!((exit_status(SIGQUIT), message(SIGQUIT)), (131, "interrupted by SIGQUIT".to_string()));
        assert_eq!((exit_status(SIGTERM), message(SIGTERM)), (143, "interrupted by SIGTERM".to_string()));
        for signal in TERMINATING {
            assert!(!signal_hook::consts::FORBIDDEN.contains(&signal), "{signal} cannot be caught");
        }
    }
}
