//! The analyzer's phases on generated specs of 1k, 10k and 100k components (`blazes gen`,
//! seed 1): reading the spec (YAML with spans, validation), building the IR, propagating labels
//! to the fixpoint, and the greedy planner. Each group also measures the parse-only baseline
//! (the same bytes into a generic value with the same YAML library and options), so the cost of
//! analysis beyond parsing can be read off as a ratio in the same run.
//!
//! `cargo bench --bench scale` (add `-- 100000` to run one size). End-to-end figures with
//! memory, up to 1M components: `scripts/bench-scale`.

use std::hint::black_box;

use blazes::analysis;
use blazes::generator::{GenOptions, generate};
use blazes::spec::{self, Limits};
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let limits = Limits::default();
    for n in [1_000usize, 10_000, 100_000] {
        let text = generate(&GenOptions::default().components(n).seed(1));
        let mut g = c.benchmark_group(format!("scale/{n}"));
        g.sampling_mode(SamplingMode::Flat);
        g.sample_size(10);
        g.bench_function(BenchmarkId::new("baseline-generic-value", n), |b| {
            b.iter(|| {
                let v: serde_json::Value = serde_saphyr::from_str_with_options(
                    black_box(&text),
                    spec::yaml::reader_options(&limits),
                )
                .unwrap();
                v
            })
        });
        g.bench_function(BenchmarkId::new("parse", n), |b| {
            b.iter(|| spec::parse(black_box(&text), &limits))
        });
        let (parsed, diags) = spec::parse(&text, &limits);
        assert!(diags.is_empty());
        let parsed = parsed.unwrap();
        g.bench_function(BenchmarkId::new("build", n), |b| {
            b.iter_batched(
                || parsed.clone(),
                |spec| blazes::graph::build(spec, "gen"),
                criterion::BatchSize::LargeInput,
            )
        });
        let (df, _) = blazes::graph::build(parsed, "gen");
        g.bench_function(BenchmarkId::new("propagate", n), |b| {
            b.iter_batched_ref(
                || df.clone(),
                analysis::propagate,
                criterion::BatchSize::LargeInput,
            )
        });
        // Greedy at every size (the exact search is for a handful of candidates).
        let options = blazes::plan::Options::default().exact_limit(0);
        g.bench_function(BenchmarkId::new("plan-greedy", n), |b| {
            b.iter(|| blazes::plan::plan(black_box(&df), &options))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
