//! Times each phase of `blazes check` on one spec: where the time goes on big inputs.
//!
//! `cargo run --release --example phases -- SPEC`

use std::time::Instant;

/// Peak resident memory so far, in MiB (Linux), or 0 where unknown.
fn peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<u64>()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
        / 1024
}

use blazes::analysis::{self, FailOn};
use blazes::check::{FileReport, Outcome};
use blazes::spec::{self, Limits};

/// Counts the bytes of the JSON document instead of keeping them, as `blazes check` writes
/// them out.
#[derive(Default)]
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: phases SPEC");
        std::process::exit(2);
    };
    let bytes = std::fs::read(&path).expect("readable spec");
    let limits = Limits::default();

    // The pipeline first, as `blazes check --format json` runs it (on one thread, without
    // provenance notes), so that each peak is its own; the whole tree and the baseline last.
    let (report, times, peaks) = spec::yaml::on_reader_stack(&limits, || {
        let t = Instant::now();
        let (spec, diags, text) = spec::parse_vec(bytes.clone(), &limits);
        let parse_s = t.elapsed().as_secs_f64();
        let parse_m = peak_mib();
        let spec = spec.expect("valid spec");
        assert!(diags.is_empty(), "spec has errors");

        let t = Instant::now();
        let (mut df, _) = blazes::graph::build(spec, "spec");
        let build_s = t.elapsed().as_secs_f64();
        let build_m = peak_mib();

        let t = Instant::now();
        let labels = analysis::propagate(&mut df);
        let propagate_s = t.elapsed().as_secs_f64();
        drop(labels);

        let t = Instant::now();
        let mut a = analysis::analyze_with(&mut df, FailOn::Run, false);
        let analyze_s = t.elapsed().as_secs_f64();
        let analyze_m = peak_mib();
        let diagnostics = std::mem::take(&mut a.diagnostics);
        let report = FileReport {
            path: path.clone(),
            text,
            outcome: Outcome::Analysed(Box::new(blazes::check::Analysed {
                dataflow: df,
                analysis: a,
                diagnostics,
                denied: Vec::new(),
                summaries: Vec::new(),
            })),
            files: Default::default(),
            input: blazes::spec::Input::Spec,
        };
        (
            report,
            [parse_s, build_s, propagate_s, analyze_s],
            [parse_m, build_m, analyze_m],
        )
    });
    let [parse_s, build_s, propagate_s, analyze_s] = times;
    let [parse_m, build_m, analyze_m] = peaks;

    let t = Instant::now();
    let mut json = Counted::default();
    blazes::report::json::write(std::slice::from_ref(&report), &mut json).expect("counted");
    let json_s = t.elapsed().as_secs_f64();
    let json_m = peak_mib();
    drop(report);

    let t = Instant::now();
    let text = std::str::from_utf8(&bytes).expect("UTF-8");
    let tree = spec::yaml::parse(text, &limits).expect("valid YAML");
    let tree_s = t.elapsed().as_secs_f64();
    drop(tree);

    let t = Instant::now();
    let baseline: serde_json::Value =
        serde_saphyr::from_slice_with_options(&bytes, spec::yaml::reader_options(&limits))
            .expect("baseline parses");
    let baseline_s = t.elapsed().as_secs_f64();
    let baseline_m = peak_mib();
    drop(baseline);

    println!("spec (streamed, validated)    {parse_s:8.3} s");
    println!("graph build                   {build_s:8.3} s");
    println!("propagate                     {propagate_s:8.3} s");
    println!("analyze (incl. propagate)     {analyze_s:8.3} s");
    println!("json ({} bytes)       {json_s:8.3} s", json.0);
    println!("spanned YAML tree, whole      {tree_s:8.3} s");
    println!("generic YAML value (baseline) {baseline_s:8.3} s");
    println!(
        "peak MiB: after spec {parse_m}, after build {build_m}, after analyze {analyze_m}, after json {json_m}, after tree and baseline {baseline_m}"
    );
}
