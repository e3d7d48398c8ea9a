//! The report's SVG charts, drawn with `plotters`' SVG backend: rates as
//! bars, rounds and seconds as histograms.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{percent, short};

/// One bar of a rate chart: a label, a rate in 0..=1, and a note drawn
/// above the bar (`5/6`).
pub(super) struct Bar {
    pub(super) label: String,
    pub(super) value: f64,
    pub(super) note: String,
}

const BAR_COLOR: RGBColor = RGBColor(0x2f, 0x81, 0xf7);
const HIST_COLOR: RGBColor = RGBColor(0x8c, 0x6b, 0xd1);
// plotters draws text at size / 1.24; 16 comes out near 13 px.
const AXIS_FONT: (&str, u32) = ("sans-serif", 16);

/// Width of a chart with `n` bars: room for each label, within reason.
fn chart_width(n: usize) -> u32 {
    (120 + 90 * n as u32).clamp(420, 1100)
}

/// A vertical bar chart of rates (0–100 %), one bar per label.
pub(super) fn rate_chart(bars: &[Bar]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (chart_width(bars.len()), 300)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        // Integer ranges are inclusive in plotters: 0..last gives one segment per bar.
        let last = bars.len().saturating_sub(1) as u32;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d((0..last).into_segmented(), 0f64..1.12)
            .map_err(|e| e.to_string())?;
        let labels: Vec<String> = bars.iter().map(|b| short(&b.label, 14)).collect();
        let x_label = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(bars.len() + 1)
            .x_label_formatter(&x_label)
            .y_labels(6)
            .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
            .y_desc("passed")
            .label_style(AXIS_FONT)
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                Histogram::vertical(&chart)
                    .style(BAR_COLOR.filled())
                    .margin(14)
                    .data(bars.iter().enumerate().map(|(i, b)| (i as u32, b.value))),
            )
            .map_err(|e| e.to_string())?;
        let note_style =
            TextStyle::from(AXIS_FONT.into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                Text::new(
                    format!("{} ({})", percent(b.value), b.note),
                    (SegmentValue::CenterOf(i as u32), b.value + 0.02),
                    note_style.clone(),
                )
            }))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// A histogram of counts per bin; `x_desc` names the binned quantity and
/// `unit` what is counted.
pub(super) fn histogram_chart(
    bins: &[(String, u64)],
    x_desc: &str,
    unit: &str,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (chart_width(bins.len()).max(520), 300))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let last = bins.len().saturating_sub(1) as u32;
        let top = bins.iter().map(|b| b.1).max().unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(52)
            .y_label_area_size(48)
            .build_cartesian_2d((0..last).into_segmented(), 0u64..top + top.div_ceil(8))
            .map_err(|e| e.to_string())?;
        let x_label = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => bins
                .get(*i as usize)
                .map(|b| b.0.clone())
                .unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(bins.len() + 1)
            .x_label_formatter(&x_label)
            .y_labels((top as usize + 1).min(8))
            .y_label_formatter(&|y| format!("{y}"))
            .x_desc(x_desc)
            .y_desc(unit)
            .label_style(AXIS_FONT)
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                Histogram::vertical(&chart)
                    .style(HIST_COLOR.filled())
                    .margin(3)
                    .data(bins.iter().enumerate().map(|(i, b)| (i as u32, b.1))),
            )
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Bins for a histogram of `values`: one per whole number for small
/// integer ranges (rounds), else about ten bins of a round width (1, 2, 5
/// times a power of ten), labelled by their lower bound.
pub(super) fn bins(values: &[f64], integers: bool) -> Vec<(String, u64)> {
    let max = values.iter().copied().fold(0.0f64, f64::max);
    if integers && max <= 30.0 {
        let top = max as usize;
        let mut counts = vec![0u64; top + 1];
        for v in values {
            counts[(*v as usize).min(top)] += 1;
        }
        // Leading empty bins below the smallest value say nothing.
        let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
        return counts
            .into_iter()
            .enumerate()
            .skip(first)
            .map(|(i, c)| (i.to_string(), c))
            .collect();
    }
    let width = nice_width(max / 10.0, integers);
    let count = ((max / width).floor() as usize) + 1;
    let mut counts = vec![0u64; count];
    for v in values {
        counts[((v / width).floor() as usize).min(count - 1)] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let lo = i as f64 * width;
            let label = if width >= 1.0 {
                format!("{lo:.0}–{:.0}", lo + width)
            } else {
                format!("{lo:.1}–{:.1}", lo + width)
            };
            (label, c)
        })
        .collect()
}

/// The smallest of 1, 2, 5 × 10^n at least `raw` (at least 1 for integers).
fn nice_width(raw: f64, integers: bool) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let width = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|w| *w >= raw)
        .unwrap_or(10.0 * power);
    if integers {
        width.max(1.0).ceil()
    } else {
        width
    }
}
