//! Which delivery ids the inbox holds: the redelivery pass asks GitHub to
//! send again only what taskgate never recorded.

use std::collections::HashSet;

use rusqlite::params;

use super::{Store, StoreError};

impl Store {
    /// The ids among `ids` that are recorded (decided or not).
    pub async fn recorded_deliveries(
        &self,
        ids: Vec<String>,
    ) -> Result<HashSet<String>, StoreError> {
        self.read(move |db| {
            let mut found = HashSet::new();
            for id in ids {
                let recorded = db.query_opt(
                    "SELECT 1 FROM deliveries WHERE delivery_id = ?1",
                    params![id],
                    |_| Ok(()),
                )?;
                if recorded.is_some() {
                    found.insert(id);
                }
            }
            Ok(found)
        })
        .await
    }
}
