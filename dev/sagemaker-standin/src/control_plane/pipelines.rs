//! Pipelines (CreatePipeline, DescribePipeline: the definition, with its Parameters) and their
//! executions: StartPipelineExecution, DescribePipelineExecution, ListPipelineExecutionSteps,
//! DescribePipelineDefinitionForExecution, StopPipelineExecution, and the runs moving step by
//! step. A run may start on a pipeline that
//! was never created (the local stack's tests start runs without one).

use std::collections::HashMap;

use axum::http::StatusCode;
use chrono::Utc;
use serde_json::{json, Value};

use super::{callbacks, lineage};
use crate::answer::{client_request_token, epoch, str_field, validation, AwsError};
use crate::state::pipelines::{ExecutionStatus, Pipeline, Run, Step};
use crate::state::{AppState, ACCOUNT};
use crate::{delivery, model};

pub const STEPS: [&str; 4] = [
    "PreprocessData",
    "TrainModel",
    "EvaluateModel",
    "RegisterModel",
];

fn pipeline_arn(state: &AppState, name: &str) -> String {
    format!(
        "arn:aws:sagemaker:{}:{ACCOUNT}:pipeline/{}",
        state.settings.region,
        name.to_lowercase()
    )
}

/// CreatePipeline with an inline PipelineDefinition, which must be a JSON object (SageMaker
/// parses it; the doctor reads its `Parameters`).
pub fn create_pipeline(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let name = str_field(input, "PipelineName")?;
    let role_arn = str_field(input, "RoleArn")?;
    if client_request_token(input)?.is_none() {
        return Err(validation(
            "1 validation error detected: ClientRequestToken must not be null",
        ));
    }
    let definition = str_field(input, "PipelineDefinition")?;
    if !serde_json::from_str::<Value>(definition).is_ok_and(|d| d.is_object()) {
        return Err(validation(
            "PipelineDefinition is not a valid JSON pipeline definition",
        ));
    }
    let arn = pipeline_arn(state, name);
    let mut catalog = state.catalog.lock().unwrap();
    if catalog.pipelines.contains_key(&name.to_lowercase()) {
        return Err(validation(format!(
            "Pipeline names must be unique within an AWS account and region. Pipeline with \
             name ({name}) already exists."
        )));
    }
    let text = |field: &str| input.get(field).and_then(Value::as_str).map(str::to_owned);
    catalog.pipelines.insert(
        name.to_lowercase(),
        Pipeline {
            name: name.to_owned(),
            arn: arn.clone(),
            display_name: text("PipelineDisplayName").unwrap_or_else(|| name.to_owned()),
            definition: definition.to_owned(),
            description: text("PipelineDescription"),
            role_arn: role_arn.to_owned(),
            created: Utc::now(),
        },
    );
    Ok(json!({ "PipelineArn": arn }))
}

/// DescribePipeline by name or ARN; an unknown one is ResourceNotFound, as SageMaker says it.
pub fn describe_pipeline(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let given = str_field(input, "PipelineName")?;
    let name = given.rsplit_once(":pipeline/").map_or(given, |(_, n)| n);
    let pipeline = state
        .catalog
        .lock()
        .unwrap()
        .pipelines
        .get(&name.to_lowercase())
        .cloned()
        .ok_or_else(|| {
            AwsError(
                StatusCode::BAD_REQUEST,
                "ResourceNotFound",
                format!("Pipeline '{}' does not exist.", pipeline_arn(state, name)),
            )
        })?;
    let mut out = json!({
        "PipelineArn": pipeline.arn,
        "PipelineName": pipeline.name,
        "PipelineDisplayName": pipeline.display_name,
        "PipelineDefinition": pipeline.definition,
        "RoleArn": pipeline.role_arn,
        "PipelineStatus": "Active",
        "CreationTime": epoch(pipeline.created),
        "LastModifiedTime": epoch(pipeline.created),
    });
    if let Some(d) = pipeline.description {
        out["PipelineDescription"] = json!(d);
    }
    Ok(out)
}

pub fn max_parallel_steps(input: &Value) -> Result<Option<u64>, AwsError> {
    let Some(config) = input
        .get("ParallelismConfiguration")
        .filter(|v| !v.is_null())
    else {
        return Ok(None);
    };
    let steps = config
        .get("MaxParallelExecutionSteps")
        .filter(|v| !v.is_null())
        .ok_or_else(|| {
            validation(
                "1 validation error detected: ParallelismConfiguration.MaxParallelExecutionSteps \
                 must not be null",
            )
        })?;
    match steps.as_u64() {
        Some(n @ 1..) => Ok(Some(n)),
        _ => Err(validation(format!(
            "1 validation error detected: Value '{steps}' at \
             'ParallelismConfiguration.MaxParallelExecutionSteps' failed to satisfy \
             constraint: Member must have value greater than or equal to 1"
        ))),
    }
}

pub fn start(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let name = str_field(input, "PipelineName")?;
    let token = client_request_token(input)?;
    let max_parallel_steps = max_parallel_steps(input)?;
    if let Some(token) = token {
        if let Some(arn) = state.tokens.lock().unwrap().get(token) {
            return Ok(json!({"PipelineExecutionArn": arn}));
        }
    }
    let parameters: HashMap<String, String> = input
        .get("PipelineParameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p.get("Name")?.as_str()?.to_owned(),
                p.get("Value")?.as_str()?.to_owned(),
            ))
        })
        .collect();
    let pipeline_arn = pipeline_arn(state, name);
    let id: String = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    let now = Utc::now();
    let run = Run {
        arn: format!("{pipeline_arn}/execution/{id}"),
        pipeline_arn,
        display_name: input
            .get("PipelineExecutionDisplayName")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("execution-{}", now.timestamp_millis())),
        description: input
            .get("PipelineExecutionDescription")
            .and_then(Value::as_str)
            .map(str::to_owned),
        parameters,
        max_parallel_steps,
        status: ExecutionStatus::Executing,
        failure_reason: None,
        started: now,
        modified: now,
        steps: Vec::new(),
        callback: None,
    };
    let arn = run.arn.clone();
    if let Some(token) = token {
        state
            .tokens
            .lock()
            .unwrap()
            .insert(token.to_owned(), arn.clone());
    }
    state.runs.lock().unwrap().insert(arn.clone(), run);
    tokio::spawn(execute(state.clone(), arn.clone()));
    Ok(json!({"PipelineExecutionArn": arn}))
}

/// The run an operation names; an unknown one is ResourceNotFound, as SageMaker says it, or
/// (when the control API asks) a ValidationException, as moto says it.
pub fn find(state: &AppState, input: &Value) -> Result<Run, AwsError> {
    let arn = str_field(input, "PipelineExecutionArn")?;
    let run = state.runs.lock().unwrap().get(arn).cloned();
    run.ok_or_else(|| {
        if state
            .control
            .lock()
            .unwrap()
            .missing_execution_as_validation
        {
            validation(format!(
                "Could not find pipeline execution with PipelineExecutionArn {arn}."
            ))
        } else {
            AwsError(
                StatusCode::BAD_REQUEST,
                "ResourceNotFound",
                format!("Pipeline execution {arn} does not exist"),
            )
        }
    })
}

pub fn describe(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let run = find(state, input)?;
    let mut out = json!({
        "PipelineArn": run.pipeline_arn,
        "PipelineExecutionArn": run.arn,
        "PipelineExecutionDisplayName": run.display_name,
        "PipelineExecutionStatus": run.status,
        "CreationTime": epoch(run.started),
        "LastModifiedTime": epoch(run.modified),
    });
    if let Some(d) = &run.description {
        out["PipelineExecutionDescription"] = json!(d);
    }
    if let Some(r) = &run.failure_reason {
        out["FailureReason"] = json!(r);
    }
    if let Some(n) = run.max_parallel_steps {
        out["ParallelismConfiguration"] = json!({"MaxParallelExecutionSteps": n});
    }
    Ok(out)
}

/// The definition a run executes: the steps the stand-in runs, whatever the pipeline was
/// created with, so what it says matches what ListPipelineExecutionSteps will list.
pub fn describe_definition(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let run = find(state, input)?;
    let callbacks = callbacks::of_run(state, &run.arn);
    let mut steps: Vec<Value> = Vec::new();
    for name in STEPS {
        if name == "RegisterModel" {
            steps.extend(
                callbacks
                    .iter()
                    .map(|c| json!({"Name": c.name, "Type": "Callback"})),
            );
        }
        steps.push(json!({"Name": name, "Type": step_type(name)}));
    }
    let definition = json!({"Version": "2020-12-01", "Steps": steps});
    Ok(json!({
        "PipelineDefinition": definition.to_string(),
        "CreationTime": epoch(run.started),
    }))
}

fn step_type(name: &str) -> &'static str {
    match name {
        "TrainModel" => "Training",
        "RegisterModel" => "RegisterModel",
        _ => "Processing",
    }
}

/// SageMaker requires a token and stops only a running execution: it goes Stopping, then
/// Stopped once the current step ends (see `execute`).
pub fn stop(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let run = find(state, input)?;
    if client_request_token(input)?.is_none() {
        return Err(validation(
            "1 validation error detected: ClientRequestToken must not be null",
        ));
    }
    match run.status {
        ExecutionStatus::Executing => {
            state.update_run(&run.arn, |r| r.status = ExecutionStatus::Stopping)
        }
        ExecutionStatus::Stopping | ExecutionStatus::Stopped => {}
        other => {
            return Err(validation(format!(
                "Pipeline execution {} is {other} and cannot be stopped",
                run.arn
            )))
        }
    }
    Ok(json!({"PipelineExecutionArn": run.arn}))
}

pub fn list_steps(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    {
        let mut control = state.control.lock().unwrap();
        if control.list_steps_throttled > 0 {
            control.list_steps_throttled -= 1;
            return Err(AwsError(
                axum::http::StatusCode::BAD_REQUEST,
                "ThrottlingException",
                "Rate exceeded".into(),
            ));
        }
    }
    let run = find(state, input)?;
    let max = input
        .get("MaxResults")
        .and_then(Value::as_u64)
        .unwrap_or(50)
        .clamp(1, 100) as usize;
    let offset = match input.get("NextToken").and_then(Value::as_str) {
        None => 0,
        Some(token) => token
            .parse::<usize>()
            .map_err(|_| validation(format!("invalid NextToken {token:?}")))?,
    };
    let ascending = input.get("SortOrder").and_then(Value::as_str) == Some("Ascending");
    let mut steps = run.steps.clone();
    if !ascending {
        steps.reverse();
    }
    let page: Vec<Value> = steps
        .iter()
        .skip(offset)
        .take(max)
        .map(|s| {
            let mut v =
                json!({"StepName": s.name, "StepStatus": s.status, "StartTime": epoch(s.started)});
            if let Some(end) = s.ended {
                v["EndTime"] = json!(epoch(end));
            }
            if let Some(r) = &s.failure_reason {
                v["FailureReason"] = json!(r);
            }
            if let Some(m) = &s.metadata {
                v["Metadata"] = m.clone();
            }
            v
        })
        .collect();
    let mut out = json!({"PipelineExecutionSteps": page});
    if offset + max < steps.len() {
        out["NextToken"] = json!((offset + max).to_string());
    }
    Ok(out)
}

pub async fn execute(state: AppState, arn: String) {
    delivery::deliver(&state, &arn, None).await;
    let parameters = state.runs.lock().unwrap()[&arn].parameters.clone();
    let input_data_uri = parameters
        .get("InputDataUri")
        .map_or(model::DEFAULT_INPUT_DATA_URI, String::as_str);
    let mut failure = None;
    for name in STEPS {
        // A pipeline's CallbackSteps run before its model is registered: the approval gate.
        if name == "RegisterModel" {
            for spec in callbacks::of_run(&state, &arn) {
                match callbacks::run_step(&state, &arn, &spec).await {
                    callbacks::Ended::Succeeded => {}
                    callbacks::Ended::Stopped => {
                        delivery::deliver(&state, &arn, Some(ExecutionStatus::Stopping)).await;
                        return;
                    }
                    callbacks::Ended::Failed(reason) => {
                        failure = Some(format!("Step failure: {} failed: {reason}", spec.name));
                        break;
                    }
                }
            }
            if failure.is_some() {
                break;
            }
        }
        state.update_run(&arn, |run| {
            run.steps.push(Step {
                name: name.to_owned(),
                status: ExecutionStatus::Executing,
                started: Utc::now(),
                ended: None,
                failure_reason: None,
                metadata: None,
            })
        });
        if name == "TrainModel" {
            lineage::training_started(&state, &arn, input_data_uri);
        }
        tokio::time::sleep(state.step_duration()).await;
        if state.runs.lock().unwrap()[&arn].status == ExecutionStatus::Stopping {
            state.update_run(&arn, |run| {
                let step = run.steps.last_mut().expect("step just pushed");
                step.ended = Some(Utc::now());
                step.status = ExecutionStatus::Stopped;
                run.status = ExecutionStatus::Stopped;
            });
            delivery::deliver(&state, &arn, Some(ExecutionStatus::Stopping)).await;
            return;
        }
        let step_failure = model::step_failure(name, &parameters);
        // What a step that succeeded leaves in lineage, recorded before it is seen to succeed.
        let metadata = match name {
            _ if step_failure.is_some() => None,
            "TrainModel" => {
                let run = state.runs.lock().unwrap()[&arn].clone();
                lineage::training_succeeded(&state, &run, input_data_uri);
                Some(json!({"TrainingJob": {"Arn": lineage::training_job_arn(&state, &arn)}}))
            }
            "RegisterModel" => {
                let run = state.runs.lock().unwrap()[&arn].clone();
                let package = lineage::model_registered(&state, &run, input_data_uri);
                Some(json!({"RegisterModel": {"Arn": package}}))
            }
            _ => None,
        };
        state.update_run(&arn, |run| {
            let step = run.steps.last_mut().expect("step just pushed");
            step.ended = Some(Utc::now());
            step.metadata = metadata.clone();
            step.status = if step_failure.is_some() {
                ExecutionStatus::Failed
            } else {
                ExecutionStatus::Succeeded
            };
            step.failure_reason = step_failure.clone();
        });
        if let Some(reason) = step_failure {
            failure = Some(format!("Step failure: {name} failed: {reason}"));
            break;
        }
    }
    state.update_run(&arn, |run| {
        run.status = if failure.is_some() {
            ExecutionStatus::Failed
        } else {
            ExecutionStatus::Succeeded
        };
        run.failure_reason = failure.clone();
    });
    delivery::deliver(&state, &arn, Some(ExecutionStatus::Executing)).await;
}
