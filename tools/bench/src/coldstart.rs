//! Cold start of each function against hello-world.

use crate::report::Figure;

pub const SECTION: &str = "Cold start and binary size";

pub async fn run(_dir: &std::path::Path, _runs: usize) -> anyhow::Result<(Vec<Figure>, String)> {
    anyhow::bail!("the cold start section is not written yet")
}
