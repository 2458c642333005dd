//! The questions a run asks a person, as its pipeline results item keeps them: one `questions`
//! map (key → question) and a `questions_version` that every change of the map is conditioned
//! on, so two writers never lose each other's change (the loser reads again and retries).
//!
//! A question's key is what a client answers it by (the task's `inputRequests` key). It follows
//! from the run's task secret and the step's token, so the same callback message delivered twice
//! asks once, yet nobody can derive one without both. The token stays in the item: it answers
//! the step, and leaves the server in no answer, log or event.
//!
//! A run's registered model that waits for approval (`APPROVAL_GATE`) is a question too: it
//! keeps the model package's ARN in place of a token, and its answer is UpdateModelPackage's.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::callback::{CallbackToken, Question};
use super::caller::{Caller, Owner};
use super::item::{Attr, Change, Fields, Guard, Item, Write, WriteOp};
use crate::util::hex;

pub mod attr {
    pub const QUESTIONS: &str = "questions";
    pub const QUESTIONS_VERSION: &str = "questions_version";
}

/// At most this many questions are kept on one run (a pipeline with more CallbackSteps than
/// this is refused the rest, by name).
pub const MAX_QUESTIONS: usize = 20;

/// How an answer reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerVia {
    /// The client showed the task's form (an elicitation) and sent its answer (`tasks/update`).
    Elicitation,
    /// A tool call (`answer_training_input`, `approve_model_package`): what a model can make
    /// by itself.
    Tool,
}

impl AnswerVia {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerVia::Elicitation => "elicitation",
            AnswerVia::Tool => "tool",
        }
    }
}

/// Where a question stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum QuestionState {
    /// Waiting for a person.
    Open,
    /// Answered: `action` is accept, decline or cancel; `by` the approver's owner tag; `via`
    /// how the answer came and `question_digest` what it answered ([`StoredQuestion::digest`]),
    /// both absent on an answer recorded before they were kept.
    Answered {
        action: String,
        by: String,
        at: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<AnswerVia>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        question_digest: Option<String>,
    },
    /// The answer could not be sent to SageMaker (or the step's token had expired): `reason`
    /// says which, and the task says so.
    SendFailed { reason: String, at: String },
}

/// One question as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredQuestion {
    pub prompt: String,
    /// The elicitation's `requestedSchema`.
    pub schema: Value,
    /// SageMaker's callback token; read through [`StoredQuestion::token`] only. Empty for a
    /// model's approval.
    #[serde(default, skip_serializing_if = "KeptToken::is_empty")]
    token: KeptToken,
    /// The model package a model's approval decides; None for a CallbackStep's question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_package_arn: Option<String>,
    pub asked_at: String,
    #[serde(flatten)]
    pub state: QuestionState,
}

/// The token as the item keeps it: serialized as itself, shown by no Debug.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
struct KeptToken(String);

impl KeptToken {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for KeptToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl StoredQuestion {
    pub fn token(&self) -> Option<CallbackToken> {
        CallbackToken::parse(&self.token.0)
    }

    /// What was asked, as a digest an answer's record keeps: the prompt, the form and the model
    /// package it decides (never the token). The same question digests the same.
    pub fn digest(&self) -> String {
        let digest = Sha256::new()
            .chain_update(b"mcp-question-asked\0")
            .chain_update(self.prompt.as_bytes())
            .chain_update(b"\0")
            .chain_update(self.schema.to_string().as_bytes())
            .chain_update(b"\0")
            .chain_update(
                self.model_package_arn
                    .as_deref()
                    .unwrap_or_default()
                    .as_bytes(),
            )
            .finalize();
        format!("sha256:{}", hex(&digest))
    }

    /// This question answered: `action` by `by` at `at`, come `via`, the question's digest kept.
    pub fn answered(&self, action: &str, by: &Owner, at: &str, via: AnswerVia) -> QuestionState {
        QuestionState::Answered {
            action: action.to_owned(),
            by: by.to_string(),
            at: at.to_owned(),
            via: Some(via),
            question_digest: Some(self.digest()),
        }
    }

    pub fn is_open(&self) -> bool {
        self.state == QuestionState::Open
    }
}

/// A run's questions, in key order, and the version the next change is conditioned on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Questions {
    pub by_key: std::collections::BTreeMap<String, StoredQuestion>,
    pub version: i64,
}

impl Questions {
    /// Read from a run's item; an entry that does not read (written by a later version) is
    /// left out rather than failing the run.
    pub fn from_item(item: &Item) -> Questions {
        let f = Fields(item);
        let by_key = match f.json(attr::QUESTIONS) {
            Some(Value::Object(map)) => map
                .into_iter()
                .filter_map(|(k, v)| Some((k, serde_json::from_value(v).ok()?)))
                .collect(),
            _ => Default::default(),
        };
        Questions {
            by_key,
            version: f.n(attr::QUESTIONS_VERSION).unwrap_or(0),
        }
    }

    pub fn open(&self) -> impl Iterator<Item = (&String, &StoredQuestion)> {
        self.by_key.iter().filter(|(_, q)| q.is_open())
    }

    /// The same map with `key` changed: one conditional update of the whole map, written only
    /// if nobody changed it since it was read (and the run is recorded).
    fn write(&self, run: &RunKey, by_key: Map<String, Value>) -> Write {
        let guard = if self.version == 0 {
            Guard::Absent(attr::QUESTIONS_VERSION)
        } else {
            Guard::Eq(attr::QUESTIONS_VERSION, Attr::N(self.version))
        };
        Write {
            key: run.key.clone(),
            op: WriteOp::Update(vec![
                Change::Set(attr::QUESTIONS, Attr::Json(Value::Object(by_key))),
                Change::Set(attr::QUESTIONS_VERSION, Attr::N(self.version + 1)),
            ]),
            guard: Guard::All(vec![
                Guard::Not(Box::new(Guard::Absent(run.partition_key))),
                guard,
            ]),
        }
    }

    /// `question` under `key`: the write that stores it, and these questions once it is written
    /// (so a writer goes on from its own write, not from a read that may not show it yet).
    fn change(&self, run: &RunKey, key: &str, question: StoredQuestion) -> Changed {
        let mut by_key = self.by_key.clone();
        by_key.insert(key.to_owned(), question);
        let after = Questions {
            by_key,
            version: self.version + 1,
        };
        Changed {
            write: self.write(run, after.as_map()),
            after,
        }
    }

    fn as_map(&self) -> Map<String, Value> {
        self.by_key
            .iter()
            .map(|(k, q)| (k.clone(), serde_json::to_value(q).expect("plain data")))
            .collect()
    }
}

/// A change of one question: the conditional write, and the questions as they stand once it is
/// written.
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    pub write: Write,
    pub after: Questions,
}

/// The run item a question is written to: its key, and the name of its partition key (present
/// when the run is recorded).
#[derive(Debug, Clone, PartialEq)]
pub struct RunKey {
    pub key: Item,
    pub partition_key: &'static str,
}

/// What answers a CallbackStep: `SendPipelineExecutionStepSuccess` with output parameters
/// (names and string values), or `…StepFailure` with a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepAnswer {
    Success(Vec<(String, String)>),
    Failure(String),
}

/// An output parameter's value: SageMaker takes at most this many characters.
pub const MAX_OUTPUT_VALUE_CHARS: usize = 1024;

/// A person's accepted answer as the step's output parameters: every field the question's
/// schema has, of its type (an enum's value among its words), the required ones present, nothing
/// else. The error names the field and what was wrong, never its value.
pub fn output_parameters(
    schema: &Value,
    content: &Map<String, Value>,
) -> Result<Vec<(String, String)>, String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if let Some(unknown) = content.keys().find(|k| !properties.contains_key(*k)) {
        return Err(format!(
            "`{}` is not a field of this question",
            short(unknown)
        ));
    }
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !content.contains_key(name) {
            return Err(format!("`{name}` is required"));
        }
    }
    let mut outputs = Vec::new();
    for (name, value) in content {
        let field = &properties[name];
        let kind = field
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string");
        let text = match (kind, value) {
            ("string", Value::String(s)) => s.clone(),
            ("number", Value::Number(n)) => n.to_string(),
            ("integer", Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            ("boolean", Value::Bool(b)) => b.to_string(),
            _ => return Err(format!("`{name}` must be a {kind}")),
        };
        if let Some(words) = field.get("enum").and_then(Value::as_array) {
            if !words.iter().any(|w| w.as_str() == Some(text.as_str())) {
                return Err(format!("`{name}` must be one of the question's choices"));
            }
        }
        if text.chars().count() > MAX_OUTPUT_VALUE_CHARS {
            return Err(format!(
                "`{name}` is longer than {MAX_OUTPUT_VALUE_CHARS} characters"
            ));
        }
        outputs.push((name.clone(), text));
    }
    Ok(outputs)
}

/// A caller's field name in an error: bounded, as every caller's value is.
fn short(text: &str) -> String {
    let cut: String = text.chars().take(64).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// The idempotency token of the one call that answers a step: the same for a retried answer.
pub fn answer_request_token(token: &CallbackToken) -> String {
    let digest = Sha256::new()
        .chain_update(b"mcp-answer\0")
        .chain_update(token.expose().as_bytes())
        .finalize();
    hex(&digest)
}

/// Where a caller stands to a run's questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// May answer them.
    Answers,
    /// Owns the run, and the deployment names approvers: separation of duties keeps the owner
    /// from answering its own run, approver or not.
    OwnRun,
    /// Neither the run's owner (where the owner answers) nor among the approvers.
    Outsider,
}

/// Who may answer a run's questions: the deployment's approvers when `APPROVERS` names them
/// (each a person: `caller.person`), never for a run they own; otherwise the run's owner.
pub fn standing(
    approvers: Option<&[Owner]>,
    caller: &Caller,
    run_owner: Option<&Owner>,
) -> Standing {
    let owns = run_owner == Some(&caller.owner);
    match approvers {
        Some(_) if owns => Standing::OwnRun,
        Some(approvers) if approvers.contains(&caller.person) => Standing::Answers,
        None if owns => Standing::Answers,
        _ => Standing::Outsider,
    }
}

/// The key a question is answered by: from the run's task secret and the step's token.
pub fn question_key(task_secret: &str, token: &CallbackToken) -> String {
    let digest = Sha256::new()
        .chain_update(b"mcp-question\0")
        .chain_update(task_secret.as_bytes())
        .chain_update(b"\0")
        .chain_update(token.expose().as_bytes())
        .finalize();
    format!("q-{}", &hex(&digest)[..32])
}

/// What asking a question does to a run's questions.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// Recorded by this write.
    Write(Write),
    /// Already recorded (a duplicate delivery): nothing to write.
    Known,
    /// The run holds [`MAX_QUESTIONS`] already.
    Full,
}

/// Records `question` under `key`, open, unless the key is known.
pub fn ask(
    questions: &Questions,
    run: &RunKey,
    key: &str,
    question: &Question,
    token: &CallbackToken,
    now: &str,
) -> Ask {
    if questions.by_key.contains_key(key) {
        return Ask::Known;
    }
    if questions.by_key.len() >= MAX_QUESTIONS {
        return Ask::Full;
    }
    let stored = StoredQuestion {
        prompt: question.prompt.clone(),
        schema: question.requested_schema(),
        token: KeptToken(token.expose().to_owned()),
        model_package_arn: None,
        asked_at: now.to_owned(),
        state: QuestionState::Open,
    };
    Ask::Write(questions.change(run, key, stored).write)
}

/// The key of the question that approves `model_package_arn`: from the run's task secret and
/// the package, so asking it twice asks once.
pub fn approval_key(task_secret: &str, model_package_arn: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"mcp-approval\0")
        .chain_update(task_secret.as_bytes())
        .chain_update(b"\0")
        .chain_update(model_package_arn.as_bytes())
        .finalize();
    format!("m-{}", &hex(&digest)[..32])
}

/// The approval question's form: accept approves (with an optional comment), decline rejects.
pub fn approval_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "comment": {
                "type": "string",
                "title": "Comment",
                "description": "Why: kept with the model's approval"
            }
        }
    })
}

/// Asks whether the model package `model_package_arn`, which the run registered and which
/// waits in PendingManualApproval, may be approved, unless asked already.
pub fn ask_approval(
    questions: &Questions,
    run: &RunKey,
    key: &str,
    model_package_arn: &str,
    now: &str,
) -> Option<Changed> {
    if questions.by_key.contains_key(key) || questions.by_key.len() >= MAX_QUESTIONS {
        return None;
    }
    let version = model_package_arn.rsplit('/').next().unwrap_or_default();
    let group = model_package_arn.rsplit('/').nth(1).unwrap_or_default();
    let stored = StoredQuestion {
        prompt: format!(
            "The run registered model {group} version {version}, which waits for approval. \
             Accept to approve it; decline to reject it."
        ),
        schema: approval_schema(),
        token: KeptToken::default(),
        model_package_arn: Some(model_package_arn.to_owned()),
        asked_at: now.to_owned(),
        state: QuestionState::Open,
    };
    Some(questions.change(run, key, stored))
}

/// The run's question about `model_package_arn`, if it asked one.
pub fn approval_question<'a>(
    questions: &'a Questions,
    model_package_arn: &str,
) -> Option<(&'a String, &'a StoredQuestion)> {
    questions
        .by_key
        .iter()
        .find(|(_, q)| q.model_package_arn.as_deref() == Some(model_package_arn))
}

/// Settles an open question (answered, or its send failed); None when `key` is unknown or no
/// longer open: a key is used once.
pub fn settle(
    questions: &Questions,
    run: &RunKey,
    key: &str,
    state: QuestionState,
) -> Option<Changed> {
    let open = questions.by_key.get(key).filter(|q| q.is_open())?;
    let settled = StoredQuestion {
        state,
        ..open.clone()
    };
    Some(questions.change(run, key, settled))
}

/// An answered question whose answer SageMaker did not take (a failed send, an expired token):
/// the key stays used, the task says why.
pub fn send_failed(
    questions: &Questions,
    run: &RunKey,
    key: &str,
    reason: String,
    now: &str,
) -> Option<Changed> {
    let answered = questions
        .by_key
        .get(key)
        .filter(|q| matches!(q.state, QuestionState::Answered { .. }))?;
    let failed = StoredQuestion {
        state: QuestionState::SendFailed {
            reason,
            at: now.to_owned(),
        },
        ..answered.clone()
    };
    Some(questions.change(run, key, failed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callback::parse_callback;
    use crate::caller::Principal;

    const SESSION_ID: &str = "session_id";
    const EXECUTION_ARN: &str = "execution_arn";

    #[test]
    fn the_owner_answers_unless_approvers_are_named_and_then_never_its_own_run() {
        let bearer = |name: &str| Principal::Bearer { name: name.into() }.caller();
        let (owner, approver, stranger) = (bearer("owner"), bearer("approver"), bearer("x"));
        let run_owner = Some(&owner.owner);
        assert_eq!(standing(None, &owner, run_owner), Standing::Answers);
        assert_eq!(standing(None, &approver, run_owner), Standing::Outsider);
        let named = [approver.person.clone(), owner.person.clone()];
        // Named among the approvers, the owner still does not answer its own run.
        assert_eq!(standing(Some(&named), &owner, run_owner), Standing::OwnRun);
        assert_eq!(
            standing(Some(&named), &approver, run_owner),
            Standing::Answers
        );
        assert_eq!(
            standing(Some(&named), &stranger, run_owner),
            Standing::Outsider
        );
        // The owner answers another's run as an approver.
        let others = Some(&stranger.owner);
        assert_eq!(standing(Some(&named), &owner, others), Standing::Answers);
        // An approver is a person: the role's other sessions are not named by one session.
        let session = |s: &str| {
            Principal::iam(&format!("arn:aws:sts::1:assumed-role/Reviewers/{s}"))
                .unwrap()
                .caller()
        };
        let only_alice = [session("alice").person];
        assert_eq!(
            standing(Some(&only_alice), &session("alice"), run_owner),
            Standing::Answers
        );
        assert_eq!(
            standing(Some(&only_alice), &session("bob"), run_owner),
            Standing::Outsider
        );
    }

    const ARN: &str = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/abc123";

    fn callback(token: &str) -> (CallbackToken, Question) {
        let body = serde_json::json!({"token": token, "pipelineExecutionArn": ARN, "status": "Executing",
            "arguments": {"prompt": "Register this model?",
                          "fields": "{\"type\":\"object\",\"properties\":{\"note\":{\"type\":\"string\"}}}"}});
        let request = parse_callback(&body.to_string()).unwrap();
        (request.token, request.question)
    }

    fn run_item() -> Item {
        Item::from([
            (SESSION_ID.to_owned(), Attr::s("o#s")),
            (EXECUTION_ARN.to_owned(), Attr::s(ARN)),
        ])
    }

    /// `item` with a new question, from the callback of `token`, asked under `key`.
    fn with_question(item: &Item, key: &str, token: &str) -> Item {
        let (token, question) = callback(token);
        let questions = Questions::from_item(item);
        let Ask::Write(w) = ask(&questions, &key_of(item), key, &question, &token, "t0") else {
            panic!("a new question is written")
        };
        w.apply_to(Some(item)).unwrap()
    }

    fn key_of(item: &Item) -> RunKey {
        RunKey {
            key: item
                .iter()
                .filter(|(k, _)| *k == SESSION_ID || *k == EXECUTION_ARN)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            partition_key: SESSION_ID,
        }
    }

    #[test]
    fn a_key_is_the_same_for_a_token_twice_and_differs_by_secret_and_token() {
        let (a, _) = callback("AbCdEf1234");
        let (b, _) = callback("AbCdEf1235");
        assert_eq!(question_key("s1", &a), question_key("s1", &a));
        assert_ne!(question_key("s1", &a), question_key("s2", &a));
        assert_ne!(question_key("s1", &a), question_key("s1", &b));
        assert!(!question_key("s1", &a).contains("AbCdEf1234"));
    }

    #[test]
    fn an_answer_keeps_how_it_came_who_gave_it_and_a_digest_of_what_it_answered() {
        let item = with_question(&run_item(), "q-1", "AbCdEf1234");
        let asked = Questions::from_item(&item);
        let question = &asked.by_key["q-1"];
        let digest = question.digest();
        assert!(
            digest.starts_with("sha256:") && digest.len() == 7 + 64,
            "{digest}"
        );
        assert!(!digest.contains("AbCdEf1234"));
        let mut reworded = question.clone();
        reworded.prompt.push('!');
        assert_ne!(
            reworded.digest(),
            digest,
            "another question, another digest"
        );
        let who = Principal::Bearer {
            name: "alice".into(),
        }
        .caller()
        .owner;
        let answered = question.answered("accept", &who, "t2", AnswerVia::Tool);
        let item = settle(&asked, &key_of(&item), "q-1", answered.clone())
            .unwrap()
            .write
            .apply_to(Some(&item))
            .unwrap();
        let kept = &Questions::from_item(&item).by_key["q-1"];
        assert_eq!(kept.state, answered);
        let QuestionState::Answered {
            via,
            question_digest,
            by,
            ..
        } = &kept.state
        else {
            panic!("answered")
        };
        assert_eq!(
            (*via, question_digest.as_deref()),
            (Some(AnswerVia::Tool), Some(digest.as_str()))
        );
        assert_eq!(by, &who.to_string());
        // An answer recorded before `via` and the digest were kept still reads.
        let older: StoredQuestion = serde_json::from_value(serde_json::json!({
            "prompt": "p", "schema": {}, "asked_at": "t0",
            "state": "answered", "action": "decline", "by": "o", "at": "t1"}))
        .unwrap();
        assert!(matches!(
            older.state,
            QuestionState::Answered {
                via: None,
                question_digest: None,
                ..
            }
        ));
    }

    #[test]
    fn asked_once_then_known_then_settled_once_and_each_write_guarded_by_the_version() {
        let (token, question) = callback("AbCdEf1234");
        let item = run_item();
        let none = Questions::from_item(&item);
        let key = question_key("secret", &token);
        let Ask::Write(first) = ask(&none, &key_of(&item), &key, &question, &token, "t0") else {
            panic!("a new question is written");
        };
        let item = first.apply_to(Some(&item)).unwrap();
        // The same write again (a lost race) is refused: the version moved.
        assert_eq!(first.apply_to(Some(&item)), None);
        let asked = Questions::from_item(&item);
        assert_eq!(asked.version, 1);
        assert_eq!(asked.open().count(), 1);
        assert_eq!(asked.by_key[&key].token(), Some(token.clone()));
        assert_eq!(
            asked.by_key[&key].schema["properties"]["note"]["type"],
            "string"
        );
        assert_eq!(
            ask(&asked, &key_of(&item), &key, &question, &token, "t1"),
            Ask::Known
        );

        let answered = asked.by_key[&key].answered(
            "accept",
            &Principal::Local.caller().owner,
            "t2",
            AnswerVia::Elicitation,
        );
        let settled = settle(&asked, &key_of(&item), &key, answered.clone()).unwrap();
        let item = settled.write.apply_to(Some(&item)).unwrap();
        let after = Questions::from_item(&item);
        // What the writer holds after its write is what the item holds.
        assert_eq!(settled.after, after);
        assert_eq!(after.by_key[&key].state, answered);
        assert_eq!(after.open().count(), 0);
        assert_eq!(settle(&after, &key_of(&item), &key, answered.clone()), None);
        assert_eq!(settle(&after, &key_of(&item), "q-unknown", answered), None);
        // A run not recorded yet takes no question: the message is delivered again later.
        assert_eq!(first.apply_to(None), None);
    }

    #[test]
    fn the_token_is_kept_and_shows_in_no_debug_of_the_questions() {
        let item = with_question(&run_item(), "q-1", "AbCdEf1234");
        let questions = Questions::from_item(&item);
        let (token, _) = callback("AbCdEf1234");
        assert_eq!(questions.by_key["q-1"].token(), Some(token));
        let shown = format!("{questions:?} {:?}", questions.by_key["q-1"].token());
        assert!(!shown.contains("AbCdEf1234"), "{shown}");
    }

    #[test]
    fn an_accepted_answer_becomes_output_parameters_of_the_schemas_types_or_is_refused_by_field() {
        let schema = serde_json::json!({"type": "object", "required": ["deploy_to"], "properties": {
            "deploy_to": {"type": "string", "enum": ["staging", "production"]},
            "note": {"type": "string"}, "epochs": {"type": "integer"}, "ok": {"type": "boolean"},
            "score": {"type": "number"}}});
        let content = |v: Value| v.as_object().unwrap().clone();
        let outputs = output_parameters(
            &schema,
            &content(
                serde_json::json!({"deploy_to": "staging", "epochs": 3, "ok": true, "score": 0.5}),
            ),
        )
        .unwrap();
        assert_eq!(
            outputs,
            [
                ("deploy_to", "staging"),
                ("epochs", "3"),
                ("ok", "true"),
                ("score", "0.5")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        for (bad, says) in [
            (serde_json::json!({}), "`deploy_to` is required"),
            (
                serde_json::json!({"deploy_to": "prod"}),
                "`deploy_to` must be one of",
            ),
            (
                serde_json::json!({"deploy_to": "staging", "epochs": 1.5}),
                "`epochs` must be a integer",
            ),
            (
                serde_json::json!({"deploy_to": "staging", "x": 1}),
                "`x` is not a field",
            ),
            (
                serde_json::json!({"deploy_to": "staging", "note": "n".repeat(1025)}),
                "`note` is longer",
            ),
        ] {
            let e = output_parameters(&schema, &content(bad)).unwrap_err();
            assert!(e.starts_with(says), "{e}");
        }
    }

    #[test]
    fn a_failed_send_is_recorded_only_on_an_answered_question() {
        let item = with_question(&run_item(), "q-1", "AbCdEf1234");
        let open = Questions::from_item(&item);
        assert_eq!(
            send_failed(&open, &key_of(&item), "q-1", "expired".into(), "t1"),
            None
        );
        let answered = QuestionState::Answered {
            action: "accept".into(),
            by: "o".into(),
            at: "t1".into(),
            via: None,
            question_digest: None,
        };
        let item = settle(&open, &key_of(&item), "q-1", answered)
            .unwrap()
            .write
            .apply_to(Some(&item))
            .unwrap();
        let w = send_failed(
            &Questions::from_item(&item),
            &key_of(&item),
            "q-1",
            "expired".into(),
            "t2",
        )
        .unwrap();
        let item = w.write.apply_to(Some(&item)).unwrap();
        assert_eq!(
            Questions::from_item(&item).by_key["q-1"].state,
            QuestionState::SendFailed {
                reason: "expired".into(),
                at: "t2".into()
            }
        );
    }

    #[test]
    fn a_run_holds_at_most_max_questions() {
        let mut item = run_item();
        for n in 0..MAX_QUESTIONS {
            item = with_question(&item, &format!("q-{n}"), &format!("AbCdEf{n:04}"));
        }
        let (token, question) = callback("ZzZzZz9999");
        let qs = Questions::from_item(&item);
        assert_eq!(
            ask(&qs, &key_of(&item), "q-x", &question, &token, "t"),
            Ask::Full
        );
    }

    #[test]
    fn a_models_approval_is_asked_once_under_its_own_key_and_keeps_no_token() {
        let package = "arn:aws:sagemaker:us-east-1:123456789012:model-package/p-models/3";
        let key = approval_key("secret", package);
        assert_eq!(key, approval_key("secret", package));
        assert_ne!(key, approval_key("other", package));
        let item = run_item();
        let none = Questions::from_item(&item);
        let asked = ask_approval(&none, &key_of(&item), &key, package, "t0").unwrap();
        let item = asked.write.apply_to(Some(&item)).unwrap();
        let stored = Questions::from_item(&item);
        let (found_key, question) = approval_question(&stored, package).unwrap();
        assert_eq!(found_key, &key);
        assert!(question.is_open() && question.token().is_none());
        assert!(
            question.prompt.contains("p-models version 3"),
            "{}",
            question.prompt
        );
        assert!(!format!("{item:?}").contains("token"), "{item:?}");
        assert_eq!(
            ask_approval(&stored, &key_of(&item), &key, package, "t1"),
            None
        );
    }
}
