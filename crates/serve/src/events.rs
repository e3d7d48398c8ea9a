//! How a planner's events become the service's stored and streamed
//! events, and how a task's stored events tell where it stood when a
//! crash cut it short. Plain functions: the service calls them.

use hermes_actors::plan::PlannedSubtask;
use hermes_actors::{PlanEvent, Resume};
use hermes_core::journal::JournalEntry;
use serde_json::{json, Value};

use crate::record::TaskEventRecord;

/// The stream event (kind, data) for a planner event; `None` for those
/// the service keeps elsewhere (`Submitted`: the trace id, on the record).
pub fn stream_event(event: &PlanEvent) -> Option<(&'static str, Value)> {
    Some(match event {
        PlanEvent::Submitted { .. } => return None,
        PlanEvent::Planned { subtasks } => ("planned", json!({ "subtasks": subtasks })),
        PlanEvent::Started {
            id: subtask,
            role,
            goal,
            node,
        } => (
            "subtask_started",
            json!({"subtask": subtask, "role": role, "goal": goal, "node": node}),
        ),
        PlanEvent::Round {
            id: subtask,
            round,
            action,
            status,
            llm_ms,
            entry,
        } => (
            "round",
            json!({"subtask": subtask, "round": round, "action": action, "status": status, "llm_ms": llm_ms, "journal": entry}),
        ),
        PlanEvent::Finished {
            id: subtask,
            rounds,
            result,
        } => (
            "subtask_finished",
            json!({"subtask": subtask, "result": result, "rounds": rounds}),
        ),
        PlanEvent::Failed {
            id: subtask,
            reason,
        } => (
            "subtask_failed",
            json!({"subtask": subtask, "status": "failed", "progress": reason}),
        ),
        PlanEvent::Cancelled { id: subtask } => (
            "subtask_failed",
            json!({"subtask": subtask, "status": "cancelled", "progress": "cancelled at the task deadline"}),
        ),
        PlanEvent::Replanned {
            new,
            replaced,
            subtasks,
            ..
        } => (
            "replanned",
            json!({"replaced": replaced, "added": new, "subtasks": subtasks}),
        ),
        PlanEvent::ReplanFailed { failed, reason } => (
            "replan_failed",
            json!({"subtask": failed, "reason": reason}),
        ),
        PlanEvent::Restarted {
            id: subtask,
            after_round,
        } => (
            "subtask_restarted",
            json!({"subtask": subtask, "after_round": after_round}),
        ),
    })
}

/// Where an interrupted task stood, from its stored `events`: the plan
/// (the last `planned`, then each `replanned`'s swap of `replaced` for
/// `subtasks`), the results of its finished subtasks still in that plan,
/// and the journal rounds of those that were running (from their `round`
/// events). `None` when it had not been planned.
pub fn resume_from(events: &[TaskEventRecord]) -> Option<Resume> {
    let mut plan: Vec<PlannedSubtask> = Vec::new();
    let mut finished: Vec<(String, String, u32)> = Vec::new();
    let mut rounds: Vec<(String, Vec<JournalEntry>)> = Vec::new();
    let mut ended: Vec<String> = Vec::new();
    for event in events {
        let subtasks = || {
            serde_json::from_value::<Vec<PlannedSubtask>>(event.data["subtasks"].clone())
                .unwrap_or_default()
        };
        let text = |key: &str| event.data[key].as_str().unwrap_or_default().to_string();
        match event.kind.as_str() {
            "planned" => plan = subtasks(),
            "replanned" => {
                let replaced: Vec<String> =
                    serde_json::from_value(event.data["replaced"].clone()).unwrap_or_default();
                plan.retain(|s| !replaced.contains(&s.id));
                plan.extend(subtasks());
            }
            "subtask_finished" => {
                ended.push(text("subtask"));
                finished.push((
                    text("subtask"),
                    text("result"),
                    event.data["rounds"].as_u64().unwrap_or(0) as u32,
                ));
            }
            "subtask_failed" => ended.push(text("subtask")),
            "round" => {
                let Ok(entry) = serde_json::from_value(event.data["journal"].clone()) else {
                    continue;
                };
                let id = text("subtask");
                match rounds.iter_mut().find(|(known, _)| *known == id) {
                    Some((_, kept)) => kept.push(entry),
                    None => rounds.push((id, vec![entry])),
                }
            }
            _ => {}
        }
    }
    if plan.is_empty() {
        return None;
    }
    finished.retain(|(id, _, _)| plan.iter().any(|s| &s.id == id));
    rounds.retain(|(id, _)| !ended.contains(id) && plan.iter().any(|s| &s.id == id));
    Some(Resume {
        subtasks: plan,
        finished,
        running: rounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u64, kind: &str, data: Value) -> TaskEventRecord {
        TaskEventRecord {
            id,
            kind: kind.into(),
            data,
        }
    }

    fn sub(id: &str) -> Value {
        json!({"id": id, "role": "worker", "goal": id, "depends_on": []})
    }

    #[test]
    fn a_replan_swaps_subtasks_and_only_results_still_in_the_plan_are_kept() {
        let events = [
            event(1, "queued", Value::Null),
            event(
                2,
                "planned",
                json!({"subtasks": [sub("s1"), sub("s2"), sub("s3")]}),
            ),
            event(
                3,
                "subtask_finished",
                json!({"subtask": "s1", "result": "A", "rounds": 2}),
            ),
            event(
                4,
                "subtask_finished",
                json!({"subtask": "s2", "result": "B", "rounds": 1}),
            ),
            event(
                5,
                "replanned",
                json!({"replaced": ["s2", "s3"], "added": ["s4"], "subtasks": [sub("s4")]}),
            ),
        ];
        let resume = resume_from(&events).unwrap();
        let ids: Vec<&str> = resume.subtasks.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["s1", "s4"]);
        assert_eq!(resume.finished, [("s1".to_string(), "A".to_string(), 2)]);
        assert!(resume.running.is_empty());
        assert!(resume_from(&events[..1]).is_none(), "not planned yet");
    }

    fn round(n: u32, subtask: &str) -> Value {
        let entry = json!({
            "round": n, "thought": "t", "action": "list_dir", "args": {},
            "args_hash": "h", "status": "ok", "observation": "a.txt",
            "tokens": {"prompt_tokens": 1, "completion_tokens": 1},
            "llm_ms": 1, "tool_ms": 1
        });
        json!({"subtask": subtask, "round": n, "action": "list_dir", "status": "ok", "journal": entry})
    }

    #[test]
    fn a_subtask_cut_short_resumes_from_its_rounds_and_an_ended_one_does_not() {
        let events = [
            event(1, "planned", json!({"subtasks": [sub("s1"), sub("s2")]})),
            event(2, "round", round(1, "s1")),
            event(3, "round", round(1, "s2")),
            event(4, "round", round(2, "s2")),
            event(
                5,
                "subtask_finished",
                json!({"subtask": "s1", "result": "A", "rounds": 1}),
            ),
        ];
        let resume = resume_from(&events).unwrap();
        assert_eq!(resume.running.len(), 1, "{:?}", resume.running);
        let (id, rounds) = &resume.running[0];
        assert_eq!(id, "s2");
        let numbers: Vec<u32> = rounds.iter().map(|r| r.round).collect();
        assert_eq!(numbers, [1, 2]);
        assert_eq!(rounds[1].observation, "a.txt");
    }

    #[test]
    fn planner_events_map_to_the_stream_kinds() {
        let (kind, data) = stream_event(&PlanEvent::Cancelled { id: "s1".into() }).unwrap();
        assert_eq!(
            (kind, data["status"].as_str()),
            ("subtask_failed", Some("cancelled"))
        );
        assert!(stream_event(&PlanEvent::Submitted { trace_id: None }).is_none());
    }
}
