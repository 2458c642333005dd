//! Handler CPU per notification, without I/O: parsing SageMaker's message, deciding what to
//! store, and building (and applying, in memory) the conditional write. `make test` runs it once
//! in test mode so it cannot rot; `cargo bench -p shared` measures it.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::Value;

use domain::notification::{parse_notification, Notification};
use fakes::{MemoryJobs, MemoryObjects};
use usecases::outcome::record_notification;
use usecases::JobSettings;

/// The SNS message of the sample success with `responseBody` (the output inline: no S3 read).
fn message() -> String {
    let event: Value = serde_json::from_str(include_str!(
        "../../../events/sns-success-response-body.json"
    ))
    .expect("sample event parses");
    event["Records"][0]["Sns"]["Message"]
        .as_str()
        .expect("an SNS message")
        .to_owned()
}

fn benches(c: &mut Criterion) {
    let message = message();
    // A deployment's defaults: the sample's small output is stored inline under them.
    let settings = JobSettings::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");

    c.bench_function("parse a notification", |b| {
        b.iter(|| parse_notification(std::hint::black_box(&message)).expect("parses"))
    });

    c.bench_function(
        "parse, decide and write one notification (in memory)",
        |b| {
            b.iter_batched(
                || {
                    let jobs = MemoryJobs::default();
                    jobs.insert_pending("demo-response-body-0002", "2026-11-20T10:14:00.000Z");
                    jobs
                },
                |jobs| {
                    let Notification::Outcome(outcome) =
                        parse_notification(std::hint::black_box(&message)).expect("parses")
                    else {
                        unreachable!("the sample is an outcome")
                    };
                    runtime
                        .block_on(record_notification(
                            &jobs,
                            &MemoryObjects::default(),
                            settings,
                            outcome,
                            chrono::Utc::now(),
                        ))
                        .expect("recorded")
                },
                BatchSize::SmallInput,
            )
        },
    );
}

criterion_group!(notification, benches);
criterion_main!(notification);
