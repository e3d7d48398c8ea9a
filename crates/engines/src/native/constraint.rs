//! Constrained decoding for the candle engine: a request's JSON schema
//! (the decision's, the plan's) becomes a grammar that decides, token by
//! token, which tokens may come next, so that the answer always parses
//! under the schema, as llama.cpp's grammar does for its engine.
//!
//! [llguidance](https://github.com/guidance-ai/llguidance) does the work:
//! it compiles the schema and computes the allowed tokens over a trie of
//! the model's vocabulary, read from the GGUF file like the rest of the
//! engine. As in llama.cpp's sampler, the chosen token is checked first
//! and the whole vocabulary is masked only when the grammar rejects it: a
//! model asked for JSON nearly always picks an allowed token, and greedy
//! decisions are the same either way.
//!
//! The grammar admits the whitespace llama.cpp's schema grammar admits
//! between JSON tokens (nothing, one space, or one or two newlines and an
//! indent of at most 20), not unbounded runs a small model could loop in.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;

use super::tokenizer::ChatTokenizer;

/// Whitespace the grammar allows between JSON tokens (llama.cpp's `space`
/// rule: `| " " | "\n"{1,2} [ \t]{0,20}`; the empty case is the skip
/// being optional).
const WHITESPACE: &str = r"( |\n{1,2}[ \t]{0,20})";

/// The model's vocabulary as llguidance reads it: a token trie plus the
/// engine's own tokenizer for text.
struct Vocabulary {
    trie: TokTrie,
    tokenizer: Arc<ChatTokenizer>,
}

impl TokenizerEnv for Vocabulary {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.tokenize_with_greedy_fallback(s, |text| {
            self.tokenizer.encode(text).unwrap_or_default()
        })
    }
}

/// Compiles schemas into per-request [`Constraint`]s for one model; built
/// once per loaded model, on its first constrained request (building the
/// vocabulary's trie takes a moment).
pub(super) struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    /// The grammars of `tokenizer`'s model.
    pub(super) fn new(tokenizer: &Arc<ChatTokenizer>) -> Result<Self, String> {
        let env: TokEnv = Arc::new(Vocabulary {
            trie: trie(tokenizer.token_bytes(), &tokenizer.stop_tokens())?,
            tokenizer: Arc::clone(tokenizer),
        });
        Self::from_env(env)
    }

    fn from_env(env: TokEnv) -> Result<Self, String> {
        let mut factory = ParserFactory::new_simple(&env)
            .map_err(|e| format!("the grammar's vocabulary: {e}"))?;
        factory.quiet();
        Ok(Self { factory })
    }

    /// A constraint that holds an answer to `schema`, from its first token.
    pub(super) fn constraint(&self, schema: &Value) -> Result<Constraint, String> {
        let mut schema = schema.clone();
        if let Some(object) = schema.as_object_mut() {
            object.entry("x-guidance").or_insert_with(|| {
                serde_json::json!({
                    "whitespace_pattern": WHITESPACE,
                    "coerce_one_of": true,
                })
            });
        }
        let parser = self
            .factory
            .create_parser(TopLevelGrammar::from_json_schema(schema))
            .map_err(|e| format!("grammar from schema: {e}"))?;
        let trie = self.factory.tok_env().tok_trie();
        Ok(Constraint {
            matcher: Matcher::new(Ok(parser)),
            vocabulary: trie.vocab_size(),
            ends: trie.eos_tokens().to_vec(),
        })
    }
}

/// The trie of `token_bytes`, whose ends of answer are `stops`.
fn trie(token_bytes: &[Vec<u8>], stops: &[u32]) -> Result<TokTrie, String> {
    let Some(&first_stop) = stops.first() else {
        return Err("the model's tokenizer has no end-of-answer token".into());
    };
    let info = TokRxInfo::new(token_bytes.len() as u32, first_stop);
    let trie = TokTrie::from(&info, token_bytes);
    Ok(if stops.len() > 1 {
        trie.with_eos_tokens(stops)
    } else {
        trie
    })
}

/// One answer's grammar state: which tokens may come next.
pub(super) struct Constraint {
    matcher: Matcher,
    /// Tokens the grammar knows (ids at or past it are never allowed).
    vocabulary: usize,
    /// The tokens that end an answer.
    ends: Vec<TokenId>,
}

impl Constraint {
    /// Takes `token` as the answer's next one when the grammar allows it;
    /// false, and nothing taken, when it does not.
    pub(super) fn take(&mut self, token: u32) -> Result<bool, String> {
        if token as usize >= self.vocabulary {
            return Ok(false);
        }
        if self.matcher.is_stopped() {
            // Complete: only the end may follow.
            return Ok(self.ends.contains(&token));
        }
        self.matcher
            .try_consume_tokens(&[token])
            .map(|taken| taken == 1)
            .map_err(|e| format!("grammar: {e}"))
    }

    /// Sets every token the grammar does not allow next to minus infinity
    /// in `logits` (one row, by token id).
    pub(super) fn mask(&mut self, logits: &mut [f32]) -> Result<(), String> {
        let allowed = self
            .matcher
            .compute_mask_or_eos()
            .map_err(|e| format!("grammar: {e}"))?;
        let known = allowed.len().min(logits.len());
        allowed.iter_unset_entries(|id| {
            if id < known {
                logits[id] = f32::NEG_INFINITY;
            }
        });
        for logit in logits.iter_mut().skip(known) {
            *logit = f32::NEG_INFINITY;
        }
        Ok(())
    }

    /// Whether the answer is complete: nothing but its end may follow.
    pub(super) fn complete(&self) -> bool {
        self.matcher.is_stopped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vocabulary of the 256 bytes, a few multi-byte tokens, and an end
    /// of answer (id 256), tokenized greedily.
    struct Bytes {
        trie: TokTrie,
    }

    impl TokenizerEnv for Bytes {
        fn tok_trie(&self) -> &TokTrie {
            &self.trie
        }
        fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
            self.trie.greedy_tokenize(s)
        }
    }

    const WORDS: [&str; 4] = ["{\"", "\": ", "thought", "\"}"];

    fn byte_grammars() -> (Grammars, Arc<Bytes>) {
        let mut bytes: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        bytes.push(b"\xffend".to_vec());
        bytes.extend(WORDS.iter().map(|w| w.as_bytes().to_vec()));
        let env = Arc::new(Bytes {
            trie: trie(&bytes, &[256]).unwrap(),
        });
        (Grammars::from_env(env.clone()).unwrap(), env)
    }

    fn schema() -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {"thought": {"type": "string", "maxLength": 10}},
            "required": ["thought"]
        })
    }

    /// Feeds `text` token by token; how many tokens were taken.
    fn feed(constraint: &mut Constraint, env: &Bytes, text: &str) -> usize {
        let tokens = env.tokenize_bytes(text.as_bytes());
        tokens
            .iter()
            .take_while(|&&t| constraint.take(t).unwrap())
            .count()
    }

    /// A decision schema whose actions are `names` (as
    /// `decision_schema_among` builds it).
    fn actions(names: &[&str]) -> Value {
        let any: Vec<Value> = names
            .iter()
            .map(|name| {
                serde_json::json!({
                    "type": "object",
                    "properties": {"name": {"const": name}, "args": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                    "required": ["name", "args"]
                })
            })
            .collect();
        serde_json::json!({
            "type": "object",
            "properties": {"thought": {"type": "string", "maxLength": 10}, "action": {"anyOf": any}},
            "required": ["thought", "action"]
        })
    }

    #[test]
    fn an_action_left_out_of_the_schema_cannot_be_named() {
        let (grammars, env) = byte_grammars();
        let head = r#"{"thought": "t", "action": {"name": ""#;
        let mut open = grammars
            .constraint(&actions(&["read_file", "search_files"]))
            .unwrap();
        let taken = feed(&mut open, &env, &format!("{head}search_files\""));
        assert_eq!(
            taken,
            env.tokenize_bytes(format!("{head}search_files\"").as_bytes())
                .len()
        );
        let mut narrowed = grammars
            .constraint(&actions(&["read_file", "list_dir"]))
            .unwrap();
        let head_tokens = env.tokenize_bytes(head.as_bytes()).len();
        assert_eq!(feed(&mut narrowed, &env, head), head_tokens);
        assert!(
            !narrowed.take(u32::from(b's')).unwrap(),
            "search_files is not in the schema"
        );
    }

    #[test]
    fn an_answer_in_the_schema_is_taken_whole_and_then_complete() {
        let (grammars, env) = byte_grammars();
        let mut constraint = grammars.constraint(&schema()).unwrap();
        let text = r#"{"thought": "ok"}"#;
        let tokens = env.tokenize_bytes(text.as_bytes());
        assert_eq!(feed(&mut constraint, &env, text), tokens.len());
        assert!(
            constraint.complete(),
            "nothing may follow the closed object"
        );
        assert!(!constraint.take(u32::from(b' ')).unwrap());
        assert!(constraint.take(256).unwrap(), "but the end");
    }

    #[test]
    fn a_token_outside_the_schema_is_refused_and_masked() {
        let (grammars, env) = byte_grammars();
        let mut constraint = grammars.constraint(&schema()).unwrap();
        assert!(
            !constraint.take(u32::from(b'x')).unwrap(),
            "an answer opens with `{{`"
        );
        assert_eq!(feed(&mut constraint, &env, r#"{"thought": "#), 3);
        // Inside the object, the end of answer is not allowed yet, nor a key
        // the schema lacks.
        assert!(!constraint.take(256).unwrap());
        let mut logits = vec![0.0f32; 300];
        constraint.mask(&mut logits).unwrap();
        assert_eq!(logits[usize::from(b'"')], 0.0, "the string may open");
        assert_eq!(logits[usize::from(b'x')], f32::NEG_INFINITY);
        assert_eq!(logits[256], f32::NEG_INFINITY);
        assert!(
            logits[261..].iter().all(|&l| l == f32::NEG_INFINITY),
            "ids past the vocabulary"
        );
    }

    #[test]
    fn the_schema_bounds_hold_and_long_whitespace_is_refused() {
        let (grammars, env) = byte_grammars();
        let mut constraint = grammars.constraint(&schema()).unwrap();
        let open = r#"{"thought": ""#;
        assert_eq!(feed(&mut constraint, &env, open), 4);
        assert_eq!(feed(&mut constraint, &env, "0123456789"), 10);
        assert!(!constraint.take(u32::from(b'a')).unwrap(), "maxLength 10");
        let (grammars, env) = byte_grammars();
        let mut constraint = grammars.constraint(&schema()).unwrap();
        assert_eq!(feed(&mut constraint, &env, "{"), 1);
        assert_eq!(
            feed(&mut constraint, &env, "  "),
            1,
            "at most one space between tokens"
        );
    }

    #[test]
    fn a_decision_takes_no_key_it_does_not_declare() {
        // The real decision schema: a model under it once went on after
        // its decision with keys of its own, to its token budget.
        use hermes_core::agent::decide::decision_schema;
        use hermes_core::tools::builtin::register_file_tools;
        use hermes_core::tools::{Toolbox, Workspace};
        let mut toolbox = Toolbox::new();
        let workspace = Workspace::new(std::env::temp_dir()).unwrap();
        register_file_tools(&mut toolbox, &workspace);
        let schema = decision_schema(&toolbox);
        let (grammars, env) = byte_grammars();
        let taken_whole = |text: &str| {
            let mut constraint = grammars.constraint(&schema).unwrap();
            let taken = feed(&mut constraint, &env, text);
            (
                taken == env.tokenize_bytes(text.as_bytes()).len(),
                constraint,
            )
        };
        let (whole, mut decision) = taken_whole(
            r#"{"thought": "t", "action": {"name": "read_file", "args": {"path": "a.txt"}"#,
        );
        assert!(whole);
        assert!(
            !decision.take(u32::from(b',')).unwrap(),
            "no other key in the action"
        );
        assert_eq!(feed(&mut decision, &env, "}"), 1);
        assert!(!decision.take(u32::from(b',')).unwrap(), "nor after it");
        assert_eq!(feed(&mut decision, &env, "}"), 1);
        assert!(decision.complete());
        let (whole, _) = taken_whole(r#"{"thought": "t", "x"#);
        assert!(!whole, "no key of the model's own before the action");
        let (whole, _) = taken_whole(
            r#"{"thought": "t", "action": {"name": "read_file", "args": {"path": "a", "x"#,
        );
        assert!(!whole, "no argument the tool does not declare");
    }

    #[test]
    fn python_code_under_the_grammar_puts_a_block_below_its_header() {
        use hermes_core::tools::builtin::{CodeOptions, RunCode};
        use hermes_core::tools::sandbox::SandboxConfig;
        use hermes_core::tools::Tool;
        let shaped = CodeOptions {
            line_shape: true,
            ..CodeOptions::default()
        };
        let args = RunCode::with_options(SandboxConfig::new("/tmp"), shaped)
            .spec()
            .args_schema();
        let schema = serde_json::json!({"type": "object", "properties": {"args": args}, "required": ["args"]});
        let (grammars, env) = byte_grammars();
        let head = r#"{"args": {"language": "python", "code": "for f in files:"#;
        let start = |grammars: &Grammars| {
            let mut constraint = grammars.constraint(&schema).unwrap();
            let taken = feed(&mut constraint, &env, head);
            assert_eq!(taken, env.tokenize_bytes(head.as_bytes()).len());
            constraint
        };
        let mut closing = start(&grammars);
        assert!(
            !closing.take(u32::from(b'"')).unwrap(),
            "a header needs a body"
        );
        let mut flat = start(&grammars);
        assert_eq!(feed(&mut flat, &env, " "), 1, "a space may end the header");
        assert!(!flat.take(u32::from(b'p')).unwrap(), "but no body after it");
        let mut unindented = start(&grammars);
        assert_eq!(feed(&mut unindented, &env, "\\n"), 2);
        assert!(
            !unindented.take(u32::from(b'p')).unwrap(),
            "the body is indented"
        );
        let mut shaped = start(&grammars);
        let body = "\\n    print(f)\\nprint(1)\"}}";
        assert_eq!(
            feed(&mut shaped, &env, body),
            env.tokenize_bytes(body.as_bytes()).len()
        );
        assert!(shaped.complete());
        let bash = r#"{"args": {"language": "bash", "code": "for f in *; do echo $f; done"}}"#;
        let mut free = grammars.constraint(&schema).unwrap();
        assert_eq!(
            feed(&mut free, &env, bash),
            env.tokenize_bytes(bash.as_bytes()).len(),
            "Bash is free"
        );
    }

    #[test]
    fn a_schema_the_compiler_refuses_is_an_error() {
        let (grammars, _) = byte_grammars();
        let bad = serde_json::json!({"type": "object", "properties": {"a": {"type": "nonsense"}}});
        assert!(grammars.constraint(&bad).is_err());
    }
}
