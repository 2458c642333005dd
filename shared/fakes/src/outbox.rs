//! The ports that only take something, completion events and completion messages: what they
//! took, in order, and an outage a test can switch on.

use std::sync::Mutex;

use domain::completion::JobCompletion;
use domain::run::CompletionMessage;
use ports::*;

/// What a fake sink took, in order, and whether it fails now (as an unreachable service would:
/// a transient, ambiguous failure with `code`).
struct Outbox<T> {
    taken: Mutex<Vec<T>>,
    failing: Mutex<bool>,
    code: &'static str,
}

impl<T: Clone> Outbox<T> {
    fn new(code: &'static str) -> Self {
        Self {
            taken: Mutex::default(),
            failing: Mutex::default(),
            code,
        }
    }

    fn take(&self, item: &T) -> Result<(), AwsFailure> {
        if *self.failing.lock().unwrap() {
            return Err(AwsFailure {
                code: Some(self.code.into()),
                message: "down".into(),
                retryable: true,
                ambiguous: true,
            });
        }
        self.taken.lock().unwrap().push(item.clone());
        Ok(())
    }

    fn taken(&self) -> Vec<T> {
        self.taken.lock().unwrap().clone()
    }

    fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap() = failing;
    }
}

/// The completion events put, in order; puts fail while `set_failing` is on.
pub struct MemoryEvents(Outbox<JobCompletion>);

impl Default for MemoryEvents {
    fn default() -> Self {
        Self(Outbox::new("InternalException"))
    }
}

impl MemoryEvents {
    pub fn put(&self) -> Vec<JobCompletion> {
        self.0.taken()
    }

    pub fn set_failing(&self, failing: bool) {
        self.0.set_failing(failing);
    }
}

impl CompletionEvents for MemoryEvents {
    async fn put(&self, completion: &JobCompletion) -> Result<(), EventError> {
        self.0.take(completion).map_err(|failure| EventError {
            bus: "memory".into(),
            failure,
        })
    }
}

/// The completion messages sent, in order; sends fail while `set_failing` is on.
pub struct MemoryQueue(Outbox<CompletionMessage>);

impl Default for MemoryQueue {
    fn default() -> Self {
        Self(Outbox::new("ServiceUnavailable"))
    }
}

impl MemoryQueue {
    pub fn sent(&self) -> Vec<CompletionMessage> {
        self.0.taken()
    }

    /// Sends fail while this is set, as an unreachable queue would.
    pub fn set_failing(&self, failing: bool) {
        self.0.set_failing(failing);
    }
}

impl CompletionQueue for MemoryQueue {
    async fn send(&self, message: &CompletionMessage) -> Result<(), QueueError> {
        self.0.take(message).map_err(|failure| QueueError {
            queue_url: "memory".into(),
            failure,
        })
    }
}
