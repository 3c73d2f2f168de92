//! What a webhook body may cost before it is verified: its size (GitHub's
//! 25 MiB cap), the time it takes to arrive, and the memory all bodies in
//! hand hold together.
//!
//! A body must be read whole before its signature can be checked, so
//! without a bound anyone who can reach the port could make taskgate hold
//! 25 MiB per connection. Room in the budget is taken **as bytes arrive**,
//! not for the length a request declares: a client that sends headers
//! announcing 25 MiB and then nothing holds nothing, so any number of them
//! cannot keep GitHub's deliveries out (they only hold a connection each,
//! for at most the 10 s a body may take). The room a body took is kept
//! until it is answered (the body, its compressed copy and its parse live
//! that long). When a body's next bytes find no room for a while, it is
//! answered 503 (the redelivery pass asks GitHub for such a delivery
//! again), and nothing else is affected.

use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use tokio::sync::Semaphore;

/// GitHub caps webhook payloads at 25 MiB; anything larger is not GitHub.
pub const MAX_BODY_MIB: usize = 25;
pub const MAX_BODY_BYTES: usize = MAX_BODY_MIB * 1024 * 1024;

/// The memory webhook bodies may hold at once unless configured: ten
/// bodies of GitHub's largest, or thousands of ordinary ones.
pub const DEFAULT_MEMORY_MIB: usize = 256;

/// How long a body's next bytes wait for room before it is answered 503:
/// long enough to ride out a burst of large bodies, well inside GitHub's
/// 10 s.
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

/// Room a body took; given back when dropped (once its request is
/// answered).
pub struct Held<'a> {
    room: &'a Semaphore,
    units: usize,
}

impl Held<'_> {
    /// The room held, in KiB.
    pub fn kib(&self) -> usize {
        self.units
    }

    /// Takes room for `units` more KiB, waiting up to `wait` for it.
    async fn grow(&mut self, units: usize, wait: Duration) -> bool {
        if units == 0 {
            return true;
        }
        // At most 25 MiB / 1 KiB = 25,600 units: fits a u32.
        let wanted = self.room.acquire_many(units as u32);
        match tokio::time::timeout(wait, wanted).await {
            Ok(Ok(permit)) => {
                // Counted here instead, so that the room grows with the body.
                permit.forget();
                self.units += units;
                true
            }
            // Never closed, so only the wait can fail.
            Ok(Err(_)) | Err(_) => false,
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.room.add_permits(self.units);
    }
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

    /// The whole body, within GitHub's cap and time, and the room it holds
    /// until dropped. A declared `Content-Length` over the cap is refused
    /// before anything is read.
    pub async fn read(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<(Bytes, Held<'_>), ReadError> {
        self.read_within(headers, body, READ_TIMEOUT, WAIT_FOR_ROOM)
            .await
    }

    async fn read_within(
        &self,
        headers: &HeaderMap,
        body: Body,
        time: Duration,
        wait: Duration,
    ) -> Result<(Bytes, Held<'_>), ReadError> {
        let declared = headers
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
            return Err(ReadError::TooLarge);
        }
        let mut held = Held {
            room: &self.room,
            units: 0,
        };
        let read = async {
            let mut body = body;
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| ReadError::Broken(e.to_string()))?;
                let Ok(data) = frame.into_data() else {
                    continue; // trailers
                };
                if bytes.len() + data.len() > MAX_BODY_BYTES {
                    return Err(ReadError::TooLarge);
                }
                let units = (bytes.len() + data.len()).div_ceil(UNIT);
                if !held.grow(units.saturating_sub(held.units), wait).await {
                    return Err(ReadError::Busy);
                }
                bytes.extend_from_slice(&data);
                if body.is_end_stream() {
                    break;
                }
            }
            Ok(Bytes::from(bytes))
        };
        match tokio::time::timeout(time, read).await {
            Err(_) => Err(ReadError::Slow),
            Ok(Err(e)) => Err(e),
            Ok(Ok(bytes)) => Ok((bytes, held)),
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
    /// No room came free in time for its next bytes.
    #[error("no room in the webhook memory budget")]
    Busy,
}

impl ReadError {
    pub fn status(&self) -> StatusCode {
        match self {
            ReadError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ReadError::Slow => StatusCode::REQUEST_TIMEOUT,
            ReadError::Broken(_) => StatusCode::BAD_REQUEST,
            ReadError::Busy => StatusCode::SERVICE_UNAVAILABLE,
        }
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

    /// A body of `sent` bytes that then sends nothing more.
    fn stalled(sent: usize) -> Body {
        let first = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from(vec![b' '; sent]))]);
        Body::from_stream(first.chain(futures::stream::pending()))
    }

    fn whole(length: usize) -> Body {
        Body::from(vec![b' '; length])
    }

    const SHORT: Duration = Duration::from_millis(100);
    const LONG: Duration = Duration::from_secs(5);

    use futures::StreamExt;

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
    async fn room_is_taken_as_bytes_arrive_and_given_back_when_dropped() {
        let budget = BodyBudget::new(25).unwrap();
        let (body, twenty) = budget
            .read_within(&declaring(20 << 20), whole(20 << 20), LONG, SHORT)
            .await
            .unwrap();
        assert_eq!((body.len(), twenty.kib()), (20 << 20, 20 << 10));
        let (_, four) = budget
            .read_within(&declaring(4 << 20), whole(4 << 20), LONG, SHORT)
            .await
            .unwrap();
        drop(four);
        // The 4 MiB were given back; 6 MiB do not fit beside the 20.
        let busy = budget
            .read_within(&declaring(6 << 20), whole(6 << 20), LONG, SHORT)
            .await
            .err()
            .unwrap();
        assert!(matches!(busy, ReadError::Busy), "{busy}");
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(budget.mib(), 25);
        drop(twenty);
        assert!(budget
            .read_within(&declaring(6 << 20), whole(6 << 20), LONG, SHORT)
            .await
            .is_ok());
    }

    #[tokio::test]
    async fn a_declared_length_takes_no_room_until_its_bytes_arrive() {
        let budget = BodyBudget::new(26).unwrap();
        // Twenty bodies announce GitHub's largest, send 1 KiB and stall:
        // together they hold 20 KiB, not 500 MiB.
        let largest_declared = declaring(MAX_BODY_BYTES);
        let stalls: Vec<_> = (0..20)
            .map(|_| budget.read_within(&largest_declared, stalled(1024), LONG, SHORT))
            .collect();
        let stalls =
            futures::future::join_all(stalls.into_iter().map(|read| async {
                tokio::time::timeout(Duration::from_millis(200), read).await
            }));
        // Read while they stall: a body of GitHub's largest still fits.
        let (stalled, largest) = tokio::join!(stalls, async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            budget
                .read_within(
                    &declaring(MAX_BODY_BYTES),
                    whole(MAX_BODY_BYTES),
                    LONG,
                    SHORT,
                )
                .await
                .map(|(body, _)| body.len())
        });
        assert!(stalled.iter().all(|r| r.is_err()), "all still stalled");
        assert_eq!(largest.unwrap(), MAX_BODY_BYTES);
    }

    #[tokio::test]
    async fn over_the_cap_is_refused_before_any_read_and_chunked_past_it_too() {
        let budget = BodyBudget::new(30).unwrap();
        let over = budget
            .read_within(&declaring(MAX_BODY_BYTES + 1), stalled(0), LONG, SHORT)
            .await
            .err()
            .unwrap();
        assert!(matches!(over, ReadError::TooLarge), "{over}");

        // Sent chunked, with no length to refuse it by up front.
        let chunks = [
            Bytes::from(vec![b' '; MAX_BODY_BYTES]),
            Bytes::from_static(b" "),
        ];
        let body = Body::from_stream(futures::stream::iter(chunks.map(Ok::<_, std::io::Error>)));
        let over = budget
            .read_within(&HeaderMap::new(), body, LONG, SHORT)
            .await
            .err()
            .unwrap();
        assert!(matches!(over, ReadError::TooLarge), "{over}");
        assert_eq!(over.status(), StatusCode::PAYLOAD_TOO_LARGE);
        // Its room was given back.
        assert!(budget
            .read_within(&HeaderMap::new(), whole(MAX_BODY_BYTES), LONG, SHORT)
            .await
            .is_ok_and(|(body, held)| body.len() == MAX_BODY_BYTES && held.kib() == 25 << 10));
    }

    #[tokio::test]
    async fn a_body_is_read_whole_within_the_cap_and_the_time() {
        let budget = BodyBudget::new(25).unwrap();
        let body = Body::from_stream(futures::stream::iter(
            ["{\"zen\":", "\"ok\"}"].map(|part| Ok::<_, std::io::Error>(Bytes::from(part))),
        ));
        let (read, held) = budget
            .read_within(&HeaderMap::new(), body, LONG, SHORT)
            .await
            .unwrap();
        assert_eq!(&read[..], b"{\"zen\":\"ok\"}");
        assert_eq!(held.kib(), 1);

        let slow = budget
            .read_within(
                &HeaderMap::new(),
                stalled(10),
                Duration::from_millis(50),
                SHORT,
            )
            .await
            .err()
            .unwrap();
        assert!(matches!(slow, ReadError::Slow), "{slow}");
        assert_eq!(slow.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(
            slow.to_string(),
            "the body did not arrive within GitHub's 10 s"
        );
    }
}
