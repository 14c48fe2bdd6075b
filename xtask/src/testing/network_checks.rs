//! Part of tier 4: the network card and TCP through QEMU's restricted user
//! network, on both kernels. The guest runs `user/tools/echo_server.c`;
//! the host connects to 127.0.0.1 through a forwarded port (retrying while
//! the guest boots), makes sure the server is there with a short probe
//! connection, sends 2 MiB on a second one and checks every byte comes
//! back in order, then says "bye" on a third, which ends the server (the
//! guest powers off only once the host has everything). And redis-server (Debian's, built static) in the
//! guest answers the host's redis-cli through a forwarded port, and NGINX
//! serves a file to the host's HTTP GET. Nothing leaves this machine.

use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, GuestKernel, Input, Output};
use crate::failure::{Failure, Outcome};
use crate::machine_options::MachineOptions;
use crate::network::{GuestNetwork, PortForward};
use crate::outside::programs::{built, companions, PROGRAMS};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// How long the guest may take from boot to the end of the echo.
const TIME_LIMIT: Duration = Duration::from_secs(240);
/// Bytes echoed on the second connection.
const ECHO_BYTES: usize = 2 << 20;
/// The guest server's port.
const GUEST_PORT: u16 = 7777;

pub fn run_network_checks(tally: &mut Tally) {
    use crate::network::free_tcp_ports;
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        let outcome = free_tcp_ports().and_then(|[host_port]| echo_through_forwarded_port(kernel, host_port));
        tally.record(&format!("network: {} MiB echoed by a guest TCP server through a forwarded port ({kernel:?})", ECHO_BYTES >> 20), outcome.map_err(|failure| failure.to_string()));
    }
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        let outcome = free_tcp_ports().and_then(|[host_port]| redis_round_trip(kernel, host_port));
        tally.record(&format!("network: the host's redis-cli talks to redis-server in the guest ({kernel:?})"), outcome.map_err(|failure| failure.to_string()));
    }
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        let outcome = free_tcp_ports().and_then(|[http, control]| nginx_serves_the_host(kernel, (http, control)));
        tally.record(&format!("network: NGINX in the guest serves a 256 KiB file to the host ({kernel:?})"), outcome.map_err(|failure| failure.to_string()));
    }
}

/// The file NGINX serves, and its size.
const SERVED_BYTES: usize = 256 << 10;

/// What the guest runs: NGINX in the background, and the echo server,
/// whose "bye" from the host ends the run.
const NGINX_SCRIPT: &str = "#!/bin/sh
mkdir -p /tmp/nginx
grep -q '^root:' /etc/passwd 2>/dev/null || echo 'root:x:0:0:root:/root:/bin/sh' >> /etc/passwd
grep -q '^root:' /etc/group 2>/dev/null || echo 'root:x:0:' >> /etc/group
/nginx -p /tmp/nginx/ -c /etc/nginx.conf &
/echo_server
kill $!
";

const NGINX_CONF: &str = "daemon off;
master_process off;
user root root;
worker_processes 1;
error_log stderr warn;
pid /tmp/nginx/nginx.pid;
events { worker_connections 64; }
http { access_log off; server { listen 8080; root /www; location / { } } }
";

/// NGINX (Debian's source, built static by the programs recipe) in the
/// guest serves `/www/file` to the host's HTTP/1.0 GET through a
/// forwarded port; the body must be the file, byte for byte.
fn nginx_serves_the_host(kernel: GuestKernel, (http_port, control_port): (u16, u16)) -> Outcome {
    let nginx = PROGRAMS.iter().find(|program| program.name == "nginx").ok_or_else(|| Failure::failed("no nginx recipe"))?;
    let scratch = crate::workspace::target_directory().join("network-check");
    std::fs::create_dir_all(scratch.join("www")).map_err(|error| Failure::failed(error.to_string()))?;
    let body: Vec<u8> = (0..SERVED_BYTES).map(|index| (index * 13 + (index >> 10)) as u8).collect();
    let write = |name: &str, bytes: &[u8]| std::fs::write(scratch.join(name), bytes).map_err(|error| Failure::failed(format!("writing {name}: {error}")));
    write("www/file", &body)?;
    write("nginx.conf", NGINX_CONF.as_bytes())?;
    write("run.sh", NGINX_SCRIPT.as_bytes())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(scratch.join("run.sh"), std::fs::Permissions::from_mode(0o755)).map_err(|error| Failure::failed(error.to_string()))?;
    let copy = |host: std::path::PathBuf, guest: &str| crate::exec::FileCopy { host, guest: Some(guest.to_string()) };
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: vec![
            copy(built(nginx)?, "/nginx"),
            copy(crate::guest_programs::compile_c("user/tools/echo_server.c", "echo_server")?, "/echo_server"),
            copy(scratch.join("nginx.conf"), "/etc/nginx.conf"),
            copy(scratch.join("www"), "/www"),
        ],
        program: scratch.join("run.sh"),
        program_arguments: Vec::new(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: Some(GuestNetwork::User(vec![PortForward { host: http_port, guest: 8080 }, PortForward { host: control_port, guest: GUEST_PORT }])),
    };
    let expected = body.clone();
    let client = std::thread::spawn(move || http_client(http_port, control_port, &expected));
    let guest = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT));
    let client = client.join().map_err(|_| Failure::failed("the host client panicked"))?;
    let guest = guest?;
    let said = || format!("{}{}", String::from_utf8_lossy(&guest.output), String::from_utf8_lossy(&guest.errors));
    client.map_err(|failure| Failure::failed(format!("{failure}; the guest said:\n{}", said())))?;
    if guest.exit_code != 0 {
        return Err(Failure::failed(format!("the guest's script exited {}:\n{}", guest.exit_code, said())));
    }
    Ok(())
}

/// GET /file until NGINX answers, checks the body, then ends the guest.
fn http_client(http_port: u16, control_port: u16, expected: &[u8]) -> Outcome {
    let deadline = Instant::now() + TIME_LIMIT;
    let response = loop {
        match get(http_port, "/file") {
            Ok(response) if response.starts_with(b"HTTP/1.1 200") => break response,
            _ if Instant::now() > deadline => return Err(Failure::failed(format!("NGINX never answered on 127.0.0.1:{http_port}"))),
            _ => std::thread::sleep(Duration::from_millis(500)),
        }
    };
    let body_at = response.windows(4).position(|window| window == b"\r\n\r\n").map(|at| at + 4).unwrap_or(response.len());
    let outcome = if &response[body_at..] == expected {
        Ok(())
    } else {
        Err(Failure::failed(format!("the body was {} bytes, not the {} of the file", response.len() - body_at, expected.len())))
    };
    say_bye(control_port).map_err(|error| Failure::failed(format!("ending the guest: {error}")))?;
    outcome
}

/// An HTTP/1.0 GET of `path`: the whole response.
fn get(port: u16, path: &str) -> std::io::Result<Vec<u8>> {
    let mut stream = connect(port, Duration::from_secs(30))?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    Ok(response)
}

/// What the host's `redis-cli` asks, and what it must answer.
const REDIS_EXCHANGE: [(&[&str], &str); 5] = [
    (&["ping"], "PONG"),
    (&["set", "greeting", "hello from the host"], "OK"),
    (&["get", "greeting"], "hello from the host"),
    (&["rpush", "list", "a", "b", "c"], "3"),
    (&["lrange", "list", "0", "-1"], "a\nb\nc"),
];

/// redis-server (Debian's source, built static by the programs recipe)
/// in the guest; the host's redis-cli of the same build, through a
/// forwarded port, runs [`REDIS_EXCHANGE`], then shuts the server down,
/// which ends the guest.
fn redis_round_trip(kernel: GuestKernel, host_port: u16) -> Outcome {
    let redis = PROGRAMS.iter().find(|program| program.name == "redis-server").ok_or_else(|| Failure::failed("no redis-server recipe"))?;
    let server = built(redis)?;
    let cli = companions(redis)?.into_iter().find(|(name, _)| name == "redis-cli").map(|(_, path)| path).ok_or_else(|| Failure::failed("no redis-cli"))?;
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: Vec::new(),
        program: server,
        program_arguments: ["--port", "6379", "--save", "", "--appendonly", "no", "--protected-mode", "no"].map(String::from).to_vec(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: Some(GuestNetwork::User(vec![PortForward { host: host_port, guest: 6379 }])),
    };
    let client = std::thread::spawn(move || redis_client(&cli, host_port));
    let guest = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT));
    let client = client.join().map_err(|_| Failure::failed("the host client panicked"))?;
    let guest = guest?;
    client?;
    if guest.exit_code != 0 {
        return Err(Failure::failed(format!("redis-server exited {}:\n{}", guest.exit_code, String::from_utf8_lossy(&guest.output))));
    }
    Ok(())
}

fn redis_client(cli: &std::path::Path, port: u16) -> Outcome {
    let ask = |words: &[&str]| -> Outcome<String> {
        let output = std::process::Command::new(cli)
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(words)
            .output()
            .map_err(|error| Failure::failed(format!("running {}: {error}", cli.display())))?;
        Ok(String::from_utf8_lossy(&output.stdout).trim_end().to_string())
    };
    let deadline = Instant::now() + TIME_LIMIT;
    while ask(&["ping"])? != "PONG" {
        if Instant::now() > deadline {
            return Err(Failure::failed(format!("redis-server never answered on 127.0.0.1:{port}")));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let mut outcome = Ok(());
    for (words, expected) in REDIS_EXCHANGE {
        let answer = ask(words)?;
        if answer != expected && outcome.is_ok() {
            outcome = Err(Failure::failed(format!("redis-cli {}: {answer:?}, expected {expected:?}", words.join(" "))));
        }
    }
    let _ = ask(&["shutdown", "nosave"]);
    outcome
}

fn echo_through_forwarded_port(kernel: GuestKernel, host_port: u16) -> Outcome {
    let server = crate::guest_programs::compile_c("user/tools/echo_server.c", "echo_server")?;
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: Vec::new(),
        program: server,
        program_arguments: Vec::new(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: Some(GuestNetwork::User(vec![PortForward { host: host_port, guest: GUEST_PORT }])),
    };
    let client = std::thread::spawn(move || client(host_port));
    let guest = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT));
    let client = client.join().map_err(|_| Failure::failed("the host client panicked"))?;
    let guest = match (guest, client) {
        (Ok(guest), Ok(())) => guest,
        (Ok(guest), Err(failure)) => {
            return Err(Failure::failed(format!("{failure}; the guest server exited {} saying:\n{}{}", guest.exit_code, String::from_utf8_lossy(&guest.output), String::from_utf8_lossy(&guest.errors))))
        }
        // Both: the client's failure says why the guest did not end.
        (Err(guest_failure), Err(failure)) => return Err(Failure::failed(format!("{failure}; and {guest_failure}"))),
        (Err(guest_failure), Ok(())) => return Err(guest_failure),
    };
    let said = String::from_utf8_lossy(&guest.output);
    let expected = format!(": echoed {ECHO_BYTES} bytes");
    if guest.exit_code != 0 || !said.lines().any(|line| line.starts_with("connection ") && line.ends_with(&expected)) {
        return Err(Failure::failed(format!("the guest server exited {} saying:\n{said}", guest.exit_code)));
    }
    Ok(())
}

/// The host side: a probe connection until the server answers, then the
/// echo of [`ECHO_BYTES`] (written by a second thread while this one
/// reads). A failure still says "bye" (best effort), so the guest ends
/// now rather than at its time limit, and the failure says what went wrong.
fn client(port: u16) -> Outcome {
    let outcome = echo_client(port);
    if outcome.is_err() {
        let _ = say_bye(port);
    }
    outcome
}

fn echo_client(port: u16) -> Outcome {
    let deadline = Instant::now() + TIME_LIMIT;
    loop {
        if probe(port).is_ok() {
            break;
        }
        if Instant::now() > deadline {
            return Err(Failure::failed(format!("nothing answered on 127.0.0.1:{port}")));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let data: Vec<u8> = (0..ECHO_BYTES).map(|index| (index * 7 + (index >> 12)) as u8).collect();
    let stream = connect(port, Duration::from_secs(60)).map_err(|error| Failure::failed(format!("connect: {error}")))?;
    let mut writer = stream.try_clone().map_err(|error| Failure::failed(error.to_string()))?;
    let sent = data.clone();
    let sender = std::thread::spawn(move || writer.write_all(&sent).and_then(|()| writer.shutdown(Shutdown::Write)));
    let mut received = Vec::with_capacity(ECHO_BYTES);
    let read = (&stream).read_to_end(&mut received);
    let written = sender.join().map_err(|_| Failure::failed("the sender panicked"))?;
    written.map_err(|error| Failure::failed(format!("send: {error}")))?;
    read.map_err(|error| Failure::failed(format!("receive after {} bytes: {error}", received.len())))?;
    if received != data {
        let first_difference = received.iter().zip(&data).position(|(got, want)| got != want).unwrap_or(received.len().min(data.len()));
        return Err(Failure::failed(format!("{} of {} bytes came back, first difference at {first_difference}", received.len(), data.len())));
    }
    // Every byte is here: the guest may end.
    say_bye(port).map_err(|error| Failure::failed(format!("the closing connection: {error}")))
}

/// Tells the guest's echo server to end. Its echo is not waited for: the
/// guest may power off before it reaches the host (QEMU then resets the
/// connection); the guest's exit status says whether it heard.
fn say_bye(port: u16) -> std::io::Result<()> {
    let mut stream = connect(port, Duration::from_secs(10))?;
    stream.write_all(b"bye")?;
    stream.shutdown(Shutdown::Write)?;
    let _ = stream.read_to_end(&mut Vec::new());
    Ok(())
}

/// One connection that sends `ping` and reads it back.
fn probe(port: u16) -> std::io::Result<()> {
    exchange(port, b"ping")
}

/// One connection that sends `message`, ends its half, and reads it back.
fn exchange(port: u16, message: &[u8]) -> std::io::Result<()> {
    let mut stream = connect(port, Duration::from_secs(10))?;
    stream.write_all(message)?;
    stream.shutdown(Shutdown::Write)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    if answer == message {
        Ok(())
    } else {
        Err(std::io::Error::other("no echo"))
    }
}

/// A connection to 127.0.0.1:`port` (5 s to connect) whose reads give up
/// after `patience`.
fn connect(port: u16, patience: Duration) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&std::net::SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(5))?;
    stream.set_read_timeout(Some(patience))?;
    Ok(stream)
}
