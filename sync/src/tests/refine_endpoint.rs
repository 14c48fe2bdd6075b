//! Refinement: `Endpoint` against `EndpointSpec`, on random steps (five
//! threads sending, calling, receiving; a receiver holding a call answers
//! it or lets it go when it next receives): single operations, batches of
//! up to three overlapping ones (checked for linearizability), and
//! spurious wake-ups.

use std::sync::{Arc, Mutex};
use std::vec::Vec;

use super::linearize::Candidates;
use super::prng::Rng;
use super::serial::one_at_a_time;
use super::stepped::{Driver, SteppedBlocking};
use crate::spec::{EndpointEvent, EndpointSpec};
use crate::{Endpoint, EndpointError, Mailbox, ReplyTo};

const CLIENTS: usize = 5;

type TestEndpoint = Endpoint<u32, SteppedBlocking>;

#[derive(Clone, Copy, Debug)]
enum Operation {
    Send { client: usize, message: u32 },
    Call { client: usize, message: u32 },
    /// Answers the held call with `answer` (or lets it go), then receives.
    Recv { client: usize, answer: Option<u32> },
}

/// What a client's operation returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Sent,
    Received { message: u32, call: bool },
    Answered(u32),
    NoReply,
}

type Completion = (usize, Outcome);

fn apply(spec: &mut EndpointSpec, operation: &Operation) -> Vec<Completion> {
    let events = match *operation {
        Operation::Send { client, message } => spec.send(client, message, false),
        Operation::Call { client, message } => spec.send(client, message, true),
        Operation::Recv { client, answer } => spec.recv(client, answer),
    };
    events
        .into_iter()
        .map(|event| match event {
            EndpointEvent::Sent(sender) => (sender, Outcome::Sent),
            EndpointEvent::Received { receiver, message, call } => (receiver, Outcome::Received { message, call }),
            EndpointEvent::Answered { caller, message } => (caller, Outcome::Answered(message)),
            EndpointEvent::NoReply { caller } => (caller, Outcome::NoReply),
        })
        .collect()
}

/// Each client's mailbox (made on its own thread) and the call it holds.
#[derive(Default)]
struct ClientIpc {
    mailbox: Option<Arc<Mailbox<u32, SteppedBlocking>>>,
    holding: Option<ReplyTo<u32, SteppedBlocking>>,
}

type Clients = Arc<Mutex<Vec<ClientIpc>>>;

fn mailbox(clients: &Clients, client: usize) -> Arc<Mailbox<u32, SteppedBlocking>> {
    let mut clients = clients.lock().unwrap();
    clients[client].mailbox.get_or_insert_with(|| Arc::new(Mailbox::new(client as u64))).clone()
}

struct Checker {
    endpoint: Arc<TestEndpoint>,
    clients: Clients,
    candidates: Candidates<EndpointSpec>,
    driver: Driver<Outcome>,
    messages: u32,
    seed: u64,
}

impl Checker {
    fn issue(&self, operation: &Operation) {
        let endpoint = self.endpoint.clone();
        let clients = self.clients.clone();
        let never = || false;
        let on_match = |_: &mut u32, _: crate::Meeting| {};
        match *operation {
            Operation::Send { client, message } => self.driver.run(client, move || {
                let me = mailbox(&clients, client);
                endpoint.send(&me, message, on_match, never).expect("a send on an open endpoint completes");
                Outcome::Sent
            }),
            Operation::Call { client, message } => self.driver.run(client, move || {
                let me = mailbox(&clients, client);
                match endpoint.call(&me, message, on_match, never) {
                    Ok(answer) => Outcome::Answered(answer),
                    Err(EndpointError::NoReply) => Outcome::NoReply,
                    Err(error) => panic!("call failed: {error:?}"),
                }
            }),
            Operation::Recv { client, answer } => self.driver.run(client, move || {
                let me = mailbox(&clients, client);
                let holding = clients.lock().unwrap()[client].holding.take();
                // Let go of an unanswered call before receiving.
                let answer = match (holding, answer) {
                    (Some(reply_to), Some(message)) => Some((reply_to, message)),
                    _ => None,
                };
                let received = endpoint.recv(&me, answer, on_match, never).expect("a receive on an open endpoint completes");
                let call = received.reply.is_some();
                clients.lock().unwrap()[client].holding = received.reply;
                Outcome::Received { message: received.message, call }
            }),
        }
    }

    fn step(&mut self, step: usize, batch: &[Operation]) {
        batch.iter().for_each(|operation| self.issue(operation));
        self.driver.settle();
        let mut seen = self.driver.take_outcomes();
        let (senders, _) = self.endpoint.waiting();
        let explained = self.candidates.step(batch, apply, &mut seen, |spec| spec.waiting_senders() == senders);
        let seed = self.seed;
        assert!(explained, "seed {seed} step {step}: no order of {batch:?} explains {seen:?}");
    }

    fn next_message(&mut self) -> u32 {
        self.messages += 1;
        self.messages
    }

    fn random_operation(&mut self, rng: &mut Rng, client: usize) -> Operation {
        match rng.below(3) {
            0 => Operation::Send { client, message: self.next_message() },
            1 => Operation::Call { client, message: self.next_message() },
            _ => {
                let answer = (rng.below(4) != 0).then(|| self.next_message());
                Operation::Recv { client, answer }
            }
        }
    }

    /// A random step of one to three operations on idle clients, or a
    /// spurious wake-up.
    fn random_step(&mut self, rng: &mut Rng, step: usize) {
        if rng.below(6) == 0 {
            self.driver.unpark(rng.below(CLIENTS));
            return self.step(step, &[]);
        }
        let mut idle = self.driver.idle_clients();
        if idle.len() <= 1 {
            // Keep one client free: with every client waiting on the same
            // side nothing could ever complete again.
            return self.drain_one(step);
        }
        let size = (1 + rng.below(3)).min(idle.len() - 1);
        let batch: Vec<Operation> = (0..size)
            .map(|_| {
                let client = idle.swap_remove(rng.below(idle.len()));
                self.random_operation(rng, client)
            })
            .collect();
        self.step(step, &batch);
    }

    /// One step towards everyone idle: an idle client receives when
    /// senders or unanswered calls wait, else sends.
    fn drain_one(&mut self, step: usize) {
        let idle = self.driver.idle_clients();
        let Some(&client) = idle.first() else { panic!("seed {}: every client waits", self.seed) };
        let (senders, _) = self.endpoint.waiting();
        let holds_call = idle.iter().find(|client| self.clients.lock().unwrap()[**client].holding.is_some()).copied();
        let operation = if senders > 0 {
            Operation::Recv { client, answer: Some(self.next_message()) }
        } else if let Some(server) = holds_call {
            Operation::Recv { client: server, answer: Some(self.next_message()) }
        } else {
            Operation::Send { client, message: self.next_message() }
        };
        self.step(step, &[operation]);
    }

    fn drain(mut self, first_step: usize) {
        for step in first_step.. {
            // A held call keeps its caller waiting: all idle means none.
            if self.driver.idle_clients().len() == CLIENTS {
                break;
            }
            assert!(step < first_step + 100, "seed {}: draining does not end", self.seed);
            self.drain_one(step);
        }
        self.driver.finish();
    }
}

#[test]
fn endpoint_refines_its_spec_on_random_steps() {
    let _turn = one_at_a_time();
    for seed in 0..30 {
        let mut rng = Rng::new(seed);
        let mut checker = Checker {
            endpoint: Arc::new(Endpoint::new()),
            clients: Arc::new(Mutex::new((0..CLIENTS).map(|_| ClientIpc::default()).collect())),
            candidates: Candidates::new(EndpointSpec::new()),
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
