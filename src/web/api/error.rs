//! Why an API call did nothing, as one type: each handler returns
//! `Result<_, ApiError>` and says `?`; the status and the JSON body
//! (`{"error": …}`, and for a conflict the state and reasons) are made in
//! one place.
//!
//! Owns: [`ApiError`] and its response. Must not: decide (the handlers
//! and the core do) or log (the server's trace layer does).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::store::StoreError;

#[derive(Debug)]
pub enum ApiError {
    /// 400: the request cannot be read as asked.
    BadRequest(String),
    /// 401: no valid bearer token.
    Unauthorized,
    /// 403: a Basic password for a state-changing call.
    BasicForChange,
    /// 404: no such story or task.
    NotFound(&'static str),
    /// 409: the story or task is not in a state the call applies to.
    Conflict {
        error: String,
        state: String,
        /// Every reason, when there are several (a ship's).
        reasons: Option<Vec<String>>,
    },
    /// 503: the store could not answer.
    Store(StoreError),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        ApiError::Store(e)
    }
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::BasicForChange => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn body(self) -> Value {
        let message = match self {
            ApiError::BadRequest(why) => why,
            ApiError::Unauthorized => {
                "a valid `Authorization: Bearer <TASKGATE_API_TOKEN>` header is required".into()
            }
            ApiError::BasicForChange => "a state-changing call needs `Authorization: Bearer \
                 <TASKGATE_API_TOKEN>`; Basic credentials (what a browser replays) are accepted \
                 for reading only"
                .into(),
            ApiError::NotFound(what) => what.into(),
            ApiError::Conflict {
                error,
                state,
                reasons: Some(reasons),
            } => return json!({ "error": error, "state": state, "reasons": reasons }),
            ApiError::Conflict { error, state, .. } => {
                return json!({ "error": error, "state": state })
            }
            ApiError::Store(e) => e.to_string(),
        };
        json!({ "error": message })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(self.body())).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_status_and_body() {
        let cases = [
            ApiError::BadRequest("`x` is not owner/name".into()),
            ApiError::Unauthorized,
            ApiError::BasicForChange,
            ApiError::NotFound("no story has this id"),
            ApiError::Conflict {
                error: "the story is not shippable".into(),
                state: "building".into(),
                reasons: Some(vec!["task `a` is not complete".into()]),
            },
            ApiError::Conflict {
                error: "not in review".into(),
                state: "running".into(),
                reasons: None,
            },
            ApiError::Store(StoreError::Corrupt("a row".into())),
        ];
        let lines: Vec<String> = cases
            .into_iter()
            .map(|e| format!("{} {}", e.status().as_u16(), e.body()))
            .collect();
        insta::assert_snapshot!(lines.join("\n"), @r#"
        400 {"error":"`x` is not owner/name"}
        401 {"error":"a valid `Authorization: Bearer <TASKGATE_API_TOKEN>` header is required"}
        403 {"error":"a state-changing call needs `Authorization: Bearer <TASKGATE_API_TOKEN>`; Basic credentials (what a browser replays) are accepted for reading only"}
        404 {"error":"no story has this id"}
        409 {"error":"the story is not shippable","reasons":["task `a` is not complete"],"state":"building"}
        409 {"error":"not in review","state":"running"}
        503 {"error":"stored data is corrupt: a row"}
        "#);
    }
}
