//! Custom tools from an async function and an args struct: the struct's
//! schema (derived with `schemars`) becomes the tool's parameters, so the
//! prompt and the validation come from the same place as for every tool.

use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::json_schema::params_from_schema;
use super::{Tool, ToolError, ToolSpec};

/// A tool made of an async function over a typed args struct. Build it with
/// [`tool_fn`].
pub struct FnTool<A, F> {
    spec: ToolSpec,
    function: F,
    _args: PhantomData<fn(A)>,
}

/// Makes a tool named `name` from `function`, whose argument type `A`
/// derives `Deserialize` and `JsonSchema` (its doc comments become the
/// parameter descriptions). Adjust the returned tool's spec with
/// [`FnTool::with_spec`] (examples, timeout, idempotency).
///
/// ```
/// use hermes_core::tools::{tool_fn, ToolError, Toolbox};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Add {
///     /// First number.
///     a: i64,
///     /// Second number.
///     b: i64,
/// }
///
/// let mut toolbox = Toolbox::new();
/// toolbox.register(tool_fn("add", "Add two integers.", |args: Add| async move { Ok::<_, ToolError>(args.a + args.b) }));
/// assert!(toolbox.render().contains("a (integer, required): First number."));
/// ```
pub fn tool_fn<A, F, Fut, T>(name: &str, description: &str, function: F) -> FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send + 'static,
    T: Serialize,
{
    let schema = schemars::schema_for!(A);
    let params = schema
        .as_object()
        .map(params_from_schema)
        .unwrap_or_default();
    let spec = params
        .into_iter()
        .fold(ToolSpec::new(name, description), ToolSpec::param);
    FnTool {
        spec,
        function,
        _args: PhantomData,
    }
}

impl<A, F> FnTool<A, F> {
    /// Changes the derived spec (add examples, a timeout, idempotency).
    pub fn with_spec(mut self, change: impl FnOnce(ToolSpec) -> ToolSpec) -> Self {
        self.spec = change(self.spec);
        self
    }
}

#[async_trait]
impl<A, F, Fut, T> Tool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send + 'static,
    T: Serialize + 'static,
{
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let args: A = serde_json::from_value(Value::Object(args))
            .map_err(|e| ToolError::new(format!("invalid args for `{}`: {e}", self.spec.name)))?;
        let output = (self.function)(args).await?;
        serde_json::to_value(output).map_err(|e| {
            ToolError::new(format!(
                "`{}` returned unserialisable output: {e}",
                self.spec.name
            ))
        })
    }
}
