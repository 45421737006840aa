//! `bench`: one deployment's throughput, as one JSON line on standard output.

use super::driver::{Coordination, deployment, differences, plan_document};
use super::*;

pub(crate) async fn bench(args: &Args) -> Result<(), String> {
    let coordination = Coordination::parse(args.get("coordination")?)?;
    let workers = args.number("workers", None)?;
    let records = args.number("records", Some(20_000))?;
    let tweets = 100.min(records);
    let shape = Shape {
        workers,
        batches: records.div_ceil(tweets),
        tweets,
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = plan_document(coordination.spec(), dir.path())?;
    let got = deployment(coordination, &plan, &shape, false).await?;
    let total = shape.batches * shape.tweets;
    let rate = total as f64 / got.elapsed.as_secs_f64().max(1e-9);
    eprintln!(
        "{}: {total} tweets through {workers} splitters and {workers} counters in {:.2} s; {} of {} counts as expected",
        coordination.name(),
        got.elapsed.as_secs_f64(),
        expected(shape.batches, shape.tweets).len()
            - differences(&got.counts, &expected(shape.batches, shape.tweets))
                .min(expected(shape.batches, shape.tweets).len()),
        expected(shape.batches, shape.tweets).len(),
    );
    println!(
        "{{\"experiment\": \"wordcount\", \"coordination\": \"{}\", \"workers\": {workers}, \"records_per_s\": {:.1}}}",
        coordination.name(),
        rate
    );
    Ok(())
}
