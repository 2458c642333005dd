//! Prints the microseconds of this process's first and second request for random bytes from
//! aws-lc: the first one pays for seeding the generator, which is where jitter entropy costs.

use std::time::Instant;

fn main() {
    let mut bytes = [0u8; 32];
    let started = Instant::now();
    aws_lc_rs::rand::fill(&mut bytes).expect("random bytes");
    let first = started.elapsed();
    let started = Instant::now();
    aws_lc_rs::rand::fill(&mut bytes).expect("random bytes");
    println!("{} {}", first.as_micros(), started.elapsed().as_micros());
}
