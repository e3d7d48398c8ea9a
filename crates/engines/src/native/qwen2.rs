//! The Qwen2 transformer on quantized GGUF weights, in pure Rust (candle),
//! with the keys and values of each sequence held outside the weights.
//!
//! Adapted from candle-transformers' `quantized_qwen2` (MIT/Apache-2.0).
//! Two changes make it an engine rather than a demo: the weights are
//! read-only and shared by every conversation, and [`Qwen2::forward`] takes
//! several sequences at once (each with its own [`KvState`] and position):
//! the linear layers, where the time goes, run once over all their new
//! tokens stacked, and only attention runs per sequence. A [`KvState`]
//! ([`super::kv`]) grows in place and can be copied from a prefix, which
//! is what prefix reuse needs.

use std::io::{Read, Seek};

use std::borrow::Cow;
use std::sync::Arc;

use candle_core::quantized::{gguf_file, GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{DType, Device, Module, Tensor, D};
use candle_transformers::quantized_nn::RmsNorm;

pub(super) use super::kv::KvState;

/// A candle error with what was being done.
pub(super) type Result<T> = std::result::Result<T, candle_core::Error>;

struct Layer {
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    bq: Tensor,
    bk: Tensor,
    bv: Tensor,
    wo: QMatMul,
    attention_norm: RmsNorm,
    gate: QMatMul,
    down: QMatMul,
    up: QMatMul,
    ffn_norm: RmsNorm,
}

/// The model's weights: loaded once, shared by every request.
pub(super) struct Qwen2 {
    /// The token embedding table, kept quantized (it is also the output
    /// projection of models with tied embeddings): rows are dequantized
    /// as they are looked up.
    embeddings: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: QMatMul,
    cos: Tensor,
    sin: Tensor,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    hidden: usize,
    /// Longest sequence the rotary tables cover.
    pub(super) context: usize,
}

/// One sequence's share of a forward pass: its new tokens and its state.
pub(super) struct Segment<'a> {
    /// Tokens to evaluate, following the ones `kv` holds.
    pub(super) tokens: &'a [u32],
    /// The sequence's keys and values; extended by the pass.
    pub(super) kv: &'a mut KvState,
}

/// A candle error as one line of text: candle appends a backtrace to its
/// errors when RUST_BACKTRACE is set, which is not for the user's eyes.
pub(super) fn message(error: candle_core::Error) -> String {
    match error {
        candle_core::Error::WithBacktrace { inner, .. } => message(*inner),
        other => other.to_string(),
    }
}

/// The value of `key` in the file's metadata, or an error naming the key.
pub(super) fn metadata<'a>(
    content: &'a gguf_file::Content,
    key: &str,
) -> Result<&'a gguf_file::Value> {
    content
        .metadata
        .get(key)
        .ok_or_else(|| candle_core::Error::Msg(format!("the model file has no `{key}`")))
}

/// Whether candle multiplies by weights of `dtype` without SIMD on the
/// CPU: its legacy 4- and 5-bit formats with an offset or a fifth bit
/// (Q4_1, Q5_0, Q5_1) have only scalar dot products, an order of magnitude
/// slower than its vectorised Q4_0, Q8_0 and k-quant kernels. (Qwen's own
/// 0.5B Q4_K_M file stores most of its weights as Q5_0.)
fn slow_kernel(dtype: GgmlDType) -> bool {
    matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1)
}

/// `weight` in Q8_0 (8-bit values in blocks of 32, each block with its own
/// scale: finer than the 4 or 5 bits it came from, so the products move
/// only by that rounding), once at load.
fn requantize(weight: &QTensor) -> Result<QTensor> {
    let values = weight.dequantize(&Device::Cpu)?;
    QTensor::quantize(&values, GgmlDType::Q8_0)
}

/// The product by `weight`, on a vectorised kernel (see [`slow_kernel`]).
fn matmul(weight: QTensor) -> Result<QMatMul> {
    if slow_kernel(weight.dtype()) {
        return QMatMul::from_qtensor(requantize(&weight)?);
    }
    QMatMul::from_qtensor(weight)
}

fn rotary_tables(
    head_dim: usize,
    base: f32,
    context: usize,
    device: &Device,
) -> Result<(Tensor, Tensor)> {
    let theta: Vec<f32> = (0..head_dim)
        .step_by(2)
        .map(|i| 1f32 / base.powf(i as f32 / head_dim as f32))
        .collect();
    let theta = Tensor::new(theta.as_slice(), device)?;
    let angles = Tensor::arange(0, context as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((context, 1))?
        .matmul(&theta.reshape((1, theta.elem_count()))?)?;
    Ok((angles.cos()?, angles.sin()?))
}

impl Qwen2 {
    /// The shape of a [`KvState`] of `tokens` tokens for this model: its
    /// layer count and each layer's key (and value) dimensions.
    pub(super) fn kv_shape(&self, tokens: usize) -> (usize, [usize; 4]) {
        (
            self.layers.len(),
            [1, self.n_kv_head, tokens, self.head_dim],
        )
    }

    /// Reads the weights of a `qwen2` GGUF file; `context` bounds the
    /// positions (and the rotary tables' size).
    pub(super) fn load<R: Read + Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
        context: usize,
    ) -> Result<Self> {
        let device = Device::Cpu;
        let architecture = metadata(content, "general.architecture")?.to_string()?;
        if architecture != "qwen2" {
            candle_core::bail!(
                "the built-in engine runs qwen2 models; this file is `{architecture}` (build with --features local-llm for llama.cpp, which runs most GGUF models)"
            );
        }
        let get = |key: &str| metadata(content, &format!("qwen2.{key}"));
        let n_head = get("attention.head_count")?.to_u32()? as usize;
        let n_kv_head = get("attention.head_count_kv")?.to_u32()? as usize;
        let hidden = get("embedding_length")?.to_u32()? as usize;
        let layers_count = get("block_count")?.to_u32()? as usize;
        let eps = f64::from(get("attention.layer_norm_rms_epsilon")?.to_f32()?);
        let rope_base = get("rope.freq_base")
            .and_then(|v| v.to_f32())
            .unwrap_or(10_000.0);
        let trained = get("context_length")?.to_u32()? as usize;
        let context = context.min(trained).max(1);
        let head_dim = hidden / n_head;

        let mut tensor = |name: &str| content.tensor(reader, name, &device);
        let embeddings = Arc::new(tensor("token_embd.weight")?);
        if embeddings.shape().dims2()?.1 != hidden {
            candle_core::bail!("token_embd.weight is not {hidden} wide");
        }
        let norm = RmsNorm::from_qtensor(tensor("output_norm.weight")?, eps)?;
        let output = match tensor("output.weight") {
            Ok(weight) => matmul(weight)?,
            // Tied embeddings: the output projection is the embedding table.
            Err(_) if slow_kernel(embeddings.dtype()) => matmul(requantize(&embeddings)?)?,
            Err(_) => QMatMul::from_arc(Arc::clone(&embeddings))?,
        };
        let mut layers = Vec::with_capacity(layers_count);
        for i in 0..layers_count {
            let mut weight = |part: &str| tensor(&format!("blk.{i}.{part}"));
            layers.push(Layer {
                wq: matmul(weight("attn_q.weight")?)?,
                wk: matmul(weight("attn_k.weight")?)?,
                wv: matmul(weight("attn_v.weight")?)?,
                bq: weight("attn_q.bias")?.dequantize(&device)?,
                bk: weight("attn_k.bias")?.dequantize(&device)?,
                bv: weight("attn_v.bias")?.dequantize(&device)?,
                wo: matmul(weight("attn_output.weight")?)?,
                attention_norm: RmsNorm::from_qtensor(weight("attn_norm.weight")?, eps)?,
                gate: matmul(weight("ffn_gate.weight")?)?,
                down: matmul(weight("ffn_down.weight")?)?,
                up: matmul(weight("ffn_up.weight")?)?,
                ffn_norm: RmsNorm::from_qtensor(weight("ffn_norm.weight")?, eps)?,
            });
        }
        let (cos, sin) = rotary_tables(head_dim, rope_base, context, &device)?;
        Ok(Self {
            embeddings,
            layers,
            norm,
            output,
            cos,
            sin,
            n_head,
            n_kv_head,
            head_dim,
            hidden,
            context,
        })
    }

    /// Evaluates each segment's tokens after its state and returns the
    /// logits of each segment's last token, `[segments, vocabulary]`.
    /// Every state grows by its segment's tokens.
    pub(super) fn forward(&self, segments: &mut [Segment<'_>]) -> Result<Tensor> {
        if segments.iter().any(|s| s.tokens.is_empty()) {
            candle_core::bail!("a segment without tokens");
        }
        if let Some(s) = segments
            .iter()
            .find(|s| s.kv.len() + s.tokens.len() > self.context)
        {
            candle_core::bail!(
                "{} tokens exceed the context of {}",
                s.kv.len() + s.tokens.len(),
                self.context
            );
        }
        let ids: Vec<u32> = segments.iter().flat_map(|s| s.tokens).copied().collect();
        let mut x = self.embed(&ids)?;
        for (index, layer) in self.layers.iter().enumerate() {
            let h = layer.attention_norm.forward(&x)?;
            let q = layer.wq.forward(&h)?.broadcast_add(&layer.bq)?;
            let k = layer.wk.forward(&h)?.broadcast_add(&layer.bk)?;
            let v = layer.wv.forward(&h)?.broadcast_add(&layer.bv)?;
            let mut attended = Vec::with_capacity(segments.len());
            let mut row = 0;
            for segment in segments.iter_mut() {
                let n = segment.tokens.len();
                let qkv = (
                    q.narrow(0, row, n)?,
                    k.narrow(0, row, n)?,
                    v.narrow(0, row, n)?,
                );
                attended.push(self.attention(index, segment.kv, qkv)?);
                row += n;
            }
            let y = layer.wo.forward(&Tensor::cat(&attended, 0)?)?;
            x = (y + x)?;
            let h = layer.ffn_norm.forward(&x)?;
            let gated = candle_nn::ops::silu(&layer.gate.forward(&h)?)?;
            let y = layer.down.forward(&(gated * layer.up.forward(&h)?)?)?;
            x = (y + x)?;
        }
        let mut last = Vec::with_capacity(segments.len());
        let mut row = 0;
        for segment in segments.iter_mut() {
            row += segment.tokens.len();
            segment.kv.advance(segment.tokens.len());
            last.push((row - 1) as u32);
        }
        let last = Tensor::new(last.as_slice(), &Device::Cpu)?;
        let x = self.norm.forward(&x.index_select(&last, 0)?)?;
        self.output.forward(&x)
    }

    /// The embedding rows of `ids`, `[tokens, hidden]`, each dequantized
    /// from its own blocks of the table.
    fn embed(&self, ids: &[u32]) -> Result<Tensor> {
        let table = self.embeddings.data()?;
        let dtype = self.embeddings.dtype();
        let row_bytes = self.hidden / dtype.block_size() * dtype.type_size();
        let rows = ids
            .iter()
            .map(|&id| {
                let start = id as usize * row_bytes;
                let Some(bytes) = table.get(start..start + row_bytes) else {
                    candle_core::bail!("token {id} is outside the vocabulary");
                };
                let storage = QStorage::from_data(Cow::Borrowed(bytes), &Device::Cpu, dtype)?;
                QTensor::new(storage, (1, self.hidden))?.dequantize(&Device::Cpu)
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&rows, 0)
    }

    /// Self-attention of one segment in layer `index`: its new queries
    /// against everything its state holds plus its new keys, which are
    /// appended to the state. `q`, `k`, `v` are `[tokens, heads × dim]`.
    fn attention(
        &self,
        index: usize,
        kv: &mut KvState,
        (q, k, v): (Tensor, Tensor, Tensor),
    ) -> Result<Tensor> {
        let n = q.dim(0)?;
        let position = kv.len();
        let heads = |t: Tensor, count: usize| -> Result<Tensor> {
            t.reshape((1, n, count, self.head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let cos = self.cos.narrow(0, position, n)?;
        let sin = self.sin.narrow(0, position, n)?;
        let q = candle_nn::rotary_emb::rope(&heads(q, self.n_head)?, &cos, &sin)?;
        let k = candle_nn::rotary_emb::rope(&heads(k, self.n_kv_head)?, &cos, &sin)?;
        let v = heads(v, self.n_kv_head)?;
        let (k, v) = kv.append(index, &k, &v)?;
        let repeat = self.n_head / self.n_kv_head;
        let length = position + n;
        let q = q.reshape((self.n_kv_head, repeat * n, self.head_dim))?;
        let k = k.squeeze(0)?;
        // Views of the buffers: the products read them with their strides.
        let v = v.squeeze(0)?;
        let scores = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
        let scores = if n > 1 {
            let scores = scores.reshape((self.n_kv_head, repeat, n, length))?;
            let mask = causal_mask(n, position)?.broadcast_as(scores.shape())?;
            let blocked =
                Tensor::new(f32::NEG_INFINITY, &Device::Cpu)?.broadcast_as(scores.shape())?;
            mask.where_cond(&blocked, &scores)?
                .reshape((self.n_kv_head, repeat * n, length))?
        } else {
            scores
        };
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        weights
            .matmul(&v)?
            .reshape((self.n_head, n, self.head_dim))?
            .transpose(0, 1)?
            .reshape((n, self.hidden))
    }

    /// Whether the logits row is finite (a broken file gives NaN).
    pub(super) fn finite(logits: &Tensor) -> bool {
        logits
            .max(D::Minus1)
            .and_then(|m| m.to_vec0::<f32>())
            .is_ok_and(f32::is_finite)
    }
}

/// `[n, position + n]`: 1 where token `i` of the new ones may not see key
/// `j` (a later token).
fn causal_mask(n: usize, position: usize) -> Result<Tensor> {
    let width = position + n;
    let mask: Vec<u8> = (0..n)
        .flat_map(|i| (0..width).map(move |j| u8::from(j > position + i)))
        .collect();
    Tensor::from_slice(&mask, (n, width), &Device::Cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_causal_mask_lets_each_new_token_see_the_held_ones_and_itself() {
        let mask = causal_mask(2, 3).unwrap().to_vec2::<u8>().unwrap();
        assert_eq!(mask, vec![vec![0, 0, 0, 0, 1], vec![0, 0, 0, 0, 0]]);
    }

    #[test]
    fn weights_in_a_scalar_only_format_are_requantized_and_multiply_as_before() {
        let cpu = Device::Cpu;
        let values = Tensor::randn(0f32, 1.0, (64, 256), &cpu).unwrap();
        let input = Tensor::randn(0f32, 1.0, (3, 256), &cpu).unwrap();
        let q5 = || QTensor::quantize(&values, GgmlDType::Q5_0).unwrap();
        let before = QMatMul::from_qtensor(q5())
            .unwrap()
            .forward(&input)
            .unwrap();
        let fast = matmul(q5()).unwrap();
        let QMatMul::QTensor(weight) = &fast else {
            panic!("a quantized product");
        };
        assert_eq!(weight.dtype(), GgmlDType::Q8_0);
        let after = fast.forward(&input).unwrap();
        let scale = before
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        let moved = (after - &before)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(moved <= 0.02 * scale, "moved {moved} of {scale}");
        // A vectorised format is kept as it is.
        let q4k = QTensor::quantize(&values, GgmlDType::Q4K).unwrap();
        let QMatMul::QTensor(kept) = matmul(q4k).unwrap() else {
            panic!("a quantized product");
        };
        assert_eq!(kept.dtype(), GgmlDType::Q4K);
    }
}
