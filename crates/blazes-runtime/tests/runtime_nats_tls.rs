//! The runtime connects through the caller's connection options as they are: a 3-node cluster
//! that requires TLS (a throwaway CA and server certificate made with the `openssl` CLI at test
//! time) and one whose only user is an nkey. Over each, a sequencer producer registers, sends
//! and the inputs are read back in order. Controls: a client without the CA (TLS) and a client
//! with another nkey are refused by the same servers, so the connection options are what let
//! the runtime in.
#![cfg(feature = "nats")]

mod support_nats;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use async_nats::jetstream;
use blazes_runtime::nats::sequencer::{Sequencer, SequencerConfig};
use support_nats::Cluster;

/// Runs the runtime's sequencer over `js`: a producer registers, sends three inputs, and they
/// are read back in order.
async fn sequencer_works(js: jetstream::Context) {
    let mut config = SequencerConfig::new("SECURE");
    config.retry_for = Duration::from_secs(20);
    let sequencer = Sequencer::open(js, config).await.unwrap();
    let mut producer = sequencer.producer("p0").await.unwrap();
    for i in 0..3 {
        producer.send(format!("m{i}").into()).await.unwrap();
    }
    let (inputs, _) = sequencer.read_sequenced(1, usize::MAX).await.unwrap();
    let payloads: Vec<String> = inputs
        .iter()
        .map(|i| String::from_utf8_lossy(&i.payload).to_string())
        .collect();
    assert_eq!(payloads, ["m0", "m1", "m2"]);
}

/// Whether a client with `options` can connect to the cluster's first node within 5 s.
async fn connects(cluster: &Cluster, options: async_nats::ConnectOptions) -> bool {
    let url = cluster.urls()[0].clone();
    let attempt = options
        .connection_timeout(Duration::from_secs(2))
        .connect(url.as_str());
    match tokio::time::timeout(Duration::from_secs(5), attempt).await {
        Ok(Ok(client)) => client.flush().await.is_ok(),
        _ => false,
    }
}

/// The `openssl` CLI, or `None` (with a notice) outside CI.
fn openssl() -> Option<&'static str> {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some("openssl");
    }
    let hint = "the TLS test makes its certificates with the openssl CLI: install it (Debian: `apt-get install openssl`)";
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("openssl is missing (CI=true: a missing tool is a failure); {hint}");
    }
    eprintln!("notice: openssl not found, skipping the TLS test; {hint}");
    None
}

fn run(openssl: &str, dir: &Path, args: &[&str]) {
    let out = Command::new(openssl)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a server certificate for 127.0.0.1 signed by it, valid for a day, in `dir`:
/// `ca.pem`, `server.pem`, `server.key`.
fn make_certificates(openssl: &str, dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=blazes test CA"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    run(openssl, dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "server.key", "-out", "server.csr"]);
    run(openssl, dir, &csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(
        openssl,
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_works_over_tls() {
    let Some(openssl) = openssl() else {
        return;
    };
    if support_nats::server_binary().is_none() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    make_certificates(openssl, certs.path());
    let tls = format!(
        "tls {{\n  cert_file: \"{}\"\n  key_file: \"{}\"\n  timeout: 5\n}}\n",
        certs.path().join("server.pem").display(),
        certs.path().join("server.key").display()
    );
    let Some(cluster) = Cluster::start(3, &tls).await else {
        return;
    };
    let options = || {
        async_nats::ConnectOptions::new()
            .require_tls(true)
            .add_root_certificates(certs.path().join("ca.pem"))
    };
    let client = cluster.client_with(options()).await;
    let js = jetstream::new(client);
    cluster.wait_ready(&js, 3).await;
    sequencer_works(js).await;
    // Control: the same server refuses a client that does not trust its CA, and one without TLS.
    assert!(connects(&cluster, options()).await);
    assert!(
        !connects(
            &cluster,
            async_nats::ConnectOptions::new().require_tls(true)
        )
        .await
    );
    assert!(!connects(&cluster, async_nats::ConnectOptions::new()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_works_with_an_nkey_user() {
    let user = nkeys::KeyPair::new_user();
    let other = nkeys::KeyPair::new_user();
    let authorization = format!(
        "authorization {{\n  users = [\n    {{ nkey: \"{}\" }}\n  ]\n}}\n",
        user.public_key()
    );
    let Some(cluster) = Cluster::start(3, &authorization).await else {
        return;
    };
    let options = |key: &nkeys::KeyPair| async_nats::ConnectOptions::with_nkey(key.seed().unwrap());
    let client = cluster.client_with(options(&user)).await;
    let js = jetstream::new(client);
    cluster.wait_ready(&js, 3).await;
    sequencer_works(js).await;
    // Control: the same server refuses another nkey and a client without one.
    assert!(connects(&cluster, options(&user)).await);
    assert!(!connects(&cluster, options(&other)).await);
    assert!(!connects(&cluster, async_nats::ConnectOptions::new()).await);
}
