//! Percentiles, the open-loop schedule and the CPU time of processes.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The `p` quantile (0..=1) of sorted values, nearest rank; `None` when
/// there are none.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.saturating_sub(1).min(sorted.len() - 1)])
}

/// Milliseconds of a duration.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// p50, p99 and max in milliseconds of unsorted values (NaN when empty).
pub fn p50_p99_max(values: &mut [Duration]) -> (f64, f64, f64) {
    values.sort();
    let get = |p| percentile(values, p).map_or(f64::NAN, ms);
    (get(0.50), get(0.99), get(1.0))
}

/// When the `i`-th request of an open-loop run at `rate` per second is
/// due, from the start: on schedule whatever the previous answers did.
pub fn scheduled(i: u64, rate: f64) -> Duration {
    Duration::from_secs_f64(i as f64 / rate)
}

/// How many requests an open-loop run of `seconds` at `rate` sends.
pub fn schedule_len(rate: f64, seconds: f64) -> u64 {
    (rate * seconds).round() as u64
}

/// The benchmark cluster's postmaster: [`cpu_seconds`] counts its
/// processes only (other clusters on a shared machine are not ours).
static POSTMASTER: AtomicU32 = AtomicU32::new(0);

/// Counts PostgreSQL CPU for the cluster whose postmaster is `pid`.
pub fn set_postmaster(pid: u32) {
    POSTMASTER.store(pid, Ordering::Relaxed);
}

/// The parent of process `pid` (Linux /proc).
pub fn parent_of(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Fields of /proc/PID/stat after the command name: utime, stime, cutime,
/// cstime in seconds, and the parent pid.
fn stat_of(stat: &str) -> (f64, f64, u32) {
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    let ppid = f.get(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    // fields 14-17 of proc(5): utime, stime, cutime, cstime
    (ticks(11) + ticks(12), ticks(13) + ticks(14), ppid)
}

/// CPU seconds (user + system) used so far by this process and by the
/// benchmark cluster: its postmaster, its live backends, and the backends
/// that exited (the postmaster's reaped children), so a pgbench run's
/// connections count after they close. Without [`set_postmaster`], every
/// `postgres` process on the machine. Linux /proc; zeros elsewhere.
pub fn cpu_seconds() -> (f64, f64) {
    let own = std::fs::read_to_string("/proc/self/stat").map_or(0.0, |s| stat_of(&s).0);
    let postmaster = POSTMASTER.load(Ordering::Relaxed);
    let mut pg = 0.0;
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let (cpu, children, ppid) = stat_of(&stat);
            if postmaster == 0 {
                if std::fs::read_to_string(entry.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "postgres")
                {
                    pg += cpu;
                }
            } else if pid == postmaster {
                pg += cpu + children;
            } else if ppid == postmaster {
                pg += cpu;
            }
        }
    }
    (own, pg)
}

/// CPU used between two [`cpu_seconds`] samples, per operation, in µs:
/// (this process, PostgreSQL).
pub fn cpu_us_per(before: (f64, f64), after: (f64, f64), operations: u64) -> (f64, f64) {
    let n = operations.max(1) as f64;
    (
        (after.0 - before.0) * 1e6 / n,
        (after.1 - before.1) * 1e6 / n,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms_list(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|m| Duration::from_millis(*m)).collect()
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v = ms_list(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&v, 0.50), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&v, 0.99), Some(Duration::from_millis(99)));
        assert_eq!(percentile(&v, 1.0), Some(Duration::from_millis(100)));
        assert_eq!(percentile(&v, 0.0), Some(Duration::from_millis(1)));
        assert_eq!(percentile(&[], 0.5), None);
        let one = ms_list(&[7]);
        assert_eq!(percentile(&one, 0.99), Some(Duration::from_millis(7)));
    }

    #[test]
    fn p50_p99_max_sorts_first() {
        let mut v = ms_list(&[30, 10, 20, 40]);
        assert_eq!(p50_p99_max(&mut v), (20.0, 40.0, 40.0));
        let (a, _, _) = p50_p99_max(&mut []);
        assert!(a.is_nan());
    }

    #[test]
    fn the_open_loop_schedule_is_evenly_spaced_and_independent_of_answers() {
        assert_eq!(scheduled(0, 200.0), Duration::ZERO);
        assert_eq!(scheduled(1, 200.0), Duration::from_millis(5));
        assert_eq!(scheduled(200, 200.0), Duration::from_secs(1));
        assert_eq!(scheduled(3, 1000.0), Duration::from_millis(3));
        assert_eq!(schedule_len(50.0, 2.0), 100);
        assert_eq!(schedule_len(1000.0, 0.5), 500);
    }

    #[test]
    fn proc_stat_fields_are_read_after_the_command_name() {
        // pid (comm with spaces) state ppid ... utime stime cutime cstime
        let stat = "42 (post gres) S 7 1 1 0 -1 0 0 0 0 0 150 50 30 20 20 0 1 0 1 1 1";
        let (cpu, children, ppid) = stat_of(stat);
        assert!((cpu - 2.0).abs() < 1e-9, "{cpu}");
        assert!((children - 0.5).abs() < 1e-9, "{children}");
        assert_eq!(ppid, 7);
        assert_eq!(
            parent_of(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
    }

    #[test]
    fn cpu_per_operation_divides_the_difference() {
        let (own, pg) = cpu_us_per((1.0, 2.0), (1.5, 3.0), 1000);
        assert!((own - 500.0).abs() < 1e-9);
        assert!((pg - 1000.0).abs() < 1e-9);
        let (own, _) = cpu_us_per((0.0, 0.0), (1.0, 0.0), 0);
        assert!((own - 1e6).abs() < 1e-9, "no division by zero");
    }
}
