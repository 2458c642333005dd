//! `check-catalog FILE`: the tool catalog's cold-start check, before a deploy or `make serve`.
//! Prints each tool it declares (exit 0), or the file once and every mistake with its tool and
//! field, one line each (exit 1). scripts/catalog.py says what it prints.

use std::process::ExitCode;

use mcp_tools::catalog::Catalog;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = &args[..] else {
        eprintln!("usage: check-catalog FILE");
        return ExitCode::from(2);
    };
    match Catalog::load(path) {
        Ok(catalog) => {
            for t in &catalog.async_tools {
                println!(
                    "{}: async tool on endpoint {}",
                    t.spec.name, t.spec.endpoint
                );
            }
            for t in &catalog.pipeline_tools {
                println!("{}: pipeline tool on {}", t.spec.name, t.spec.pipeline);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            // The file named once, then one line per mistake.
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
