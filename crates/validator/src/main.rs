//! `validator`: an independent agent checks a provisional feature against its acceptance criteria
//! and answers with a verdict. run.sh calls it after the worker delivered the promise; it also
//! runs by hand with flags alone. All the rules are in `harness_core::roles::validator`.

use std::process::ExitCode;

use clap::Parser;
use harness_cli::FeatureArgs;
use harness_core::roles::validator::run_validator;

/// Validate a provisional feature: its agent gets the acceptance criteria, the worker's claim and
/// the workspace, and answers <verdict>PASS</verdict> or <verdict>FAIL</verdict>.
///
/// Exit codes: 0 pass, the feature is done; 10 fail, back to the worker (the reasons are in the
/// notes); 2 fail and max_iterations is reached; 1 usage or input error (e.g. the feature is not
/// provisional); 74 the disk is full or a file-size limit was reached (the write was taken back);
/// 75 the feature is being run by another process; 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "validator", version = harness_cli::VERSION)]
struct Cli {
    #[command(flatten)]
    feature: FeatureArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    harness_cli::main("validator", || {
        let report = run_validator(&cli.feature.request()?)?;
        eprintln!("validator: {}", report.message);
        Ok(report.exit_code)
    })
}
