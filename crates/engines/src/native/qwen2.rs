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

use candle_core::quantized::{gguf_file, QStorage, QTensor};
use candle_core::{DType, Device, Module, Tensor, D};
use candle_transformers::quantized_nn::RmsNorm;

use super::attention;
pub(super) use super::kv::KvState;
use super::product::Product;

/// A candle error with what was being done.
pub(super) type Result<T> = std::result::Result<T, candle_core::Error>;

struct Layer {
    wq: Product,
    wk: Product,
    wv: Product,
    bq: Tensor,
    bk: Tensor,
    bv: Tensor,
    wo: Product,
    attention_norm: RmsNorm,
    gate: Product,
    down: Product,
    up: Product,
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
    output: Product,
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
        if architecture != super::architecture::RUNS {
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
            Ok(weight) => Product::new(weight)?,
            // Tied embeddings: the output projection is the embedding table.
            Err(_) => Product::shared(&embeddings)?,
        };
        let mut layers = Vec::with_capacity(layers_count);
        for i in 0..layers_count {
            let mut weight = |part: &str| tensor(&format!("blk.{i}.{part}"));
            layers.push(Layer {
                wq: Product::new(weight("attn_q.weight")?)?,
                wk: Product::new(weight("attn_k.weight")?)?,
                wv: Product::new(weight("attn_v.weight")?)?,
                bq: weight("attn_q.bias")?.dequantize(&device)?,
                bk: weight("attn_k.bias")?.dequantize(&device)?,
                bv: weight("attn_v.bias")?.dequantize(&device)?,
                wo: Product::new(weight("attn_output.weight")?)?,
                attention_norm: RmsNorm::from_qtensor(weight("attn_norm.weight")?, eps)?,
                gate: Product::new(weight("ffn_gate.weight")?)?,
                down: Product::new(weight("ffn_down.weight")?)?,
                up: Product::new(weight("ffn_up.weight")?)?,
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
            let [q, k, v] = Product::together([&layer.wq, &layer.wk, &layer.wv], &h)?;
            let q = q.broadcast_add(&layer.bq)?;
            let k = k.broadcast_add(&layer.bk)?;
            let v = v.broadcast_add(&layer.bv)?;
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
            let [gate, up] = Product::together([&layer.gate, &layer.up], &h)?;
            let y = layer.down.forward(&(candle_nn::ops::silu(&gate)? * up)?)?;
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
    ///
    /// Each new token attends row by row in one fixed order
    /// ([`attention::attend`]): a token's output is then the same, bit for
    /// bit, whether it came in a chunk of 64, of 16, alone, or after a
    /// cached prefix. Batched products over all the chunk's queries at
    /// once round differently with the chunk's size, and at a sampling
    /// temperature above zero those last bits moved which token was drawn,
    /// so the same prompt took another path from run to run (EVALS.md
    /// section 44).
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
        attention::attend(&q, &k, &v, position)
    }

    /// Whether the logits row is finite (a broken file gives NaN).
    pub(super) fn finite(logits: &Tensor) -> bool {
        logits
            .max(D::Minus1)
            .and_then(|m| m.to_vec0::<f32>())
            .is_ok_and(f32::is_finite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::GgmlDType;

    fn tiny_model() -> Qwen2 {
        use gguf_file::Value;
        let cpu = Device::Cpu;
        let (hidden, ffn, vocab, kv) = (256, 512, 64, 128);
        let random = |shape: (usize, usize), dtype: GgmlDType| {
            let values = (Tensor::randn(0f32, 1.0, shape, &cpu).unwrap() * 0.1).unwrap();
            QTensor::quantize(&values, dtype).unwrap()
        };
        let vector = |len: usize, value: f32| {
            let values = (Tensor::randn(0f32, 0.1, len, &cpu).unwrap() + f64::from(value)).unwrap();
            QTensor::quantize(&values, GgmlDType::F32).unwrap()
        };
        let mut tensors: Vec<(String, QTensor)> = vec![
            (
                "token_embd.weight".into(),
                random((vocab, hidden), GgmlDType::Q6K),
            ),
            ("output_norm.weight".into(), vector(hidden, 1.0)),
        ];
        for i in 0..2 {
            let parts = [
                ("attn_q.weight", random((hidden, hidden), GgmlDType::Q4K)),
                ("attn_k.weight", random((kv, hidden), GgmlDType::Q4K)),
                ("attn_v.weight", random((kv, hidden), GgmlDType::Q6K)),
                ("attn_q.bias", vector(hidden, 0.0)),
                ("attn_k.bias", vector(kv, 0.0)),
                ("attn_v.bias", vector(kv, 0.0)),
                (
                    "attn_output.weight",
                    random((hidden, hidden), GgmlDType::Q4K),
                ),
                ("attn_norm.weight", vector(hidden, 1.0)),
                ("ffn_gate.weight", random((ffn, hidden), GgmlDType::Q4K)),
                ("ffn_up.weight", random((ffn, hidden), GgmlDType::Q4K)),
                ("ffn_down.weight", random((hidden, ffn), GgmlDType::Q6K)),
                ("ffn_norm.weight", vector(hidden, 1.0)),
            ];
            tensors.extend(
                parts
                    .into_iter()
                    .map(|(name, t)| (format!("blk.{i}.{name}"), t)),
            );
        }
        let metadata = [
            ("general.architecture", Value::String("qwen2".into())),
            ("qwen2.attention.head_count", Value::U32(4)),
            ("qwen2.attention.head_count_kv", Value::U32(2)),
            ("qwen2.embedding_length", Value::U32(hidden as u32)),
            ("qwen2.block_count", Value::U32(2)),
            ("qwen2.attention.layer_norm_rms_epsilon", Value::F32(1e-6)),
            ("qwen2.rope.freq_base", Value::F32(10_000.0)),
            ("qwen2.context_length", Value::U32(64)),
        ];
        let metadata: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
        let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
        let mut file = std::io::Cursor::new(Vec::new());
        gguf_file::write(&mut file, &metadata, &tensors).unwrap();
        file.set_position(0);
        let content = gguf_file::Content::read(&mut file).unwrap();
        Qwen2::load(&content, &mut file, 64).unwrap()
    }

    /// The logits after `tokens`, fed in pieces of the given sizes (each
    /// piece one forward pass), beside `other`'s tokens in the same passes
    /// when given.
    fn logits(model: &Qwen2, tokens: &[u32], pieces: &[usize], other: Option<&[u32]>) -> Vec<f32> {
        let mut kv = KvState::with_room(64);
        let mut start = 0;
        let mut last = None;
        for &size in pieces {
            let piece = &tokens[start..start + size];
            start += size;
            // The other sequence starts afresh in each pass.
            let mut side = KvState::with_room(64);
            let mut segments = vec![Segment {
                tokens: piece,
                kv: &mut kv,
            }];
            if let Some(other) = other {
                segments.push(Segment {
                    tokens: other,
                    kv: &mut side,
                });
            }
            let out = model.forward(&mut segments).unwrap();
            last = Some(out.get(0).unwrap().to_vec1::<f32>().unwrap());
        }
        assert_eq!(start, tokens.len());
        last.unwrap()
    }

    #[test]
    fn a_prompt_gives_the_same_logits_bit_for_bit_in_any_chunks_and_any_batch() {
        let model = tiny_model();
        let tokens: Vec<u32> = (0..24).map(|i| (i * 7 + 3) % 64).collect();
        let whole = logits(&model, &tokens, &[24], None);
        assert!(whole.iter().all(|x| x.is_finite()));
        for pieces in [&[16, 8][..], &[1; 24][..], &[5, 3, 16][..], &[23, 1][..]] {
            assert_eq!(
                logits(&model, &tokens, pieces, None),
                whole,
                "pieces {pieces:?}"
            );
        }
        // Beside another sequence in the same passes (the engine's batch).
        let other: Vec<u32> = vec![9, 8, 7, 6, 5];
        assert_eq!(logits(&model, &tokens, &[16, 8], Some(&other)), whole);
        assert_eq!(logits(&model, &tokens, &[1; 24], Some(&other[..1])), whole);
    }
}
