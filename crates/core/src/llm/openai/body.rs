//! The JSON body of a chat-completions request, written straight from the
//! request's own fields: no `serde_json::Value` tree is built (copying
//! every message) and then written, and a decision schema's JSON text,
//! the same every round, is written once per schema and reused.

use std::sync::{Arc, Mutex, Weak};

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::llm::{Author, ChatMessage, ChatRequest};

/// No `response_format`.
pub(super) const FORMAT_NONE: u8 = 0;
/// `{"type": "json_object"}`.
pub(super) const FORMAT_OBJECT: u8 = 1;
/// `{"type": "json_schema", ...}` when the request has a schema.
pub(super) const FORMAT_SCHEMA: u8 = 2;
/// The levels' names, for the log.
pub(super) const FORMAT_NAMES: [&str; 3] = ["none", "json_object", "json_schema"];

/// The body posted to `/chat/completions`, its keys in the order the
/// client has always sent them.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    pub model: &'a str,
    pub messages: Messages<'a>,
    pub temperature: f64,
    pub max_tokens: u32,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// A request's messages, each system message written from the JSON text
/// kept for it when the client sent the same one before (an agent sends
/// the same system prompt, several KB, every round: escaping it again each
/// time cost more than the rest of the body).
pub(super) struct Messages<'a> {
    pub messages: &'a [ChatMessage],
    pub kept: &'a SystemTexts,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.messages.len()))?;
        for message in self.messages {
            match message.role {
                Author::System => seq.serialize_element(&self.kept.text(message))?,
                _ => seq.serialize_element(message)?,
            }
        }
        seq.end()
    }
}

/// How many system messages' texts a client keeps (one per agent role
/// that shares it, and the planner's).
const KEPT_SYSTEM_TEXTS: usize = 8;

/// The JSON texts of the system messages a client sent lately, found
/// again by their content (compared byte for byte, far cheaper than
/// escaping it).
#[derive(Debug, Default)]
pub(super) struct SystemTexts(Mutex<Vec<(String, JsonText)>>);

impl SystemTexts {
    /// `message` as JSON text, written now if this client has not kept it.
    fn text(&self, message: &ChatMessage) -> JsonText {
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(i) = kept
            .iter()
            .position(|(content, _)| *content == message.content)
        {
            // The newest last, so the one dropped is the least used.
            let entry = kept.remove(i);
            let text = entry.1.clone();
            kept.push(entry);
            return text;
        }
        let text = JsonText(Arc::new(
            serde_json::value::to_raw_value(message).unwrap_or_else(|_| RawValue::NULL.to_owned()),
        ));
        if kept.len() >= KEPT_SYSTEM_TEXTS {
            kept.remove(0);
        }
        kept.push((message.content.clone(), text.clone()));
        text
    }
}

/// A request's `response_format`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ResponseFormat {
    /// Structured output under the request's schema.
    JsonSchema {
        /// The schema, named as the API asks.
        json_schema: NamedSchema,
    },
    /// Any JSON object.
    JsonObject,
}

impl ResponseFormat {
    /// Its `type`, for the log.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Self::JsonSchema { .. } => FORMAT_NAMES[usize::from(FORMAT_SCHEMA)],
            Self::JsonObject => FORMAT_NAMES[usize::from(FORMAT_OBJECT)],
        }
    }
}

/// `{"name": "decision", "schema": …}` with the schema as JSON text.
#[derive(Debug, Clone, Serialize)]
pub(super) struct NamedSchema {
    name: &'static str,
    schema: JsonText,
}

/// JSON text written once (a schema, a system message), shared between
/// the requests that send it.
#[derive(Debug, Clone)]
struct JsonText(Arc<Box<RawValue>>);

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self.0).serialize(serializer)
    }
}

/// How many schemas' texts a client keeps: an agent sends one schema every
/// round (a steer sometimes a narrower one), a planner and its roles a few.
const KEPT_SCHEMAS: usize = 8;

/// The JSON texts of the schemas a client sent lately, each found again by
/// the `Arc` the request holds (the loop shares one schema for the whole
/// run). A `Weak` keeps the entry from outliving its schema's identity: its
/// allocation stays until the entry goes, so no other schema can take its
/// address meanwhile.
#[derive(Debug, Default)]
pub(super) struct SchemaTexts(Mutex<Vec<(Weak<Value>, JsonText)>>);

impl SchemaTexts {
    /// `schema`'s JSON text, written now if this client has not kept it.
    fn text(&self, schema: &Arc<Value>) -> JsonText {
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, text)) = kept
            .iter()
            .find(|(weak, _)| std::ptr::eq(weak.as_ptr(), Arc::as_ptr(schema)))
        {
            return text.clone();
        }
        // A `Value` always has a JSON text (its keys are strings); `null`
        // stands in should that ever change.
        let text = serde_json::value::to_raw_value(schema.as_ref())
            .unwrap_or_else(|_| RawValue::NULL.to_owned());
        let text = JsonText(Arc::new(text));
        kept.retain(|(weak, _)| weak.strong_count() > 0);
        if kept.len() >= KEPT_SCHEMAS {
            kept.remove(0);
        }
        kept.push((Arc::downgrade(schema), text.clone()));
        text
    }

    /// The `response_format` for `request` when the server takes `allowed`
    /// (one of the `FORMAT_*` levels); `None` for plain-text requests.
    pub(super) fn response_format(
        &self,
        request: &ChatRequest,
        allowed: u8,
    ) -> Option<ResponseFormat> {
        if !request.json || allowed == FORMAT_NONE {
            return None;
        }
        Some(match &request.schema {
            Some(schema) if allowed == FORMAT_SCHEMA => ResponseFormat::JsonSchema {
                json_schema: NamedSchema {
                    name: "decision",
                    schema: self.text(schema),
                },
            },
            _ => ResponseFormat::JsonObject,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(schema: Option<Arc<Value>>) -> ChatRequest {
        ChatRequest {
            messages: vec![],
            temperature: 0.0,
            max_tokens: 8,
            json: true,
            schema,
            seed: None,
        }
    }

    fn as_value(format: Option<ResponseFormat>) -> Option<Value> {
        format.map(|f| serde_json::to_value(f).unwrap())
    }

    #[test]
    fn response_format_steps_down_from_the_schema() {
        let texts = SchemaTexts::default();
        let mut request = request(Some(Arc::new(json!({"type": "object"}))));
        assert_eq!(
            as_value(texts.response_format(&request, FORMAT_SCHEMA)),
            Some(
                json!({"type": "json_schema", "json_schema": {"name": "decision", "schema": {"type": "object"}}})
            )
        );
        assert_eq!(
            as_value(texts.response_format(&request, FORMAT_OBJECT)),
            Some(json!({"type": "json_object"}))
        );
        assert!(texts.response_format(&request, FORMAT_NONE).is_none());
        request.schema = None;
        assert_eq!(
            as_value(texts.response_format(&request, FORMAT_SCHEMA)),
            Some(json!({"type": "json_object"}))
        );
        request.json = false;
        assert!(texts.response_format(&request, FORMAT_SCHEMA).is_none());
    }

    #[test]
    fn system_messages_are_written_as_they_always_were_and_kept() {
        let kept = SystemTexts::default();
        let messages = vec![
            ChatMessage::system("You are \"Hermes\".\nTools: …"),
            ChatMessage::user("Goal: x"),
            ChatMessage::assistant("{}"),
        ];
        let plain = serde_json::to_string(&messages).unwrap();
        for _ in 0..2 {
            let written = serde_json::to_string(&Messages {
                messages: &messages,
                kept: &kept,
            })
            .unwrap();
            assert_eq!(written, plain);
        }
        assert_eq!(kept.0.lock().unwrap().len(), 1);
        // Another system prompt gets its own text; the oldest goes past the bound.
        for i in 0..(KEPT_SYSTEM_TEXTS + 3) {
            let other = ChatMessage::system(format!("prompt {i}"));
            assert_eq!(
                kept.text(&other).0.get(),
                serde_json::to_string(&other).unwrap()
            );
        }
        assert_eq!(kept.0.lock().unwrap().len(), KEPT_SYSTEM_TEXTS);
    }

    #[test]
    fn a_schema_is_written_once_and_another_schema_gets_its_own_text() {
        let texts = SchemaTexts::default();
        let first = Arc::new(json!({"type": "object", "required": ["thought"]}));
        let a = texts.text(&first);
        let b = texts.text(&first.clone());
        assert!(Arc::ptr_eq(&a.0, &b.0), "the same schema's text is reused");
        assert_eq!(a.0.get(), r#"{"type":"object","required":["thought"]}"#);
        // An equal schema in another allocation, and a different one, are
        // written for themselves.
        let other = Arc::new(json!({"type": "string"}));
        assert_eq!(texts.text(&other).0.get(), r#"{"type":"string"}"#);
        // A dropped schema's entry goes; its text is never given to a new one.
        drop(first);
        let fresh = Arc::new(json!({"enum": [1]}));
        assert_eq!(texts.text(&fresh).0.get(), r#"{"enum":[1]}"#);
        assert!(texts.0.lock().unwrap().len() <= 2);
        // Never more than KEPT_SCHEMAS entries, however many schemas pass.
        let many: Vec<_> = (0..20).map(|i| Arc::new(json!({ "n": i }))).collect();
        for (i, schema) in many.iter().enumerate() {
            assert_eq!(texts.text(schema).0.get(), format!(r#"{{"n":{i}}}"#));
        }
        assert!(texts.0.lock().unwrap().len() <= KEPT_SCHEMAS);
    }
}
