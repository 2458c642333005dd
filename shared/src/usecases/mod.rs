//! Use cases: each entry point calls one of these. Generic over the ports, so they are tested
//! with the fakes and run in production with the AWS adapters.

pub mod check;
pub mod outcome;
pub mod route;
pub mod submit;
pub mod task;
pub mod training;
