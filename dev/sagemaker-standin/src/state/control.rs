//! The control API's records: the faults armed for the next InvokeEndpointAsync calls, every
//! call received, the step duration it set, and how an unknown pipeline execution is answered.

use std::collections::VecDeque;

/// A fault the control API arms for the next InvokeEndpointAsync calls, by its name.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantArray,
)]
pub enum Fault {
    /// Queued and run as normal, but answered 500 InternalFailure: the caller cannot tell
    /// whether SageMaker took the request.
    #[strum(serialize = "accept-then-500")]
    AcceptThen500,
    /// Queued and run as normal, then no answer for `--hang-millis`, then 500 InternalFailure:
    /// a client with a shorter timeout sees a timeout.
    #[strum(serialize = "accept-then-hang")]
    AcceptThenHang,
    /// Not queued: 400 ValidationError, as SageMaker answers for an unknown endpoint.
    #[strum(serialize = "refuse-400")]
    Refuse400,
    /// Queued and run, the output or failure written to S3, but no notification delivered: a
    /// lost SNS delivery.
    #[strum(serialize = "accept-silently")]
    AcceptSilently,
}

impl Fault {
    pub const ALL: &'static [Fault] = <Self as strum::VariantArray>::VARIANTS;

    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn parse(name: &str) -> Option<Fault> {
        name.parse().ok()
    }
}

/// One InvokeEndpointAsync call as received, for `GET /_standin/invocations`.
#[derive(serde::Serialize)]
pub struct Invocation {
    pub endpoint: String,
    pub inference_id: Option<String>,
    pub input_location: Option<String>,
    pub output_location: Option<String>,
    pub failure_location: Option<String>,
    /// ContentType and Accept as received (their `X-Amzn-SageMaker-` headers).
    pub content_type: Option<String>,
    pub accept: Option<String>,
    /// The length of an inline input (the request's Body); null for an input in S3.
    pub inline_bytes: Option<usize>,
    pub fault: Option<&'static str>,
    /// Whether the caller has been sent its answer yet (an `accept-then-hang` call is not, until
    /// `--hang-millis` passed): what a test counts instead of timing the caller.
    pub answered: bool,
    /// Which call this is, to find it again once answered.
    #[serde(skip)]
    pub call: u64,
}

#[derive(Default)]
pub struct Control {
    pub faults: VecDeque<Fault>,
    pub invocations: Vec<Invocation>,
    /// Overrides `--step-millis` for steps that start from now on.
    pub step_millis: Option<u64>,
    /// An unknown pipeline execution answered as moto does (ValidationException "Could not
    /// find ..."), not as SageMaker's ResourceNotFound.
    pub missing_execution_as_validation: bool,
    /// This many ListPipelineExecutionSteps calls from now on are throttled.
    pub list_steps_throttled: usize,
    /// Calls received so far, numbering the invocations.
    pub calls: u64,
}

impl Control {
    /// Records a call; its number marks it answered later.
    pub fn record(&mut self, mut invocation: Invocation) -> u64 {
        self.calls += 1;
        invocation.call = self.calls;
        self.invocations.push(invocation);
        self.calls
    }

    pub fn mark_answered(&mut self, call: u64) {
        if let Some(i) = self.invocations.iter_mut().rev().find(|i| i.call == call) {
            i.answered = true;
        }
    }
}
