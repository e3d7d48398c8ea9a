//! Code actions: the Python that runs before the model's code (see
//! `prelude.py`), and how it is launched.

/// The prelude: the workspace functions, the kept variables, and the
/// run of the model's code (`sys.argv[2]`) as `"<string>"`.
pub const PRELUDE: &str = include_str!("prelude.py");

/// `python3 -c LAUNCHER PRELUDE CODE`: the prelude compiled as
/// `"<hermes>"`, so that the model's code alone is `"<string>"` in
/// tracebacks (the repairs read its line numbers there).
pub const LAUNCHER: &str = "import sys;exec(compile(sys.argv[1],'<hermes>','exec'))";

/// The log of workspace calls and kept variables, in the session folder.
pub const CALLS_FILE: &str = "calls.jsonl";
