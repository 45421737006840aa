//! The simulator (`blazes simulate`): the exhaustive word count with 2 instances per replicated
//! component, and schedules of a 100-component generated spec (not exhaustive: half
//! depth-first over the choice points, half seeded random): 10,000 once, timed and printed,
//! then 100 per iteration under criterion. Not a timed test:
//! `cargo bench --bench simulate`; results and their meaning are in `docs/benchmarks.md`.

use blazes::check::{self, Outcome};
use blazes::generator::{GenOptions, generate};
use blazes::simulate::{self, Options};
use criterion::{Criterion, criterion_group, criterion_main};

fn analysed(name: &str, text: &str) -> check::Analysed {
    let report = check::check_bytes(name, text.as_bytes(), &Default::default());
    match report.outcome {
        Outcome::Analysed(a) => *a,
        Outcome::Invalid(_) => panic!("{name} is valid"),
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulate");
    g.sample_size(10);

    let text = std::fs::read_to_string("specs/wordcount.yaml").unwrap();
    let wc = analysed("wordcount.yaml", &text);
    let o = Options::default().replicas(2);
    let sim = simulate::simulate(&wc.dataflow, &wc.analysis, &o);
    assert!(sim.exhaustive);
    eprintln!("wordcount: {} schedules, exhaustive", sim.schedules);
    g.bench_function("wordcount_exhaustive_2_replicas", |b| {
        b.iter(|| simulate::simulate(&wc.dataflow, &wc.analysis, &o))
    });

    let text = generate(&GenOptions::default().components(100).width(10).seed(1));
    let big = analysed("generated.yaml", &text);
    // Witnesses are shrunk by re-exploring; the benchmark measures the exploration itself.
    // One full run of 10,000 schedules, timed once; criterion then measures 100 schedules per
    // iteration (ten samples of 10,000 would take too long to repeat).
    let o = Options::default().schedules(10_000).shrink(false);
    let start = std::time::Instant::now();
    let sim = simulate::simulate(&big.dataflow, &big.analysis, &o);
    eprintln!(
        "generated: {} components, {} streams, {} schedules in {:.1?}, exhaustive {}, {} \
         inconclusive, {} sinks, {} observed worse than deterministic",
        big.dataflow.components.len(),
        big.dataflow.streams.len(),
        sim.schedules,
        start.elapsed(),
        sim.exhaustive,
        sim.inconclusive,
        sim.sinks.len(),
        sim.sinks
            .iter()
            .filter(|s| s.observed > simulate::Observed::Deterministic)
            .count()
    );
    let o = o.schedules(100);
    g.bench_function("generated_100_components_100_schedules", |b| {
        b.iter(|| simulate::simulate(&big.dataflow, &big.analysis, &o))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
