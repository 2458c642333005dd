//! What one AWS call through the SDK costs the calling thread in CPU, as the functions build
//! their clients (`load_sdk_config`, on Lambda's environment), beside a floor: the same request's
//! bytes written to a socket and its answer read. The answers come from a canned DynamoDB on
//! 127.0.0.1 that answers at once, after an idle pause, or after touching memory the way an
//! emulator's own work would, so the figures show what a cold cache and an idle CPU add to the
//! same call. Linux only (the thread's CPU time from /proc).
//!
//! `cargo run --release -p shared --example sdk_call_cpu [CALLS]`; `taskset -c 0` before it keeps
//! client and server on one CPU, as on a Lambda of up to 1,769 MB. With `SDK_CALL_SERVER=HOST:PORT`
//! the calls go to a server of one's own instead (`bench/python_answerer.py`: the same answer
//! from Python, after work of its own).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;

#[path = "support/thread_cpu.rs"]
mod thread_cpu;
use thread_cpu::thread_cpu_ns;

const ANSWER: &str =
    r#"{"Item":{"inference_id":{"S":"job-1"},"status":{"S":"pending"},"attempt":{"N":"1"}}}"#;

/// How the canned server answers: at once, after a pause, or after touching memory.
static MODE: AtomicU8 = AtomicU8::new(0);
const SCENARIOS: [(&str, u8); 3] = [
    ("back to back", 0),
    ("after 2 ms idle", 1),
    ("after 8 MiB touched", 2),
];

fn before_answering() {
    static MEMORY: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    match MODE.load(Ordering::Relaxed) {
        1 => std::thread::sleep(Duration::from_millis(2)),
        2 => {
            let mut memory = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
            memory.resize(8 << 20, 1);
            let mut sum = 0u8;
            for byte in memory.iter_mut().step_by(64) {
                sum = sum.wrapping_add(*byte);
                *byte = sum;
            }
        }
        _ => {}
    }
}

/// One keep-alive connection's requests, each answered with [`ANSWER`].
fn serve(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut requests = BufReader::new(stream.try_clone()?);
    let mut answers = stream;
    let mut line = String::new();
    loop {
        let mut length = 0;
        loop {
            line.clear();
            if requests.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(value) = header.strip_prefix("content-length:") {
                length = value.trim().parse().map_err(io::Error::other)?;
            }
        }
        io::copy(&mut (&mut requests).take(length), &mut io::sink())?;
        before_answering();
        write!(
            answers,
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\n\
             x-amzn-requestid: r\r\ncontent-length: {}\r\n\r\n{ANSWER}",
            ANSWER.len()
        )?;
    }
}

/// CPU and wall time per call, in microseconds.
struct PerCall {
    cpu_us: f64,
    wall_us: f64,
}

fn per_call(calls: usize, mut call: impl FnMut() -> io::Result<()>) -> io::Result<PerCall> {
    let (cpu, wall) = (thread_cpu_ns()?, Instant::now());
    for _ in 0..calls {
        call()?;
    }
    Ok(PerCall {
        cpu_us: (thread_cpu_ns()? - cpu) as f64 / calls as f64 / 1e3,
        wall_us: wall.elapsed().as_secs_f64() * 1e6 / calls as f64,
    })
}

fn main() -> io::Result<()> {
    let calls: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().map_err(io::Error::other))
        .transpose()?
        .unwrap_or(500);
    // A server of one's own (its answers must be ANSWER's bytes), or the canned one.
    let external = std::env::var("SDK_CALL_SERVER").ok();
    let address = match &external {
        Some(address) => address.parse().map_err(io::Error::other)?,
        None => {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            let address = listener.local_addr()?;
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    std::thread::spawn(move || serve(stream));
                }
            });
            address
        }
    };
    // Lambda's environment, as the functions read it (set before any other thread reads it).
    for (name, value) in [
        ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME", "sdk-call-cpu".to_owned()),
        ("AWS_ENDPOINT_URL", format!("http://{address}")),
    ] {
        // SAFETY: no other thread reads the environment yet (the server thread does not).
        unsafe { std::env::set_var(name, value) };
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dynamodb = runtime
        .block_on(async { aws_sdk_dynamodb::Client::new(&adapters::aws::load_sdk_config().await) });
    let mut get_item = || {
        runtime
            .block_on(
                dynamodb
                    .get_item()
                    .table_name("jobs")
                    .key("inference_id", AttributeValue::S("job-1".into()))
                    .consistent_read(true)
                    .send(),
            )
            .map(drop)
            .map_err(io::Error::other)
    };
    // The floor: what the SDK sent, as bytes prepared beforehand, on a connection of its own.
    let body = r#"{"TableName":"jobs","Key":{"inference_id":{"S":"job-1"}},"ConsistentRead":true}"#;
    let request = format!(
        "POST / HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/x-amz-json-1.0\r\n\
         x-amz-target: DynamoDB_20120810.GetItem\r\nx-amz-date: 20261204T000000Z\r\n\
         authorization: AWS4-HMAC-SHA256 Credential=testing/20261204/us-east-1/dynamodb/aws4_request, \
         SignedHeaders=host;x-amz-date;x-amz-target, Signature={}\r\ncontent-length: {}\r\n\r\n{body}",
        "0".repeat(64),
        body.len()
    );
    let mut socket = TcpStream::connect(address)?;
    socket.set_nodelay(true)?;
    let mut answer = vec![0u8; 4096];
    let mut raw = || -> io::Result<()> {
        socket.write_all(request.as_bytes())?;
        let mut read = 0;
        while !answer[..read].ends_with(ANSWER.as_bytes()) {
            match socket.read(&mut answer[read..])? {
                0 => return Err(io::Error::other("the server closed the connection")),
                n => read += n,
            }
        }
        Ok(())
    };
    for _ in 0..50 {
        get_item()?;
        raw()?;
    }
    println!("{calls} DynamoDB GetItem calls per figure; CPU and wall time per call, µs");
    println!("| the server answers | SDK CPU | floor CPU | SDK wall | floor wall |");
    println!("|---|---|---|---|---|");
    let scenarios = match external {
        Some(_) => &[("as SDK_CALL_SERVER answers", 0)][..],
        None => &SCENARIOS[..],
    };
    for &(name, mode) in scenarios {
        MODE.store(mode, Ordering::Relaxed);
        let sdk = per_call(calls, &mut get_item)?;
        let floor = per_call(calls, &mut raw)?;
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} |",
            sdk.cpu_us, floor.cpu_us, sdk.wall_us, floor.wall_us
        );
    }
    Ok(())
}
