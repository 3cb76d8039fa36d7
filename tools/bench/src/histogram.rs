//! A latency histogram as a PNG, drawn pixel by pixel (no font, no plotting
//! library): one panel per offered rate, stacked; the x axis is logarithmic
//! from 1 ms to 10 s with a grid line at every decade; bars are the share of
//! webhooks whose latency falls in each bin (blue: POST → processed), the
//! dark line over them the same for POST → outbound webhook received.

use std::time::Duration;

pub const WIDTH: u32 = 960;
pub const PANEL: u32 = 180;
pub const BINS: usize = 80;
const MIN_MS: f64 = 1.0;
const MAX_MS: f64 = 10_000.0;

/// The bin of a latency (clamped to the axis).
pub fn bin(latency: Duration) -> usize {
    let ms = (latency.as_secs_f64() * 1e3).max(MIN_MS);
    let x = (ms / MIN_MS).log10() / (MAX_MS / MIN_MS).log10();
    ((x * BINS as f64) as usize).min(BINS - 1)
}

/// Counts per bin.
pub fn counts(latencies: &[Duration]) -> Vec<u64> {
    let mut c = vec![0u64; BINS];
    for l in latencies {
        c[bin(*l)] += 1;
    }
    c
}

struct Canvas {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Canvas {
    fn new(width: u32, height: u32) -> Self {
        Self {
            width,
            height,
            rgb: vec![255; (width * height * 3) as usize],
        }
    }

    fn set(&mut self, x: u32, y: u32, color: [u8; 3]) {
        if x < self.width && y < self.height {
            let i = ((y * self.width + x) * 3) as usize;
            self.rgb[i..i + 3].copy_from_slice(&color);
        }
    }

    fn rect(&mut self, x0: u32, y0: u32, x1: u32, y1: u32, color: [u8; 3]) {
        for y in y0..y1 {
            for x in x0..x1 {
                self.set(x, y, color);
            }
        }
    }
}

/// A 3×5 pixel glyph (rows top to bottom, bits left to right) for the
/// few characters the labels use.
fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' => [0b111, 0b101, 0b101, 0b101, 0b111],
        '1' => [0b010, 0b110, 0b010, 0b010, 0b111],
        '2' => [0b111, 0b001, 0b111, 0b100, 0b111],
        '3' => [0b111, 0b001, 0b111, 0b001, 0b111],
        '4' => [0b101, 0b101, 0b111, 0b001, 0b001],
        '5' => [0b111, 0b100, 0b111, 0b001, 0b111],
        '6' => [0b111, 0b100, 0b111, 0b101, 0b111],
        '7' => [0b111, 0b001, 0b001, 0b001, 0b001],
        '8' => [0b111, 0b101, 0b111, 0b101, 0b111],
        '9' => [0b111, 0b101, 0b111, 0b001, 0b111],
        'm' => [0b000, 0b000, 0b111, 0b111, 0b101],
        's' => [0b000, 0b111, 0b110, 0b001, 0b111],
        '/' => [0b001, 0b001, 0b010, 0b100, 0b100],
        ',' => [0b000, 0b000, 0b000, 0b010, 0b100],
        _ => [0; 5],
    }
}

impl Canvas {
    /// Writes `text` at (x, y), each font pixel `scale` pixels wide.
    fn text(&mut self, x: u32, y: u32, text: &str, scale: u32, color: [u8; 3]) {
        for (i, c) in text.chars().enumerate() {
            let x0 = x + i as u32 * 4 * scale;
            for (row, bits) in glyph(c).iter().enumerate() {
                for col in 0..3u32 {
                    if bits & (0b100 >> col) != 0 {
                        let (px, py) = (x0 + col * scale, y + row as u32 * scale);
                        self.rect(px, py, px + scale, py + scale, color);
                    }
                }
            }
        }
    }
}

/// One panel: (processed latencies, delivered latencies).
pub type Panel<'a> = (&'a [Duration], &'a [Duration]);

/// The PNG bytes of the panels, each labelled (e.g. "50/s").
pub fn png(panels: &[Panel<'_>], labels: &[String]) -> anyhow::Result<Vec<u8>> {
    let height = PANEL * panels.len().max(1) as u32;
    let mut c = Canvas::new(WIDTH, height);
    let margin = 20u32;
    let plot_w = WIDTH - 2 * margin;
    let bar_w = plot_w / BINS as u32;
    for (p, (processed, delivered)) in panels.iter().enumerate() {
        let top = p as u32 * PANEL + 10;
        let bottom = (p as u32 + 1) * PANEL - 18;
        let h = bottom - top;
        // frame and decade grid
        c.rect(margin, bottom, margin + plot_w, bottom + 1, [0, 0, 0]);
        for (decade, tick) in ["1ms", "10ms", "100ms", "1s", "10s"].iter().enumerate() {
            let x = margin + decade as u32 * plot_w / 4;
            c.rect(x, top, x + 1, bottom, [200, 200, 200]);
            let width = tick.len() as u32 * 8;
            c.text(
                x.saturating_sub(width / 2).min(WIDTH - width),
                bottom + 4,
                tick,
                2,
                [60, 60, 60],
            );
        }
        if let Some(label) = labels.get(p) {
            c.text(
                WIDTH - margin - label.len() as u32 * 12,
                top + 2,
                label,
                3,
                [0, 0, 0],
            );
        }
        let a = counts(processed);
        let b = counts(delivered);
        let share = |v: u64, n: usize| v as f64 / n.max(1) as f64;
        let max = a
            .iter()
            .map(|v| share(*v, processed.len()))
            .chain(b.iter().map(|v| share(*v, delivered.len())))
            .fold(0.0_f64, f64::max)
            .max(1e-9);
        for i in 0..BINS {
            let x = margin + i as u32 * bar_w;
            let ha = (share(a[i], processed.len()) / max * f64::from(h)) as u32;
            c.rect(x + 1, bottom - ha, x + bar_w, bottom, [70, 130, 200]);
            let hb = (share(b[i], delivered.len()) / max * f64::from(h)) as u32;
            if hb > 0 {
                c.rect(x, bottom - hb, x + bar_w, bottom - hb + 2, [20, 20, 20]);
            }
        }
        // panel separator
        c.rect(
            0,
            (p as u32 + 1) * PANEL - 1,
            WIDTH,
            (p as u32 + 1) * PANEL,
            [120, 120, 120],
        );
    }
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, WIDTH, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&c.rgb)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_logarithmic_from_one_millisecond_to_ten_seconds() {
        assert_eq!(bin(Duration::from_micros(10)), 0);
        assert_eq!(bin(Duration::from_millis(1)), 0);
        assert_eq!(bin(Duration::from_millis(10)), BINS / 4);
        assert_eq!(bin(Duration::from_millis(100)), BINS / 2);
        assert_eq!(bin(Duration::from_secs(1)), 3 * BINS / 4);
        assert_eq!(bin(Duration::from_secs(60)), BINS - 1);
    }

    #[test]
    fn labels_draw_their_glyphs_and_unknown_characters_draw_nothing() {
        let mut c = Canvas::new(40, 10);
        c.text(0, 0, "1", 1, [0, 0, 0]);
        let dark = c.rgb.chunks(3).filter(|p| p[0] == 0).count();
        assert_eq!(dark, 8, "the glyph of 1 has eight pixels");
        let mut blank = Canvas::new(40, 10);
        blank.text(0, 0, "?", 1, [0, 0, 0]);
        assert!(blank.rgb.iter().all(|v| *v == 255));
    }

    #[test]
    fn a_png_is_written_with_one_panel_per_rate() {
        let a = vec![Duration::from_millis(5), Duration::from_millis(120)];
        let bytes = png(&[(&a, &a), (&a, &[])], &["50/s".into(), "1,000/s".into()]).expect("png");
        assert_eq!(&bytes[1..4], b"PNG");
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let reader = decoder.read_info().expect("header");
        assert_eq!(reader.info().width, WIDTH);
        assert_eq!(reader.info().height, 2 * PANEL);
    }
}
