//! Line plots as SVG text, for the figures of `docs/scale.md`: named
//! series over a shared x axis, linear or logarithmic axes, a legend.
//!
//! Must produce the same bytes for the same data (the figures are
//! committed and regenerated).

use std::fmt::Write;

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

/// One line of a plot.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A plot.
#[derive(Clone, Debug)]
pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    pub series: Vec<Series>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 10] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

fn transform(scale: Scale, value: f64) -> f64 {
    match scale {
        Scale::Linear => value,
        Scale::Log => value.max(1e-9).log10(),
    }
}

/// The range of `values` under `scale`, never empty.
fn range(scale: Scale, values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (low, high) = values.map(|value| transform(scale, value)).fold((f64::MAX, f64::MIN), |(low, high), value| (low.min(value), high.max(value)));
    let (low, high) = if low > high { (0.0, 1.0) } else { (low, high) };
    let low = if scale == Scale::Linear { low.min(0.0) } else { low.floor() };
    let high = if scale == Scale::Log { high.ceil() } else { high };
    if high - low < 1e-9 {
        (low, low + 1.0)
    } else {
        (low, high)
    }
}

/// A short label for a tick value.
fn label(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{}M", (value / 1e6 * 100.0).round() / 100.0)
    } else if magnitude >= 1e3 {
        format!("{}k", (value / 1e3 * 100.0).round() / 100.0)
    } else if magnitude >= 1.0 || magnitude == 0.0 {
        format!("{}", (value * 100.0).round() / 100.0)
    } else {
        format!("{value:.2}")
    }
}

fn ticks(scale: Scale, (low, high): (f64, f64)) -> Vec<f64> {
    match scale {
        Scale::Log => (low as i32..=high as i32).map(|power| 10f64.powi(power)).collect(),
        Scale::Linear => (0..=5).map(|step| low + (high - low) * step as f64 / 5.0).collect(),
    }
}

impl Plot {
    /// The plot as an SVG document.
    pub fn svg(&self) -> String {
        let points = || self.series.iter().flat_map(|series| series.points.iter().copied());
        let x_range = range(self.x_scale, points().map(|(x, _)| x));
        let y_range = range(self.y_scale, points().map(|(_, y)| y));
        let plot_width = WIDTH - LEFT - RIGHT;
        let plot_height = HEIGHT - TOP - BOTTOM;
        let x_at = |x: f64| LEFT + (transform(self.x_scale, x) - x_range.0) / (x_range.1 - x_range.0) * plot_width;
        let y_at = |y: f64| TOP + plot_height - (transform(self.y_scale, y) - y_range.0) / (y_range.1 - y_range.0) * plot_height;
        let mut svg = String::new();
        let _ = writeln!(svg, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11">"#);
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(svg, r#"<text x="{}" y="20" text-anchor="middle" font-size="13">{}</text>"#, LEFT + plot_width / 2.0, escape(&self.title));
        let _ = writeln!(svg, r#"<rect x="{LEFT}" y="{TOP}" width="{plot_width}" height="{plot_height}" fill="none" stroke="black"/>"#);
        for tick in ticks(self.x_scale, x_range) {
            let x = x_at(tick);
            let _ = writeln!(svg, r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##, TOP, TOP + plot_height, TOP + plot_height + 15.0, label(tick));
        }
        for tick in ticks(self.y_scale, y_range) {
            let y = y_at(tick);
            let _ = writeln!(svg, r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##, LEFT + plot_width, LEFT - 5.0, y + 4.0, label(tick));
        }
        let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, LEFT + plot_width / 2.0, HEIGHT - 12.0, escape(&self.x_label));
        let _ = writeln!(svg, r#"<text x="15" y="{}" text-anchor="middle" transform="rotate(-90 15 {})">{}</text>"#, TOP + plot_height / 2.0, TOP + plot_height / 2.0, escape(&self.y_label));
        for (index, series) in self.series.iter().enumerate() {
            let colour = COLOURS[index % COLOURS.len()];
            let path: Vec<String> = series.points.iter().map(|(x, y)| format!("{:.1},{:.1}", x_at(*x), y_at(*y))).collect();
            let _ = writeln!(svg, r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#, path.join(" "));
            for (x, y) in &series.points {
                let _ = writeln!(svg, r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}"/>"#, x_at(*x), y_at(*y));
            }
            let legend_y = TOP + 10.0 + index as f64 * 16.0;
            let _ = writeln!(svg, r#"<line x1="{}" y1="{legend_y}" x2="{}" y2="{legend_y}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#, WIDTH - RIGHT + 10.0, WIDTH - RIGHT + 30.0, WIDTH - RIGHT + 35.0, legend_y + 4.0, escape(&series.name));
        }
        svg.push_str("</svg>\n");
        svg
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_has_its_series_and_labels_and_is_the_same_every_time() {
        let plot = Plot {
            title: "chain <revoke>".into(),
            x_label: "length".into(),
            y_label: "instructions".into(),
            x_scale: Scale::Log,
            y_scale: Scale::Log,
            series: vec![Series { name: "local".into(), points: vec![(1.0, 4000.0), (1000.0, 900_000.0)] }],
        };
        let svg = plot.svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("chain &lt;revoke&gt;") && svg.contains(">local<") && svg.contains("<polyline"));
        assert_eq!(svg, plot.svg());
        assert_eq!(label(1_500_000.0), "1.5M");
        assert_eq!(label(2500.0), "2.5k");
    }
}
