//! Headless Chromium for the tests that check a page as a browser renders
//! it (the eval report, the service's web page). Needs Debian's
//! `chromium`; CI installs it (`scripts/test.sh`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Chromium on PATH, if any.
pub fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// Chromium, or `None` with a note when HERMES_SKIP_BROWSER=1; a panic
/// saying how to install it otherwise.
pub fn chromium_or_skip(what: &str) -> Option<PathBuf> {
    if let Some(chromium) = find_chromium() {
        return Some(chromium);
    }
    if std::env::var("HERMES_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("note: HERMES_SKIP_BROWSER=1 and no chromium on PATH: skipping {what}");
        return None;
    }
    panic!(
        "{what} needs headless Chromium, which is not installed: run `apt-get install chromium` \
         (CI installs it), or set HERMES_SKIP_BROWSER=1 to skip it"
    );
}

/// The DOM Chromium builds from `url`, serialised; `extra` flags go
/// before the URL (e.g. `--virtual-time-budget=5000` to let scripts run,
/// `--screenshot=FILE`).
pub fn dump_dom(chromium: &Path, url: &str, profile: &Path, extra: &[&str]) -> String {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg("--dump-dom")
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    // Read stdout on a thread so a large DOM cannot fill the pipe while we wait.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut out).map(|_| out)
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s for {url}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let dom = reader.join().unwrap().expect("read chromium output");
    if !status.success() || dom.trim().is_empty() {
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        }
        panic!("chromium failed ({status}) on {url}:\n{err}");
    }
    dom
}
