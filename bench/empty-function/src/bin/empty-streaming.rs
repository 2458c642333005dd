//! The empty streaming Rust Lambda behind a Function URL: answers every request with 200 and
//! an empty body, streamed as mcp-tools streams. The floor for mcp-tools.

use lambda_http::{service_fn, Body, Error, Request, Response};

// One thread, as mcp-tools runs.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    lambda_http::run_with_streaming_response(service_fn(|_: Request| async {
        Ok::<_, std::convert::Infallible>(Response::new(Body::Empty))
    }))
    .await
}
