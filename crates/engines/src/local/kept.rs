//! The llama.cpp engine's side of the kept prompt
//! ([`hermes_core::llm::kept_prompt`]): the engine loads the file into sequence 0
//! when it starts, and after its first answered request, if that request
//! read more than half of its prompt itself, saves the sequence it used in
//! place of the file. A file that does not load (another llama.cpp build,
//! a cut file) is ignored and replaced.

use std::path::{Path, PathBuf};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;

use hermes_core::llm::kept_prompt::{kept_prompt_file, write_whole};

/// Where one model's kept conversation lives.
pub(super) struct KeptPrompt {
    path: PathBuf,
}

impl KeptPrompt {
    /// The file for `model_path` in `dir`, or `None` when the model file
    /// cannot be read.
    pub fn for_model(dir: &Path, model_path: &Path) -> Option<Self> {
        let path = kept_prompt_file(dir, model_path, "llama.kv")?;
        Some(Self { path })
    }

    /// Loads the kept conversation into sequence `seq`: the tokens it
    /// holds, none when there is no file or it does not load (the
    /// sequence is emptied then).
    pub fn load(
        &self,
        ctx: &mut LlamaContext<'_>,
        seq: usize,
        max_tokens: usize,
    ) -> Vec<LlamaToken> {
        if !self.path.is_file() {
            return Vec::new();
        }
        match ctx.state_seq_load_file(&self.path, seq as i32, max_tokens) {
            Ok((tokens, _)) => tokens,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), "the kept prompt did not load ({e}); it will be replaced");
                let _ = ctx.kv_cache_seq_rm(seq as i32, None, None);
                Vec::new()
            }
        }
    }

    /// Saves sequence `seq`, which holds `tokens`, in place of the file.
    pub fn save(&self, ctx: &LlamaContext<'_>, seq: usize, tokens: &[LlamaToken]) {
        let saved = write_whole(&self.path, |aside| {
            ctx.state_seq_save_file(aside, seq as i32, tokens)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        if let Err(e) = saved {
            tracing::warn!(path = %self.path.display(), "the prompt was not kept: {e}");
        }
    }
}
