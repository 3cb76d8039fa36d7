//! Log lines captured in memory: the writer a test's `tracing` subscriber
//! appends to (`.with_writer(move || logs.clone())`), read back as text or
//! as the JSON objects of the functions' line format.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// What a subscriber wrote, shared by its clones.
#[derive(Debug, Clone, Default)]
pub struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    /// Everything written so far (panics on bytes that are not UTF-8: a
    /// log line always is).
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        String::from_utf8(bytes).expect("log lines are UTF-8")
    }

    /// Each line as JSON (panics on a line that is not: the functions'
    /// format is one JSON object per line).
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    }
}
