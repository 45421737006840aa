//! The paper's word count on the runtime: producers emit word batches with seals on `batch`, a
//! seal barrier sits in front of the order-sensitive counter `OW(word, batch)`, and the counts
//! committed per batch are identical across runs and schedules. The same counter without the
//! barrier (commit a batch when a seal for it arrives) commits different counts per schedule.
//!
//! Run with `cargo run --example wordcount`.

use std::collections::{BTreeMap, BTreeSet};

use blazes::runtime::{BarrierError, SealBarrier};

const TEXT: &[&str] = &[
    "the quick brown fox jumps over the lazy dog",
    "a seal says no more records for this batch",
    "the barrier waits for every producer to seal",
    "order matters to a count committed per batch",
];

enum Msg {
    Word {
        producer: u64,
        batch: u32,
        index: u64,
        word: String,
    },
    Seal {
        producer: u64,
        batch: u32,
        count: u64,
    },
}

/// Three producers (tweet splitters) each emit some words of every batch, then seal it.
fn messages() -> Vec<Msg> {
    let mut out = Vec::new();
    for producer in 0..3u64 {
        for (batch, line) in TEXT.iter().enumerate() {
            let words: Vec<&str> = line
                .split(' ')
                .enumerate()
                .filter(|(i, _)| *i as u64 % 3 == producer)
                .map(|(_, w)| w)
                .collect();
            for (index, w) in words.iter().enumerate() {
                out.push(Msg::Word {
                    producer,
                    batch: batch as u32,
                    index: index as u64,
                    word: w.to_string(),
                });
            }
            out.push(Msg::Seal {
                producer,
                batch: batch as u32,
                count: words.len() as u64,
            });
        }
    }
    out
}

/// A seeded shuffle standing in for the network's delivery order.
fn shuffled(seed: u64) -> Vec<Msg> {
    let mut msgs = messages();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..msgs.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        msgs.swap(i, (x % (i as u64 + 1)) as usize);
    }
    msgs
}

type Committed = BTreeMap<(u32, String), u64>;

fn with_barrier(seed: u64) -> Result<Committed, BarrierError> {
    let mut barrier: SealBarrier<u32, String> = SealBarrier::new(0..3, 1024);
    let mut db = Committed::new();
    for m in shuffled(seed) {
        let released = match m {
            Msg::Word {
                producer,
                batch,
                index,
                word,
            } => barrier.offer_record(producer, batch, index, word)?,
            Msg::Seal {
                producer,
                batch,
                count,
            } => barrier.offer_seal(producer, batch, count)?,
        };
        if let Some(release) = released {
            let mut counts = Committed::new();
            for w in release.records {
                *counts.entry((release.partition, w)).or_default() += 1;
            }
            // Commit once per batch; a later write for the same key would be ignored.
            for (k, v) in counts {
                db.entry(k).or_insert(v);
            }
        }
    }
    Ok(db)
}

fn without_barrier(seed: u64) -> Committed {
    let mut running = Committed::new();
    let mut db = Committed::new();
    for m in shuffled(seed) {
        match m {
            Msg::Word { batch, word, .. } => *running.entry((batch, word)).or_default() += 1,
            Msg::Seal { batch, .. } => {
                for (k, v) in running.range((batch, String::new())..(batch + 1, String::new())) {
                    db.entry(k.clone()).or_insert(*v);
                }
            }
        }
    }
    db
}

fn main() -> Result<(), BarrierError> {
    let seeds = 1..=8u64;
    let sealed: BTreeSet<Committed> = seeds.clone().map(with_barrier).collect::<Result<_, _>>()?;
    let unsealed: BTreeSet<Committed> = seeds.clone().map(without_barrier).collect();
    let the = |c: &Committed| c.get(&(0, "the".to_string())).copied().unwrap_or(0);
    println!("schedules run: {}", seeds.count());
    println!(
        "with seal barrier:    {} distinct committed result(s)",
        sealed.len()
    );
    for c in &sealed {
        println!(
            "  batch 0 'the' = {}, total words = {}",
            the(c),
            c.values().sum::<u64>()
        );
    }
    println!(
        "without seal barrier: {} distinct committed result(s)",
        unsealed.len()
    );
    for c in &unsealed {
        println!(
            "  batch 0 'the' = {}, total words = {}",
            the(c),
            c.values().sum::<u64>()
        );
    }
    assert_eq!(sealed.len(), 1, "the barrier makes the count deterministic");
    Ok(())
}
