//! Refinement: `Channel` against `ChannelSpec`, on random steps (five
//! threads, messages of 0 to 4096 bytes and some too long): single
//! operations, batches of up to three overlapping ones (checked for
//! linearizability), and spurious wake-ups.

use super::serial::one_at_a_time;
use std::sync::Arc;
use std::vec::Vec;

use super::linearize::Candidates;
use super::prng::Rng;
use super::stepped::{Driver, SteppedBlocking};
use crate::spec::{ChannelSpec, Delivery};
use crate::{Channel, IpcError, MessageBuffer, MAX_MESSAGE_LENGTH};

const CLIENTS: usize = 5;

#[derive(Clone, Debug)]
enum Operation {
    Send { client: usize, message: Vec<u8> },
    Recv { client: usize },
}

/// What a client's operation returned.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Sent,
    Refused { length: usize },
    Received(Vec<u8>),
}

type Completion = (usize, Outcome);

fn sent(result: Result<(), IpcError>) -> Outcome {
    match result {
        Ok(()) => Outcome::Sent,
        Err(IpcError::TooLong { length }) => Outcome::Refused { length },
        Err(error) => panic!("send failed: {error}"),
    }
}

/// Completions of a spec step that delivered, or not.
fn delivered(delivery: Option<Delivery>) -> Vec<Completion> {
    let Some(delivery) = delivery else { return Vec::new() };
    std::vec![(delivery.sender, Outcome::Sent), (delivery.receiver, Outcome::Received(delivery.message))]
}

fn apply(spec: &mut ChannelSpec, operation: &Operation) -> Vec<Completion> {
    match operation {
        Operation::Send { client, message } => match spec.send(*client, message) {
            Ok(delivery) => delivered(delivery),
            Err(error) => std::vec![(*client, sent(Err(error)))],
        },
        Operation::Recv { client } => delivered(spec.recv(*client)),
    }
}

struct Checker {
    channel: Arc<Channel<SteppedBlocking>>,
    candidates: Candidates<ChannelSpec>,
    driver: Driver<Outcome>,
    messages: u32,
    seed: u64,
}

impl Checker {
    /// A fresh message: `length` bytes that start with the message's number.
    fn message(&mut self, length: usize) -> Vec<u8> {
        self.messages += 1;
        let number = self.messages.to_le_bytes();
        (0..length).map(|index| number.get(index).copied().unwrap_or(index as u8)).collect()
    }

    fn issue(&self, operation: &Operation) {
        let channel = self.channel.clone();
        match operation.clone() {
            Operation::Send { client, message } => self.driver.run(client, move || sent(channel.send(&message))),
            Operation::Recv { client } => self.driver.run(client, move || {
                let mut buffer = MessageBuffer::new();
                let length = channel.recv(&mut buffer).expect("recv does not fail");
                assert_eq!(length, buffer.len());
                Outcome::Received(buffer.message().to_vec())
            }),
        }
    }

    fn step(&mut self, step: usize, batch: &[Operation]) {
        batch.iter().for_each(|operation| self.issue(operation));
        self.driver.settle();
        let mut seen = self.driver.take_outcomes();
        let senders = self.channel.waiting_senders();
        let explained = self.candidates.step(batch, apply, &mut seen, |spec| spec.waiting_senders().count() == senders);
        let seed = self.seed;
        assert!(explained, "seed {seed} step {step}: no order of {:?} explains {:?}", brief_batch(batch), brief(&seen));
    }

    fn random_length(&self, rng: &mut Rng) -> usize {
        match rng.below(8) {
            0 => 0,
            1 => 8,
            2 => 80,
            3 => MAX_MESSAGE_LENGTH,
            4 => MAX_MESSAGE_LENGTH + 1 + rng.below(3),
            _ => rng.below(MAX_MESSAGE_LENGTH + 1),
        }
    }

    /// A random step. At least one client stays idle: batches leave one
    /// out, and with a single idle client the step is an operation that
    /// completes at once (someone of the other kind waits).
    fn random_step(&mut self, rng: &mut Rng, step: usize) {
        if rng.below(6) == 0 {
            self.driver.unpark(rng.below(CLIENTS));
            return self.step(step, &[]);
        }
        let mut idle = self.driver.idle_clients();
        let size = (1 + rng.below(3)).min(idle.len().saturating_sub(1)).max(1);
        let mut batch = Vec::new();
        for _ in 0..size {
            let client = idle.swap_remove(rng.below(idle.len()));
            let mut send = rng.below(2) == 0;
            if size == 1 && idle.is_empty() {
                send = self.channel.waiting_senders() == 0;
            }
            let operation = match send {
                true => {
                    let length = self.random_length(rng);
                    Operation::Send { client, message: self.message(length) }
                }
                false => Operation::Recv { client },
            };
            batch.push(operation);
        }
        self.step(step, &batch);
    }

    /// Serves every waiting thread, then ends the clients.
    fn drain(mut self, first_step: usize) {
        for step in first_step.. {
            let idle = self.driver.idle_clients();
            if idle.len() == CLIENTS {
                break;
            }
            let client = idle[0];
            let operation = match self.channel.waiting_senders() {
                0 => Operation::Send { client, message: self.message(5) },
                _ => Operation::Recv { client },
            };
            self.step(step, &[operation]);
        }
        self.driver.finish();
    }
}

fn brief_batch(batch: &[Operation]) -> Vec<std::string::String> {
    batch
        .iter()
        .map(|operation| match operation {
            Operation::Send { client, message } => {
                std::format!("{client}: send {} bytes {:?}…", message.len(), &message[..message.len().min(4)])
            }
            Operation::Recv { client } => std::format!("{client}: recv"),
        })
        .collect()
}

/// Completions with messages shortened to their length and first bytes.
fn brief(completions: &[Completion]) -> Vec<std::string::String> {
    completions
        .iter()
        .map(|(client, outcome)| match outcome {
            Outcome::Received(message) => {
                std::format!("{client}: received {} bytes {:?}…", message.len(), &message[..message.len().min(4)])
            }
            other => std::format!("{client}: {other:?}"),
        })
        .collect()
}

#[test]
fn channel_refines_rendezvous_spec_on_random_steps() {
    let _turn = one_at_a_time();
    for seed in 0..30 {
        let mut rng = Rng::new(seed);
        let mut checker = Checker {
            channel: Arc::new(Channel::new()),
            candidates: Candidates::new(ChannelSpec::new()),
            driver: Driver::new(CLIENTS),
            messages: 0,
            seed,
        };
        for step in 0..150 {
            checker.random_step(&mut rng, step);
        }
        checker.drain(150);
    }
}
