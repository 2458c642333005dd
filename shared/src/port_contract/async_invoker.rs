//! The async endpoint: an accepted request answers where its outcome will be written.

use crate::domain::s3_location::S3Location;
use crate::ports::{AsyncInvoker, InvokeRequest};

/// An invoker, the endpoint it was configured with, and an input it may name.
pub struct Endpoint<I> {
    pub invoker: I,
    pub endpoint_name: String,
    pub input_location: String,
}

fn request<I>(e: &Endpoint<I>) -> InvokeRequest {
    InvokeRequest {
        inference_id: uuid::Uuid::new_v4().to_string(),
        input_location: e.input_location.clone(),
        invocation_timeout_secs: 300,
        request_ttl_secs: 600,
    }
}

pub async fn it_names_the_configured_endpoint<I: AsyncInvoker>(e: &Endpoint<I>) {
    assert_eq!(e.invoker.endpoint_name(), e.endpoint_name);
}

pub async fn an_accepted_request_answers_both_locations_in_s3<I: AsyncInvoker>(e: &Endpoint<I>) {
    let at = e.invoker.invoke(&request(e)).await.unwrap();
    for location in [&at.output_location, &at.failure_location] {
        let location = location.as_deref().expect("both locations are answered");
        location
            .parse::<S3Location>()
            .unwrap_or_else(|err| panic!("{err}"));
    }
    assert_ne!(at.output_location, at.failure_location);
}

pub async fn each_request_gets_its_own_output_location<I: AsyncInvoker>(e: &Endpoint<I>) {
    let first = e.invoker.invoke(&request(e)).await.unwrap();
    let second = e.invoker.invoke(&request(e)).await.unwrap();
    assert_ne!(first.output_location, second.output_location);
}

/// One `#[tokio::test]` per async-endpoint behaviour, on the [`async_invoker::Endpoint`] `$make.await` gives.
#[macro_export]
macro_rules! async_invoker_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            async_invoker,
            $make,
            [
                it_names_the_configured_endpoint,
                an_accepted_request_answers_both_locations_in_s3,
                each_request_gets_its_own_output_location,
            ]
        );
    };
}
