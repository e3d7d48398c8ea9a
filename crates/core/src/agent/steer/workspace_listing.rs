//! **Workspace listing** as a steer: the files of the workspace, listed by
//! the loop before round 1 and shown after the goal in the first prompt
//! (see [`survey`](crate::agent::survey) for why and how).

use async_trait::async_trait;

use super::{Opening, Steer, SteerContext};
use crate::agent::survey;

/// The steer's name (switches, journals).
pub const NAME: &str = "workspace_listing";

/// The workspace listing as a steer: an opening block.
pub struct WorkspaceListing;

#[async_trait]
impl Steer for WorkspaceListing {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "lists the workspace's files after the goal in the first prompt, taken once before round 1"
    }

    async fn opening(&self, cx: &SteerContext<'_>, first_round: u32) -> Opening {
        survey::workspace_block(cx.toolbox, first_round)
            .await
            .into()
    }
}
