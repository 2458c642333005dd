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
