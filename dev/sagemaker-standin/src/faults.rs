//! The control API (`/_standin/...`): faults armed for the next InvokeEndpointAsync calls, the
//! record of every call, and the pipeline step duration.

use std::collections::VecDeque;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::AppState;

/// A fault the control API arms for the next InvokeEndpointAsync calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Queued and run as normal, but answered 500 InternalFailure: the caller cannot tell
    /// whether SageMaker took the request.
    AcceptThen500,
    /// Queued and run as normal, then no answer for `--hang-millis`, then 500 InternalFailure:
    /// a client with a shorter timeout sees a timeout.
    AcceptThenHang,
    /// Not queued: 400 ValidationError, as SageMaker answers for an unknown endpoint.
    Refuse400,
    /// Queued and run, the output or failure written to S3, but no notification delivered: a
    /// lost SNS delivery.
    AcceptSilently,
}

impl Fault {
    const ALL: [Fault; 4] = [
        Fault::AcceptThen500,
        Fault::AcceptThenHang,
        Fault::Refuse400,
        Fault::AcceptSilently,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::AcceptThen500 => "accept-then-500",
            Fault::AcceptThenHang => "accept-then-hang",
            Fault::Refuse400 => "refuse-400",
            Fault::AcceptSilently => "accept-silently",
        }
    }

    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
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

/// At most this many faults wait at once: a typo in `times` should not eat the memory.
pub const MAX_PENDING_FAULTS: usize = 10_000;

pub fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub fn control_error(message: String) -> Response {
    json_response(StatusCode::BAD_REQUEST, json!({ "message": message }))
}

pub fn pending_faults(control: &Control) -> Value {
    json!({"faults": control.faults.iter().map(|f| f.name()).collect::<Vec<_>>()})
}

/// `POST /_standin/faults {"fault": F, "times": N}`: the next N calls (after those already
/// armed) get F.
pub async fn arm_faults(State(state): State<AppState>, body: String) -> Response {
    let request: Value = match serde_json::from_str(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return control_error(
                r#"the body must be a JSON object {"fault": ..., "times": ...}"#.into(),
            )
        }
    };
    let names = Fault::ALL.map(Fault::name).join(", ");
    let Some(fault) = request
        .get("fault")
        .and_then(Value::as_str)
        .and_then(Fault::parse)
    else {
        let got = request
            .get("fault")
            .map_or("nothing".into(), Value::to_string);
        return control_error(format!("fault must be one of {names}; got {got}"));
    };
    let times = match request.get("times") {
        None | Some(Value::Null) => 1,
        Some(v) => match v.as_u64() {
            Some(n @ 1..) => n as usize,
            _ => return control_error(format!("times must be a positive integer; got {v}")),
        },
    };
    let mut control = state.control.lock().unwrap();
    if control.faults.len() + times > MAX_PENDING_FAULTS {
        return control_error(format!(
            "times: at most {MAX_PENDING_FAULTS} faults may wait at once ({} already do)",
            control.faults.len()
        ));
    }
    control.faults.extend(std::iter::repeat_n(fault, times));
    json_response(StatusCode::OK, pending_faults(&control))
}

pub async fn list_faults(State(state): State<AppState>) -> Response {
    json_response(
        StatusCode::OK,
        pending_faults(&state.control.lock().unwrap()),
    )
}

/// `POST /_standin/pipeline {"step_millis": N}`: steps that start from now on take N ms
/// (a test that must act while a run executes slows it down); `DELETE` restores
/// `--step-millis`.
pub async fn set_pipeline(State(state): State<AppState>, body: String) -> Response {
    let millis = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v.get("step_millis").and_then(Value::as_u64))
        .filter(|n| (1..=600_000).contains(n));
    let Some(millis) = millis else {
        return control_error(r#"the body must be {"step_millis": 1 to 600000}"#.into());
    };
    state.control.lock().unwrap().step_millis = Some(millis);
    json_response(StatusCode::OK, json!({"step_millis": millis}))
}

pub async fn reset_pipeline(State(state): State<AppState>) -> Response {
    state.control.lock().unwrap().step_millis = None;
    json_response(
        StatusCode::OK,
        json!({"step_millis": state.settings.step.as_millis() as u64}),
    )
}

pub async fn clear_faults(State(state): State<AppState>) -> Response {
    let mut control = state.control.lock().unwrap();
    control.faults.clear();
    json_response(StatusCode::OK, pending_faults(&control))
}

pub async fn list_invocations(State(state): State<AppState>) -> Response {
    let control = state.control.lock().unwrap();
    json_response(StatusCode::OK, json!({"invocations": control.invocations}))
}

pub async fn clear_invocations(State(state): State<AppState>) -> Response {
    state.control.lock().unwrap().invocations.clear();
    json_response(StatusCode::OK, json!({"invocations": []}))
}
