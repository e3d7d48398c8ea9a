//! **Perceive, before round 1**: what the workspace holds when a run starts.
//!
//! Asked for "what the last observation showed", a small model invents an
//! observation in round 1 when there is none, and writes numbers it never
//! read (EVALS.md, sections 3, 9 and 12). Instead of leaving the first
//! round blind, the loop lists the workspace itself, without a model call
//! and without using a round, and the first user turn shows the list after
//! the goal. It is taken once, so the prompt's opening stays the same for
//! the whole run (and so a cached prefix).
//!
//! Only a toolbox that names its workspace ([`Toolbox::workspace`]) and
//! offers a tool that sees it ([`ToolEffect::sees_workspace`](crate::tools::ToolEffect::sees_workspace)) gets one;
//! the `workspace_listing` steer (`agent::steer`) turns it off.

use std::fmt::Write as _;

use crate::tools::{Listing, Toolbox, Workspace};

/// Most entries the list shows; `list_dir` shows the rest.
pub const LISTED_ENTRIES: usize = 40;

/// The workspace block for a run whose next round is `first_round`, or
/// an empty string when `toolbox` has no workspace or no tool that reads it.
pub async fn workspace_block(toolbox: &Toolbox, first_round: u32) -> String {
    let Some(workspace) = readable_workspace(toolbox) else {
        return String::new();
    };
    match tokio::task::spawn_blocking(move || workspace.listing(LISTED_ENTRIES)).await {
        Ok(listing) => block(&listing, first_round),
        Err(_) => String::new(),
    }
}

/// The workspace of `toolbox` when one of its tools sees it: without one,
/// a block about its files would name files the model cannot open.
pub fn readable_workspace(toolbox: &Toolbox) -> Option<Workspace> {
    let workspace = toolbox.workspace()?.clone();
    toolbox
        .specs()
        .any(|spec| spec.effect.sees_workspace())
        .then_some(workspace)
}

/// How `listing` reads in the prompt, taken before round `first_round`.
pub fn block(listing: &Listing, first_round: u32) -> String {
    if listing.entries.is_empty() {
        return format!("The workspace was empty before round {first_round}.");
    }
    let mut text = format!(
        "Files in the workspace before round {first_round} (listed for you; read a file to see what it holds):"
    );
    for entry in &listing.entries {
        let _ = write!(text, "\n- {entry}");
    }
    if listing.more > 0 {
        let _ = write!(
            text,
            "\n- … and {} more (list_dir shows a folder's entries)",
            listing.more
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tools::builtin::register_file_tools;

    #[test]
    fn the_block_names_each_entry_and_counts_the_rest() {
        let listing = Listing {
            entries: vec!["data/".into(), "data/users.csv (120 bytes)".into()],
            more: 3,
        };
        assert_eq!(
            block(&listing, 1),
            "Files in the workspace before round 1 (listed for you; read a file to see what it holds):\n- data/\n- data/users.csv (120 bytes)\n- … and 3 more (list_dir shows a folder's entries)"
        );
        assert_eq!(
            block(&Listing::default(), 4),
            "The workspace was empty before round 4."
        );
    }

    #[tokio::test]
    async fn a_toolbox_with_file_tools_lists_its_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "abc").unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        let text = workspace_block(&toolbox, 1).await;
        assert!(text.ends_with("\n- a.txt (3 bytes)"), "{text}");
        // A role left with no tool that reads the files gets no listing.
        let subset = Arc::new(toolbox).subset(&["write_file"]);
        assert_eq!(workspace_block(&subset, 1).await, "");
    }

    #[tokio::test]
    async fn a_toolbox_without_a_workspace_gets_no_block() {
        let dir = tempfile::tempdir().unwrap();
        let mut named = Toolbox::new();
        register_file_tools(&mut named, &Workspace::new(dir.path()).unwrap());
        // The same tools registered one by one name no workspace.
        let mut unnamed = Toolbox::new();
        for tool in named.tools() {
            unnamed.register_arc(Arc::clone(tool));
        }
        assert_eq!(workspace_block(&unnamed, 1).await, "");
    }
}
