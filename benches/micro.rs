//! Micro-benchmarks of rsmirror's hot paths: `cargo bench --bench micro`.
//!
//! - parsing a 50,000-URL Resource List (md5 and sha-256 on every entry) with
//!   `rs::sitemap::open`: entries/s and MB/s;
//! - streaming digests with `rs::digest::Hasher` (md5 + sha256 in one pass): MB/s, over one
//!   large stream and over many 8 KiB resources (one hasher each, as in a baseline);
//! - catalog writes with `store::Catalog` and `store::catalog::write::version`, one
//!   transaction per batch (WAL, synchronous=FULL, as the mirror runs): rows/s.
//!
//! Prints a Markdown table (median of several runs after a warm-up). Without `--bench` (that
//! is, under `cargo test --benches` or `--all-targets`) it runs once on small inputs, as a check
//! that the benchmarks still work.

use rsmirror::rs::digest::Hasher;
use rsmirror::rs::sitemap::{self, ReadOptions};
use rsmirror::store::catalog::{write, NewVersion};
use rsmirror::store::Catalog;
use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// How hard to work: full under `cargo bench`, a quick check otherwise.
struct Scale {
    list_entries: usize,
    stream_bytes: usize,
    resources: usize,
    catalog_rows: usize,
    runs: usize,
}

const FULL: Scale = Scale {
    list_entries: 50_000,
    stream_bytes: 256 << 20,
    resources: 10_000,
    catalog_rows: 50_000,
    runs: 5,
};

const QUICK: Scale = Scale {
    list_entries: 2_000,
    stream_bytes: 4 << 20,
    resources: 500,
    catalog_rows: 2_000,
    runs: 1,
};

/// Deterministic pseudo-random bytes (xorshift64*), so the digests see no easy patterns.
fn pseudo_random(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        out.extend_from_slice(&seed.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A Resource List shaped like the harness's (benches/gen.py): loc, lastmod, md5, sha-256,
/// length and type on every entry.
fn resource_list(entries: usize) -> Vec<u8> {
    let mut s = String::with_capacity(entries * 330 + 512);
    s.push_str(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
         xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
         <rs:ln rel=\"up\" href=\"http://127.0.0.1:8080/rs/capabilitylist.xml\"/>\n\
         <rs:md capability=\"resourcelist\" at=\"2026-02-01T00:00:00Z\" completed=\"2026-02-01T00:00:00Z\"/>\n",
    );
    for i in 0..entries {
        let mut h = Hasher::new(false);
        h.update(&(i as u64).to_le_bytes());
        let d = h.finish();
        let (hh, mm, ss) = (i / 3600 % 24, i / 60 % 60, i % 60);
        let day = 1 + i / 86_400 % 28;
        let _ = writeln!(
            s,
            "<url><loc>http://127.0.0.1:8080/r/{:04}/{i:07}.bin</loc>\
             <lastmod>2026-01-{day:02}T{hh:02}:{mm:02}:{ss:02}Z</lastmod>\
             <rs:md hash=\"md5:{} sha-256:{}\" length=\"8192\" type=\"application/octet-stream\"/></url>",
            i / 1000,
            d.md5_hex,
            d.sha256_hex
        );
    }
    s.push_str("</urlset>\n");
    s.into_bytes()
}

/// Run `f` once to warm up, then `runs` times; the median duration.
fn measure(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn per_sec(count: f64, d: Duration) -> f64 {
    count / d.as_secs_f64()
}

/// Thousands separators for the table.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x);
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn row(name: &str, input: &str, d: Duration, throughput: &str) {
    println!(
        "| {name} | {input} | {:.2} ms | {throughput} |",
        d.as_secs_f64() * 1e3
    );
}

fn bench_parse(scale: &Scale) {
    let doc = resource_list(scale.list_entries);
    let url = url::Url::parse("http://127.0.0.1:8080/rs/resourcelist.xml").expect("a URL");
    let d = measure(scale.runs, || {
        let mut reader =
            sitemap::open(&doc[..], &url, ReadOptions::default()).expect("the list opens");
        let mut n = 0usize;
        while let Some(entry) = reader.next_entry().expect("a well-formed entry") {
            black_box(&entry);
            n += 1;
        }
        assert_eq!(n, scale.list_entries);
    });
    row(
        "parse a Resource List (`rs::sitemap::open`, md5 + sha-256 per entry)",
        &format!(
            "{} entries, {:.1} MB",
            grouped(scale.list_entries as f64),
            doc.len() as f64 / 1e6
        ),
        d,
        &format!(
            "{} entries/s, {:.0} MB/s",
            grouped(per_sec(scale.list_entries as f64, d)),
            per_sec(doc.len() as f64 / 1e6, d)
        ),
    );
}

fn bench_digest(scale: &Scale) {
    let chunk = pseudo_random(64 << 10, 7);
    let chunks = scale.stream_bytes / chunk.len();
    let d = measure(scale.runs, || {
        let mut h = Hasher::new(false);
        for _ in 0..chunks {
            h.update(&chunk);
        }
        black_box(h.finish());
    });
    let bytes = (chunks * chunk.len()) as f64;
    row(
        "`rs::digest::Hasher` md5 + sha256, one stream in 64 KiB writes",
        &format!("{:.0} MiB", bytes / 1_048_576.0),
        d,
        &format!("{:.0} MB/s", per_sec(bytes / 1e6, d)),
    );

    let body = pseudo_random(scale.resources * 8192, 11);
    let d = measure(scale.runs, || {
        for r in body.chunks(8192) {
            let mut h = Hasher::new(false);
            h.update(r);
            black_box(h.finish());
        }
    });
    row(
        "`rs::digest::Hasher` md5 + sha256, one hasher per 8 KiB resource (hex out)",
        &format!("{} × 8 KiB", grouped(scale.resources as f64)),
        d,
        &format!(
            "{:.0} MB/s, {} resources/s",
            per_sec(body.len() as f64 / 1e6, d),
            grouped(per_sec(scale.resources as f64, d))
        ),
    );
}

fn bench_catalog(scale: &Scale, batch: usize) {
    // One fsync per commit: one row per transaction gets fewer rows.
    let rows = if batch == 1 {
        scale.catalog_rows / 25
    } else {
        scale.catalog_rows
    };
    let d = measure(scale.runs, || {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut catalog = Catalog::open(dir.path()).expect("a new catalog");
        let run = catalog
            .begin_run("baseline", None, "cargo bench --bench micro")
            .expect("a run");
        let mut i = 0;
        while i < rows {
            catalog
                .in_transaction(|tx| {
                    for k in i..(i + batch).min(rows) {
                        let mut h = Hasher::new(false);
                        h.update(&(k as u64).to_le_bytes());
                        let c = h.finish();
                        let v = NewVersion {
                            uri: format!("http://127.0.0.1:8080/r/{:04}/{k:07}.bin", k / 1000),
                            collection: "http://127.0.0.1:8080/rs/capabilitylist.xml".into(),
                            change: rsmirror::model::Change::Created,
                            lastmod: jiff::Timestamp::from_second(1_767_225_600 + k as i64).ok(),
                            length_bytes: Some(8192),
                            declared_length_bytes: Some(8192),
                            declared_hash: Some(format!(
                                "md5:{} sha-256:{}",
                                c.md5_hex, c.sha256_hex
                            )),
                            md5_hex: Some(c.md5_hex),
                            sha256_hex: Some(c.sha256_hex),
                            media_type: Some("application/octet-stream".into()),
                            arrived_via: rsmirror::model::Via::Http,
                            etag: Some(format!("\"{k:x}-2000\"")),
                            ..Default::default()
                        };
                        write::version(tx, run, &v)?;
                    }
                    Ok(())
                })
                .expect("a transaction of version rows");
            i += batch;
        }
    });
    row(
        &format!("catalog writes (`store::catalog::write::version`), {batch} per transaction"),
        &format!("{} rows", grouped(rows as f64)),
        d,
        &format!("{} rows/s", grouped(per_sec(rows as f64, d))),
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let scale = if full { &FULL } else { &QUICK };
    println!(
        "rsmirror micro-benchmarks ({}; median of {} runs after a warm-up)\n",
        if full {
            "cargo bench"
        } else {
            "quick check: run `cargo bench --bench micro` to measure"
        },
        scale.runs
    );
    println!("| benchmark | input | median | throughput |");
    println!("|---|---|---:|---|");
    bench_parse(scale);
    bench_digest(scale);
    for batch in [1, 64, 512, 4096] {
        bench_catalog(scale, batch);
    }
}
