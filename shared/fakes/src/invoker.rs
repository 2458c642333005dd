//! A SageMaker async endpoint that answers at once: the locations it would write, or the
//! fault a test armed.

use std::collections::VecDeque;
use std::sync::Mutex;

use domain::job::Locations;
use ports::*;

/// How the fake endpoint fails the next invoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvokeFault {
    /// A 500 after the request may have been queued.
    Ambiguous,
    /// A 400: the endpoint does not exist.
    Refused,
}

pub struct FakeInvoker {
    /// The endpoints that exist; any other is refused as SageMaker refuses it.
    endpoints: Vec<String>,
    faults: Mutex<VecDeque<InvokeFault>>,
    calls: Mutex<Vec<InvokeRequest>>,
    /// What DescribeEndpoint would say of the instances (one, unless set).
    instances: Mutex<Option<u32>>,
}

impl FakeInvoker {
    pub fn new(endpoint_name: &str) -> Self {
        Self::serving(&[endpoint_name])
    }

    /// Async endpoints named `endpoint_names`.
    pub fn serving(endpoint_names: &[&str]) -> Self {
        Self {
            endpoints: endpoint_names.iter().map(|e| (*e).to_owned()).collect(),
            faults: Mutex::default(),
            calls: Mutex::default(),
            instances: Mutex::new(Some(1)),
        }
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<InvokeRequest> {
        self.calls.lock().unwrap().clone()
    }

    pub fn fail_next(&self, fault: InvokeFault) {
        self.faults.lock().unwrap().push_back(fault);
    }

    /// The endpoint now runs this many instances (0: scaled to zero).
    pub fn set_instances(&self, count: Option<u32>) {
        *self.instances.lock().unwrap() = count;
    }

    /// How many invokes were made, of any id.
    pub fn invocations(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// How many times this inference id was invoked.
    pub fn calls(&self, inference_id: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.inference_id == inference_id)
            .count()
    }
}

impl AsyncInvoker for FakeInvoker {
    async fn invoke(&self, request: &InvokeRequest) -> Result<Locations, AwsFailure> {
        tokio::task::yield_now().await;
        self.calls.lock().unwrap().push(request.clone());
        let refused = |message: String| AwsFailure {
            code: Some("ValidationError".into()),
            message,
            retryable: false,
            ambiguous: false,
        };
        if !self.endpoints.contains(&request.endpoint_name) {
            return Err(refused(format!(
                "Endpoint {} not found.",
                request.endpoint_name
            )));
        }
        if matches!(&request.input, InvokeInput::Inline(body) if body.len() > 128_000) {
            return Err(refused("Body is limited to 128000 bytes.".into()));
        }
        let fault = self.faults.lock().unwrap().pop_front();
        match fault {
            None => Ok(Locations {
                output_location: Some(format!("s3://b/outputs/{}.out", request.inference_id)),
                failure_location: Some(format!("s3://b/failures/{}.out", request.inference_id)),
            }),
            Some(InvokeFault::Ambiguous) => Err(AwsFailure {
                code: Some("InternalFailure".into()),
                message: "An internal error occurred".into(),
                retryable: true,
                ambiguous: true,
            }),
            Some(InvokeFault::Refused) => Err(refused(format!(
                "Endpoint {} not found.",
                request.endpoint_name
            ))),
        }
    }

    async fn current_instances(&self, _endpoint_name: &str) -> Result<Option<u32>, AwsFailure> {
        tokio::task::yield_now().await;
        Ok(*self.instances.lock().unwrap())
    }
}
