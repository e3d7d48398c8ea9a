//! One resumable HTTP download to a file, and the SHA-256 of a file.
//!
//! A download appends to what an earlier, interrupted one left: it asks
//! for the rest with a `Range` header and starts over when the server
//! sends the whole file instead. A connection cut in the middle, or a
//! 5xx, is retried (from where it stopped) with exponential backoff; a
//! source that cannot be reached at all is not (the next source is tried).

use std::path::Path;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::error::FetchError;

/// Hears how a fetch goes: a progress bar, a log, or nothing.
pub trait FetchProgress: Send + Sync {
    /// A fetch of `total` bytes (when known) from `source` begins, `done`
    /// of them already on disk.
    fn begin(&self, source: &str, total: Option<u64>, done: u64);
    /// `bytes` more arrived.
    fn advance(&self, bytes: u64);
    /// `bytes` counted before are to be fetched again (a restart).
    fn rewind(&self, bytes: u64);
    /// Something worth a line: a retry, a fallback, a check.
    fn note(&self, message: &str);
}

/// A [`FetchProgress`] that shows nothing.
pub struct Quiet;

impl FetchProgress for Quiet {
    fn begin(&self, _: &str, _: Option<u64>, _: u64) {}
    fn advance(&self, _: u64) {}
    fn rewind(&self, _: u64) {}
    fn note(&self, _: &str) {}
}

/// Attempts per download, the first included.
pub const ATTEMPTS: usize = 4;

/// Downloads `url` into `path`, continuing what is there. Returns when the
/// server has sent the whole file (checking it is the caller's job); a
/// file growing past `max_bytes` is refused as soon as it does.
pub async fn download(
    http: &reqwest::Client,
    url: &str,
    path: &Path,
    max_bytes: Option<u64>,
    progress: &dyn FetchProgress,
) -> Result<(), FetchError> {
    let backoff = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(300))
        .with_max_times(ATTEMPTS - 1);
    (|| attempt(http, url, path, max_bytes, progress))
        .retry(backoff)
        .when(FetchError::is_retryable)
        .notify(|e, delay| {
            progress.note(&format!(
                "download interrupted ({e}); resuming in {:.1}s",
                delay.as_secs_f64()
            ))
        })
        .await
}

/// One request: the rest of the file after what `path` holds.
async fn attempt(
    http: &reqwest::Client,
    url: &str,
    path: &Path,
    max_bytes: Option<u64>,
    progress: &dyn FetchProgress,
) -> Result<(), FetchError> {
    let have = tokio::fs::metadata(path).await.map_or(0, |m| m.len());
    let mut request = http.get(url);
    if have > 0 {
        request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let mut response = request
        .send()
        .await
        .map_err(|e| FetchError::unreachable(url, &e))?;
    let status = response.status().as_u16();
    let append = match status {
        206 => true,
        200 => {
            if have > 0 {
                progress.rewind(have);
            }
            false
        }
        // Nothing after `have`: the file was already whole.
        416 if have > 0 => return Ok(()),
        _ => {
            return Err(FetchError::Status {
                url: url.to_string(),
                status,
            })
        }
    };
    let mut written = if append { have } else { 0 };
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .await
        .map_err(|e| FetchError::io(path, e))?;
    let interrupted = |e: reqwest::Error| FetchError::interrupted(url, &e);
    while let Some(chunk) = response.chunk().await.map_err(interrupted)? {
        written += chunk.len() as u64;
        if let Some(max) = max_bytes.filter(|&max| written > max) {
            return Err(FetchError::BadSource {
                url: url.to_string(),
                reason: format!("it sends more than the expected {max} bytes"),
            });
        }
        file.write_all(&chunk)
            .await
            .map_err(|e| FetchError::io(path, e))?;
        progress.advance(chunk.len() as u64);
    }
    file.flush().await.map_err(|e| FetchError::io(path, e))?;
    Ok(())
}

/// The SHA-256 of the file at `path`, lowercase hex (read on a blocking
/// thread).
pub async fn sha256_of(path: &Path) -> Result<String, FetchError> {
    let owned = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(&owned)?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher)?;
        Ok::<_, std::io::Error>(format!("{:x}", hasher.finalize()))
    })
    .await
    .map_err(|e| FetchError::io(path, std::io::Error::other(e)))?
    .map_err(|e| FetchError::io(path, e))
}
