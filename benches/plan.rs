//! The planner on generated specs with many points of order and candidate seals, at growing
//! sizes, so its growth can be seen (exact search up to `plan::EXACT_LIMIT` candidates,
//! greedy above). Not a timed test: `cargo bench --bench plan`.
//!
//! The generated dataflow is `blazes::generator::ring(n)`: `n` replicated readers, each
//! protected only when both of its sealable sources seal. Candidates: `n` seals, `n` keyed
//! orders, `n` global orders (3n); the cheapest plan seals every source.
//!
//! The second group plans `blazes gen` specs of 1k and 10k components and prints how the
//! search split them into parts, which parts were exact, and the lower bound.

use blazes::check::{self, Outcome};
use blazes::generator::{GenOptions, generate, ring};
use blazes::plan;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    for n in [2usize, 4, 6, 8, 16, 32, 64, 128] {
        let text = ring(n);
        let report = check::check_bytes("ring.yaml", text.as_bytes(), &Default::default());
        let Outcome::Analysed(a) = report.outcome else {
            panic!("the generated spec is valid");
        };
        let options = plan::Options::default();
        let p = plan::plan(&a.dataflow, &options);
        assert_eq!(p.status, plan::Status::Repaired);
        eprintln!(
            "n={n}: {} candidates, {}, {} analyses, cost {}, {} mechanisms",
            p.search.candidates,
            p.search.describe(),
            p.search.evaluations,
            p.cost,
            p.mechanisms.len()
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &a.dataflow, |b, df| {
            b.iter(|| plan::plan(df, &options))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("plan-gen");
    g.sample_size(10);
    for n in [1_000usize, 10_000] {
        let mut o = GenOptions::default();
        o.components = n;
        let text = generate(&o);
        let report = check::check_bytes("gen.yaml", text.as_bytes(), &Default::default());
        let Outcome::Analysed(a) = report.outcome else {
            panic!("the generated spec is valid");
        };
        let options = plan::Options::default();
        let p = plan::plan(&a.dataflow, &options);
        assert_eq!(p.status, plan::Status::Repaired);
        let exact = p
            .search
            .parts
            .iter()
            .filter(|part| part.mode == plan::SearchMode::Exact)
            .count();
        let largest = p.search.parts.iter().map(|part| part.candidates).max();
        eprintln!(
            "gen {n}: {} candidates in {} parts ({exact} exact, largest {largest:?}), {}, cost {}",
            p.search.candidates,
            p.search.parts.len(),
            p.search.describe(),
            p.cost,
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &a.dataflow, |b, df| {
            b.iter(|| plan::plan(df, &options))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
