//! The async endpoints: an accepted request answers where its outcome will be written, whether
//! its input is in S3 or inline.

use domain::s3_location::S3Location;
use ports::{AsyncInvoker, InvokeInput, InvokeRequest};

/// An invoker, an endpoint it serves, and an input in S3 it may name.
pub struct Endpoint<I> {
    pub invoker: I,
    pub endpoint_name: String,
    pub input_location: String,
}

fn request<I>(e: &Endpoint<I>) -> InvokeRequest {
    InvokeRequest {
        endpoint_name: e.endpoint_name.clone(),
        inference_id: uuid::Uuid::new_v4().to_string().into(),
        input: InvokeInput::S3(e.input_location.clone()),
        content_type: "application/json".into(),
        accept: Some("application/json".into()),
        invocation_timeout_secs: 300,
        request_ttl_secs: 600,
    }
}

fn inline<I>(e: &Endpoint<I>, len: usize) -> InvokeRequest {
    InvokeRequest {
        input: InvokeInput::Inline(vec![b' '; len]),
        content_type: "text/plain".into(),
        accept: None,
        ..request(e)
    }
}

pub async fn an_input_of_128000_bytes_is_taken_inline<I: AsyncInvoker>(e: &Endpoint<I>) {
    let at = e.invoker.invoke(&inline(e, 128_000)).await.unwrap();
    assert!(at.output_location.is_some(), "{at:?}");
}

pub async fn an_inline_input_over_128000_bytes_is_refused_as_final<I: AsyncInvoker>(
    e: &Endpoint<I>,
) {
    let refused = e.invoker.invoke(&inline(e, 128_001)).await.unwrap_err();
    assert!(!refused.retryable && !refused.ambiguous, "{refused:?}");
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
                an_input_of_128000_bytes_is_taken_inline,
                an_inline_input_over_128000_bytes_is_refused_as_final,
                an_accepted_request_answers_both_locations_in_s3,
                each_request_gets_its_own_output_location,
            ]
        );
    };
}
