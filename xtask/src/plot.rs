//! Minimal SVG line plots (plotters). Logarithmic axes are drawn by plotting
//! log10 of the data and saying so in the axis label.

use crate::report::SuiteResult;
use plotters::prelude::*;
use std::path::Path;

/// One named line.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points `(x, y)`.
    pub points: Vec<(f64, f64)>,
    /// Draw markers instead of a line.
    pub markers: bool,
}

impl Series {
    /// A line series.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            markers: false,
        }
    }
    /// A marker series.
    #[allow(dead_code)]
    pub fn markers(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            markers: true,
        }
    }
}

/// Axis options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Axes<'a> {
    /// Title.
    pub title: &'a str,
    /// x label.
    pub x: &'a str,
    /// y label.
    pub y: &'a str,
    /// log10 x.
    pub log_x: bool,
    /// log10 y.
    pub log_y: bool,
}

impl<'a> Axes<'a> {
    /// Linear axes with a title and the two labels.
    pub fn new(title: &'a str, x: &'a str, y: &'a str) -> Self {
        Self {
            title,
            x,
            y,
            ..Self::default()
        }
    }

    /// The same axes with a log10 x axis.
    pub fn log_x(self) -> Self {
        Self {
            log_x: true,
            ..self
        }
    }

    /// The same axes with a log10 y axis.
    pub fn log_y(self) -> Self {
        Self {
            log_y: true,
            ..self
        }
    }
}

/// Writes an SVG plot of the series.
pub fn line_plot(path: &Path, axes: Axes<'_>, series: &[Series]) -> SuiteResult<()> {
    let tx = |v: f64| if axes.log_x { v.log10() } else { v };
    let ty = |v: f64| if axes.log_y { v.log10() } else { v };
    let data: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .map(|&(x, y)| (tx(x), ty(y)))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect()
        })
        .collect();
    let all: Vec<(f64, f64)> = data.iter().flatten().copied().collect();
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (x, y) in &all {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if all.is_empty() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let pad = 0.05 * (y1 - y0);
    let xl = if axes.log_x {
        format!("log10 {}", axes.x)
    } else {
        axes.x.to_string()
    };
    let yl = if axes.log_y {
        format!("log10 {}", axes.y)
    } else {
        axes.y.to_string()
    };
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(axes.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(xl)
        .y_desc(yl)
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (s, pts)) in series.iter().zip(&data).enumerate() {
        let color = Palette99::pick(i).to_rgba();
        if s.markers {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(|e| err(&e))?
                .label(s.label.clone())
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
        } else {
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// A scalar field on a regular grid, cells `values[iz * nx + ix]` (`None`:
/// empty cell, left white), coloured blue (low) to red (high) between
/// `range.0` and `range.1`, with the extent `(x0, x1, z0, z1)` in metres.
pub struct Field<'a> {
    /// Title.
    pub title: &'a str,
    /// Cells along x.
    pub nx: usize,
    /// Cells along z.
    pub nz: usize,
    /// Cell values, row-major from the lowest z.
    pub values: &'a [Option<f64>],
    /// Physical extent `(x0, x1, z0, z1)`.
    pub extent: (f64, f64, f64, f64),
    /// Colour range.
    pub range: (f64, f64),
    /// Label of the vertical axis.
    pub vertical: &'a str,
}

type XzChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A white drawing area with a titled x-z chart in metres over the given
/// ranges (shared by the cross-section plots).
fn xz_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    z: std::ops::Range<f64>,
    vertical: &str,
) -> Result<XzChart<'a, 'b>, Box<dyn std::error::Error + 'a>> {
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, z)?;
    chart
        .configure_mesh()
        .x_desc("x [m]")
        .y_desc(vertical)
        .draw()?;
    Ok(chart)
}

/// Writes an SVG heat map of a field.
pub fn heat_map(path: &Path, field: &Field<'_>) -> SuiteResult<()> {
    let (x0, x1, z0, z1) = field.extent;
    let root = SVGBackend::new(path, (640, 640)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let mut chart =
        xz_chart(&root, field.title, x0..x1, z0..z1, field.vertical).map_err(|e| err(&e))?;
    let (dx, dz) = ((x1 - x0) / field.nx as f64, (z1 - z0) / field.nz as f64);
    let (lo, hi) = field.range;
    let colour = |v: f64| {
        let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        RGBColor(
            (255.0 * t) as u8,
            (80.0 * (1.0 - (2.0 * t - 1.0).abs())) as u8,
            (255.0 * (1.0 - t)) as u8,
        )
    };
    let cells = (0..field.nz).flat_map(|iz| (0..field.nx).map(move |ix| (ix, iz)));
    chart
        .draw_series(cells.filter_map(|(ix, iz)| {
            let v = field.values.get(iz * field.nx + ix).copied().flatten()?;
            let (xa, za) = (x0 + ix as f64 * dx, z0 + iz as f64 * dz);
            Some(Rectangle::new(
                [(xa, za), (xa + dx, za + dz)],
                colour(v).filled(),
            ))
        }))
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// One contact of a force network seen from the side: the segment between
/// the two body centres projected on the x-z plane and its normal force.
#[derive(Debug, Clone, Copy)]
pub struct ForceSegment {
    /// `(x, z)` of body a's centre.
    pub from: (f64, f64),
    /// `(x, z)` of body b's centre.
    pub to: (f64, f64),
    /// Normal force \[N\] (≥ 0).
    pub force: f64,
}

/// Writes an SVG force network: each contact a line whose width and
/// darkness grow with its force, relative to `max_force` (shared between
/// the images that are to be compared).
pub fn force_network(
    path: &Path,
    title: &str,
    segments: &[ForceSegment],
    max_force: f64,
) -> SuiteResult<()> {
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let (mut x0, mut x1, mut z0, mut z1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for s in segments {
        for (x, z) in [s.from, s.to] {
            (x0, x1, z0, z1) = (x0.min(x), x1.max(x), z0.min(z), z1.max(z));
        }
    }
    if segments.is_empty() {
        (x0, x1, z0, z1) = (0.0, 1.0, 0.0, 1.0);
    }
    let pad = 0.05 * (x1 - x0).max(z1 - z0).max(1e-9);
    let root = SVGBackend::new(path, (720, 480)).into_drawing_area();
    let mut chart = xz_chart(
        &root,
        title,
        (x0 - pad)..(x1 + pad),
        (z0 - pad)..(z1 + pad),
        "z [m]",
    )
    .map_err(|e| err(&e))?;
    let scale = if max_force > 0.0 { max_force } else { 1.0 };
    chart
        .draw_series(segments.iter().filter(|s| s.force > 0.0).map(|s| {
            let t = (s.force / scale).clamp(0.0, 1.0);
            let shade = (200.0 * (1.0 - t)) as u8;
            let width = 1 + (7.0 * t).round() as u32;
            PathElement::new(
                vec![s.from, s.to],
                RGBColor(shade, shade, 255).stroke_width(width),
            )
        }))
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
