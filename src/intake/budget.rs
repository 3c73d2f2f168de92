//! What a webhook body may cost before it is verified: its size (GitHub's
//! 25 MiB cap), the time it takes to arrive, and the memory all bodies in
//! hand hold together.
//!
//! A body must be read whole before its signature can be checked, so
//! without a bound anyone who can reach the port could make taskgate hold
//! 25 MiB per connection. Each request reserves room for its declared
//! length before its body is read and keeps it until it is answered; when
//! there is no room for a while, it is answered 503 (the redelivery pass
//! asks GitHub for such a delivery again), and nothing else is affected.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use tokio::sync::{Semaphore, SemaphorePermit};

/// GitHub caps webhook payloads at 25 MiB; anything larger is not GitHub.
pub const MAX_BODY_MIB: usize = 25;
pub const MAX_BODY_BYTES: usize = MAX_BODY_MIB * 1024 * 1024;

/// The memory webhook bodies may hold at once unless configured: ten
/// bodies of GitHub's largest, or thousands of ordinary ones.
pub const DEFAULT_MEMORY_MIB: usize = 256;

/// How long a request waits for room before it is answered 503: long
/// enough to ride out a burst of large bodies, well inside GitHub's 10 s.
const WAIT_FOR_ROOM: Duration = Duration::from_secs(2);

/// GitHub gives a delivery 10 s to be answered; a body still arriving after
/// that is not GitHub's and only holds memory.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Room is counted in KiB: a semaphore takes at most `u32::MAX` permits
/// at once.
const UNIT: usize = 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "a webhook memory budget of {0} MiB cannot hold one body of GitHub's largest ({max} MiB); \
     set TASKGATE_WEBHOOK_MEMORY_MIB to {max} or more",
    max = MAX_BODY_MIB
)]
pub struct BudgetTooSmall(pub usize);

/// Room for the bodies in hand; shared by every request.
pub struct BodyBudget {
    room: Semaphore,
    mib: usize,
}

pub enum Reserve<'a> {
    /// Held until the request is answered.
    Granted(SemaphorePermit<'a>),
    /// The declared length is over GitHub's cap.
    TooLarge,
    /// No room came free in time.
    Busy,
}

impl BodyBudget {
    pub fn new(mib: usize) -> Result<BodyBudget, BudgetTooSmall> {
        let bytes = mib.saturating_mul(1024 * 1024);
        if bytes < MAX_BODY_BYTES {
            return Err(BudgetTooSmall(mib));
        }
        let units = (bytes / UNIT).min(Semaphore::MAX_PERMITS);
        Ok(BodyBudget {
            room: Semaphore::new(units),
            mib,
        })
    }

    /// The budget, in MiB.
    pub fn mib(&self) -> usize {
        self.mib
    }

    /// Room for the body `headers` announce: its `Content-Length` (hyper
    /// reads no more than that), or GitHub's cap when it is sent chunked.
    pub async fn reserve(&self, headers: &HeaderMap) -> Reserve<'_> {
        let declared = headers
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
            return Reserve::TooLarge;
        }
        let units = declared.unwrap_or(MAX_BODY_BYTES).div_ceil(UNIT).max(1);
        // At most 25 MiB / 1 KiB = 25,600 units: fits a u32.
        let wanted = self.room.acquire_many(units as u32);
        match tokio::time::timeout(WAIT_FOR_ROOM, wanted).await {
            Ok(Ok(permit)) => Reserve::Granted(permit),
            // Never closed, so only the wait can fail.
            Ok(Err(_)) | Err(_) => Reserve::Busy,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("webhook bodies are at most {MAX_BODY_MIB} MiB (GitHub's cap)")]
    TooLarge,
    #[error("the body did not arrive within GitHub's 10 s")]
    Slow,
    #[error("the body could not be read: {0}")]
    Broken(String),
}

impl ReadError {
    pub fn status(&self) -> StatusCode {
        match self {
            ReadError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ReadError::Slow => StatusCode::REQUEST_TIMEOUT,
            ReadError::Broken(_) => StatusCode::BAD_REQUEST,
        }
    }
}

/// The whole body, within GitHub's cap and time.
pub async fn read(body: Body) -> Result<Bytes, ReadError> {
    read_within(body, READ_TIMEOUT).await
}

async fn read_within(body: Body, time: Duration) -> Result<Bytes, ReadError> {
    let limited = http_body_util::Limited::new(body, MAX_BODY_BYTES);
    match tokio::time::timeout(time, limited.collect()).await {
        Err(_) => Err(ReadError::Slow),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(ReadError::TooLarge),
        Ok(Err(e)) => Err(ReadError::Broken(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declaring(length: usize) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(axum::http::header::CONTENT_LENGTH, length.into());
        headers
    }

    #[test]
    fn a_budget_must_hold_one_body_of_githubs_largest() {
        assert_eq!(BodyBudget::new(24).err(), Some(BudgetTooSmall(24)));
        assert_eq!(
            BudgetTooSmall(24).to_string(),
            "a webhook memory budget of 24 MiB cannot hold one body of GitHub's largest (25 MiB); \
             set TASKGATE_WEBHOOK_MEMORY_MIB to 25 or more"
        );
        assert!(BodyBudget::new(25).is_ok());
    }

    #[tokio::test]
    async fn room_is_reserved_by_declared_length_and_given_back_when_dropped() {
        let budget = BodyBudget::new(25).unwrap();
        let Reserve::Granted(twenty) = budget.reserve(&declaring(20 << 20)).await else {
            panic!("20 MiB fit an empty 25 MiB budget");
        };
        assert!(matches!(
            budget.reserve(&declaring(4 << 20)).await,
            Reserve::Granted(_)
        ));
        // The 4 MiB were given back; 6 MiB do not fit beside the 20.
        assert!(matches!(
            budget.reserve(&declaring(6 << 20)).await,
            Reserve::Busy
        ));
        assert_eq!(budget.mib(), 25);
        drop(twenty);
        assert!(matches!(
            budget.reserve(&declaring(6 << 20)).await,
            Reserve::Granted(_)
        ));
    }

    #[tokio::test]
    async fn over_the_cap_is_refused_before_any_wait_and_chunked_takes_the_cap() {
        let budget = BodyBudget::new(30).unwrap();
        assert!(matches!(
            budget.reserve(&declaring(MAX_BODY_BYTES + 1)).await,
            Reserve::TooLarge
        ));
        let Reserve::Granted(chunked) = budget.reserve(&HeaderMap::new()).await else {
            panic!("a chunked body fits an empty budget");
        };
        assert_eq!(chunked.num_permits(), MAX_BODY_BYTES / UNIT);
    }

    #[tokio::test]
    async fn a_body_is_read_whole_within_the_cap_and_the_time() {
        let body = Body::from_stream(futures::stream::iter(
            ["{\"zen\":", "\"ok\"}"].map(|part| Ok::<_, std::io::Error>(Bytes::from(part))),
        ));
        let read = read_within(body, Duration::from_secs(5)).await.unwrap();
        assert_eq!(&read[..], b"{\"zen\":\"ok\"}");

        // Sent chunked, with no length to refuse it by up front.
        let chunks = [
            Bytes::from(vec![b' '; MAX_BODY_BYTES]),
            Bytes::from_static(b" "),
        ];
        let body = Body::from_stream(futures::stream::iter(chunks.map(Ok::<_, std::io::Error>)));
        let over = read_within(body, Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(over, ReadError::TooLarge), "{over}");
        assert_eq!(over.status(), StatusCode::PAYLOAD_TOO_LARGE);

        let never = Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>());
        let slow = read_within(never, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(slow, ReadError::Slow), "{slow}");
        assert_eq!(slow.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(
            slow.to_string(),
            "the body did not arrive within GitHub's 10 s"
        );
    }
}
