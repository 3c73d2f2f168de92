//! What makes a plan visible on GitHub: the hidden markers that tie an issue
//! to its story and task, the label catalogue, branch names, and the issue
//! bodies of stories and tasks (SPEC §1, §3).
//!
//! Owns: [`markers`] (`<!-- taskgate:story=… task=… -->`, written and read
//! back), [`labels`] (every label taskgate uses, with colour and
//! description), [`branches`] (`taskgate/story-<n>`, `taskgate/task-<n>-<slug>`)
//! [`parts`] (a story's repositories, `taskgate/part-<n>-<home>`) and [`body`] (`render_story_body`, `render_task_body`, with the Mermaid
//! dependency graph drawn by `graph`).
//!
//! Must not: do IO, await, read the clock, or import any shell module. Every
//! function is a plain function of its arguments.
//!
//! Two ideas a reader needs:
//! - A body is a pure, deterministic function of the plan and the task
//!   states: an unchanged plan renders byte-identical text, which is how the
//!   sync knows it has nothing to write.
//! - Everything taskgate creates carries a [`Marker`] so that a lost
//!   database can be rebuilt from GitHub and nothing is created twice. Text
//!   that users wrote (titles, descriptions) is escaped so it can neither
//!   forge a marker nor ping anyone.

pub mod body;
pub mod branches;
mod graph;
pub mod labels;
pub mod markers;
pub mod parts;
mod refs;
pub mod start;
pub mod sub_issues;

pub use body::{render_story_body, render_task_body, TaskBodies, TaskView, MAX_BODY_CHARS};
pub use branches::{
    revert_issue_of_branch, story_branch, story_issue_of_branch, task_branch, task_issue_of_branch,
    BranchName,
};
pub use labels::{catalogue, spec, LabelSpec};
pub use markers::{story_key_for_file, story_key_for_issue, Marker, Placed};
pub use parts::{part_branch, parts_of, render_parts, PartView};
pub use refs::{issue_ref, referenced_markers, resolve_issue_refs};
pub use start::{BranchStart, StartHow};
pub use sub_issues::{render_sub_issue_refused, SUB_ISSUE_REFUSED_MARKER};
