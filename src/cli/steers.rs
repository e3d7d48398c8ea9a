//! `hermes steers`: the loop's steers, each with its default and one line.

use clap::Args;
use hermes::agent::steer;

/// Options of `hermes steers`.
#[derive(Debug, Args)]
pub struct SteersArgs {
    /// Print the steers as one JSON array (`name`, `default`, `about`).
    #[arg(long)]
    pub json: bool,
}

/// Prints every steer in order of precedence; always exit 0.
pub fn execute(args: &SteersArgs) -> i32 {
    if args.json {
        let list: Vec<serde_json::Value> = steer::ALL
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name(),
                    "default": if s.on_by_default() { "on" } else { "off" },
                    "about": s.about(),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(list));
        return 0;
    }
    let width = steer::ALL.iter().map(|s| s.name().len()).max().unwrap_or(0);
    for s in steer::ALL {
        let default = if s.on_by_default() { "on " } else { "off" };
        println!("{:width$}  {default}  {}", s.name(), s.about());
    }
    println!();
    println!("Switch one with --steer NAME=on|off or --no-steer NAME (run, plan, node, eval),");
    println!("a role's [steer] table, or a suite's [defaults.steer] / [task.steer] table.");
    0
}
