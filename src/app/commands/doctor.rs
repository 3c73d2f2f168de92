//! `/taskgate doctor`: the doctor's report on the comment's repository,
//! answered in the reply (`app::doctor` reads, `core::doctor` decides). It
//! needs read access only: the report shows the App's settings, the
//! repository's own failed deliveries and the sandbox of taskgate's host,
//! nothing a reader could not learn or that reaches past the repository.
//! Must not: change anything.

use super::{Answer, Invocation};
use crate::app::doctor::Doctor;
use crate::app::processor::Processor;
use taskgate_core::doctor::render_markdown;

impl Processor {
    pub(super) async fn command_doctor(&self, inv: &Invocation<'_>) -> Answer {
        let isolation = crate::runner::Isolation::from_env();
        let doctor = Doctor {
            github: &self.doctor.github,
            api_url: &self.doctor.api_url,
            now_s: self.runs.clock.now_s(),
            isolation: &isolation,
            host: "taskgate's host",
            floor: &self.doctor.floor,
        };
        Answer::reply(render_markdown(&doctor.report(inv.repo).await))
    }
}
