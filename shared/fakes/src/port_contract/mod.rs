//! One behaviour per port, each a function run against the in-memory fakes (the unit tests
//! below) and against the real adapters on the local AWS stack (`shared/tests/contract_on_moto.rs`),
//! so a fake cannot drift from what DynamoDB, S3, SQS and SageMaker do: conditions, TTL as
//! absence, stored states.
//!
//! Each suite module lists its behaviours once in a macro (`job_store_contract!` and the
//! others) that declares one `#[tokio::test]` per behaviour, each on a fresh port from the
//! expression it is given. A behaviour uses ids no other test uses; a broken expectation panics
//! with what differed.

use chrono::{DateTime, Utc};

use domain::item::Applied;

fn now() -> DateTime<Utc> {
    // Real time: DynamoDB's own clock plays no part, but items must not be expired for real.
    Utc::now()
}

fn written(applied: Applied, what: &str) {
    assert!(
        matches!(applied, Applied::Written { .. }),
        "{what}: expected the write to happen, got {applied:?}"
    );
}

fn refused(applied: &Applied, what: &str) {
    assert!(
        matches!(applied, Applied::Refused(_)),
        "{what}: expected the guard to refuse, got {applied:?}"
    );
}

/// Declares one `#[tokio::test]` per behaviour of `$suite`, each on the port `$make.await` gives.
#[doc(hidden)]
#[macro_export]
macro_rules! __port_contract_tests {
    ($suite:ident, $make:expr, [$($behaviour:ident),* $(,)?]) => {
        $(
            #[tokio::test]
            async fn $behaviour() {
                let port = $make.await;
                $crate::port_contract::$suite::$behaviour(&port).await;
            }
        )*
    };
}

pub mod async_invoker;
pub mod completion_queue;
pub mod event_log;
pub mod job_store;
pub mod lineage_graph;
pub mod object_store;
pub mod pipeline_control;
pub mod quota_store;
pub mod run_store;
pub mod subscription_store;

impl lineage_graph::Registrar for crate::MemoryLineage {
    type Lineage = Self;

    fn lineage(&self) -> &Self {
        self
    }

    async fn register(&self, input_data_uri: &str) -> lineage_graph::Registered {
        let execution_arn = format!(
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/contract-pipeline/execution/{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        lineage_graph::Registered {
            model_package_arn: self.register_model(&execution_arn, input_data_uri),
            execution_arn,
            input_data_uri: input_data_uri.to_owned(),
        }
    }
}

impl completion_queue::Inbox for crate::MemoryQueue {
    async fn received(&self) -> Vec<serde_json::Value> {
        self.sent()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect()
    }
}

#[cfg(test)]
mod on_the_fakes {
    mod job_store {
        crate::job_store_contract!(async { crate::MemoryJobs::default() });
    }

    mod run_store {
        crate::run_store_contract!(async { crate::MemoryRuns::default() });
    }

    mod event_log {
        crate::event_log_contract!(async { crate::MemoryEventLog::default() });
    }

    mod subscription_store {
        crate::subscription_store_contract!(async { crate::MemorySubscriptions::default() });
    }

    mod quota_store {
        crate::quota_store_contract!(async { crate::MemoryJobs::default() });
    }

    mod object_store {
        crate::object_store_contract!(async {
            crate::port_contract::object_store::Objects {
                objects: crate::MemoryObjects::default(),
                bucket: "bucket".to_owned(),
            }
        });
    }

    mod async_invoker {
        crate::async_invoker_contract!(async {
            crate::port_contract::async_invoker::Endpoint {
                invoker: crate::FakeInvoker::new("ep"),
                endpoint_name: "ep".to_owned(),
                input_location: "s3://b/inputs/x.json".to_owned(),
            }
        });
    }

    mod pipeline_control {
        crate::pipeline_control_contract!(async { crate::FakePipeline::default() });
    }

    mod completion_queue {
        crate::completion_queue_contract!(async { crate::MemoryQueue::default() });
    }

    mod lineage_graph {
        crate::lineage_graph_contract!(async { crate::MemoryLineage::default().with_page_size(1) });
    }
}
