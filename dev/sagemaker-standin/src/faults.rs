//! The control API (`/_standin/...`): faults armed for the next InvokeEndpointAsync calls, the
//! record of every call, and the pipeline step duration. What it sets is kept in
//! `state::control`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use crate::answer::{control_error, json_response};
use crate::state::control::{Control, Fault};
use crate::state::AppState;

/// At most this many faults wait at once: a typo in `times` should not eat the memory.
pub const MAX_PENDING_FAULTS: usize = 10_000;

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
    let names: Vec<_> = Fault::ALL.iter().map(|f| f.name()).collect();
    let names = names.join(", ");
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

/// What `/_standin/pipeline` answers: the step duration, how an unknown execution is answered,
/// and how many runs StartPipelineExecution has started (a replayed token starts none).
fn pipeline_settings(state: &AppState) -> Value {
    let runs_started = state.runs.lock().unwrap().len();
    let control = state.control.lock().unwrap();
    let step_millis = control
        .step_millis
        .unwrap_or(state.settings.step.as_millis() as u64);
    let missing_execution = match control.missing_execution_as_validation {
        true => "ValidationException",
        false => "ResourceNotFound",
    };
    json!({"step_millis": step_millis, "missing_execution": missing_execution,
           "runs_started": runs_started, "throttle_list_steps": control.list_steps_throttled})
}

/// `POST /_standin/pipeline {"step_millis": N, "missing_execution": "ValidationException" |
/// "ResourceNotFound", "throttle_list_steps": T}` (any of them): steps that start from now on
/// take N ms (a test that must act while a run executes slows it down); an unknown execution
/// is answered in that shape; the next T ListPipelineExecutionSteps calls are throttled (400
/// ThrottlingException, as SageMaker answers past its rate). `DELETE` restores `--step-millis`
/// and ResourceNotFound, and throttles nothing.
pub async fn set_pipeline(State(state): State<AppState>, body: String) -> Response {
    const EXPECTED: &str = r#"the body must be {"step_millis": 1 to 600000, "missing_execution": "ValidationException" or "ResourceNotFound", "throttle_list_steps": 1 to 100}, any of them"#;
    let Ok(Value::Object(request)) = serde_json::from_str::<Value>(&body) else {
        return control_error(EXPECTED.into());
    };
    let millis = match request.get("step_millis") {
        None => None,
        Some(v) => match v.as_u64().filter(|n| (1..=600_000).contains(n)) {
            Some(n) => Some(n),
            None => return control_error(EXPECTED.into()),
        },
    };
    let as_validation = match request.get("missing_execution").map(Value::as_str) {
        None => None,
        Some(Some("ValidationException")) => Some(true),
        Some(Some("ResourceNotFound")) => Some(false),
        Some(_) => return control_error(EXPECTED.into()),
    };
    let throttles = match request.get("throttle_list_steps") {
        None => None,
        Some(v) => match v.as_u64().filter(|n| (1..=100).contains(n)) {
            Some(n) => Some(n as usize),
            None => return control_error(EXPECTED.into()),
        },
    };
    if millis.is_none() && as_validation.is_none() && throttles.is_none() {
        return control_error(EXPECTED.into());
    }
    {
        let mut control = state.control.lock().unwrap();
        if let Some(throttles) = throttles {
            control.list_steps_throttled = throttles;
        }
        if millis.is_some() {
            control.step_millis = millis;
        }
        if let Some(as_validation) = as_validation {
            control.missing_execution_as_validation = as_validation;
        }
    }
    json_response(StatusCode::OK, pipeline_settings(&state))
}

pub async fn get_pipeline(State(state): State<AppState>) -> Response {
    json_response(StatusCode::OK, pipeline_settings(&state))
}

pub async fn reset_pipeline(State(state): State<AppState>) -> Response {
    {
        let mut control = state.control.lock().unwrap();
        control.step_millis = None;
        control.missing_execution_as_validation = false;
        control.list_steps_throttled = 0;
    }
    json_response(StatusCode::OK, pipeline_settings(&state))
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
