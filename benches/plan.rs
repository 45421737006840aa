//! The planner on generated specs with many points of order and candidate seals, at growing
//! sizes, so its growth can be seen (exact search up to `plan::EXACT_LIMIT` candidates,
//! greedy above). Not a timed test: `cargo bench --bench plan`.
//!
//! Shape of the generated dataflow with `n` components and `n` sources (a ring): component
//! `R{j}` is replicated, writes clicks from sources `s{j}` and `s{j+1}` (CW) and answers
//! reads `OR(id)`. Every source is sealable on `id` (compatible) and on `day` (not), so a
//! seal fixes nothing alone: a component is protected only when both of its sources seal.
//! Candidates: `n` seals, `n` keyed orders, `n` global orders (3n); the cheapest plan seals
//! every source.

use blazes::check::{self, Outcome};
use blazes::plan;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn ring(n: usize) -> String {
    let mut s = String::from("name: ring\nsources:\n  clients: {}\n");
    for j in 0..n {
        s.push_str(&format!("  s{j}: {{ sealable: [[id], [day]] }}\n"));
    }
    s.push_str("components:\n");
    for j in 0..n {
        s.push_str(&format!(
            "  R{j}:\n    replicated: true\n    paths:\n      - {{ from: click, to: response, label: CW }}\n      - {{ from: request, to: response, label: OR, gate: [id, campaign] }}\n"
        ));
    }
    s.push_str("streams:\n");
    for j in 0..n {
        s.push_str(&format!("  - {{ from: s{j}, to: R{j}.click }}\n"));
        s.push_str(&format!(
            "  - {{ from: s{}, to: R{j}.click }}\n",
            (j + 1) % n
        ));
        s.push_str(&format!("  - {{ from: clients, to: R{j}.request }}\n"));
    }
    s
}

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
            "n={n}: {} candidates, {} search, {} analyses, cost {}, {} mechanisms",
            p.search.candidates,
            p.search.mode.as_str(),
            p.search.evaluations,
            p.cost,
            p.mechanisms.len()
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &a.dataflow, |b, df| {
            b.iter(|| plan::plan(df, &options))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
