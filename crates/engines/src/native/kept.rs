//! The built-in engine's side of the kept prompt
//! ([`hermes_core::llm::kept_prompt`]): a [`KvState`] and the tokens it holds as
//! a safetensors file (`tokens`, then `k.N` and `v.N` per layer). The
//! engine loads it into its prefix cache when it starts, where every new
//! conversation can continue it (states share their tensors), and saves
//! the state of its first answered request in its place when that request
//! read more than half of its prompt itself. A file that does not match
//! the model (shapes, layer count, a cut file) is refused and replaced.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};

use super::qwen2::{message, KvState, Qwen2};

/// Writes `state`, which holds `tokens`, to `path`.
pub(super) fn save(state: &KvState, tokens: &[u32], path: &Path) -> Result<(), String> {
    let mut tensors: HashMap<String, Tensor> = HashMap::new();
    let tokens = Tensor::new(tokens, &Device::Cpu).map_err(message)?;
    tensors.insert("tokens".into(), tokens);
    for (i, (k, v)) in state.filled().map_err(message)?.into_iter().enumerate() {
        tensors.insert(format!("k.{i}"), k.contiguous().map_err(message)?);
        tensors.insert(format!("v.{i}"), v.contiguous().map_err(message)?);
    }
    candle_core::safetensors::save(&tensors, path).map_err(message)
}

/// Reads a state written by [`save`] for `model`: the tokens it holds and
/// the state; an error when the file is not one for this model, or holds
/// no token, or as many as the context.
pub(super) fn load(model: &Qwen2, path: &Path) -> Result<(Vec<u32>, KvState), String> {
    let mut tensors = candle_core::safetensors::load(path, &Device::Cpu).map_err(message)?;
    let tokens = tensors
        .remove("tokens")
        .ok_or("no `tokens` in the file")?
        .to_vec1::<u32>()
        .map_err(message)?;
    let len = tokens.len();
    if len == 0 || len >= model.context {
        return Err(format!("{len} tokens for a context of {}", model.context));
    }
    let (count, shape) = model.kv_shape(len);
    let mut layers = Vec::with_capacity(count);
    for i in 0..count {
        let mut take = |name: String| {
            let tensor = tensors
                .remove(&name)
                .ok_or(format!("no `{name}` in the file"))?;
            if tensor.dims() != shape || tensor.dtype() != DType::F32 {
                return Err(format!(
                    "`{name}` is {:?} {:?}, not {shape:?} f32",
                    tensor.dims(),
                    tensor.dtype()
                ));
            }
            Ok(tensor)
        };
        layers.push((take(format!("k.{i}"))?, take(format!("v.{i}"))?));
    }
    if !tensors.is_empty() {
        return Err(format!(
            "{} tensors more than the model's layers",
            tensors.len()
        ));
    }
    Ok((tokens, KvState::from_layers(layers, len)))
}
