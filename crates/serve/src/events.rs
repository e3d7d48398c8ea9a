//! How a planner's events become the service's stored and streamed
//! events, and how a task's stored events tell where it stood when a
//! crash cut it short. Plain functions: the service calls them.

use hermes_actors::plan::PlannedSubtask;
use hermes_actors::{PlanEvent, Resume};
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
        } => (
            "round",
            json!({"subtask": subtask, "round": round, "action": action, "status": status, "llm_ms": llm_ms}),
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
/// `subtasks`) and the results of its finished subtasks still in that
/// plan. `None` when it had not been planned.
pub fn resume_from(events: &[TaskEventRecord]) -> Option<Resume> {
    let mut plan: Vec<PlannedSubtask> = Vec::new();
    let mut finished: Vec<(String, String, u32)> = Vec::new();
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
            "subtask_finished" => finished.push((
                text("subtask"),
                text("result"),
                event.data["rounds"].as_u64().unwrap_or(0) as u32,
            )),
            _ => {}
        }
    }
    if plan.is_empty() {
        return None;
    }
    finished.retain(|(id, _, _)| plan.iter().any(|s| &s.id == id));
    Some(Resume {
        subtasks: plan,
        finished,
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
        assert!(resume_from(&events[..1]).is_none(), "not planned yet");
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
