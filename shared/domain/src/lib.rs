//! Pure domain: no AWS types, no I/O. Statuses, records, the state transitions as conditional
//! writes, and the parsing of what SageMaker and EventBridge deliver.

pub mod address;
pub mod allow_lists;
pub mod approval;
pub mod arn;
pub mod callback;
pub mod caller;
pub mod completion;
pub mod delivery;
pub mod events;
pub mod ids;
pub mod item;
pub mod item_limits;
pub mod job;
pub mod lineage;
pub mod notification;
pub mod pipeline_definition;
pub mod pipeline_event;
pub mod pipeline_status;
pub mod progress;
pub mod question;
pub mod quota;
pub mod run;
pub mod s3_location;
pub mod s3_reference;
pub mod shown;
pub mod subscription;
pub mod task_id;
pub mod time;
pub mod trace;
pub mod training_input;
pub mod util;
pub mod webhook;
