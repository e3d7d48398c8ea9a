//! The tokenizer and chat template of a GGUF model, read from the file
//! itself: no `tokenizer.json` next to it, no model hub.
//!
//! A GGUF file carries its vocabulary, BPE merges and token kinds
//! (`tokenizer.ggml.*`). They are written out in the `tokenizer.json`
//! layout that the `tokenizers` crate reads, with Qwen2's pre-tokenizer
//! (the split pattern and byte-level mapping its published tokenizer
//! uses), so encoding matches the model's training. The chat template is
//! ChatML, the template of every Qwen2 instruct model (checked against the
//! file's own template, which must use `<|im_start|>`).

use std::collections::HashSet;

use candle_core::quantized::gguf_file;
use serde_json::{json, Map, Value};
use tokenizers::Tokenizer;

use super::qwen2::{message, metadata};
use hermes_core::llm::{Author, ChatMessage};

/// Qwen2's pre-tokenizer split pattern (its `tokenizer.json`).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GGUF token kind of control tokens (`<|im_end|>`, `<|endoftext|>`).
const CONTROL: i32 = 3;
/// GGUF token kind of user-defined special tokens.
const USER_DEFINED: i32 = 4;

/// Text to tokens and back, plus the tokens that end an answer.
pub(super) struct ChatTokenizer {
    tokenizer: Tokenizer,
    stops: HashSet<u32>,
    /// Each token's bytes by id (special tokens marked as llguidance's
    /// token trie expects), for the grammar ([`super::constraint`]).
    token_bytes: Vec<Vec<u8>>,
}

/// `metadata`, with its error as text.
fn field<'a>(content: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value, String> {
    metadata(content, key).map_err(message)
}

fn strings(content: &gguf_file::Content, key: &str) -> Result<Vec<String>, String> {
    field(content, key)?
        .to_vec()
        .map_err(|e| format!("`{key}`: {}", message(e)))?
        .iter()
        .map(|v| {
            v.to_string()
                .cloned()
                .map_err(|e| format!("`{key}`: {}", message(e)))
        })
        .collect()
}

impl ChatTokenizer {
    /// The tokenizer described by the file's metadata.
    pub(super) fn from_gguf(content: &gguf_file::Content) -> Result<Self, String> {
        let kind = field(content, "tokenizer.ggml.model")?
            .to_string()
            .map_err(message)?;
        if kind != "gpt2" {
            return Err(format!(
                "the built-in engine reads byte-level BPE tokenizers; this file's is `{kind}`"
            ));
        }
        if let Ok(template) = field(content, "tokenizer.chat_template") {
            let template = template.to_string().map_err(message)?;
            if !template.contains("<|im_start|>") {
                return Err("the built-in engine writes ChatML prompts; this file's chat template is another one (build with --features local-llm for llama.cpp)".into());
            }
        }
        let tokens = strings(content, "tokenizer.ggml.tokens")?;
        let merges = strings(content, "tokenizer.ggml.merges")?;
        let kinds: Vec<i32> = field(content, "tokenizer.ggml.token_type")?
            .to_vec()
            .map_err(message)?
            .iter()
            .map(|v| v.to_i32().unwrap_or(1))
            .collect();
        let eos = field(content, "tokenizer.ggml.eos_token_id")
            .and_then(|v| v.to_u32().map_err(message))
            .ok();
        let mut vocab = Map::new();
        let mut added = Vec::new();
        let mut stops: HashSet<u32> = eos.into_iter().collect();
        for (id, token) in tokens.iter().enumerate() {
            let id = id as u32;
            vocab.insert(token.clone(), json!(id));
            let kind = kinds.get(id as usize).copied().unwrap_or(1);
            if kind == CONTROL || kind == USER_DEFINED {
                added.push(json!({
                    "id": id, "content": token, "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": true,
                }));
            }
            if kind == CONTROL {
                stops.insert(id);
            }
        }
        let byte_level = json!({
            "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false
        });
        let description = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": false},
                byte_level,
            ]},
            "post_processor": null,
            "decoder": byte_level,
            "model": {
                "type": "BPE", "dropout": null, "unk_token": null,
                "continuing_subword_prefix": "", "end_of_word_suffix": "",
                "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                "vocab": Value::Object(vocab), "merges": merges,
            },
        });
        let tokenizer = Tokenizer::from_bytes(description.to_string().as_bytes())
            .map_err(|e| format!("the model's tokenizer: {e}"))?;
        let token_bytes = llguidance::token_bytes_from_tokenizer_json(&description)
            .map_err(|e| format!("the model's tokenizer: {e}"))?;
        Ok(Self {
            tokenizer,
            stops,
            token_bytes,
        })
    }

    /// Each token's bytes by id; a special token's start with
    /// [`llguidance::toktrie::TokTrie::SPECIAL_TOKEN_MARKER`].
    pub(super) fn token_bytes(&self) -> &[Vec<u8>] {
        &self.token_bytes
    }

    /// The tokens that end an answer, lowest id first.
    pub(super) fn stop_tokens(&self) -> Vec<u32> {
        let mut stops: Vec<u32> = self.stops.iter().copied().collect();
        stops.sort_unstable();
        stops
    }

    /// The tokens of `text`, special tokens (`<|im_start|>`) included as one
    /// token each.
    pub(super) fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.tokenizer
            .encode_fast(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| format!("tokenizing the prompt: {e}"))
    }

    /// The text of `ids`.
    pub(super) fn decode(&self, ids: &[u32]) -> String {
        self.tokenizer.decode(ids, false).unwrap_or_default()
    }

    /// Whether `id` ends an answer (end of turn, end of text).
    pub(super) fn is_stop(&self, id: u32) -> bool {
        self.stops.contains(&id)
    }
}

/// The conversation as a ChatML prompt ending where the assistant's answer
/// begins.
/// Without a system message first, Qwen2's template supplies its default
/// one; so does this.
pub(super) fn chatml(messages: &[ChatMessage]) -> String {
    let mut prompt = String::new();
    if messages.first().is_none_or(|m| m.role != Author::System) {
        prompt.push_str(
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n",
        );
    }
    for message in messages {
        let role = match message.role {
            Author::System => "system",
            Author::User => "user",
            Author::Assistant => "assistant",
        };
        prompt.push_str("<|im_start|>");
        prompt.push_str(role);
        prompt.push('\n');
        prompt.push_str(&message.content);
        prompt.push_str("<|im_end|>\n");
    }
    prompt.push_str("<|im_start|>assistant\n");
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_frames_each_turn_and_opens_the_answer() {
        let prompt = chatml(&[ChatMessage::system("Be brief."), ChatMessage::user("Hi")]);
        assert_eq!(
            prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}
