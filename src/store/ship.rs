//! Ship-gate records per story and the deploy/validation runs started for
//! them.

use rusqlite::{params, Connection, OptionalExtension};

use super::{Store, StoreError};
use crate::core::ship::{StoryRecord, StoryRunRef, StoryWorkflow};
use crate::core::story::Marker;
use crate::ids::{IssueNumber, RepoName};

pub(super) fn put_story_record(
    conn: &Connection,
    repo: &RepoName,
    story: &str,
    record: &StoryRecord,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO story_ships (repo, story, record) VALUES (?1, ?2, ?3)
         ON CONFLICT(repo, story) DO UPDATE SET record = ?3",
        params![
            repo.as_str(),
            story,
            serde_json::to_string(record).expect("plain data serialises")
        ],
    )?;
    Ok(())
}

/// A story as the API lists it: where it lives and its story issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoryRow {
    pub repo: RepoName,
    pub story: String,
    pub issue: IssueNumber,
}

fn workflow_name(w: StoryWorkflow) -> &'static str {
    match w {
        StoryWorkflow::Deploy => "deploy",
        StoryWorkflow::Validation => "validation",
    }
}

impl Store {
    pub async fn story_record(
        &self,
        repo: &RepoName,
        story: &str,
    ) -> Result<Option<StoryRecord>, StoreError> {
        let (repo, story) = (repo.clone(), story.to_owned());
        self.read(move |conn| {
            super::json_record(
                conn,
                "SELECT record FROM story_ships WHERE repo = ?1 AND story = ?2",
                params![repo.as_str(), story],
            )
        })
        .await
    }

    /// Every ship record of a repository, by story key.
    pub async fn story_records(
        &self,
        repo: &RepoName,
    ) -> Result<Vec<(String, StoryRecord)>, StoreError> {
        let repo = repo.clone();
        self.read(move |conn| {
            super::keyed_records(
                conn,
                "SELECT story, record FROM story_ships WHERE repo = ?1",
                [repo.as_str()],
            )
        })
        .await
    }

    /// Every planned story whose issue exists, oldest issue first.
    pub async fn stories(&self) -> Result<Vec<StoryRow>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare(
                "SELECT s.repo, s.story, i.marker, i.number FROM stories s
                 JOIN issues i ON i.repo = s.repo
                 WHERE i.marker NOT LIKE '% %' AND i.marker LIKE 'story=%'
                 ORDER BY i.number",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, IssueNumber>(3)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (repo, story, marker, number) = row?;
                let own = Marker::Story {
                    story: story.clone(),
                }
                .key();
                if marker == own {
                    out.push(StoryRow {
                        repo: RepoName::parse(&repo).map_err(StoreError::Corrupt)?,
                        story,
                        issue: number,
                    });
                }
            }
            Ok(out)
        })
        .await
    }

    /// The story whose issue is `number` in `repo`, if taskgate made it.
    pub async fn story_by_issue(
        &self,
        repo: &RepoName,
        number: IssueNumber,
    ) -> Result<Option<String>, StoreError> {
        let repo = repo.clone();
        self.read(move |conn| {
            let mut stmt =
                conn.prepare("SELECT marker FROM issues WHERE repo = ?1 AND number = ?2")?;
            let markers =
                stmt.query_map(params![repo.as_str(), number], |r| r.get::<_, String>(0))?;
            for marker in markers {
                if let Some(Marker::Story { story }) = Marker::from_key(&marker?) {
                    return Ok(Some(story));
                }
            }
            Ok(None)
        })
        .await
    }

    /// Records that GitHub started workflow run `run_id` for a story.
    pub async fn put_story_run(
        &self,
        repo: &RepoName,
        run_id: u64,
        run: &StoryRunRef,
    ) -> Result<(), StoreError> {
        let (repo, run) = (repo.clone(), run.clone());
        self.write_one(move |conn| {
            conn.execute(
                "INSERT INTO story_runs (repo, run_id, story, workflow) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(repo, run_id) DO UPDATE SET story = ?3, workflow = ?4",
                params![
                    repo.as_str(),
                    run_id as i64,
                    run.story,
                    workflow_name(run.workflow)
                ],
            )?;
            Ok(())
        })
        .await
    }

    /// The story and workflow a run was dispatched for, if it was.
    pub async fn story_run(
        &self,
        repo: &RepoName,
        run_id: u64,
    ) -> Result<Option<StoryRunRef>, StoreError> {
        let repo = repo.clone();
        self.read(move |conn| {
            let found: Option<(String, String)> = conn
                .query_row(
                    "SELECT story, workflow FROM story_runs WHERE repo = ?1 AND run_id = ?2",
                    params![repo.as_str(), run_id as i64],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            Ok(found.map(|(story, workflow)| StoryRunRef {
                story,
                workflow: if workflow == "deploy" {
                    StoryWorkflow::Deploy
                } else {
                    StoryWorkflow::Validation
                },
            }))
        })
        .await
    }
}
