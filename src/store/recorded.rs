//! Which delivery ids the inbox holds: the redelivery pass asks GitHub to
//! send again only what taskgate never recorded.

use std::collections::HashSet;

use super::{Store, StoreError};

impl Store {
    /// The ids among `ids` that are recorded (decided or not).
    pub async fn recorded_deliveries(
        &self,
        ids: Vec<String>,
    ) -> Result<HashSet<String>, StoreError> {
        self.read(move |conn| {
            let mut stmt =
                conn.prepare_cached("SELECT 1 FROM deliveries WHERE delivery_id = ?1")?;
            let mut found = HashSet::new();
            for id in ids {
                if stmt.exists([&id])? {
                    found.insert(id);
                }
            }
            Ok(found)
        })
        .await
    }
}
