//! The figures of a run and the Markdown report (`BENCHMARKS.md`) they
//! become: one table per flow, each figure beside the baseline measured in
//! the same run, their ratio and the goal; then the extra sections (calls,
//! latency, cost) and the closing note (every goal, met or missed, and why).

use std::fmt::Write as _;

/// What a figure is measured against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// hookbox ÷ baseline at least this.
    RatioAtLeast(f64),
    /// hookbox ÷ baseline at most this.
    RatioAtMost(f64),
    /// The value itself at most this (latencies, calls).
    AtMost(f64),
    /// Reported only.
    None,
}

/// Whether a figure met its goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Met,
    Missed,
    Reported,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Missed => "**missed**",
            Verdict::Reported => "reported",
        }
    }
}

/// One measured figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// The table it belongs to (e.g. "Ingest").
    pub section: &'static str,
    /// What was measured (e.g. "8 clients").
    pub name: String,
    /// Unit of `hookbox` and the baseline.
    pub unit: &'static str,
    /// hookbox's value.
    pub hookbox: f64,
    /// The baseline's name and value, measured in the same run.
    pub baseline: Option<(String, f64)>,
    pub goal: Goal,
    /// Said in the closing note when the goal is missed: why, and what would
    /// close it.
    pub when_missed: String,
}

impl Figure {
    /// A figure with a baseline.
    pub fn ratio(
        section: &'static str,
        name: impl Into<String>,
        unit: &'static str,
        hookbox: f64,
        baseline: (impl Into<String>, f64),
        goal: Goal,
    ) -> Self {
        Self {
            section,
            name: name.into(),
            unit,
            hookbox,
            baseline: Some((baseline.0.into(), baseline.1)),
            goal,
            when_missed: String::new(),
        }
    }

    /// A figure without a baseline (latency, calls, sizes).
    pub fn value(
        section: &'static str,
        name: impl Into<String>,
        unit: &'static str,
        hookbox: f64,
        goal: Goal,
    ) -> Self {
        Self {
            section,
            name: name.into(),
            unit,
            hookbox,
            baseline: None,
            goal,
            when_missed: String::new(),
        }
    }

    /// Sets what the closing note says when the goal is missed.
    pub fn when_missed(mut self, why: impl Into<String>) -> Self {
        self.when_missed = why.into();
        self
    }

    /// hookbox ÷ baseline.
    pub fn ratio_value(&self) -> Option<f64> {
        self.baseline
            .as_ref()
            .filter(|(_, b)| *b > 0.0 && b.is_finite())
            .map(|(_, b)| self.hookbox / b)
    }

    pub fn verdict(&self) -> Verdict {
        let ok = match (self.goal, self.ratio_value()) {
            (Goal::None, _) => return Verdict::Reported,
            (Goal::RatioAtLeast(g), Some(r)) => r >= g,
            (Goal::RatioAtMost(g), Some(r)) => r <= g,
            (Goal::RatioAtLeast(_) | Goal::RatioAtMost(_), None) => false,
            (Goal::AtMost(g), _) => self.hookbox <= g,
        };
        if ok { Verdict::Met } else { Verdict::Missed }
    }

    /// A figure is broken when it is not a finite number (a run that
    /// measured nothing): `--quick` fails on that, never on a verdict.
    pub fn is_broken(&self) -> bool {
        !self.hookbox.is_finite()
            || self
                .baseline
                .as_ref()
                .is_some_and(|(_, b)| !b.is_finite() || *b <= 0.0)
    }
}

/// The goal as the report spells it.
pub fn goal_text(goal: Goal, unit: &str) -> String {
    match goal {
        Goal::RatioAtLeast(g) => format!("≥ {g}×"),
        Goal::RatioAtMost(g) => format!("≤ {g}×"),
        Goal::AtMost(g) => format!("≤ {} {unit}", number(g)),
        Goal::None => "—".into(),
    }
}

/// A number with as many digits as it deserves.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        // thousands separated by a thin space keep wide columns readable
        let s = format!("{:.0}", v);
        let (sign, digits) = s.split_at(usize::from(s.starts_with('-')));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The closing note's reason when hookbox's statements cost the server
/// more than the same statements under pgbench (`hookbox_us` against
/// `pgbench_us` of PostgreSQL CPU per operation), or `None` when they cost
/// about the same.
pub fn server_cost_reason(hookbox_us: f64, pgbench_us: f64) -> Option<String> {
    (hookbox_us > 1.3 * pgbench_us).then(|| {
        format!(
            "PostgreSQL spends {hookbox_us:.0} µs per operation under hookbox against \
             {pgbench_us:.0} µs under pgbench for the same statements, so the two run them \
             differently: most likely a plan. hookbox's pooled connections keep the generic \
             plan PostgreSQL switches a prepared statement to after five executions, made with \
             the table's size at that moment (pgbench reconnects each slice). Compare a run with \
             `--custom-plans` (plan_cache_mode = force_custom_plan on the benchmark databases); \
             a statement whose generic plan goes bad needs a plan that holds whatever the \
             table's size, as the claim functions of migrations 0005 and 0014 pin theirs \
             (shared/tests/generic_plans.rs checks the inbox's)"
        )
    })
}

/// A count: an integer with thousands separated.
pub fn count(v: f64) -> String {
    if v.abs() >= 1000.0 {
        number(v)
    } else {
        format!("{v:.0}")
    }
}

/// A Markdown table.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let separator: Vec<&str> = (0..header.len())
        .map(|i| if i == 0 { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "| {} |", separator.join(" | "));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}

/// The table of one section's figures.
pub fn figures_table(figures: &[&Figure]) -> String {
    let rows: Vec<Vec<String>> = figures
        .iter()
        .map(|f| {
            let (baseline, ratio) = match (&f.baseline, f.ratio_value()) {
                (Some((name, value)), Some(r)) => {
                    (format!("{} ({name})", number(*value)), format!("{r:.2}×"))
                }
                (Some((name, value)), None) => (format!("{} ({name})", number(*value)), "—".into()),
                (None, _) => ("—".into(), "—".into()),
            };
            vec![
                f.name.clone(),
                format!("{} {}", number(f.hookbox), f.unit),
                baseline,
                ratio,
                goal_text(f.goal, f.unit),
                f.verdict().as_str().into(),
            ]
        })
        .collect();
    table(
        &[
            "figure",
            "hookbox",
            "baseline (same run)",
            "ratio",
            "goal",
            "verdict",
        ],
        &rows,
    )
}

/// The whole report.
#[derive(Debug, Default)]
pub struct Report {
    /// Text before the figures (title, how to regenerate, the machine).
    pub preamble: String,
    pub figures: Vec<Figure>,
    /// Extra sections after a flow's table: (section, Markdown).
    pub notes: Vec<(&'static str, String)>,
    /// Sections after all the flows (latency, cost): (title, Markdown).
    pub appendices: Vec<(String, String)>,
}

impl Report {
    /// Sections in the order their first figure (or note) arrived.
    fn sections(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for s in self
            .figures
            .iter()
            .map(|f| f.section)
            .chain(self.notes.iter().map(|(s, _)| *s))
        {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The figures that failed their goal.
    pub fn missed(&self) -> Vec<&Figure> {
        self.figures
            .iter()
            .filter(|f| f.verdict() == Verdict::Missed)
            .collect()
    }

    /// The Markdown of `BENCHMARKS.md`.
    pub fn markdown(&self) -> String {
        let mut out = self.preamble.clone();
        for section in self.sections() {
            let _ = writeln!(out, "\n## {section}\n");
            let figures: Vec<&Figure> = self
                .figures
                .iter()
                .filter(|f| f.section == section)
                .collect();
            if !figures.is_empty() {
                out.push_str(&figures_table(&figures));
            }
            for (_, note) in self.notes.iter().filter(|(s, _)| *s == section) {
                let _ = write!(out, "\n{}\n", note.trim_end());
            }
        }
        for (title, body) in &self.appendices {
            let _ = write!(out, "\n## {title}\n\n{}\n", body.trim_end());
        }
        let _ = write!(out, "\n## {CLOSING}: every figure against its goal\n\n");
        let goals: Vec<&Figure> = self
            .figures
            .iter()
            .filter(|f| f.verdict() != Verdict::Reported)
            .collect();
        let met = goals.iter().filter(|f| f.verdict() == Verdict::Met).count();
        let _ = writeln!(out, "{met} of {} goals met in this run.\n", goals.len());
        for f in goals {
            let value = match f.ratio_value() {
                Some(r) => format!("{r:.2}×"),
                None => format!("{} {}", number(f.hookbox), f.unit),
            };
            let _ = write!(
                out,
                "- {} — {}: {value} (goal {}): {}",
                f.section,
                f.name,
                goal_text(f.goal, f.unit),
                f.verdict().as_str()
            );
            if f.verdict() == Verdict::Missed && !f.when_missed.is_empty() {
                let _ = write!(out, ". {}", f.when_missed);
            }
            out.push('\n');
        }
        out
    }
}

/// The title of the last section, which lists this run's goals.
const CLOSING: &str = "Closing note";

/// The sections of a `BENCHMARKS.md` after its preamble: (title, body),
/// the body with its leading and trailing blank lines.
fn sections_of(markdown: &str) -> (String, Vec<(String, String)>) {
    let mut parts = markdown.split("\n## ");
    let preamble = parts.next().unwrap_or_default().to_owned();
    let sections = parts
        .map(|part| {
            let (title, body) = part.split_once('\n').unwrap_or((part, ""));
            (title.to_owned(), format!("\n{body}"))
        })
        .collect();
    (preamble, sections)
}

/// A value of the preamble's machine table (`| date | … |`).
fn machine_value(preamble: &str, key: &str) -> Option<String> {
    preamble.lines().find_map(|line| {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        (cells.len() >= 3 && cells[1] == key).then(|| cells[2].to_owned())
    })
}

/// `new` with each section this run did not measure ("Not run: …") taken
/// from `old` where `old` has it measured (the scale runs and cold start
/// take long and need other builds), marked with the run it comes from.
pub fn keep_sections_not_run(new: &str, old: &str) -> String {
    let (old_preamble, old_sections) = sections_of(old);
    let from = format!(
        "_Not run this time: kept from the run of {} (commit {}); its goals are not in this \
         run's closing note._\n\n",
        machine_value(&old_preamble, "date").unwrap_or_else(|| "an earlier run".into()),
        machine_value(&old_preamble, "commit").unwrap_or_else(|| "unknown".into()),
    );
    let (preamble, mut sections) = sections_of(new);
    // a section this run left out altogether (`--only`) comes before the
    // closing note, as it was
    let closing = sections
        .iter()
        .position(|(t, _)| t.starts_with(CLOSING))
        .unwrap_or(sections.len());
    let missing: Vec<(String, String)> = old_sections
        .iter()
        .filter(|(t, b)| {
            !t.starts_with(CLOSING)
                && !b.trim_start().starts_with("Not run:")
                && !sections.iter().any(|(n, _)| n == t)
        })
        .map(|(t, _)| (t.clone(), "\nNot run: left out by `--only`.\n".to_owned()))
        .collect();
    sections.splice(closing..closing, missing);
    let mut out = preamble;
    for (title, body) in sections {
        let kept = body.trim_start().starts_with("Not run:").then(|| {
            old_sections
                .iter()
                .find(|(t, b)| *t == title && !b.trim_start().starts_with("Not run:"))
                .map(|(_, b)| b.clone())
        });
        let _ = write!(out, "\n## {title}");
        match kept.flatten() {
            Some(old_body) => {
                let _ = write!(out, "\n\n{from}{}", old_body.trim_start_matches('\n'));
                if !old_body.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(&body),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_not_run_are_kept_from_the_previous_file_and_marked() {
        let old = "# hookbox benchmarks\n\n| machine | |\n| --- | --- |\n| date | 2026-12-01 09:00 UTC |\n\
                   | commit | abc123 |\n\n## Ingest\n\nold ingest\n\n## Scale\n\n| scale | 1 |\n\n\
                   ## Cold start\n\nNot run: old\n\n## Closing note\n\nold close\n";
        let new = "# hookbox benchmarks\n\n| date | 2026-12-02 |\n\n## Ingest\n\nnew ingest\n\n\
                   ## Scale\n\nNot run: `--scale` runs it.\n\n## Cold start\n\nNot run: again\n\n\
                   ## Closing note\n\nnew close\n";
        let merged = keep_sections_not_run(new, old);
        assert!(merged.contains("## Ingest\n\nnew ingest"), "{merged}");
        assert!(
            merged.contains(
                "## Scale\n\n_Not run this time: kept from the run of 2026-12-01 09:00 UTC \
                 (commit abc123); its goals are not in this run's closing note._\n\n| scale | 1 |"
            ),
            "{merged}"
        );
        // nothing measured to keep: stays as this run wrote it
        assert!(
            merged.contains("## Cold start\n\nNot run: again"),
            "{merged}"
        );
        assert!(merged.contains("## Closing note\n\nnew close"), "{merged}");
        assert!(!merged.contains("old ingest") && !merged.contains("old close"));
        // a file without sections changes nothing
        assert_eq!(keep_sections_not_run(new, ""), new);
        // a section left out by `--only` is kept too, before the closing note
        let only = "# hookbox benchmarks\n\n## Signatures\n\nnew signatures\n\n\
                    ## Closing note: every figure\n\nnew close\n";
        let merged = keep_sections_not_run(only, old);
        let at = |what: &str| {
            merged
                .find(what)
                .unwrap_or_else(|| panic!("{what}: {merged}"))
        };
        assert!(at("## Signatures") < at("## Ingest\n\n_Not run this time"));
        assert!(at("## Ingest") < at("## Scale\n\n_Not run this time"));
        assert!(at("## Scale") < at("## Closing note: every figure"));
        assert!(
            !merged.contains("## Cold start"),
            "nothing measured to keep: {merged}"
        );
    }

    #[test]
    fn a_ratio_goal_is_met_at_the_bound_and_missed_below_it() {
        let at = Figure::ratio(
            "Ingest",
            "1 client",
            "/s",
            90.0,
            ("pgbench", 100.0),
            Goal::RatioAtLeast(0.9),
        );
        let below = Figure::ratio(
            "Ingest",
            "8",
            "/s",
            89.0,
            ("pgbench", 100.0),
            Goal::RatioAtLeast(0.9),
        );
        assert_eq!(at.verdict(), Verdict::Met);
        assert_eq!(below.verdict(), Verdict::Missed);
        assert_eq!(below.ratio_value(), Some(0.89));
    }

    #[test]
    fn value_goals_compare_the_value_and_reported_figures_have_no_verdict() {
        let p99 = Figure::value("Latency", "p99", "ms", 51.0, Goal::AtMost(50.0));
        assert_eq!(p99.verdict(), Verdict::Missed);
        let seen = Figure::value("Latency", "p50", "ms", 5.0, Goal::None);
        assert_eq!(seen.verdict(), Verdict::Reported);
        let most = Figure::ratio(
            "Scale",
            "10 M",
            "ms",
            1.1,
            ("empty", 1.0),
            Goal::RatioAtMost(1.2),
        );
        assert_eq!(most.verdict(), Verdict::Met);
    }

    #[test]
    fn a_figure_that_measured_nothing_is_broken_and_a_bad_one_is_not() {
        assert!(Figure::value("X", "n", "/s", f64::NAN, Goal::None).is_broken());
        assert!(Figure::ratio("X", "n", "/s", 1.0, ("b", 0.0), Goal::None).is_broken());
        let bad = Figure::ratio("X", "n", "/s", 1.0, ("b", 100.0), Goal::RatioAtLeast(0.9));
        assert!(!bad.is_broken());
        assert_eq!(bad.verdict(), Verdict::Missed);
    }

    #[test]
    fn the_server_cost_reason_is_given_only_when_the_server_works_harder_for_hookbox() {
        assert!(server_cost_reason(300.0, 280.0).is_none());
        let why = server_cost_reason(700.0, 280.0).expect("a reason");
        assert!(why.contains("700 µs") && why.contains("280 µs"));
    }

    #[test]
    fn numbers_keep_meaningful_digits() {
        assert_eq!(number(12345.6), "12,346");
        assert_eq!(number(999.4), "999");
        assert_eq!(number(12.34), "12.3");
        assert_eq!(number(1.234), "1.23");
        assert_eq!(number(0.01234), "0.012");
        assert_eq!(number(f64::NAN), "n/a");
        assert_eq!(number(-1234.0), "-1,234");
        assert_eq!(count(10.0), "10");
        assert_eq!(count(10_000.0), "10,000");
    }

    #[test]
    fn the_markdown_groups_figures_by_section_and_closes_with_every_goal() {
        let report = Report {
            preamble: "# Benchmarks\n".into(),
            figures: vec![
                Figure::ratio(
                    "Ingest",
                    "1 client",
                    "webhooks/s",
                    95.0,
                    ("pgbench", 100.0),
                    Goal::RatioAtLeast(0.9),
                ),
                Figure::ratio(
                    "Relay",
                    "5 ms sink",
                    "deliveries/s",
                    50.0,
                    ("bare", 100.0),
                    Goal::RatioAtLeast(0.9),
                )
                .when_missed("the sink's connections"),
                Figure::value("Relay", "instant sink", "deliveries/s", 10.0, Goal::None),
            ],
            notes: vec![("Ingest", "pgbench ran the same INSERT.".into())],
            appendices: vec![("Cost".into(), "a table".into())],
        };
        let md = report.markdown();
        let ingest = md.find("## Ingest").expect("ingest section");
        let relay = md.find("## Relay").expect("relay section");
        let cost = md.find("## Cost").expect("appendix");
        assert!(ingest < relay && relay < cost);
        assert!(
            md.contains("| 1 client | 95.0 webhooks/s | 100 (pgbench) | 0.95× | ≥ 0.9× | met |")
        );
        assert!(md.contains("pgbench ran the same INSERT."));
        assert!(md.contains("1 of 2 goals met"));
        assert!(md.contains(
            "- Relay — 5 ms sink: 0.50× (goal ≥ 0.9×): **missed**. the sink's connections"
        ));
        assert!(
            !md.contains("instant sink: "),
            "reported figures are not goals"
        );
        assert_eq!(report.missed().len(), 1);
    }

    #[test]
    fn tables_have_a_separator_row_per_column() {
        let t = table(
            &["a", "b", "c"],
            &[vec!["1".into(), "2".into(), "3".into()]],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "| a | b | c |");
        assert_eq!(lines[1], "| --- | ---: | ---: |");
        assert_eq!(lines[2], "| 1 | 2 | 3 |");
    }
}
